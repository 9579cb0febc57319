#include "trace_gpu.h"

#include <math.h>
#include <string.h>

bool trace_has_counters(const run_trace *t)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->rows[i].source, "cupti") == 0)
            return true;
    return false;
}

static bool timed_on_cuda(const run_model *run, const run_trace *t)
{
    for (int k = 0; k < run->n_steps; k++) {
        const run_key *key = &run->steps[k].key;
        if (key->res == t->res && key->batch == t->batch && strcmp(key->model, t->model) == 0 &&
            strcmp(key->precision, t->precision) == 0 && strcmp(key->env, t->env) == 0 &&
            strcmp(key->backend, "cuda") == 0)
            return true;
    }
    return false;
}

bool trace_is_gpu(const run_model *run, const run_trace *t)
{
    for (int i = 0; i < t->n; i++) {
        const run_kernel *k = &t->rows[i];
        if (strcmp(k->source, "cupti") == 0 || !isnan(k->l2_bytes) || !isnan(k->l1_bytes))
            return true;
    }
    return timed_on_cuda(run, t);
}

bool run_has_gpu_trace(const run_model *run)
{
    for (int k = 0; k < run->n_traces; k++)
        if (trace_is_gpu(run, &run->traces[k]))
            return true;
    return false;
}

int trace_repeats(const run_trace *t)
{
    /* traces hold one or a few repeats: a quadratic count is fine */
    int distinct = 0;
    for (int i = 0; i < t->n; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(t->rows[j].repeat, t->rows[i].repeat) == 0;
        distinct += !seen;
    }
    return distinct > 0 ? distinct : 1;
}
