#include "time_breakdown.h"

#include <math.h>
#include <string.h>

#include "trace_gpu.h"

/* The phases of a step, in the order they run (analysis/README.md). */
static const char *const phase_order[] = {"fwd", "bwd_data", "bwd_weights", "update", "loss",
                                          "comm"};
enum { N_PHASE_ORDER = sizeof phase_order / sizeof phase_order[0] };

/* The index of name in list, added when new; the last slot takes "other". */
static int slot(const char **list, int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(list[i], name) == 0)
            return i;
    if (*n == BREAKDOWN_MAX - 1 && strcmp(name, "other") != 0) {
        list[*n] = "other";
        return (*n)++;
    }
    if (*n == BREAKDOWN_MAX)
        return BREAKDOWN_MAX - 1;
    list[*n] = name;
    return (*n)++;
}

static int phase_rank(const char *phase)
{
    for (int i = 0; i < N_PHASE_ORDER; i++)
        if (strcmp(phase_order[i], phase) == 0)
            return i;
    return N_PHASE_ORDER; /* others after the known ones, in the order met */
}

/* Reorders the columns (perm[new] = old) of ns and the names. */
static void permute_phases(time_breakdown *b, const int *perm)
{
    time_breakdown old = *b;
    for (int p = 0; p < b->n_phases; p++) {
        b->phases[p] = old.phases[perm[p]];
        b->phase_ns[p] = old.phase_ns[perm[p]];
        for (int t = 0; t < b->n_types; t++)
            b->ns[t][p] = old.ns[t][perm[p]];
    }
}

static void permute_types(time_breakdown *b, const int *perm)
{
    time_breakdown old = *b;
    for (int t = 0; t < b->n_types; t++) {
        b->types[t] = old.types[perm[t]];
        b->type_ns[t] = old.type_ns[perm[t]];
        for (int p = 0; p < b->n_phases; p++)
            b->ns[t][p] = old.ns[perm[t]][p];
    }
}

void time_breakdown_of(const run_trace *t, time_breakdown *out)
{
    time_breakdown *b = out;
    *b = (time_breakdown){.env = t->env, .model = t->model, .precision = t->precision,
                          .res = t->res, .batch = t->batch};
    double per = 1.0 / trace_repeats(t);
    for (int i = 0; i < t->n; i++) {
        const run_kernel *k = &t->rows[i];
        int ty = slot(b->types, &b->n_types, k->layer_type);
        int ph = slot(b->phases, &b->n_phases, k->phase);
        double ns = isnan(k->duration_ns) ? 0 : k->duration_ns * per;
        b->ns[ty][ph] += ns;
        b->type_ns[ty] += ns;
        b->phase_ns[ph] += ns;
        b->total_ns += ns;
        b->kernels += per;
    }
    /* phases in the step's order (stable: insertion sort) */
    int perm[BREAKDOWN_MAX];
    for (int p = 0; p < b->n_phases; p++) {
        int j = p;
        for (; j > 0 && phase_rank(b->phases[perm[j - 1]]) > phase_rank(b->phases[p]); j--)
            perm[j] = perm[j - 1];
        perm[j] = p;
    }
    permute_phases(b, perm);
    /* layer types costliest first (stable) */
    for (int ty = 0; ty < b->n_types; ty++) {
        int j = ty;
        for (; j > 0 && b->type_ns[perm[j - 1]] < b->type_ns[ty]; j--)
            perm[j] = perm[j - 1];
        perm[j] = ty;
    }
    permute_types(b, perm);
}

double time_breakdown_share(const time_breakdown *b, int type, int phase)
{
    if (!(b->total_ns > 0))
        return NAN;
    double ns = type < 0 && phase < 0 ? b->total_ns
                : type < 0            ? b->phase_ns[phase]
                : phase < 0           ? b->type_ns[type]
                                      : b->ns[type][phase];
    return ns / b->total_ns;
}
