#include "roofline_table.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Columns of kernels.csv this stage reads, in the order of enum kcol. */
static const char *const kernel_columns[] = {
    "env", "model", "res", "batch", "precision", "kernel", "layer", "layer_type", "phase",
    "duration_ns", "flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor",
    "dram_read_bytes", "dram_write_bytes", "l2_bytes", "source", NULL};
enum kcol {
    K_ENV, K_MODEL, K_RES, K_BATCH, K_PREC, K_KERNEL, K_LAYER, K_LTYPE, K_PHASE, K_DUR,
    K_F64, K_F32, K_F16, K_TENSOR, K_DRAM_R, K_DRAM_W, K_L2, K_SOURCE, K_COUNT
};

/* One kernels.csv row, its numbers parsed (NaN = empty). */
typedef struct {
    int row;
    double num[K_COUNT]; /* only the numeric columns are set */
} kernel_in;

/* The sums a point is made of; NaN until a measured value is added, so a
 * column empty in every row stays "not measured". */
typedef struct {
    double rows, duration_ns, fp64, fp32, fp16, tensor, dram_bytes, l2_bytes;
} sums;

static void add(double *acc, double v)
{
    if (!isnan(v))
        *acc = isnan(*acc) ? v : *acc + v;
}

static sums sums_empty(void)
{
    return (sums){0, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
}

static void sums_add_kernel(sums *s, const kernel_in *k)
{
    s->rows += 1;
    add(&s->duration_ns, k->num[K_DUR]);
    add(&s->fp64, k->num[K_F64]);
    add(&s->fp32, k->num[K_F32]);
    add(&s->fp16, k->num[K_F16]);
    add(&s->tensor, k->num[K_TENSOR]);
    add(&s->dram_bytes, k->num[K_DRAM_R]);
    add(&s->dram_bytes, k->num[K_DRAM_W]);
    add(&s->l2_bytes, k->num[K_L2]);
}

static double total_flops(const sums *s)
{
    double f = NAN;
    add(&f, s->fp64);
    add(&f, s->fp32);
    add(&f, s->fp16);
    add(&f, s->tensor);
    return f;
}

/* ---- reading ---------------------------------------------------------- */

static int parse_rows(const csv_table *t, const char *path, const int *cols, kernel_in *in,
                      char *err, size_t err_len)
{
    static const int numeric[] = {K_RES,  K_BATCH,  K_DUR,    K_F64, K_F32,
                                  K_F16,  K_TENSOR, K_DRAM_R, K_DRAM_W, K_L2};
    for (int i = 0; i < csv_rows(t); i++) {
        in[i].row = i;
        for (size_t j = 0; j < sizeof numeric / sizeof *numeric; j++) {
            int c = numeric[j];
            bool required = c == K_RES || c == K_BATCH;
            double *v = &in[i].num[c];
            if (csv_get_num(t, i, cols[c], path, required, v, err, err_len))
                return -1;
            if (*v < 0 || (required && (*v != floor(*v) || *v < 1 || *v > 1e9))) {
                snprintf(err, err_len, "%s:%d: %s '%s' is out of range (expected %s)", path,
                         csv_line(t, i), kernel_columns[c], csv_cell(t, i, cols[c]),
                         required ? "a whole number >= 1" : "a value >= 0, or empty");
                return -1;
            }
        }
    }
    return 0;
}

static bool same_config(const csv_table *t, const int *cols, int a, int b)
{
    static const int key[] = {K_ENV, K_MODEL, K_RES, K_BATCH, K_PREC};
    for (size_t j = 0; j < sizeof key / sizeof *key; j++)
        if (strcmp(csv_cell(t, a, cols[key[j]]), csv_cell(t, b, cols[key[j]])) != 0)
            return false;
    return true;
}

/* ---- grouping one configuration's rows -------------------------------- */

typedef struct {
    const csv_table *t;
    const int *cols;
} sort_ctx;

static int cmp_text(const sort_ctx *c, int a, int b, int col)
{
    return strcmp(csv_cell(c->t, a, c->cols[col]), csv_cell(c->t, b, c->cols[col]));
}

/* qsort has no context argument; the table rides along in each element. */
typedef struct {
    const sort_ctx *ctx;
    int row;
} keyed;

static int cmp_kernel_key(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    int d = cmp_text(a->ctx, a->row, b->row, K_KERNEL);
    if (!d)
        d = cmp_text(a->ctx, a->row, b->row, K_LAYER);
    if (!d)
        d = cmp_text(a->ctx, a->row, b->row, K_PHASE);
    return d ? d : (a->row > b->row) - (a->row < b->row);
}

static int cmp_int(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    return (a > b) - (a < b);
}

static int cmp_cstr(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

static int count_repeats(const csv_table *t, int col_repeat, const int *rows, int n)
{
    if (col_repeat < 0)
        return 1;
    const char **v = malloc((size_t)n * sizeof *v);
    if (!v)
        return -1;
    for (int i = 0; i < n; i++)
        v[i] = csv_cell(t, rows[i], col_repeat);
    qsort(v, (size_t)n, sizeof *v, cmp_cstr);
    int distinct = n > 0;
    for (int i = 1; i < n; i++)
        distinct += strcmp(v[i], v[i - 1]) != 0;
    free(v);
    return distinct;
}

/* Fills a row's point from its sums, per traced step. */
static void finish_row(roof_row *r, const sums *s, int repeats, const roofs *rf)
{
    double per = 1.0 / repeats;
    r->count = s->rows * per;
    r->pt = (roof_point){
        .flops = total_flops(s) * per,
        .dram_bytes = s->dram_bytes * per,
        .l2_bytes = s->l2_bytes * per,
        .duration_ns = s->duration_ns * per,
        .peak_gflops = roofs_peak(rf, r->ceiling),
        .dram_gbs = rf->dram_gbs,
        .l2_gbs = rf->l2_gbs,
    };
    roof_point_eval(&r->pt);
}

/* The ceiling of an aggregate: the one under which most of its FLOPs ran. */
static void dominant_ceiling(const roof_row *kernels, int n, const char *layer_type, char *out)
{
    double best = -1;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (layer_type && strcmp(kernels[i].layer_type, layer_type) != 0)
            continue;
        double f = 0;
        for (int j = 0; j < n; j++)
            if ((!layer_type || strcmp(kernels[j].layer_type, layer_type) == 0) &&
                strcmp(kernels[j].ceiling, kernels[i].ceiling) == 0 && kernels[j].pt.flops > 0)
                f += kernels[j].pt.flops;
        if (kernels[i].ceiling[0] && f > best) {
            best = f;
            snprintf(out, ROOF_CEILING_LEN, "%s", kernels[i].ceiling);
        }
    }
}

static const char *common_source(const roof_row *kernels, int n, const char *layer_type)
{
    const char *src = NULL;
    for (int i = 0; i < n; i++) {
        if (layer_type && strcmp(kernels[i].layer_type, layer_type) != 0)
            continue;
        if (src && strcmp(src, kernels[i].source) != 0)
            return "mixed";
        src = kernels[i].source;
    }
    return src ? src : "";
}

/* An aggregate row over the kernel rows of one layer type (NULL: all). The
 * raw sums are rebuilt from the kernel rows, already per step. */
static void aggregate(roof_config *c, int n_kernels, const char *layer_type, roof_row *out,
                      const roofs *rf)
{
    const roof_row *k = c->rows;
    sums s = sums_empty();
    double count = 0;
    for (int i = 0; i < n_kernels; i++) {
        if (layer_type && strcmp(k[i].layer_type, layer_type) != 0)
            continue;
        count += k[i].count;
        add(&s.duration_ns, k[i].pt.duration_ns);
        add(&s.fp32, k[i].pt.flops); /* the split no longer matters: the ceiling is chosen */
        add(&s.dram_bytes, k[i].pt.dram_bytes);
        add(&s.l2_bytes, k[i].pt.l2_bytes);
    }
    *out = (roof_row){
        .level = layer_type ? "layer_type" : "step",
        .name = layer_type ? layer_type : "step",
        .layer = "",
        .layer_type = layer_type ? layer_type : "",
        .phase = "",
        .source = common_source(k, n_kernels, layer_type),
    };
    dominant_ceiling(k, n_kernels, layer_type, out->ceiling);
    s.rows = count;
    finish_row(out, &s, 1, rf);
}

typedef struct {
    int first; /* the group's first row in the file: groups keep the file's order */
    sums s;
} group;

static int cmp_group(const void *pa, const void *pb)
{
    return cmp_int(&((const group *)pa)->first, &((const group *)pb)->first);
}

static bool same_kernel(const sort_ctx *ctx, int a, int b)
{
    return cmp_text(ctx, a, b, K_KERNEL) == 0 && cmp_text(ctx, a, b, K_LAYER) == 0 &&
           cmp_text(ctx, a, b, K_PHASE) == 0;
}

/* Kernel rows: the config's rows grouped by (kernel, layer, phase). */
static int build_kernel_rows(roof_config *c, const sort_ctx *ctx, const kernel_in *in,
                             const int *rows, int n, const roofs *rf)
{
    keyed *order = malloc((size_t)n * sizeof *order);
    group *groups = malloc((size_t)n * sizeof *groups);
    if (!order || !groups) {
        free(order);
        free(groups);
        return -1;
    }
    for (int i = 0; i < n; i++)
        order[i] = (keyed){ctx, rows[i]};
    qsort(order, (size_t)n, sizeof *order, cmp_kernel_key);
    int n_groups = 0;
    for (int i = 0; i < n; i++) {
        /* within a key the rows are in file order, so a group's first row comes first */
        if (i == 0 || !same_kernel(ctx, order[i - 1].row, order[i].row))
            groups[n_groups++] = (group){order[i].row, sums_empty()};
        sums_add_kernel(&groups[n_groups - 1].s, &in[order[i].row]);
    }
    qsort(groups, (size_t)n_groups, sizeof *groups, cmp_group);
    const int *cols = ctx->cols;
    for (int g = 0; g < n_groups; g++) {
        int f = groups[g].first;
        const sums *s = &groups[g].s;
        roof_row *row = &c->rows[c->n++];
        *row = (roof_row){.level = "kernel",
                          .name = csv_cell(ctx->t, f, cols[K_KERNEL]),
                          .layer = csv_cell(ctx->t, f, cols[K_LAYER]),
                          .layer_type = csv_cell(ctx->t, f, cols[K_LTYPE]),
                          .phase = csv_cell(ctx->t, f, cols[K_PHASE]),
                          .source = csv_cell(ctx->t, f, cols[K_SOURCE])};
        roof_kernel_ceiling(c->precision, s->fp64, s->fp32, s->fp16, s->tensor, row->ceiling);
        finish_row(row, s, c->repeats, rf);
    }
    free(order);
    free(groups);
    return 0;
}

/* Layer-type rows in order of first appearance, the step row, time shares. */
static void add_aggregates(roof_config *c, const roofs *rf)
{
    int n_kernels = c->n;
    for (int i = 0; i < n_kernels; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(c->rows[j].layer_type, c->rows[i].layer_type) == 0;
        if (!seen) {
            aggregate(c, n_kernels, c->rows[i].layer_type, &c->rows[c->n], rf);
            c->n++;
        }
    }
    aggregate(c, n_kernels, NULL, &c->rows[c->n], rf);
    double step_ns = c->rows[c->n].pt.duration_ns;
    c->n++;
    double memory_ns = 0;
    bool any_bound = false;
    for (int i = 0; i < c->n; i++)
        c->rows[i].time_share = c->rows[i].pt.duration_ns / step_ns;
    for (int i = 0; i < n_kernels; i++) {
        any_bound = any_bound || c->rows[i].pt.bound != BOUND_UNKNOWN;
        if (c->rows[i].pt.bound == BOUND_MEMORY)
            memory_ns += c->rows[i].pt.duration_ns;
    }
    c->mem_bound_share = any_bound && step_ns > 0 ? memory_ns / step_ns : NAN;
}

static int build_config(roof_config *c, const csv_table *t, const int *cols, int col_repeat,
                        const kernel_in *in, const int *rows, int n, const roofs *rf)
{
    sort_ctx ctx = {t, cols};
    /* kernel groups + at most one row per layer type + the step */
    c->rows = calloc((size_t)2 * n + 1, sizeof *c->rows);
    c->repeats = count_repeats(t, col_repeat, rows, n);
    if (!c->rows || c->repeats < 0 || build_kernel_rows(c, &ctx, in, rows, n, rf))
        return -1;
    add_aggregates(c, rf);
    return 0;
}

int roofline_build(const csv_table *t, const char *path, const roofs *rf, roofline *out,
                   char *err, size_t err_len)
{
    *out = (roofline){0};
    int cols[K_COUNT];
    if (csv_require(t, path, kernel_columns, cols, err, err_len))
        return -1;
    int col_repeat = csv_col(t, "repeat");
    int n = csv_rows(t);
    kernel_in *in = calloc((size_t)n + 1, sizeof *in);
    int *config_of = malloc(((size_t)n + 1) * sizeof *config_of);
    int *rows = malloc(((size_t)n + 1) * sizeof *rows);
    out->configs = calloc((size_t)n + 1, sizeof *out->configs);
    int rc = -1;
    if (!in || !config_of || !rows || !out->configs) {
        snprintf(err, err_len, "%s: out of memory", path);
        goto done;
    }
    if (parse_rows(t, path, cols, in, err, err_len))
        goto done;
    /* configurations are few: a linear search over their first rows */
    int *first_row = rows; /* borrowed as scratch until the grouping below */
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < out->n && !same_config(t, cols, first_row[k], i))
            k++;
        if (k == out->n)
            first_row[out->n++] = i;
        config_of[i] = k;
    }
    for (int k = 0; k < out->n; k++) {
        int f = first_row[k];
        out->configs[k] = (roof_config){.env = csv_cell(t, f, cols[K_ENV]),
                                        .model = csv_cell(t, f, cols[K_MODEL]),
                                        .precision = csv_cell(t, f, cols[K_PREC]),
                                        .res = (int)in[f].num[K_RES],
                                        .batch = (int)in[f].num[K_BATCH]};
    }
    for (int k = 0; k < out->n; k++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (config_of[i] == k)
                rows[m++] = i;
        if (build_config(&out->configs[k], t, cols, col_repeat, in, rows, m, rf)) {
            snprintf(err, err_len, "%s: out of memory", path);
            goto done;
        }
    }
    rc = 0;
done:
    free(in);
    free(config_of);
    free(rows);
    if (rc)
        roofline_free(out);
    return rc;
}

void roofline_free(roofline *rl)
{
    for (int k = 0; rl->configs && k < rl->n; k++)
        free(rl->configs[k].rows);
    free(rl->configs);
    *rl = (roofline){0};
}

const roof_config *roofline_find(const roofline *rl, const char *env, const char *model,
                                 int res, int batch, const char *precision)
{
    for (int k = 0; rl && k < rl->n; k++) {
        const roof_config *c = &rl->configs[k];
        if (c->res == res && c->batch == batch && strcmp(c->env, env) == 0 &&
            strcmp(c->model, model) == 0 && strcmp(c->precision, precision) == 0)
            return c;
    }
    return NULL;
}
