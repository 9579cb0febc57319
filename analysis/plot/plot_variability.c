/* Data of the variability figure: every timed step of one precision
 * (steps.csv) as a box per configuration, in percent from the
 * configuration's median, with the repeat it belongs to. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot_data.h"
#include "report_fmt.h"
#include "stats.h"

/* Rank 0 of each step (data-parallel runs write one row per rank). */
static bool ok_step(const csv_table *t, int row, const char *precision)
{
    double rank = report_num(t, row, "rank");
    return strcmp(report_cell(t, row, "precision"), precision) == 0 &&
           report_num(t, row, "step_ms") > 0 && (isnan(rank) || rank == 0);
}

static bool same_step_config(const csv_table *t, int row, const report_config *c, double world)
{
    double w = report_num(t, row, "world_size");
    return report_row_is(t, row, c) && (isnan(w) ? 1 : w) == world;
}

typedef struct {
    report_config config;
    double world;
} step_config;

/* Writes one box: its points (x, % from the median, jittered x, repeat index)
 * and returns its summary in *st. -1 out of memory. */
static int write_box(FILE *f, const csv_table *t, const step_config *c, int box,
                     const char *precision, double *repeats, int *n_repeats, stats_summary *st)
{
    int n = 0;
    double *ms = malloc(((size_t)csv_rows(t) + 1) * sizeof *ms);
    int *rep = malloc(((size_t)csv_rows(t) + 1) * sizeof *rep);
    if (!ms || !rep) {
        free(ms);
        free(rep);
        return -1;
    }
    for (int row = 0; row < csv_rows(t); row++) {
        if (!ok_step(t, row, precision) || !same_step_config(t, row, &c->config, c->world))
            continue;
        double r = report_num(t, row, "repeat");
        int k = 0;
        while (k < *n_repeats && repeats[k] != r)
            k++;
        if (k == *n_repeats && *n_repeats < 64)
            repeats[(*n_repeats)++] = r;
        rep[n] = k < 64 ? k + 1 : 64;
        ms[n++] = report_num(t, row, "step_ms");
    }
    if (stats_describe(ms, n, st)) {
        free(ms);
        free(rep);
        return -1;
    }
    fprintf(f, "%s# box %d: x pct_from_median x_jittered repeat\n", box > 1 ? "\n\n" : "", box);
    for (int i = 0; i < n; i++) {
        /* golden-ratio offsets spread the points evenly across the box */
        double jitter = fmod(i * 0.6180339887, 1.0) - 0.5;
        fprintf(f, "%d %.6g %.4f %d\n", box, 100 * (ms[i] / st->median - 1), box + 0.5 * jitter,
                rep[i]);
    }
    free(ms);
    free(rep);
    return 0;
}

int plot_write_variability(const report_run *run, const plot_figure *fig, const char *prefix,
                           char *err, size_t err_len)
{
    const csv_table *t = run->steps;
    step_config *cs = malloc(((size_t)csv_rows(t) + 1) * sizeof *cs);
    if (!cs) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    int n = 0;
    for (int row = 0; row < csv_rows(t); row++) {
        if (!ok_step(t, row, fig->precision))
            continue;
        step_config c = {report_config_of(t, row), report_num(t, row, "world_size")};
        c.world = isnan(c.world) ? 1 : c.world;
        bool seen = false;
        for (int i = 0; i < n && !seen; i++)
            seen = report_config_eq(&cs[i].config, &c.config) && cs[i].world == c.world;
        if (!seen)
            cs[n++] = c;
    }
    plot_file data, vars;
    int status = -1;
    double repeats[64];
    int n_repeats = 0;
    stats_summary *st = calloc((size_t)n + 1, sizeof *st);
    if (!st) {
        snprintf(err, err_len, "out of memory");
        goto done;
    }
    if (plot_file_open(&data, prefix, ".dat", err, err_len))
        goto done;
    double lo = 0, hi = 0;
    for (int i = 0; i < n; i++) {
        if (write_box(data.f, t, &cs[i], i + 1, fig->precision, repeats, &n_repeats, &st[i])) {
            plot_file_abort(&data);
            snprintf(err, err_len, "out of memory");
            goto done;
        }
        lo = fmin(lo, 100 * (st[i].min / st[i].median - 1));
        hi = fmax(hi, 100 * (st[i].max / st[i].median - 1));
    }
    if (n == 0)
        fprintf(data.f, "NaN NaN NaN 1\n");
    if (plot_file_close(&data, err, err_len))
        goto done;
    if (plot_file_open(&vars, prefix, ".vars", err, err_len))
        goto done;
    fprintf(vars.f, "# written by bin/plotdata for scripts/gnuplot/variability.gp\n");
    plot_var_str(vars.f, "env_name", run->env);
    plot_var_str(vars.f, "precision", fig->precision);
    plot_var_num(vars.f, "nbox", n);
    for (int i = 0; i < n; i++) {
        char label[160], note[64];
        const report_config *c = &cs[i].config;
        if (cs[i].world > 1)
            snprintf(label, sizeof label, "%s\nb%d x %g ranks\n%.4g ms", c->model, c->batch,
                     cs[i].world, st[i].median);
        else
            snprintf(label, sizeof label, "%s\nbatch %d\n%.4g ms", c->model, c->batch, st[i].median);
        plot_var_str_i(vars.f, "box_label", i + 1, label);
        char pct[FMT_LEN];
        if (isfinite(st[i].cv))
            snprintf(note, sizeof note, "cv %s", fmt_share(pct, st[i].cv));
        else
            snprintf(note, sizeof note, "n = %d", st[i].n);
        plot_var_str_i(vars.f, "box_note", i + 1, note);
    }
    plot_var_num(vars.f, "nrep", n_repeats);
    for (int k = 0; k < n_repeats; k++) {
        char name[32];
        snprintf(name, sizeof name, "repeat %g", repeats[k]);
        plot_var_str_i(vars.f, "rep_name", k + 1, name);
        plot_var_str_i(vars.f, "rep_color", k + 1, plot_series_color(k));
        /* gnuplot's "lc rgb variable" takes the colour as a number */
        plot_var_num_i(vars.f, "rep_rgb", k + 1, (double)strtol(plot_series_color(k) + 1, NULL, 16));
    }
    /* symmetric enough to show both tails, with room for the notes on top */
    double span = fmax(fmax(-lo, hi), 1.0);
    plot_var_num(vars.f, "ymin", fmin(lo, -0.25 * span) - 0.1 * span);
    plot_var_num(vars.f, "ymax", hi + 0.25 * span);
    status = plot_file_close(&vars, err, err_len);
done:
    free(st);
    free(cs);
    return status;
}

