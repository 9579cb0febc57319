#include "roofline_table.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_groups.h"

static int cmp_cstr(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

static int count_repeats(const run_trace *t)
{
    const char **v = malloc(((size_t)t->n + 1) * sizeof *v);
    if (!v)
        return -1;
    for (int i = 0; i < t->n; i++)
        v[i] = t->rows[i].repeat;
    qsort(v, (size_t)t->n, sizeof *v, cmp_cstr);
    int distinct = t->n > 0;
    for (int i = 1; i < t->n; i++)
        distinct += strcmp(v[i], v[i - 1]) != 0;
    free(v);
    return distinct;
}

/* Fills a row's point from its sums, per traced step. */
static void finish_row(roof_row *r, const kernel_sums *s, int repeats, const roofs *rf)
{
    double per = 1.0 / repeats;
    r->count = s->rows * per;
    r->pt = (roof_point){
        .flops = kernel_sums_flops(s) * per,
        .dram_bytes = s->dram_bytes * per,
        .l2_bytes = s->l2_bytes * per,
        .duration_ns = s->duration_ns * per,
        .peak_gflops = roofs_peak(rf, r->ceiling),
        .dram_gbs = rf->dram_gbs,
        .l2_gbs = rf->l2_gbs,
    };
    roof_point_eval(&r->pt);
}

/* The ceiling of an aggregate: the one under which most of its FLOPs ran
 * (ties: the one met first among its kernels). */
static void dominant_ceiling(const roof_row *kernels, int n, const char *layer_type, char *out)
{
    enum { MAX_CEILINGS = 16 };
    const char *names[MAX_CEILINGS];
    double flops[MAX_CEILINGS];
    int n_names = 0;
    for (int i = 0; i < n; i++) {
        const roof_row *k = &kernels[i];
        if ((layer_type && strcmp(k->layer_type, layer_type) != 0) || !k->ceiling[0])
            continue;
        int j = 0;
        while (j < n_names && strcmp(names[j], k->ceiling) != 0)
            j++;
        if (j == n_names) {
            if (n_names == MAX_CEILINGS)
                continue; /* more distinct ceilings than precisions exist */
            names[n_names] = k->ceiling;
            flops[n_names++] = 0;
        }
        if (k->pt.flops > 0)
            flops[j] += k->pt.flops;
    }
    out[0] = '\0';
    double best = -1;
    for (int j = 0; j < n_names; j++)
        if (flops[j] > best) {
            best = flops[j];
            snprintf(out, ROOF_CEILING_LEN, "%s", names[j]);
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
    kernel_sums s = kernel_sums_empty();
    double count = 0, roof_ns = NAN, above_roof_ns = NAN;
    for (int i = 0; i < n_kernels; i++) {
        if (layer_type && strcmp(k[i].layer_type, layer_type) != 0)
            continue;
        count += k[i].count;
        nan_add(&roof_ns, k[i].roof_ns);
        nan_add(&above_roof_ns, k[i].above_roof_ns);
        nan_add(&s.duration_ns, k[i].pt.duration_ns);
        nan_add(&s.fp32, k[i].pt.flops); /* the split no longer matters: the ceiling is chosen */
        nan_add(&s.dram_bytes, k[i].pt.dram_bytes);
        nan_add(&s.l2_bytes, k[i].pt.l2_bytes);
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
    /* the kernels' own bounds, not the aggregate point's: the sum of
     * max(flops / peak, bytes / bandwidth) is above max of the sums */
    out->roof_ns = roof_ns;
    out->above_roof_ns = above_roof_ns;
}

/* Kernel rows: the trace's rows grouped by (kernel, layer, phase). */
static int build_kernel_rows(roof_config *c, const run_trace *t, const roofs *rf)
{
    int *group_of = malloc(((size_t)t->n + 1) * sizeof *group_of);
    int *first = malloc(((size_t)t->n + 1) * sizeof *first);
    kernel_sums *group_sums = malloc(((size_t)t->n + 1) * sizeof *group_sums);
    int n_groups = group_of && first && group_sums ? kernel_groups(t, group_of, first) : -1;
    for (int g = 0; g < n_groups; g++)
        group_sums[g] = kernel_sums_empty();
    /* in file order, as a group's rows were always summed */
    for (int i = 0; i < t->n && n_groups >= 0; i++)
        kernel_sums_add(&group_sums[group_of[i]], &t->rows[i]);
    for (int g = 0; g < n_groups; g++) {
        const run_kernel *k = &t->rows[first[g]];
        const kernel_sums *s = &group_sums[g];
        roof_row *row = &c->rows[c->n++];
        *row = (roof_row){.level = "kernel",
                          .name = k->kernel,
                          .layer = k->layer,
                          .layer_type = k->layer_type,
                          .phase = k->phase,
                          .source = k->source};
        roof_kernel_ceiling(c->precision, s->fp64, s->fp32, s->fp16, s->tensor, row->ceiling);
        finish_row(row, s, c->repeats, rf);
        row->roof_ns = roof_point_time_ns(&row->pt);
        row->above_roof_ns = isnan(row->roof_ns) ? NAN : fmax(0, row->pt.duration_ns - row->roof_ns);
    }
    free(group_of);
    free(first);
    free(group_sums);
    return n_groups < 0 ? -1 : 0;
}

/* Layer-type rows in order of first appearance, the step row, time shares. */
static void add_aggregates(roof_config *c, const roofs *rf)
{
    int n_kernels = c->n;
    for (int i = 0; i < n_kernels; i++) {
        /* the layer types met so far are the aggregate rows after the kernels */
        bool seen = false;
        for (int j = n_kernels; j < c->n && !seen; j++)
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

int roofline_build(const run_trace *traces, int n_traces, const roofs *rf, roofline *out,
                   char *err, size_t err_len)
{
    *out = (roofline){0};
    out->configs = calloc((size_t)n_traces + 1, sizeof *out->configs);
    if (!out->configs) {
        snprintf(err, err_len, "roofline: out of memory");
        return -1;
    }
    for (int k = 0; k < n_traces; k++) {
        const run_trace *t = &traces[k];
        roof_config *c = &out->configs[out->n++];
        *c = (roof_config){.env = t->env, .model = t->model, .precision = t->precision,
                           .res = t->res, .batch = t->batch};
        /* kernel groups + at most one row per layer type + the step */
        c->rows = calloc((size_t)2 * t->n + 1, sizeof *c->rows);
        c->repeats = count_repeats(t);
        if (!c->rows || c->repeats < 0 || build_kernel_rows(c, t, rf)) {
            snprintf(err, err_len, "roofline: out of memory");
            roofline_free(out);
            return -1;
        }
        add_aggregates(c, rf);
    }
    return 0;
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

const roof_row *roofline_step(const roof_config *c)
{
    for (int i = c->n - 1; i >= 0; i--)
        if (strcmp(c->rows[i].level, "step") == 0)
            return &c->rows[i];
    return NULL;
}

/* NaN (no roof) sorts after every time above a roof, 0 included. */
static double above_key(const roof_phase_sum *g)
{
    return isnan(g->above_roof_ns) ? -1 : g->above_roof_ns;
}

int roofline_by_phase(const roof_config *c, roof_phase_sum **out)
{
    roof_phase_sum *g = malloc(((size_t)c->n + 1) * sizeof *g);
    *out = g;
    if (!g)
        return -1;
    int n = 0;
    for (int i = 0; i < c->n; i++) {
        const roof_row *r = &c->rows[i];
        if (strcmp(r->level, "kernel") != 0)
            continue;
        int j = 0;
        while (j < n && (strcmp(g[j].layer_type, r->layer_type) != 0 ||
                         strcmp(g[j].phase, r->phase) != 0))
            j++;
        if (j == n)
            g[n++] = (roof_phase_sum){.layer_type = r->layer_type, .phase = r->phase,
                                      .duration_ns = NAN, .unroofed_ns = 0,
                                      .roof_ns = NAN, .above_roof_ns = NAN};
        nan_add(&g[j].duration_ns, r->pt.duration_ns);
        if (isnan(r->roof_ns))
            nan_add(&g[j].unroofed_ns, r->pt.duration_ns);
        nan_add(&g[j].roof_ns, r->roof_ns);
        nan_add(&g[j].above_roof_ns, r->above_roof_ns);
    }
    /* insertion sort: stable, so ties keep the order of first appearance
     * (a few dozen groups at most) */
    for (int i = 1; i < n; i++) {
        roof_phase_sum v = g[i];
        int j = i;
        for (; j > 0 && above_key(&g[j - 1]) < above_key(&v); j--)
            g[j] = g[j - 1];
        g[j] = v;
    }
    return n;
}
