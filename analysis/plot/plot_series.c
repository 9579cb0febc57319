/* Data of the line figures: throughput against batch size (the summary) and
 * data-parallel scaling against ranks (scaling.csv, with the scaling model's
 * predictions from scaling_model.csv beside the measured points), one series
 * per model (and scaling mode). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../stats.h"
#include "plot_data.h"
#include "plot_out.h"

typedef struct {
    const char *model, *mode; /* scaling: strong or weak; throughput: "graph" or "" (eager) */
    int res;
} series_key;

typedef struct {
    series_key *items;
    int n;
} series_list;

static bool key_eq(const series_key *a, const series_key *b)
{
    return a->res == b->res && strcmp(a->model, b->model) == 0 && strcmp(a->mode, b->mode) == 0;
}

/* Adds k unless it is there. -1 out of memory. */
static int add_series(series_list *s, series_key k)
{
    for (int i = 0; i < s->n; i++)
        if (key_eq(&s->items[i], &k))
            return 0;
    series_key *p = realloc(s->items, (size_t)(s->n + 1) * sizeof *p);
    if (!p)
        return -1;
    s->items = p;
    s->items[s->n++] = k;
    return 0;
}

/* "resnet50" or, when the model runs at several resolutions, "resnet50 @224";
 * series with a mode add it: "(weak)", "(graph)". */
static void series_label(const series_list *s, int i, char *out, size_t len)
{
    int same = 0;
    for (int j = 0; j < s->n; j++)
        same += strcmp(s->items[j].model, s->items[i].model) == 0 &&
                strcmp(s->items[j].mode, s->items[i].mode) == 0;
    int used = snprintf(out, len, "%s", s->items[i].model);
    if (same > 1 && used >= 0 && (size_t)used < len)
        used += snprintf(out + used, len - (size_t)used, " @%d", s->items[i].res);
    if (s->items[i].mode[0] && used >= 0 && (size_t)used < len)
        snprintf(out + used, len - (size_t)used, " (%s)", s->items[i].mode);
}

static void write_series_vars(FILE *f, const series_list *s)
{
    plot_var_num(f, "nseries", s->n);
    for (int i = 0; i < s->n; i++) {
        char name[160];
        series_label(s, i, name, sizeof name);
        plot_var_str_i(f, "series_name", i + 1, name);
        plot_var_str_i(f, "series_color", i + 1, plot_series_color(i));
        plot_var_num_i(f, "series_pt", i + 1, plot_series_point(i));
    }
}

/* Powers of two around [lo, hi], half a step of margin, for a log2 axis. */
static void write_pow2_range(FILE *f, double lo, double hi)
{
    if (!(lo > 0) || !(hi >= lo))
        lo = hi = 1;
    plot_var_num(f, "xmin", pow(2, floor(log2(lo)) - 0.5));
    plot_var_num(f, "xmax", pow(2, ceil(log2(hi)) + 0.5));
}

/* Row indexes ordered by an int key, smallest first, ties in their order. */
typedef struct {
    int key, index;
} keyed;

static int by_key(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->index > y->index) - (x->index < y->index);
}

/* ---- throughput ----------------------------------------------------------- */

static bool ok_throughput(const summary_row *s, const char *precision)
{
    return strcmp(s->precision, precision) == 0 && s->ips_median > 0 && s->batch > 0;
}

static series_key throughput_key(const summary_row *s)
{
    return (series_key){s->model, s->graph ? "graph" : "", s->res};
}

static void write_throughput_row(FILE *f, const summary_row *s, double *bmin, double *bmax,
                                 double *ymin, double *ymax)
{
    double b = s->batch, m = s->ips_median;
    double q1 = isnan(s->ips_q1) ? m : s->ips_q1, q3 = isnan(s->ips_q3) ? m : s->ips_q3;
    *bmin = fmin(*bmin, b);
    *bmax = fmax(*bmax, b);
    *ymin = fmin(*ymin, q1);
    *ymax = fmax(*ymax, q3);
    char label[48] = "";
    if (isfinite(s->pct_of_peak))
        snprintf(label, sizeof label, "%.3g%%", s->pct_of_peak);
    fprintf(f, "%g %.6g %.6g %.6g ", b, m, q1, q3);
    plot_data_str(f, label);
    fputc('\n', f);
}

int plot_write_throughput(const run_model *run, const plot_figure *fig, const char *prefix,
                          char *err, size_t err_len)
{
    const summary *sum = &run->summary;
    series_list s = {0};
    keyed *rows = malloc(((size_t)sum->n + 1) * sizeof *rows);
    plot_file data, vars;
    int status = -1;
    double bmin = INFINITY, bmax = 0, ymin = INFINITY, ymax = 0;
    if (!rows)
        goto oom;
    for (int i = 0; i < sum->n; i++)
        if (ok_throughput(&sum->rows[i], fig->precision) &&
            add_series(&s, throughput_key(&sum->rows[i])))
            goto oom;
    if (plot_file_open(&data, prefix, ".dat", err, err_len))
        goto done;
    for (int i = 0; i < s.n; i++) {
        int n = 0;
        for (int r = 0; r < sum->n; r++) {
            series_key k = throughput_key(&sum->rows[r]);
            if (ok_throughput(&sum->rows[r], fig->precision) && key_eq(&k, &s.items[i]))
                rows[n++] = (keyed){sum->rows[r].batch, r};
        }
        qsort(rows, (size_t)n, sizeof *rows, by_key);
        fprintf(data.f, "%s# %s @%d%s%s: batch images_per_s_median q1 q3 label\n",
                i ? "\n\n" : "", s.items[i].model, s.items[i].res, *s.items[i].mode ? " " : "",
                s.items[i].mode);
        for (int k = 0; k < n; k++)
            write_throughput_row(data.f, &sum->rows[rows[k].index], &bmin, &bmax, &ymin, &ymax);
    }
    if (s.n == 0)
        fprintf(data.f, "NaN NaN NaN NaN \"\"\n");
    if (plot_file_close(&data, err, err_len))
        goto done;
    if (plot_file_open(&vars, prefix, ".vars", err, err_len))
        goto done;
    fprintf(vars.f, "# written by bin/plotdata for scripts/gnuplot/throughput.gp\n");
    plot_var_str(vars.f, "env_name", run->env_name);
    plot_var_str(vars.f, "precision", fig->precision);
    write_series_vars(vars.f, &s);
    write_pow2_range(vars.f, bmin, bmax);
    if (!(ymax > 0))
        ymin = ymax = 1;
    /* a log axis when the models differ by more than 20x, else from zero */
    bool ylog = ymax / ymin > 20;
    plot_var_num(vars.f, "ylog", ylog);
    plot_var_num(vars.f, "ymin", ylog ? plot_nice_below(ymin / 1.2) : 0);
    plot_var_num(vars.f, "ymax", ylog ? plot_nice_above(ymax * 1.3) : ymax * 1.2);
    status = plot_file_close(&vars, err, err_len);
    goto done;
oom:
    snprintf(err, err_len, "out of memory");
done:
    free(rows);
    free(s.items);
    return status;
}

/* ---- scaling -------------------------------------------------------------- */

static bool ok_scaling(const run_scaling *r)
{
    return r->world_size > 0 && r->images_per_s > 0;
}

static series_key scaling_key(const run_scaling *r)
{
    return (series_key){r->model, r->mode, r->res};
}

/* Median of the non-NaN values of one field over rows[from..to); NaN when
 * none or memory runs out. */
static double median_of(const run_scaling *t, const keyed *rows, int from, int to, size_t offset)
{
    double *v = malloc((size_t)(to - from + 1) * sizeof *v);
    if (!v)
        return NAN;
    int n = 0;
    for (int k = from; k < to; k++) {
        double x = *(const double *)((const char *)&t[rows[k].index] + offset);
        if (!isnan(x))
            v[n++] = x;
    }
    stats_summary st;
    double median = n > 0 && stats_describe(v, n, &st) == 0 ? st.median : NAN;
    free(v);
    return median;
}

/* The model's rows of one series under one set of links ("fit" or "links"),
 * by world size: world_size images_per_s efficiency_pct; a NaN line when
 * there are none (gnuplot's index needs every block). */
static void write_prediction_block(FILE *f, const run_model *run, const series_key *k,
                                   const char *link, keyed *rows, double *wmax, double *ymin,
                                   double *ymax)
{
    int n = 0;
    for (int r = 0; r < run->n_predictions; r++) {
        const run_prediction *p = &run->predictions[r];
        if (p->res == k->res && !strcmp(p->model, k->model) && !strcmp(p->mode, k->mode) &&
            !strcmp(p->link, link))
            rows[n++] = (keyed){p->world_size, r};
    }
    qsort(rows, (size_t)n, sizeof *rows, by_key);
    fprintf(f, "# model (%s) %s @%d %s: world_size images_per_s efficiency_pct\n", link, k->model,
            k->res, k->mode);
    for (int i = 0; i < n; i++) {
        const run_prediction *p = &run->predictions[rows[i].index];
        if (i > 0 && rows[i].key == rows[i - 1].key)
            continue; /* one point per world size: the first row */
        *wmax = fmax(*wmax, p->world_size);
        if (p->images_per_s > 0) {
            *ymin = fmin(*ymin, p->images_per_s);
            *ymax = fmax(*ymax, p->images_per_s);
        }
        fprintf(f, "%d %.6g %.6g\n", p->world_size, p->images_per_s > 0 ? p->images_per_s : NAN,
                100.0 * p->efficiency);
    }
    if (n == 0)
        fprintf(f, "NaN NaN NaN\n");
}

int plot_write_scaling(const run_model *run, const char *prefix, char *err, size_t err_len)
{
    const run_scaling *t = run->scaling;
    series_list s = {0};
    size_t cap = (size_t)(run->n_scaling > run->n_predictions ? run->n_scaling
                                                              : run->n_predictions);
    keyed *rows = malloc((cap + 1) * sizeof *rows);
    plot_file data, model, vars;
    int status = -1;
    if (!rows)
        goto oom;
    for (int i = 0; i < run->n_scaling; i++)
        if (ok_scaling(&t[i]) && add_series(&s, scaling_key(&t[i])))
            goto oom;
    /* a configuration the model predicts but nobody measured is a series too */
    for (int i = 0; i < run->n_predictions; i++) {
        const run_prediction *p = &run->predictions[i];
        if (add_series(&s, (series_key){p->model, p->mode, p->res}))
            goto oom;
    }
    /* efficiency may be a fraction or a percentage: read the whole column first */
    double eff_max = 0;
    for (int i = 0; i < run->n_scaling; i++)
        if (t[i].efficiency > eff_max)
            eff_max = t[i].efficiency;
    double eff_scale = eff_max <= 1.5 ? 100 : 1;
    double wmax = 1, ymin = INFINITY, ymax = 0;
    if (plot_file_open(&data, prefix, ".dat", err, err_len))
        goto done;
    for (int i = 0; i < s.n; i++) {
        int n = 0;
        for (int r = 0; r < run->n_scaling; r++) {
            series_key k = scaling_key(&t[r]);
            if (ok_scaling(&t[r]) && key_eq(&k, &s.items[i]))
                rows[n++] = (keyed){t[r].world_size, r};
        }
        qsort(rows, (size_t)n, sizeof *rows, by_key);
        fprintf(data.f, "%s# %s @%d %s: world_size images_per_s efficiency_pct ideal_images_per_s\n",
                i ? "\n\n" : "", s.items[i].model, s.items[i].res, s.items[i].mode);
        double base = NAN, base_w = NAN;
        for (int k = 0; k < n;) {
            double w = rows[k].key;
            int end = k;
            while (end < n && rows[end].key == rows[k].key)
                end++;
            double ips = median_of(t, rows, k, end, offsetof(run_scaling, images_per_s));
            double eff = median_of(t, rows, k, end, offsetof(run_scaling, efficiency)) * eff_scale;
            if (isnan(base)) {
                base = ips;
                base_w = w;
            }
            wmax = fmax(wmax, w);
            ymin = fmin(ymin, ips);
            ymax = fmax(ymax, fmax(ips, base * w / base_w));
            fprintf(data.f, "%g %.6g %.6g %.6g\n", w, ips, eff, base * w / base_w);
            k = end;
        }
        if (n == 0)
            fprintf(data.f, "NaN NaN NaN NaN\n");
    }
    if (s.n == 0)
        fprintf(data.f, "NaN NaN NaN NaN\n");
    if (plot_file_close(&data, err, err_len))
        goto done;
    /* the model's predictions: per series the block of the fit, then the links' */
    if (plot_file_open(&model, prefix, ".model", err, err_len))
        goto done;
    int fit_rows = 0, link_rows = 0;
    for (int r = 0; r < run->n_predictions; r++) {
        fit_rows += !strcmp(run->predictions[r].link, "fit");
        link_rows += !strcmp(run->predictions[r].link, "links");
    }
    for (int i = 0; i < s.n; i++) {
        fprintf(model.f, "%s", i ? "\n\n" : "");
        write_prediction_block(model.f, run, &s.items[i], "fit", rows, &wmax, &ymin, &ymax);
        fprintf(model.f, "\n\n");
        write_prediction_block(model.f, run, &s.items[i], "links", rows, &wmax, &ymin, &ymax);
    }
    if (s.n == 0)
        fprintf(model.f, "NaN NaN NaN\n");
    if (plot_file_close(&model, err, err_len))
        goto done;
    if (plot_file_open(&vars, prefix, ".vars", err, err_len))
        goto done;
    fprintf(vars.f, "# written by bin/plotdata for scripts/gnuplot/scaling.gp\n");
    plot_var_str(vars.f, "env_name", run->env_name);
    write_series_vars(vars.f, &s);
    plot_var_num(vars.f, "model_fit_rows", fit_rows);
    plot_var_num(vars.f, "model_link_rows", link_rows);
    write_pow2_range(vars.f, 1, wmax);
    if (!(ymax > 0) || !(ymin > 0))
        ymin = ymax = 1;
    plot_var_num(vars.f, "ymin", plot_nice_below(ymin / 1.2));
    plot_var_num(vars.f, "ymax", plot_nice_above(ymax * 1.2));
    status = plot_file_close(&vars, err, err_len);
    goto done;
oom:
    snprintf(err, err_len, "out of memory");
done:
    free(rows);
    free(s.items);
    return status;
}
