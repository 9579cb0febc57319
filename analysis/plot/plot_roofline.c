/* Data of the two roofline figures of a run: every kernel of one traced
 * configuration (PLOT_ROOFLINE), and the steps and layer types of every traced
 * configuration of one precision (PLOT_ROOFLINE_MODELS). Points come from
 * roofline.csv (ai_dram, achieved_gflops, time_share); a point without a
 * positive intensity or rate cannot sit on log axes and is counted instead. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot_data.h"
#include "report_fmt.h"

typedef struct {
    double lo, hi;
} span;

static void span_add(span *s, double v)
{
    if (!(v > 0) || !isfinite(v))
        return;
    if (!(s->lo > 0) || v < s->lo)
        s->lo = v;
    if (v > s->hi)
        s->hi = v;
}

static bool drawable(const csv_table *rl, int row)
{
    return report_num(rl, row, "ai_dram") > 0 && report_num(rl, row, "achieved_gflops") > 0;
}

static bool is_level(const csv_table *rl, int row, const char *level)
{
    return strcmp(report_cell(rl, row, "level"), level) == 0;
}

static int find_step_row(const csv_table *rl, const report_config *c)
{
    return report_find(rl, c, "level", "step");
}

/* The rate unit of a figure: from its highest ceiling or point. */
static double figure_yscale(const plot_roofs *roofs, double top_point, const char **unit)
{
    return plot_rate_unit(fmax(plot_roofs_top_compute(roofs), top_point), unit);
}

/* Axis ranges (y in the figure's unit) in whole decades around the points
 * (x: FLOP/byte, y: GFLOP/s), the ridge points and the ceilings' starts, at
 * least two decades wide and at most seven tall; then the ceilings. */
static void write_axes(FILE *f, span x, span y, const plot_roofs *roofs, const char *main_ceiling,
                       double main_gflops)
{
    const char *unit;
    double yscale = figure_yscale(roofs, y.hi, &unit);
    for (int i = 0; i < roofs->n_memory; i++)
        span_add(&x, main_gflops / roofs->memory[i].value);
    const plot_roof *dram = plot_roofs_main_memory(roofs);
    for (int i = 0; dram && i < roofs->n_compute; i++)
        span_add(&x, roofs->compute[i].value / dram->value);
    span_add(&y, plot_roofs_top_compute(roofs));
    if (!(x.lo > 0)) {
        x.lo = 0.1;
        x.hi = 100;
    }
    if (!(y.lo > 0)) {
        y.lo = 1;
        y.hi = 1000;
    }
    double xmin = plot_decade_below(x.lo / 1.3), xmax = plot_decade_above(x.hi * 1.3);
    if (xmax / xmin < 100)
        xmax = xmin * 100;
    double ymax = plot_nice_above(y.hi * yscale * 1.5), ymin = plot_decade_below(y.lo * yscale / 1.3);
    if (ymax / ymin > 1e7)
        ymin = ymax / 1e7;
    if (ymax / ymin < 100)
        ymin = ymax / 100;
    plot_var_num(f, "xmin", xmin);
    plot_var_num(f, "xmax", xmax);
    plot_var_num(f, "ymin", ymin);
    plot_var_num(f, "ymax", ymax);
    plot_write_ceilings(f, roofs, main_ceiling, main_gflops, yscale, unit);
}

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

/* The layer types of the kernel rows, costliest first. NULL out of memory. */
static type_share *kernel_types(const csv_table *rl, const report_rows *kernels, int *n_out)
{
    type_share *types = calloc((size_t)kernels->n + 1, sizeof *types);
    if (!types)
        return NULL;
    int n = 0;
    for (int k = 0; k < kernels->n; k++) {
        int row = kernels->rows[k];
        const char *t = report_cell(rl, row, "layer_type");
        int i = 0;
        while (i < n && strcmp(types[i].name, t) != 0)
            i++;
        if (i == n)
            types[n++] = (type_share){.name = t};
        double share = report_num(rl, row, "time_share");
        types[i].share += isnan(share) ? 0 : share;
        types[i].drawable += drawable(rl, row);
    }
    qsort(types, (size_t)n, sizeof *types, by_share);
    *n_out = n;
    return types;
}

static void write_step_label(FILE *f, const csv_table *rl, int step, int hidden, double hidden_share)
{
    char ai[FMT_LEN], gf[FMT_LEN], pct[FMT_LEN], label[512];
    fmt_gflops(gf, report_num(rl, step, "achieved_gflops"));
    const char *source = report_cell(rl, step, "source");
    int used = snprintf(label, sizeof label,
                        "whole step: %s FLOP/B, %s = %s of attainable; FLOPs and bytes: %s",
                        fmt_num(ai, report_num(rl, step, "ai_dram")), gf,
                        fmt_pct(pct, report_num(rl, step, "pct_of_attainable")),
                        *source ? source : "unknown source");
    if (hidden > 0 && used > 0 && (size_t)used < sizeof label)
        snprintf(label + used, sizeof label - (size_t)used,
                 "\n%d kernel(s), %.1f%% of the time, have no FLOPs or bytes and are not drawn",
                 hidden, 100 * hidden_share);
    plot_var_str(f, "step_label", label);
}

int plot_write_roofline(const report_run *run, const plot_figure *fig, const char *prefix,
                        char *err, size_t err_len)
{
    const csv_table *rl = run->roofline;
    int step = find_step_row(rl, &fig->config);
    if (step < 0) {
        snprintf(err, err_len, "%s/roofline.csv: no step row for %s", run->dir, fig->stem);
        return -1;
    }
    report_rows kernels = {0};
    for (int row = 0; row < csv_rows(rl); row++)
        if (is_level(rl, row, "kernel") && report_row_is(rl, row, &fig->config) &&
            report_rows_push(&kernels, row)) {
            report_rows_free(&kernels);
            snprintf(err, err_len, "out of memory");
            return -1;
        }
    int n_types = 0;
    type_share *types = kernel_types(rl, &kernels, &n_types);
    if (!types) {
        report_rows_free(&kernels);
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    plot_roofs roofs;
    plot_run_roofs(run, step, &roofs);
    const char *unit;
    double yscale = figure_yscale(&roofs, report_num(rl, step, "achieved_gflops"), &unit);
    plot_file data, stepf, vars;
    int status = -1;
    if (plot_file_open(&data, prefix, ".kernels", err, err_len))
        goto done;
    span x = {0}, y = {0};
    int hidden = 0, drawn_types = 0, spare = 0;
    double hidden_share = 0;
    for (int t = 0; t < n_types; t++) {
        if (!types[t].drawable)
            continue;
        fprintf(data.f, "%s# %s: ai_dram achieved (%s) time_share\n", drawn_types ? "\n\n" : "",
                types[t].name, unit);
        drawn_types++;
        for (int k = 0; k < kernels.n; k++) {
            int row = kernels.rows[k];
            if (strcmp(report_cell(rl, row, "layer_type"), types[t].name) != 0 || !drawable(rl, row))
                continue;
            double ai = report_num(rl, row, "ai_dram"), g = report_num(rl, row, "achieved_gflops");
            double share = report_num(rl, row, "time_share");
            span_add(&x, ai);
            span_add(&y, g);
            fprintf(data.f, "%.6g %.6g %.6g\n", ai, g * yscale, isnan(share) ? 0 : share);
        }
    }
    for (int k = 0; k < kernels.n; k++)
        if (!drawable(rl, kernels.rows[k])) {
            hidden++;
            double share = report_num(rl, kernels.rows[k], "time_share");
            hidden_share += isnan(share) ? 0 : share;
        }
    if (drawn_types == 0)
        fprintf(data.f, "# no kernel has both FLOPs and bytes\nNaN NaN 0\n");
    if (plot_file_close(&data, err, err_len))
        goto done;

    if (plot_file_open(&stepf, prefix, ".step", err, err_len))
        goto done;
    double step_ai = report_num(rl, step, "ai_dram"), step_g = report_num(rl, step, "achieved_gflops");
    span_add(&x, step_ai);
    span_add(&y, step_g);
    fprintf(stepf.f, "# ai_dram achieved (%s)\n%.6g %.6g\n", unit, step_ai, step_g * yscale);
    if (plot_file_close(&stepf, err, err_len))
        goto done;

    if (plot_file_open(&vars, prefix, ".vars", err, err_len))
        goto done;
    const char *main_ceiling = report_cell(rl, step, "peak_ceiling");
    double main_gflops = report_num(rl, step, "peak_gflops");
    if (!(main_gflops > 0))
        main_gflops = plot_roofs_top_compute(&roofs);
    double ridge = report_num(rl, step, "ridge_ai");
    fprintf(vars.f, "# written by bin/plotdata for scripts/gnuplot/roofline.gp\n");
    plot_var_str(vars.f, "env_name", run->env);
    plot_var_str(vars.f, "precision", fig->config.precision);
    write_axes(vars.f, x, y, &roofs, main_ceiling, main_gflops);
    plot_var_num(vars.f, "ntypes", drawn_types);
    for (int t = 0, i = 0; t < n_types; t++) {
        if (!types[t].drawable)
            continue;
        i++;
        plot_var_str_i(vars.f, "type", i, types[t].name);
        plot_var_str_i(vars.f, "color", i, plot_type_color(types[t].name, &spare));
    }
    plot_var_num(vars.f, "ridge_ai", ridge);
    write_step_label(vars.f, rl, step, hidden, hidden_share);
    status = plot_file_close(&vars, err, err_len);
done:
    free(types);
    report_rows_free(&kernels);
    return status;
}

/* Series name: the model, with the batch when the model has several traced
 * configurations in this precision. */
static void series_name(const report_configs *cs, int i, char *out, size_t len)
{
    int same_model = 0;
    for (int j = 0; j < cs->n; j++)
        same_model += strcmp(cs->items[j].model, cs->items[i].model) == 0;
    if (same_model > 1)
        snprintf(out, len, "%s b%d", cs->items[i].model, cs->items[i].batch);
    else
        snprintf(out, len, "%s", cs->items[i].model);
}

/* Layer types under 5% of the step are drawn without a name. */
#define MODELS_LABEL_SHARE 0.05

int plot_write_roofline_models(const report_run *run, const plot_figure *fig,
                               const char *prefix, char *err, size_t err_len)
{
    const csv_table *rl = run->roofline;
    report_configs all, cs = {0};
    if (report_configs_distinct(rl, plot_is_step_row, &all)) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    /* this precision's configurations whose step can be drawn */
    cs.items = all.items;
    for (int i = 0; i < all.n; i++) {
        int step = find_step_row(rl, &all.items[i]);
        if (strcmp(all.items[i].precision, fig->precision) == 0 && drawable(rl, step))
            cs.items[cs.n++] = all.items[i];
    }
    /* one roof for all: the first configuration's (they share the precision) */
    int first_step = cs.n ? find_step_row(rl, &cs.items[0]) : -1;
    plot_roofs roofs;
    plot_run_roofs(run, first_step, &roofs);
    double fastest = 0;
    for (int i = 0; i < cs.n; i++)
        fastest = fmax(fastest, report_num(rl, find_step_row(rl, &cs.items[i]), "achieved_gflops"));
    const char *unit;
    double yscale = figure_yscale(&roofs, fastest, &unit);
    plot_file types, steps, vars;
    int status = -1;
    span x = {0}, y = {0};
    if (plot_file_open(&types, prefix, ".types", err, err_len))
        goto done;
    if (plot_file_open(&steps, prefix, ".steps", err, err_len)) {
        plot_file_abort(&types);
        goto done;
    }
    for (int i = 0; i < cs.n; i++) {
        int step = find_step_row(rl, &cs.items[i]);
        double ai = report_num(rl, step, "ai_dram"), g = report_num(rl, step, "achieved_gflops");
        span_add(&x, ai);
        span_add(&y, g);
        fprintf(steps.f, "%s# %s: ai_dram achieved (%s)\n%.6g %.6g\n", i ? "\n\n" : "",
                cs.items[i].model, unit, ai, g * yscale);
        fprintf(types.f, "%s# %s: ai_dram achieved (%s) time_share label\n", i ? "\n\n" : "",
                cs.items[i].model, unit);
        int drawn = 0;
        for (int row = 0; row < csv_rows(rl); row++) {
            if (!is_level(rl, row, "layer_type") || !report_row_is(rl, row, &cs.items[i]) ||
                !drawable(rl, row))
                continue;
            double tai = report_num(rl, row, "ai_dram"), tg = report_num(rl, row, "achieved_gflops");
            double share = report_num(rl, row, "time_share");
            span_add(&x, tai);
            span_add(&y, tg);
            fprintf(types.f, "%.6g %.6g %.6g ", tai, tg * yscale, isnan(share) ? 0 : share);
            plot_data_str(types.f, share >= MODELS_LABEL_SHARE ? report_cell(rl, row, "name") : "");
            fputc('\n', types.f);
            drawn++;
        }
        if (!drawn)
            fprintf(types.f, "NaN NaN 0 \"\"\n");
    }
    if (plot_file_close(&types, err, err_len)) {
        plot_file_abort(&steps);
        goto done;
    }
    if (plot_file_close(&steps, err, err_len))
        goto done;
    if (plot_file_open(&vars, prefix, ".vars", err, err_len))
        goto done;
    double main_gflops = report_num(rl, first_step, "peak_gflops");
    if (!(main_gflops > 0))
        main_gflops = plot_roofs_top_compute(&roofs);
    fprintf(vars.f, "# written by bin/plotdata for scripts/gnuplot/roofline_models.gp\n");
    plot_var_str(vars.f, "env_name", run->env);
    plot_var_str(vars.f, "precision", fig->precision);
    write_axes(vars.f, x, y, &roofs, report_cell(rl, first_step, "peak_ceiling"), main_gflops);
    plot_var_num(vars.f, "nseries", cs.n);
    for (int i = 0; i < cs.n; i++) {
        char name[160];
        series_name(&cs, i, name, sizeof name);
        plot_var_str_i(vars.f, "series_name", i + 1, name);
        plot_var_str_i(vars.f, "series_color", i + 1, plot_series_color(i));
    }
    plot_var_num(vars.f, "ridge_ai", report_num(rl, first_step, "ridge_ai"));
    plot_var_str(vars.f, "source", report_cell(rl, first_step, "source"));
    status = plot_file_close(&vars, err, err_len);
done:
    report_configs_free(&all);
    return status;
}
