#include "hier_roofline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_groups.h"
#include "trace_gpu.h"

const char *hier_level_name(int level, const char *main_memory)
{
    switch (level) {
    case HIER_HBM: return main_memory;
    case HIER_L2: return "L2";
    case HIER_L1: return "L1";
    case HIER_COMPUTE: return "compute";
    }
    return "unknown";
}

static double ratio(double num, double den)
{
    return den > 0 ? num / den : NAN; /* NaN inputs stay NaN */
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

void hier_point_eval(hier_point *p, const roofs *r)
{
    const double gbs[HIER_LEVELS] = {r->dram_gbs, r->l2_gbs, r->l1_gbs};
    p->achieved_gflops = ratio(p->flops, p->duration_ns);
    p->tensor = ends_with(p->ceiling, "_tensor");
    p->peak_gflops = roofs_peak(r, p->ceiling);
    bool peak = p->peak_gflops > 0;
    /* the compute roof is the limit unless a level's roof is lower */
    double lowest = peak ? p->peak_gflops : INFINITY;
    int limit = HIER_COMPUTE;
    bool any_level = false;
    for (int l = 0; l < HIER_LEVELS; l++) {
        hier_level_point *lv = &p->level[l];
        lv->roof_gbs = gbs[l];
        lv->ai = ratio(p->flops, lv->bytes);
        lv->attainable = NAN;
        if (!isfinite(lv->ai) || !(lv->roof_gbs > 0))
            continue;
        lv->attainable = lv->ai * lv->roof_gbs;
        if (peak)
            lv->attainable = fmin(lv->attainable, p->peak_gflops);
        any_level = true;
        if (lv->attainable < lowest) {
            lowest = lv->attainable;
            limit = l;
        }
    }
    /* without a level, or with FLOPs but no compute roof, the limit is unknown;
     * a point without FLOPs is at intensity 0 and needs no compute roof */
    bool known = any_level && (peak || p->flops == 0);
    p->limit = known ? limit : -1;
    p->attainable = known ? lowest : NAN;
    p->pct_of_attainable = known && lowest > 0 ? 100 * p->achieved_gflops / lowest : NAN;
}

bool hier_drawable(const hier_point *p, int level)
{
    double ai = p->level[level].ai, g = p->achieved_gflops;
    return ai > 0 && isfinite(ai) && g > 0 && isfinite(g);
}

/* ---- grouping kernel rows ------------------------------------------------- */

typedef struct {
    int first; /* the group's first row in the trace */
    kernel_sums s;
} group;

/* The trace's rows grouped by (kernel, layer, phase), in order of first
 * appearance; NULL out of memory. */
static group *group_rows(const run_trace *t, int *n_groups)
{
    int *group_of = malloc(((size_t)t->n + 1) * sizeof *group_of);
    int *first = malloc(((size_t)t->n + 1) * sizeof *first);
    group *groups = malloc(((size_t)t->n + 1) * sizeof *groups);
    int n = group_of && first && groups ? kernel_groups(t, group_of, first) : -1;
    if (n < 0) {
        free(groups);
        groups = NULL;
    }
    for (int g = 0; g < n; g++)
        groups[g] = (group){first[g], kernel_sums_empty()};
    for (int i = 0; i < t->n && n >= 0; i++)
        kernel_sums_add(&groups[group_of[i]].s, &t->rows[i]);
    free(group_of);
    free(first);
    *n_groups = n < 0 ? 0 : n;
    return groups;
}

/* ---- points ---------------------------------------------------------------- */

/* A group's bytes at one level of the hierarchy. */
static double level_bytes(const kernel_sums *s, int level)
{
    return level == HIER_HBM ? s->dram_bytes : level == HIER_L2 ? s->l2_bytes : s->l1_bytes;
}

static void point_of(hier_point *p, const kernel_sums *s, int repeats, const roofs *r)
{
    double per = 1.0 / repeats;
    p->count = s->rows * per;
    p->duration_ns = s->duration_ns * per;
    p->flops = kernel_sums_flops(s) * per;
    for (int l = 0; l < HIER_LEVELS; l++)
        p->level[l].bytes = level_bytes(s, l) * per;
    hier_point_eval(p, r);
}

/* The ceiling under which most of the kernels' FLOPs ran (ties: the one met
 * first), into out[ROOF_CEILING_LEN]. */
static void dominant_ceiling(const hier_point *kernels, int n, char *out)
{
    double best = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *c = kernels[i].ceiling;
        bool met = false; /* each ceiling once, where it is first met */
        for (int j = 0; j < i && !met; j++)
            met = strcmp(kernels[j].ceiling, c) == 0;
        if (!c[0] || met)
            continue;
        double under = 0;
        for (int j = i; j < n; j++)
            if (kernels[j].flops > 0 && strcmp(kernels[j].ceiling, c) == 0)
                under += kernels[j].flops;
        if (under > best) {
            best = under;
            snprintf(out, ROOF_CEILING_LEN, "%s", c);
        }
    }
}

/* The step: every kernel summed per level. */
static void step_of(hier_config *c, const roofs *r)
{
    hier_point *step = &c->step;
    *step = (hier_point){.kernel = "step", .layer = "", .layer_type = "", .phase = "",
                         .duration_ns = NAN, .flops = NAN};
    for (int l = 0; l < HIER_LEVELS; l++)
        step->level[l].bytes = NAN;
    const char *source = NULL;
    for (int i = 0; i < c->n; i++) {
        const hier_point *k = &c->kernels[i];
        step->count += k->count;
        nan_add(&step->duration_ns, k->duration_ns);
        nan_add(&step->flops, k->flops);
        for (int l = 0; l < HIER_LEVELS; l++)
            nan_add(&step->level[l].bytes, k->level[l].bytes);
        /* the step's FLOPs and bytes come from the kernels that have any
         * (a communication kernel is timed only) */
        bool counts = k->flops > 0 || k->level[HIER_HBM].bytes > 0 || k->level[HIER_L2].bytes > 0 ||
                      k->level[HIER_L1].bytes > 0;
        if (counts)
            source = !source || strcmp(source, k->source) == 0 ? k->source : "mixed";
    }
    step->source = source ? source : "";
    dominant_ceiling(c->kernels, c->n, step->ceiling);
    step->time_share = step->duration_ns > 0 ? 1 : NAN;
    hier_point_eval(step, r);
}

int hier_config_build(const run_trace *t, const roofs *r, hier_config *out)
{
    *out = (hier_config){.env = t->env, .model = t->model, .precision = t->precision,
                         .res = t->res, .batch = t->batch};
    out->roof_gbs[HIER_HBM] = r->dram_gbs;
    out->roof_gbs[HIER_L2] = r->l2_gbs;
    out->roof_gbs[HIER_L1] = r->l1_gbs;
    out->repeats = trace_repeats(t);
    int n_groups = 0;
    group *groups = group_rows(t, &n_groups);
    out->kernels = calloc((size_t)n_groups + 1, sizeof *out->kernels);
    if (!groups || !out->kernels) {
        free(groups);
        hier_config_free(out);
        return -1;
    }
    for (int g = 0; g < n_groups; g++) {
        const run_kernel *k = &t->rows[groups[g].first];
        const kernel_sums *s = &groups[g].s;
        hier_point *p = &out->kernels[out->n++];
        *p = (hier_point){.kernel = k->kernel, .layer = k->layer, .layer_type = k->layer_type,
                          .phase = k->phase, .source = k->source};
        roof_kernel_ceiling(t->precision, s->fp64, s->fp32, s->fp16, s->tensor, p->ceiling);
        point_of(p, s, out->repeats, r);
    }
    free(groups);
    step_of(out, r);
    for (int i = 0; i < out->n; i++)
        out->kernels[i].time_share = ratio(out->kernels[i].duration_ns, out->step.duration_ns);
    return 0;
}

void hier_config_free(hier_config *c)
{
    free(c->kernels);
    c->kernels = NULL;
    c->n = 0;
}
