/* Data of the roofline of one traced configuration (PLOT_ROOFLINE): every
 * kernel at its intensity and rate, grouped by layer type, and the whole
 * step. A kernel without a positive intensity or rate cannot sit on log axes
 * and is counted instead. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../fmt.h"
#include "../roofline_table.h"
#include "plot_axes.h"
#include "plot_ceilings.h"
#include "plot_data.h"
#include "plot_out.h"

typedef struct {
    const char *name;
    double share;
    int drawable;
} type_share;

static int by_share(const void *a, const void *b)
{
    double x = ((const type_share *)a)->share, y = ((const type_share *)b)->share;
    return (x < y) - (x > y);
}

static bool is_kernel(const roof_row *r)
{
    return strcmp(r->level, "kernel") == 0;
}

static double share_of(const roof_row *r)
{
    return isnan(r->time_share) ? 0 : r->time_share;
}

/* The layer types of the kernel rows, costliest first. NULL out of memory. */
static type_share *kernel_types(const roof_config *c, int *n_out)
{
    type_share *types = calloc((size_t)c->n + 1, sizeof *types);
    if (!types)
        return NULL;
    int n = 0;
    for (int k = 0; k < c->n; k++) {
        const roof_row *r = &c->rows[k];
        if (!is_kernel(r))
            continue;
        int i = 0;
        while (i < n && strcmp(types[i].name, r->layer_type) != 0)
            i++;
        if (i == n)
            types[n++] = (type_share){.name = r->layer_type};
        types[i].share += share_of(r);
        types[i].drawable += plot_drawable(r);
    }
    /* qsort is not stable, but equal shares keep no promised order either way */
    qsort(types, (size_t)n, sizeof *types, by_share);
    *n_out = n;
    return types;
}

static void write_step_label(FILE *f, const roof_row *step, int hidden, double hidden_share)
{
    char ai[FMT_LEN], gf[FMT_LEN], pct[FMT_LEN], label[512];
    fmt_gflops(gf, step->pt.achieved_gflops);
    int used = snprintf(label, sizeof label,
                        "whole step: %s FLOP/B, %s = %s of attainable; FLOPs and bytes: %s",
                        fmt_num(ai, step->pt.ai_dram), gf, fmt_pct(pct, step->pt.pct_of_attainable),
                        *step->source ? step->source : "unknown source");
    if (hidden > 0 && used > 0 && (size_t)used < sizeof label)
        snprintf(label + used, sizeof label - (size_t)used,
                 "\n%d kernel(s), %.1f%% of the time, have no FLOPs or bytes and are not drawn",
                 hidden, 100 * hidden_share);
    plot_var_str(f, "step_label", label);
}

/* The kernels, one block per drawable layer type; counts what is not drawn. */
static void write_kernels(FILE *f, const roof_config *c, const type_share *types, int n_types,
                          double yscale, const char *unit, plot_span *x, plot_span *y,
                          int *drawn_types)
{
    for (int t = 0; t < n_types; t++) {
        if (!types[t].drawable)
            continue;
        fprintf(f, "%s# %s: ai_dram achieved (%s) time_share\n", *drawn_types ? "\n\n" : "",
                types[t].name, unit);
        (*drawn_types)++;
        for (int k = 0; k < c->n; k++) {
            const roof_row *r = &c->rows[k];
            if (!is_kernel(r) || strcmp(r->layer_type, types[t].name) != 0 || !plot_drawable(r))
                continue;
            plot_span_add(x, r->pt.ai_dram);
            plot_span_add(y, r->pt.achieved_gflops);
            fprintf(f, "%.6g %.6g %.6g\n", r->pt.ai_dram, r->pt.achieved_gflops * yscale,
                    share_of(r));
        }
    }
    if (*drawn_types == 0)
        fprintf(f, "# no kernel has both FLOPs and bytes\nNaN NaN 0\n");
}

int plot_write_roofline(const run_model *run, const plot_figure *fig, const char *prefix,
                        char *err, size_t err_len)
{
    const roof_config *c = fig->trace;
    const roof_row *step = c ? roofline_step(c) : NULL;
    if (!step) {
        snprintf(err, err_len, "%s/roofline.csv: no step row for %s", run->dir, fig->stem);
        return -1;
    }
    int n_types = 0;
    type_share *types = kernel_types(c, &n_types);
    if (!types) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    roof_lines roofs;
    plot_run_roofs(run, &c, 1, &roofs);
    const char *unit;
    double yscale = plot_figure_yscale(&roofs, step->pt.achieved_gflops, &unit);
    plot_file data, stepf, vars;
    int status = -1, drawn_types = 0, hidden = 0, spare = 0;
    plot_span x = {0}, y = {0};
    double hidden_share = 0;
    if (plot_file_open(&data, prefix, ".kernels", err, err_len))
        goto done;
    write_kernels(data.f, c, types, n_types, yscale, unit, &x, &y, &drawn_types);
    for (int k = 0; k < c->n; k++)
        if (is_kernel(&c->rows[k]) && !plot_drawable(&c->rows[k])) {
            hidden++;
            hidden_share += share_of(&c->rows[k]);
        }
    if (plot_file_close(&data, err, err_len))
        goto done;

    if (plot_file_open(&stepf, prefix, ".step", err, err_len))
        goto done;
    plot_span_add(&x, step->pt.ai_dram);
    plot_span_add(&y, step->pt.achieved_gflops);
    fprintf(stepf.f, "# ai_dram achieved (%s)\n%.6g %.6g\n", unit, step->pt.ai_dram,
            step->pt.achieved_gflops * yscale);
    if (plot_file_close(&stepf, err, err_len))
        goto done;

    if (plot_file_open(&vars, prefix, ".vars", err, err_len))
        goto done;
    double main_gflops = step->pt.peak_gflops;
    if (!(main_gflops > 0))
        main_gflops = roof_lines_top_compute(&roofs);
    fprintf(vars.f, "# written by bin/plotdata for scripts/gnuplot/roofline.gp\n");
    plot_var_str(vars.f, "env_name", run->env_name);
    plot_var_str(vars.f, "precision", c->precision);
    plot_write_axes(vars.f, x, y, &roofs, step->ceiling, main_gflops);
    plot_var_num(vars.f, "ntypes", drawn_types);
    for (int t = 0, i = 0; t < n_types; t++) {
        if (!types[t].drawable)
            continue;
        i++;
        plot_var_str_i(vars.f, "type", i, types[t].name);
        plot_var_str_i(vars.f, "color", i, plot_type_color(types[t].name, &spare));
    }
    plot_var_num(vars.f, "ridge_ai", step->pt.ridge_ai);
    write_step_label(vars.f, step, hidden, hidden_share);
    status = plot_file_close(&vars, err, err_len);
done:
    free(types);
    return status;
}
