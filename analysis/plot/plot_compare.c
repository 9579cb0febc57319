/* Data of the combined roofline of several run folders (bin/plotdata
 * --compare): each environment's roof (the compute ceilings its traced steps
 * used and its DRAM/HBM bandwidth) in its colour, and every traced step as a
 * point whose shape names the model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../fmt.h"
#include "../roofline_table.h"
#include "../roofs.h"
#include "plot_data.h"
#include "plot_out.h"

enum { COMPARE_MAX_MODELS = 32, COMPARE_MAX_CEILINGS = 8 };

typedef struct {
    char names[COMPARE_MAX_MODELS][RUN_NAME_LEN];
    int n;
} model_set;

static int model_index(model_set *m, const char *name)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->names[i], name) == 0)
            return i;
    if (m->n == COMPARE_MAX_MODELS)
        return COMPARE_MAX_MODELS - 1; /* beyond: share the last shape */
    snprintf(m->names[m->n], sizeof m->names[0], "%s", name);
    return m->n++;
}

typedef struct {
    char name[48];
    double gflops;
} used_ceiling;

/* The compute ceilings the run's traced steps were measured against. */
static int used_ceilings(const run_model *run, used_ceiling *out)
{
    int n = 0;
    for (int k = 0; k < run->roofline.n; k++) {
        const roof_row *step = roofline_step(&run->roofline.configs[k]);
        if (!step || !step->ceiling[0] || !(step->pt.peak_gflops > 0))
            continue;
        int i = 0;
        while (i < n && strcmp(out[i].name, step->ceiling) != 0)
            i++;
        if (i == n && n < COMPARE_MAX_CEILINGS) {
            snprintf(out[n].name, sizeof out[n].name, "%s", step->ceiling);
            out[n++].gflops = step->pt.peak_gflops;
        }
    }
    return n;
}

/* The DRAM/HBM bandwidth of a run and its label (into label[48]): peaks.csv,
 * else what the analysis used. */
static double run_bandwidth(const run_model *run, char *label)
{
    roof_lines roofs;
    roof_lines_of(run->roofs, run->n_roofs, &roofs);
    const roof_line *m = roof_lines_main_memory(&roofs);
    snprintf(label, 48, "%s", m ? m->label : "DRAM");
    if (m)
        return m->value;
    for (int k = 0; k < run->roofline.n; k++)
        for (int i = 0; i < run->roofline.configs[k].n; i++) {
            double bw = run->roofline.configs[k].rows[i].pt.dram_gbs;
            if (bw > 0)
                return bw;
        }
    return NAN;
}

/* The highest step rate of a run (0 when none). */
static double top_step(const run_model *run)
{
    double top = 0;
    for (int k = 0; k < run->roofline.n; k++) {
        const roof_row *step = roofline_step(&run->roofline.configs[k]);
        if (step)
            top = fmax(top, step->pt.achieved_gflops);
    }
    return top;
}

int plot_write_roofline_compare(const run_model *runs, int n_runs, const char *prefix,
                                char *err, size_t err_len)
{
    model_set models = {0};
    double xlo = INFINITY, xhi = 0, ylo = INFINITY, yhi = 0;
    /* one rate unit for all: from the highest roof or step of any run */
    double top = 0;
    for (int r = 0; r < n_runs; r++) {
        used_ceiling used[COMPARE_MAX_CEILINGS];
        int n_used = used_ceilings(&runs[r], used);
        for (int i = 0; i < n_used; i++)
            top = fmax(top, used[i].gflops);
        top = fmax(top, top_step(&runs[r]));
    }
    const char *unit;
    double yscale = plot_rate_unit(top, &unit);
    plot_file data, vars;
    if (plot_file_open(&data, prefix, ".steps", err, err_len))
        return -1;
    for (int r = 0; r < n_runs; r++) {
        fprintf(data.f, "%s# %s: ai_dram achieved (%s) point_type model\n", r ? "\n\n" : "",
                runs[r].label, unit);
        int drawn = 0;
        for (int k = 0; k < runs[r].roofline.n; k++) {
            const roof_config *c = &runs[r].roofline.configs[k];
            const roof_row *step = roofline_step(c);
            if (!step)
                continue;
            double ai = step->pt.ai_dram, g = step->pt.achieved_gflops;
            if (!(ai > 0) || !(g > 0))
                continue;
            int m = model_index(&models, c->model);
            fprintf(data.f, "%.6g %.6g %d ", ai, g * yscale, plot_series_point(m));
            plot_data_str(data.f, models.names[m]);
            fputc('\n', data.f);
            xlo = fmin(xlo, ai);
            xhi = fmax(xhi, ai);
            ylo = fmin(ylo, g * yscale);
            yhi = fmax(yhi, g * yscale);
            drawn++;
        }
        if (!drawn)
            fprintf(data.f, "NaN NaN 7 \"\"\n");
    }
    if (plot_file_close(&data, err, err_len))
        return -1;
    if (plot_file_open(&vars, prefix, ".vars", err, err_len))
        return -1;
    fprintf(vars.f, "# written by bin/plotdata for scripts/gnuplot/roofline_compare.gp\n");
    plot_var_str(vars.f, "yunit", unit);
    plot_var_num(vars.f, "nenv", n_runs);
    int n_ceil = 0;
    for (int r = 0; r < n_runs; r++) {
        plot_var_str_i(vars.f, "env_name", r + 1, runs[r].label);
        plot_var_str_i(vars.f, "env_color", r + 1, plot_series_color(r));
        char bw_label[48];
        double bw = run_bandwidth(&runs[r], bw_label);
        used_ceiling used[COMPARE_MAX_CEILINGS];
        int n_used = used_ceilings(&runs[r], used);
        double roof_top = 0;
        char env_title[640], value[FMT_LEN];
        size_t t = 0;
        fmt_append(env_title, sizeof env_title, &t, "%s:", runs[r].label);
        for (int i = 0; i < n_used; i++) {
            roof_top = fmax(roof_top, used[i].gflops);
            fmt_gflops(value, used[i].gflops);
            fmt_append(env_title, sizeof env_title, &t, "%s %s %s", i ? "," : "", used[i].name, value);
        }
        if (bw > 0) {
            fmt_gbs(value, bw);
            fmt_append(env_title, sizeof env_title, &t, "%s %s %s", n_used ? "," : "", bw_label, value);
        }
        plot_var_str_i(vars.f, "env_title", r + 1, env_title);
        for (int i = 0; i < n_used; i++) {
            n_ceil++;
            plot_var_num_i(vars.f, "ceil_env", n_ceil, r + 1);
            plot_var_num_i(vars.f, "ceil_compute", n_ceil, 1);
            plot_var_num_i(vars.f, "ceil_value", n_ceil, used[i].gflops * yscale);
            plot_var_num_i(vars.f, "ceil_from", n_ceil, bw > 0 ? used[i].gflops / bw : 0);
            yhi = fmax(yhi, used[i].gflops * yscale);
            /* a decade left of the ridge shows the memory roof's slope */
            if (bw > 0)
                xlo = fmin(xlo, used[i].gflops / bw / 10), xhi = fmax(xhi, used[i].gflops / bw);
        }
        if (bw > 0) {
            n_ceil++;
            plot_var_num_i(vars.f, "ceil_env", n_ceil, r + 1);
            plot_var_num_i(vars.f, "ceil_compute", n_ceil, 0);
            plot_var_num_i(vars.f, "ceil_value", n_ceil, bw * yscale);
            plot_var_num_i(vars.f, "ceil_to", n_ceil, roof_top > 0 ? roof_top / bw : NAN);
        }
    }
    plot_var_num(vars.f, "nceil", n_ceil);
    plot_var_num(vars.f, "nmodels", models.n);
    for (int m = 0; m < models.n; m++) {
        plot_var_str_i(vars.f, "model_name", m + 1, models.names[m]);
        plot_var_num_i(vars.f, "model_pt", m + 1, plot_series_point(m));
    }
    if (!(xhi > 0))
        xlo = 0.1, xhi = 100;
    if (!(yhi > 0))
        ylo = 1, yhi = 1000;
    double xmin = plot_decade_below(xlo / 1.3), xmax = plot_decade_above(xhi * 1.3);
    double ymax = plot_nice_above(yhi * 1.5), ymin = plot_decade_below(ylo / 1.3);
    plot_var_num(vars.f, "xmin", xmin);
    plot_var_num(vars.f, "xmax", xmax / xmin < 100 ? xmin * 100 : xmax);
    plot_var_num(vars.f, "ymin", ymax / ymin < 100 ? ymax / 100 : ymin);
    plot_var_num(vars.f, "ymax", ymax);
    return plot_file_close(&vars, err, err_len);
}
