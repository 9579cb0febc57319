/* Data of the line figures: throughput against batch size (summary.csv) and
 * data-parallel scaling against ranks (scaling.csv), one series per model
 * (and scaling mode). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot_data.h"
#include "stats.h"

typedef struct {
    char model[REPORT_NAME_LEN];
    int res;
    char mode[16]; /* scaling only */
} series_key;

typedef struct {
    series_key *items;
    int n;
} series_list;

static series_key key_of(const csv_table *t, int row, bool with_mode)
{
    series_key k = {0};
    report_config c = report_config_of(t, row);
    snprintf(k.model, sizeof k.model, "%s", c.model);
    k.res = c.res;
    if (with_mode)
        snprintf(k.mode, sizeof k.mode, "%s", report_cell(t, row, "mode"));
    return k;
}

static bool key_eq(const series_key *a, const series_key *b)
{
    return a->res == b->res && strcmp(a->model, b->model) == 0 && strcmp(a->mode, b->mode) == 0;
}

/* The distinct series of the rows keep() accepts, in order of appearance.
 * -1 out of memory. */
static int collect_series(const csv_table *t, bool with_mode,
                          bool (*keep)(const csv_table *, int, const char *), const char *arg,
                          series_list *out)
{
    *out = (series_list){0};
    for (int row = 0; t && row < csv_rows(t); row++) {
        if (!keep(t, row, arg))
            continue;
        series_key k = key_of(t, row, with_mode);
        bool seen = false;
        for (int i = 0; i < out->n && !seen; i++)
            seen = key_eq(&out->items[i], &k);
        if (seen)
            continue;
        series_key *p = realloc(out->items, (size_t)(out->n + 1) * sizeof *p);
        if (!p) {
            free(out->items);
            return -1;
        }
        out->items = p;
        out->items[out->n++] = k;
    }
    return 0;
}

/* "resnet50" or, when the model runs at several resolutions, "resnet50 @224";
 * scaling series add their mode. */
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

/* The rows of one series that keep() accepts, smallest `order` first. */
typedef struct {
    const series_key *key;
    bool with_mode;
    bool (*keep)(const csv_table *, int, const char *);
    const char *arg;
} series_filter;

static bool in_series(const csv_table *t, int row, const void *arg)
{
    const series_filter *f = arg;
    series_key k = key_of(t, row, f->with_mode);
    return f->keep(t, row, f->arg) && key_eq(&k, f->key);
}

static int *series_rows(const csv_table *t, const series_key *s, bool with_mode,
                        bool (*keep)(const csv_table *, int, const char *), const char *arg,
                        const char *order, int *n)
{
    series_filter f = {s, with_mode, keep, arg};
    return report_rows_by(t, order, REPORT_ASCENDING, in_series, &f, n);
}

static bool ok_throughput(const csv_table *t, int row, const char *precision)
{
    return strcmp(report_cell(t, row, "precision"), precision) == 0 &&
           report_num(t, row, "images_per_s_median") > 0 && report_num(t, row, "batch") > 0;
}

int plot_write_throughput(const report_run *run, const plot_figure *fig, const char *prefix,
                          char *err, size_t err_len)
{
    const csv_table *t = run->summary;
    series_list s;
    if (collect_series(t, false, ok_throughput, fig->precision, &s)) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    plot_file data, vars;
    int status = -1;
    double bmin = INFINITY, bmax = 0, ymin = INFINITY, ymax = 0;
    if (plot_file_open(&data, prefix, ".dat", err, err_len))
        goto done;
    for (int i = 0; i < s.n; i++) {
        int n;
        int *rows = series_rows(t, &s.items[i], false, ok_throughput, fig->precision, "batch",
                                &n);
        if (!rows) {
            plot_file_abort(&data);
            snprintf(err, err_len, "out of memory");
            goto done;
        }
        fprintf(data.f, "%s# %s @%d: batch images_per_s_median q1 q3 label\n", i ? "\n\n" : "",
                s.items[i].model, s.items[i].res);
        for (int k = 0; k < n; k++) {
            int row = rows[k];
            double b = report_num(t, row, "batch"), m = report_num(t, row, "images_per_s_median");
            double q1 = report_num(t, row, "images_per_s_q1"), q3 = report_num(t, row, "images_per_s_q3");
            double pct = report_num(t, row, "pct_of_peak");
            q1 = isnan(q1) ? m : q1;
            q3 = isnan(q3) ? m : q3;
            bmin = fmin(bmin, b);
            bmax = fmax(bmax, b);
            ymin = fmin(ymin, q1);
            ymax = fmax(ymax, q3);
            char label[48] = "";
            if (isfinite(pct))
                snprintf(label, sizeof label, "%.3g%%", pct);
            fprintf(data.f, "%g %.6g %.6g %.6g ", b, m, q1, q3);
            plot_data_str(data.f, label);
            fputc('\n', data.f);
        }
        free(rows);
    }
    if (s.n == 0)
        fprintf(data.f, "NaN NaN NaN NaN \"\"\n");
    if (plot_file_close(&data, err, err_len))
        goto done;
    if (plot_file_open(&vars, prefix, ".vars", err, err_len))
        goto done;
    fprintf(vars.f, "# written by bin/plotdata for scripts/gnuplot/throughput.gp\n");
    plot_var_str(vars.f, "env_name", run->env);
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
done:
    free(s.items);
    return status;
}

static bool ok_scaling(const csv_table *t, int row, const char *unused)
{
    (void)unused;
    return report_num(t, row, "world_size") > 0 && report_num(t, row, "images_per_s") > 0;
}

/* Median of column `col` over rows[from..to); NaN when none is a number or
 * memory runs out. */
static double median_of(const csv_table *t, const int *rows, int from, int to, const char *col)
{
    double *v = malloc((size_t)(to - from + 1) * sizeof *v);
    if (!v)
        return NAN;
    int n = 0;
    for (int k = from; k < to; k++) {
        double x = report_num(t, rows[k], col);
        if (!isnan(x))
            v[n++] = x;
    }
    stats_summary st;
    double median = n > 0 && stats_describe(v, n, &st) == 0 ? st.median : NAN;
    free(v);
    return median;
}

int plot_write_scaling(const report_run *run, const char *prefix, char *err, size_t err_len)
{
    const csv_table *t = run->scaling;
    series_list s;
    if (collect_series(t, true, ok_scaling, NULL, &s)) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    /* efficiency may be a fraction or a percentage: read the whole column first */
    double eff_max = 0;
    for (int row = 0; t && row < csv_rows(t); row++) {
        double e = report_num(t, row, "efficiency");
        if (e > eff_max)
            eff_max = e;
    }
    double eff_scale = eff_max <= 1.5 ? 100 : 1;
    plot_file data, vars;
    int status = -1;
    double wmax = 1, ymin = INFINITY, ymax = 0;
    if (plot_file_open(&data, prefix, ".dat", err, err_len))
        goto done;
    for (int i = 0; i < s.n; i++) {
        int n;
        int *rows = series_rows(t, &s.items[i], true, ok_scaling, NULL, "world_size", &n);
        if (!rows) {
            plot_file_abort(&data);
            snprintf(err, err_len, "out of memory");
            goto done;
        }
        fprintf(data.f, "%s# %s @%d %s: world_size images_per_s efficiency_pct ideal_images_per_s\n",
                i ? "\n\n" : "", s.items[i].model, s.items[i].res, s.items[i].mode);
        double base = NAN, base_w = NAN;
        for (int k = 0; k < n;) {
            double w = report_num(t, rows[k], "world_size");
            int end = k;
            while (end < n && report_num(t, rows[end], "world_size") == w)
                end++;
            double ips = median_of(t, rows, k, end, "images_per_s");
            double eff = median_of(t, rows, k, end, "efficiency") * eff_scale;
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
        free(rows);
    }
    if (s.n == 0)
        fprintf(data.f, "NaN NaN NaN NaN\n");
    if (plot_file_close(&data, err, err_len))
        goto done;
    if (plot_file_open(&vars, prefix, ".vars", err, err_len))
        goto done;
    fprintf(vars.f, "# written by bin/plotdata for scripts/gnuplot/scaling.gp\n");
    plot_var_str(vars.f, "env_name", run->env);
    write_series_vars(vars.f, &s);
    write_pow2_range(vars.f, 1, wmax);
    if (!(ymax > 0))
        ymin = ymax = 1;
    plot_var_num(vars.f, "ymin", plot_nice_below(ymin / 1.2));
    plot_var_num(vars.f, "ymax", plot_nice_above(ymax * 1.2));
    status = plot_file_close(&vars, err, err_len);
done:
    free(s.items);
    return status;
}
