/* Data of the variability figure: every timed step of one precision as a box
 * per configuration, in percent from the configuration's median, with the
 * repeat it belongs to. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../fmt.h"
#include "../stats.h"
#include "plot_data.h"
#include "plot_out.h"

enum { MAX_REPEATS = 64 };

/* The repeats met so far across the boxes, each with its colour index. */
typedef struct {
    int values[MAX_REPEATS];
    int n;
} repeat_set;

static int repeat_index(repeat_set *r, int repeat)
{
    int k = 0;
    while (k < r->n && r->values[k] != repeat)
        k++;
    if (k == r->n && r->n < MAX_REPEATS)
        r->values[r->n++] = repeat;
    return k < MAX_REPEATS ? k + 1 : MAX_REPEATS;
}

/* Writes one box: its points (x, % from the median, jittered x, repeat index)
 * and returns its summary in *st. -1 out of memory. */
static int write_box(FILE *f, const run_steps *c, int box, repeat_set *repeats, stats_summary *st)
{
    if (stats_describe(c->step_ms, c->n, st))
        return -1;
    fprintf(f, "%s# box %d: x pct_from_median x_jittered repeat\n", box > 1 ? "\n\n" : "", box);
    for (int i = 0; i < c->n; i++) {
        /* golden-ratio offsets spread the points evenly across the box */
        double jitter = fmod(i * 0.6180339887, 1.0) - 0.5;
        fprintf(f, "%d %.6g %.4f %d\n", box, 100 * (c->step_ms[i] / st->median - 1),
                box + 0.5 * jitter, repeat_index(repeats, c->repeat[i]));
    }
    return 0;
}

static void write_vars(FILE *f, const run_model *run, const plot_figure *fig,
                       const run_steps *const *cs, const stats_summary *st, int n,
                       const repeat_set *repeats, double lo, double hi)
{
    fprintf(f, "# written by bin/plotdata for scripts/gnuplot/variability.gp\n");
    plot_var_str(f, "env_name", run->env_name);
    plot_var_str(f, "precision", fig->precision);
    plot_var_num(f, "nbox", n);
    for (int i = 0; i < n; i++) {
        char label[160], note[64], pct[FMT_LEN];
        const run_key *k = &cs[i]->key;
        const char *graph = k->graph ? " graph" : "";
        if (k->world_size > 1)
            snprintf(label, sizeof label, "%s\nb%d x %d ranks%s\n%.4g ms", k->model, k->batch,
                     k->world_size, graph, st[i].median);
        else
            snprintf(label, sizeof label, "%s\nbatch %d%s\n%.4g ms", k->model, k->batch, graph,
                     st[i].median);
        plot_var_str_i(f, "box_label", i + 1, label);
        if (isfinite(st[i].cv))
            snprintf(note, sizeof note, "cv %s", fmt_share(pct, st[i].cv));
        else
            snprintf(note, sizeof note, "n = %d", st[i].n);
        plot_var_str_i(f, "box_note", i + 1, note);
    }
    plot_var_num(f, "nrep", repeats->n);
    for (int k = 0; k < repeats->n; k++) {
        char name[32];
        snprintf(name, sizeof name, "repeat %d", repeats->values[k]);
        plot_var_str_i(f, "rep_name", k + 1, name);
        plot_var_str_i(f, "rep_color", k + 1, plot_series_color(k));
        /* gnuplot's "lc rgb variable" takes the colour as a number */
        plot_var_num_i(f, "rep_rgb", k + 1, (double)strtol(plot_series_color(k) + 1, NULL, 16));
    }
    /* symmetric enough to show both tails, with room for the notes on top */
    double span = fmax(fmax(-lo, hi), 1.0);
    plot_var_num(f, "ymin", fmin(lo, -0.25 * span) - 0.1 * span);
    plot_var_num(f, "ymax", hi + 0.25 * span);
}

int plot_write_variability(const run_model *run, const plot_figure *fig, const char *prefix,
                           char *err, size_t err_len)
{
    const run_steps **cs = malloc(((size_t)run->n_steps + 1) * sizeof *cs);
    stats_summary *st = calloc((size_t)run->n_steps + 1, sizeof *st);
    int n = 0, status = -1;
    if (!cs || !st) {
        snprintf(err, err_len, "out of memory");
        goto done;
    }
    for (int k = 0; k < run->n_steps; k++)
        if (run->steps[k].n > 0 && strcmp(run->steps[k].key.precision, fig->precision) == 0)
            cs[n++] = &run->steps[k];
    plot_file data, vars;
    repeat_set repeats = {0};
    if (plot_file_open(&data, prefix, ".dat", err, err_len))
        goto done;
    double lo = 0, hi = 0;
    for (int i = 0; i < n; i++) {
        if (write_box(data.f, cs[i], i + 1, &repeats, &st[i])) {
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
    write_vars(vars.f, run, fig, cs, st, n, &repeats, lo, hi);
    status = plot_file_close(&vars, err, err_len);
done:
    free(st);
    free(cs);
    return status;
}
