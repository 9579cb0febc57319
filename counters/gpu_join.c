#include "gpu_join.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_ops.h"

bool gpu_kernel_is_comm(const gpu_kernel *k)
{
    int layer;
    gpu_phase phase;
    if (gpu_op_decode(k->op, &layer, &phase) && phase == GPU_PHASE_COMM)
        return true;
    return gpu_kernel_name_is_nccl(k->name);
}

/* "layer 12 bwd_data", "loss", "no operation" */
static void describe_op(uint64_t op, char *buf, size_t len)
{
    int layer;
    gpu_phase phase;
    if (!gpu_op_decode(op, &layer, &phase))
        snprintf(buf, len, "no operation");
    else if (phase == GPU_PHASE_LOSS)
        snprintf(buf, len, "loss");
    else if (layer < 0)
        snprintf(buf, len, "all layers %s", gpu_phase_name(phase));
    else
        snprintf(buf, len, "layer %d %s", layer, gpu_phase_name(phase));
}

/* Kernel names of cuBLAS and cuDNN run to hundreds of characters: the first
 * 80 tell them apart in a message. */
static void describe(const char *name, uint64_t op, char *buf, size_t len)
{
    char where[64];
    describe_op(op, where, sizeof where);
    snprintf(buf, len, "%.80s%s (%s)", name[0] ? name : "an unnamed kernel",
             strlen(name) > 80 ? "..." : "", where);
}

static bool same_name(const char *a, const char *b, char *(*demangle)(const char *name))
{
    if (strcmp(a, b) == 0)
        return true;
    if (!demangle)
        return false;
    char *da = demangle(a), *db = demangle(b);
    bool same = da && db && strcmp(da, db) == 0;
    free(da);
    free(db);
    return same;
}

int gpu_join(const gpu_kernel_list *timing, const gpu_metric_pass *metric,
             char *(*demangle)(const char *name), int *map, char *err, size_t err_len)
{
    if (metric->dropped) {
        snprintf(err, err_len,
                 "the metric pass dropped %zu ranges: more kernels ran than the %d the timing "
                 "pass saw",
                 metric->dropped, metric->n_ranges);
        return -1;
    }
    if (metric->graph_launches) {
        snprintf(err, err_len,
                 "the metric pass launched %d CUDA graph(s), whose kernels cannot be matched "
                 "one by one: trace the step before capturing it",
                 metric->graph_launches);
        return -1;
    }
    if (metric->n_ranges != metric->n_launches) {
        snprintf(err, err_len,
                 "the range profiler measured %d ranges for %d kernel launches%s (%d "
                 "memset/memcpy calls in the step)",
                 metric->n_ranges, metric->n_launches,
                 metric->n_ranges == metric->n_launches + metric->memory_ops
                     ? ": it made ranges of the memory operations too"
                     : "",
                 metric->memory_ops);
        return -1;
    }
    for (int k = 0; k < metric->n_launches; k++)
        if (gpu_kernel_name_is_nccl(metric->launch[k].name)) {
            snprintf(err, err_len,
                     "the metric pass launched the NCCL kernel %.80s (kernel %d): communication "
                     "is never replayed",
                     metric->launch[k].name, k);
            return -1;
        }

    int k = 0;
    for (int i = 0; i < timing->n; i++) {
        const gpu_kernel *t = &timing->v[i];
        if (gpu_kernel_is_comm(t)) {
            map[i] = -1;
            continue;
        }
        if (k == metric->n_launches) {
            int rest = 0;
            for (int j = i; j < timing->n; j++)
                rest += !gpu_kernel_is_comm(&timing->v[j]);
            snprintf(err, err_len,
                     "the timing pass ran %d kernels but the metric pass only %d: the step did "
                     "not launch the same kernels twice",
                     k + rest, metric->n_launches);
            return -1;
        }
        const gpu_launch *m = &metric->launch[k];
        bool unnamed = m->name[0] == '\0';
        if (t->op != m->op || (!unnamed && !same_name(t->name, m->name, demangle))) {
            char a[160], b[160];
            describe(t->name, t->op, a, sizeof a);
            describe(m->name, m->op, b, sizeof b);
            snprintf(err, err_len,
                     "kernel %d of the step differs between the passes: timing ran %s, the "
                     "metric pass %s",
                     k, a, b);
            return -1;
        }
        map[i] = k++;
    }
    if (k != metric->n_launches) {
        snprintf(err, err_len,
                 "the metric pass launched %d kernels but the timing pass only %d: the step did "
                 "not launch the same kernels twice",
                 metric->n_launches, k);
        return -1;
    }
    return 0;
}
