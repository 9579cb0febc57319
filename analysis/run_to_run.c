/* Run to run across run folders of one environment (run_to_run.h). */
#include "run_to_run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool same_config(const variability_row *a, const variability_row *b)
{
    return a->res == b->res && a->batch == b->batch && a->graph == b->graph &&
           strcmp(a->env, b->env) == 0 && strcmp(a->model, b->model) == 0 &&
           strcmp(a->precision, b->precision) == 0;
}

/* A run's own range for a configuration: the 95% interval of its pooled
 * median and its repeats' medians (process to process), whichever is wider.
 * Under 6 steps the order-statistic interval does not exist: the normal
 * approximation, median +- 2 stddev / sqrt(n), stands in for it, so that a
 * short run is not taken for an exact one. */
static void own_range(const run_model *run, const variability_row *pooled, double *lo, double *hi)
{
    double half = pooled->n > 0 && pooled->stddev >= 0 ? 2 * pooled->stddev / sqrt(pooled->n) : 0;
    *lo = isnan(pooled->ci95_lo) ? pooled->median - half : fmin(pooled->ci95_lo, pooled->median);
    *hi = isnan(pooled->ci95_hi) ? pooled->median + half : fmax(pooled->ci95_hi, pooled->median);
    for (int i = 0; i < run->variability.n; i++) {
        const variability_row *v = &run->variability.rows[i];
        if (strncmp(v->scope, "repeat=", 7) == 0 && same_config(v, pooled) && !isnan(v->median)) {
            *lo = fmin(*lo, v->median);
            *hi = fmax(*hi, v->median);
        }
    }
}

/* Fills out (room for max) with every configuration of the runs, then keeps
 * those of two or more; returns how many. */
static int gather(const run_model *runs, int n, run_to_run *out, int max)
{
    int k = 0;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < runs[r].variability.n; i++) {
            const variability_row *v = &runs[r].variability.rows[i];
            if (strcmp(v->scope, "iterations") != 0 || !(v->median > 0))
                continue;
            int at = -1;
            for (int j = 0; j < k && at < 0; j++)
                if (same_config(out[j].key, v))
                    at = j;
            if (at < 0) {
                if (k == max)
                    continue;
                at = k++;
                out[at] = (run_to_run){.key = v};
            }
            run_to_run *c = &out[at];
            if (c->n > 0 && c->runs[c->n - 1] == r)
                continue; /* one row a configuration a run */
            if (c->n == RUN_TO_RUN_MAX_RUNS)
                continue;
            c->runs[c->n] = r;
            c->median[c->n] = v->median;
            own_range(&runs[r], v, &c->lo[c->n], &c->hi[c->n]);
            c->n++;
        }
    int kept = 0;
    for (int j = 0; j < k; j++) {
        run_to_run *c = &out[j];
        if (c->n < 2)
            continue;
        c->fastest = c->slowest = 0;
        for (int i = 1; i < c->n; i++) {
            if (c->median[i] < c->median[c->fastest])
                c->fastest = i;
            if (c->median[i] >= c->median[c->slowest]) /* of runs alike, another one */
                c->slowest = i;
        }
        out[kept++] = *c;
    }
    return kept;
}

bool run_to_run_within_noise(const run_to_run *c)
{
    double lo = -INFINITY, hi = INFINITY;
    for (int i = 0; i < c->n; i++) {
        lo = fmax(lo, c->lo[i]);
        hi = fmin(hi, c->hi[i]);
    }
    return lo <= hi;
}

double run_to_run_spread(const run_to_run *c)
{
    return c->median[c->slowest] / c->median[c->fastest] - 1;
}


int run_to_run_build(const run_model *runs, int n, run_to_run **out, int *n_out)
{
    *out = NULL;
    *n_out = 0;
    int max = 0;
    for (int r = 0; r < n; r++)
        max += runs[r].variability.n;
    if (max == 0)
        return 0;
    run_to_run *all = calloc((size_t)max, sizeof *all);
    if (!all)
        return -1;
    int k = gather(runs, n < RUN_TO_RUN_MAX_RUNS ? n : RUN_TO_RUN_MAX_RUNS, all, max);
    if (k == 0) {
        free(all);
        return 0;
    }
    *out = all;
    *n_out = k;
    return 0;
}
