#include "summary.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../models/cost.h"
#include "../models/zoo.h"
#include "stats.h"

double summary_analytic_gflop(const char *model, int res, int batch, const char *prec_name)
{
    const model_info *info = zoo_find(model);
    precision prec;
    /* the programs' own bounds; beyond them the int64 counts could overflow */
    if (!info || !precision_parse(prec_name, &prec) || res < zoo_min_res(model) ||
        res > ZOO_MAX_RES || batch < 1 || batch > (1 << 20))
        return NAN;
    network net;
    if (zoo_build(&net, model, res, info->default_classes) != NET_OK)
        return NAN;
    step_cost c = cost_step(&net, batch, prec, NULL);
    net_free(&net);
    return c.step_flops / 1e9;
}

/* configs.csv columns this stage reads. */
static const char *const config_columns[] = {"model", "res", "batch", "precision", "status",
                                             NULL};
enum { C_MODEL, C_RES, C_BATCH, C_PREC, C_STATUS, C_COUNT };

typedef struct {
    const csv_table *t;
    int cols[C_COUNT];
    int col_repeat;   /* -1 without the column: every row is a timed repeat */
    int *res, *batch; /* parsed per row */
    bool *used;       /* matched by a configuration with step rows */
} config_rows;

static int config_rows_read(config_rows *c, const csv_table *t, const char *path, char *err,
                            size_t err_len)
{
    int n = csv_rows(t);
    c->t = t;
    c->res = malloc(((size_t)n + 1) * sizeof *c->res);
    c->batch = malloc(((size_t)n + 1) * sizeof *c->batch);
    c->used = calloc((size_t)n + 1, sizeof *c->used);
    if (!c->res || !c->batch || !c->used) {
        snprintf(err, err_len, "%s: out of memory", path);
        return -1;
    }
    if (csv_require(t, path, config_columns, c->cols, err, err_len))
        return -1;
    c->col_repeat = csv_col(t, "repeat");
    for (int i = 0; i < n; i++) {
        double res, batch;
        if (csv_get_num(t, i, c->cols[C_RES], path, true, &res, err, err_len) ||
            csv_get_num(t, i, c->cols[C_BATCH], path, true, &batch, err, err_len))
            return -1;
        c->res[i] = (int)fmin(fmax(res, -1), 1e9);
        c->batch[i] = (int)fmin(fmax(batch, -1), 1e9);
    }
    return 0;
}

static void config_rows_free(config_rows *c)
{
    free(c->res);
    free(c->batch);
    free(c->used);
}

static bool config_matches(const config_rows *c, int i, const char *model, int res, int batch,
                           const char *precision)
{
    return c->res[i] == res && c->batch[i] == batch &&
           strcmp(csv_cell(c->t, i, c->cols[C_MODEL]), model) == 0 &&
           strcmp(csv_cell(c->t, i, c->cols[C_PREC]), precision) == 0;
}

/* "ok" when every timed attempt was, else the first one's status that was
 * not; a trace pass that failed is added after it ("ok; trace: failed (exit
 * 1)"), since the step times stand without it. Marks the rows it read and
 * returns the number of timed attempts. */
static int config_status(config_rows *c, const char *model, int res, int batch,
                         const char *precision, char *status)
{
    int timed = 0;
    const char *first_bad = NULL, *trace_bad = NULL;
    for (int i = 0; c->t && i < csv_rows(c->t); i++) {
        if (!config_matches(c, i, model, res, batch, precision))
            continue;
        c->used[i] = true;
        const char *s = csv_cell(c->t, i, c->cols[C_STATUS]);
        bool trace = strcmp(csv_cell(c->t, i, c->col_repeat), "trace") == 0;
        bool ok = strcmp(s, "ok") == 0;
        if (trace && !ok && !trace_bad)
            trace_bad = s;
        if (!trace && !ok && !first_bad)
            first_bad = s;
        timed += !trace;
    }
    snprintf(status, SUMMARY_STATUS_LEN, "%s%s%s", first_bad ? first_bad : "ok",
             trace_bad ? "; trace: " : "", trace_bad ? trace_bad : "");
    return timed;
}

static summary_row empty_row(void)
{
    return (summary_row){.repeats = -1, .iters = -1, .world_size = -1, .ips_median = NAN,
                         .ips_q1 = NAN, .ips_q3 = NAN, .step_ms_median = NAN,
                         .analytic_gflop = NAN, .achieved_tflops = NAN, .peak_gflops = NAN,
                         .pct_of_peak = NAN, .mfu = NAN, .mem_bound_share = NAN};
}

/* Everything computed from the key alone: FLOPs, roof, trace. */
static void add_model_columns(summary_row *s, const roofline *rl, const roofs *r)
{
    s->analytic_gflop = summary_analytic_gflop(s->model, s->res, s->batch, s->precision);
    if (r) {
        roof_precision_ceiling(r, s->precision, s->ceiling);
        s->peak_gflops = roofs_peak(r, s->ceiling);
    }
    /* GFLOP per ms is TFLOP/s */
    s->achieved_tflops = s->analytic_gflop / s->step_ms_median;
    s->pct_of_peak = 100.0 * s->achieved_tflops * 1e3 / s->peak_gflops;
    s->mfu = s->pct_of_peak;
    const roof_config *rc = roofline_find(rl, s->env, s->model, s->res, s->batch, s->precision);
    if (rc)
        s->mem_bound_share = rc->mem_bound_share;
}

static int measured_row(summary_row *s, const step_config *c)
{
    s->env = c->env;
    s->backend = c->backend;
    s->model = c->model;
    s->precision = c->precision;
    s->res = c->res;
    s->batch = c->batch;
    s->world_size = c->world_size;
    s->repeats = c->repeats;
    s->iters = c->iters;
    double *ips = malloc(((size_t)c->n + 1) * sizeof *ips);
    if (!ips)
        return -1;
    for (int i = 0; i < c->n; i++) /* a row without images_per_s: from the batch */
        ips[i] = isfinite(c->images_per_s[i]) ? c->images_per_s[i] : c->batch * 1e3 / c->step_ms[i];
    stats_summary st;
    int rc = stats_describe(ips, c->n, &st);
    s->ips_median = st.median;
    s->ips_q1 = st.q1;
    s->ips_q3 = st.q3;
    if (!rc)
        rc = stats_describe(c->step_ms, c->n, &st);
    s->step_ms_median = st.median;
    free(ips);
    return rc;
}

int summary_build(const step_table *steps, const csv_table *configs, const char *configs_path,
                  const roofline *rl, const roofs *r, summary *out, char *err, size_t err_len)
{
    *out = (summary){0};
    config_rows cr = {0};
    int n_configs = configs ? csv_rows(configs) : 0;
    int n_steps = steps ? steps->n : 0;
    int rc = -1;
    out->rows = calloc((size_t)(n_steps + n_configs) + 1, sizeof *out->rows);
    if (!out->rows) {
        snprintf(err, err_len, "summary: out of memory");
        goto done;
    }
    if (configs && config_rows_read(&cr, configs, configs_path, err, err_len))
        goto done;
    for (int k = 0; k < n_steps; k++) {
        summary_row *s = &out->rows[out->n++];
        *s = empty_row();
        if (measured_row(s, &steps->configs[k])) {
            snprintf(err, err_len, "summary: out of memory");
            goto done;
        }
        config_status(&cr, s->model, s->res, s->batch, s->precision, s->status);
        add_model_columns(s, rl, r);
    }
    /* attempts without a step row: failed or skipped, kept with their status */
    for (int i = 0; i < n_configs; i++) {
        if (cr.used[i])
            continue;
        summary_row *s = &out->rows[out->n++];
        *s = empty_row();
        s->env = n_steps ? steps->configs[0].env : "";
        s->backend = "";
        s->model = csv_cell(configs, i, cr.cols[C_MODEL]);
        s->precision = csv_cell(configs, i, cr.cols[C_PREC]);
        s->res = cr.res[i];
        s->batch = cr.batch[i];
        s->repeats = config_status(&cr, s->model, s->res, s->batch, s->precision, s->status);
        add_model_columns(s, rl, r);
    }
    rc = 0;
done:
    config_rows_free(&cr);
    if (rc)
        summary_free(out);
    return rc;
}

void summary_free(summary *s)
{
    free(s->rows);
    *s = (summary){0};
}

static void put_int(FILE *f, int v)
{
    if (v >= 0)
        fprintf(f, "%d", v);
}

static void put_row(FILE *f, const summary_row *s)
{
    const char *keys[] = {s->env, s->backend, s->model};
    for (int i = 0; i < 3; i++) {
        csv_put_field(f, keys[i]);
        fputc(',', f);
    }
    fprintf(f, "%d,%d,", s->res, s->batch);
    csv_put_field(f, s->precision);
    fputc(',', f);
    const int counts[] = {s->world_size, s->repeats, s->iters};
    for (int i = 0; i < 3; i++) {
        put_int(f, counts[i]);
        fputc(',', f);
    }
    const double v[] = {s->ips_median, s->ips_q1, s->ips_q3, s->step_ms_median,
                        s->analytic_gflop, s->achieved_tflops};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        csv_put_num(f, v[i]);
        fputc(',', f);
    }
    csv_put_field(f, s->ceiling);
    fputc(',', f);
    const double w[] = {s->peak_gflops, s->pct_of_peak, s->mfu, s->mem_bound_share};
    for (size_t i = 0; i < sizeof w / sizeof *w; i++) {
        csv_put_num(f, w[i]);
        fputc(',', f);
    }
    csv_put_field(f, s->status);
    fputc('\n', f);
}

int summary_write(const summary *s, const char *path, char *err, size_t err_len)
{
    char tmp[4096];
    FILE *f = csv_create(path, tmp, sizeof tmp, err, err_len);
    if (!f)
        return -1;
    fputs(SUMMARY_CSV_HEADER "\n", f);
    for (int i = 0; s && i < s->n; i++)
        put_row(f, &s->rows[i]);
    return csv_commit(f, tmp, path, err, err_len);
}
