/* What the report's sections share: how a configuration is named, the
 * summary row a trace belongs to, the name of the main memory level, and rows
 * ordered by a number. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../roofs.h"
#include "report_sections.h"

void report_key_short(char *out, size_t len, const char *model, int res, int batch,
                      const char *precision)
{
    snprintf(out, len, "%s @%d b%d %s", model, res, batch, precision);
}

void report_key_name(char *out, size_t len, const char *model, int res, int batch,
                     const char *precision)
{
    snprintf(out, len, "%s @%d, batch %d, %s", model, res, batch, precision);
}

const summary_row *report_traced_summary(const run_model *run, const char *model, int res,
                                         int batch, const char *precision, bool timed)
{
    for (int graph = 0; graph <= 1; graph++)
        for (int i = 0; i < run->summary.n; i++) {
            const summary_row *s = &run->summary.rows[i];
            if (s->graph == graph && s->res == res && s->batch == batch &&
                strcmp(s->model, model) == 0 && strcmp(s->precision, precision) == 0 &&
                !(timed && isnan(s->step_ms_median)))
                return s;
        }
    return NULL;
}

const char *report_precision_label(char *out, size_t len, const char *precision, bool graph)
{
    snprintf(out, len, "%s%s", precision, graph ? " graph" : "");
    return out;
}

const char *report_memory_name(const run_model *run)
{
    return roofs_memory_name(run->roofs, run->n_roofs);
}

typedef struct {
    double key;
    int index;
} keyed;

static int by_key_desc(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (isnan(x->key) || isnan(y->key)) {
        if (isnan(x->key) != isnan(y->key))
            return isnan(x->key) - isnan(y->key);
    } else if (x->key != y->key) {
        return x->key < y->key ? 1 : -1;
    }
    return (x->index > y->index) - (x->index < y->index); /* qsort is not stable */
}

int *report_order_desc(int n, bool (*keep)(int i, const void *arg),
                       double (*key)(int i, const void *arg), const void *arg, int *count)
{
    *count = 0;
    keyed *k = malloc(((size_t)n + 1) * sizeof *k);
    int *out = malloc(((size_t)n + 1) * sizeof *out);
    if (!k || !out) {
        free(k);
        free(out);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (!keep || keep(i, arg))
            k[(*count)++] = (keyed){key(i, arg), i};
    qsort(k, (size_t)*count, sizeof *k, by_key_desc);
    for (int i = 0; i < *count; i++)
        out[i] = k[i].index;
    free(k);
    return out;
}
