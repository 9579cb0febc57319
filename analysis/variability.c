#include "variability.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

static void put(variability *out, const run_steps *c, const char *scope, const stats_summary *s)
{
    variability_row *r = &out->rows[out->n++];
    *r = (variability_row){.env = c->key.env, .model = c->key.model,
                           .precision = c->key.precision, .res = c->key.res,
                           .batch = c->key.batch, .graph = c->key.graph, .n = s->n, .outliers = s->outliers,
                           .mean = s->mean, .median = s->median, .stddev = s->stddev,
                           .cv = s->cv, .min = s->min, .max = s->max, .ci95_lo = s->ci95_lo,
                           .ci95_hi = s->ci95_hi, .drift_pct = s->drift_pct};
    snprintf(r->scope, sizeof r->scope, "%s", scope);
}

/* The median of the repeats' drifts that are defined (NaN when none is), or
 * -1 when out of memory. */
static int median_drift(double *drifts, int n, double *median)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(drifts[i]))
            drifts[k++] = drifts[i];
    stats_summary s;
    if (stats_describe(drifts, k, &s))
        return -1;
    *median = s.median;
    return 0;
}

/* The rows of one configuration; -1 when out of memory. The pooled row's
 * drift is the median of its repeats' own: each repeat is a process with its
 * own warm-up, and the first fifth of the pooled steps against the last
 * would compare the first process with the last, which is run to run, not
 * warm-up. */
static int put_config(variability *out, const run_steps *c)
{
    stats_summary s;
    double *medians = malloc(((size_t)c->repeats + 1) * sizeof *medians);
    double *drifts = malloc(((size_t)c->repeats + 1) * sizeof *drifts);
    if (!medians || !drifts) {
        free(medians);
        free(drifts);
        return -1;
    }
    int k = 0;
    for (int i = 0; i < c->n;) { /* a repeat's rows are contiguous */
        int end = i;
        while (end < c->n && c->repeat[end] == c->repeat[i])
            end++;
        if (stats_describe(c->step_ms + i, end - i, &s)) {
            free(medians);
            free(drifts);
            return -1;
        }
        char scope[32];
        snprintf(scope, sizeof scope, "repeat=%d", c->repeat[i]);
        put(out, c, scope, &s);
        drifts[k] = s.drift_pct;
        medians[k++] = s.median;
        i = end;
    }
    int rc = stats_describe(c->step_ms, c->n, &s);
    if (!rc)
        rc = median_drift(drifts, k, &s.drift_pct);
    if (!rc)
        put(out, c, "iterations", &s);
    if (!rc)
        rc = stats_describe(medians, k, &s);
    if (!rc)
        put(out, c, "repeats", &s);
    free(medians);
    free(drifts);
    return rc;
}

int variability_build(const run_steps *steps, int n_steps, variability *out)
{
    *out = (variability){0};
    size_t rows = 0;
    for (int k = 0; k < n_steps; k++)
        rows += (size_t)steps[k].repeats + 2;
    out->rows = calloc(rows + 1, sizeof *out->rows);
    if (!out->rows)
        return -1;
    for (int k = 0; k < n_steps; k++)
        if (steps[k].n > 0 && put_config(out, &steps[k])) {
            variability_free(out);
            return -1;
        }
    return 0;
}

void variability_free(variability *v)
{
    free(v->rows);
    *v = (variability){0};
}

const variability_row *variability_find(const variability *v, const variability_row *config,
                                        const char *scope)
{
    for (int i = 0; i < v->n; i++) {
        const variability_row *r = &v->rows[i];
        if (r->res == config->res && r->batch == config->batch && r->graph == config->graph &&
            strcmp(r->model, config->model) == 0 && strcmp(r->precision, config->precision) == 0 &&
            strcmp(r->scope, scope) == 0)
            return r;
    }
    return NULL;
}
