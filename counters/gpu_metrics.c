#include "gpu_metrics.h"

#include <stdio.h>
#include <string.h>

/* The fixed part of the plan, in role order. */
static const char *const fixed_metrics[] = {
    "dram__bytes_read",
    "dram__bytes_write",
    "lts__t_bytes",
    "l1tex__t_bytes",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on",
};
enum { N_FIXED = sizeof fixed_metrics / sizeof fixed_metrics[0] };
_Static_assert((int)N_FIXED == (int)GPU_METRIC_TENSOR,
               "one fixed metric per role, before the tensor ones");

static const char PER_CLASS_PREFIX[] = "sm__ops_path_tensor_op_";
static const char AGGREGATE_PREFIX[] = "sm__ops_path_tensor_src_";

/* Does the source part of a tensor counter name ("..._src_fp16_bf16_tf32_dst_fp32")
 * list `type` as one of its '_'-separated words? */
static bool has_source_type(const char *name, const char *type)
{
    const char *src = strstr(name, "_src_");
    if (!src)
        return false;
    size_t len = strlen(type);
    for (const char *w = src + 5; *w;) {
        size_t wl = strcspn(w, "_");
        if (wl == 3 && strncmp(w, "dst", 3) == 0)
            return false;
        if (wl == len && strncmp(w, type, len) == 0)
            return true;
        w += wl;
        if (*w == '_')
            w++;
    }
    return false;
}

/* Sparsity splits (off + on = the plain counter) and realtime copies would
 * count the same math twice. */
static bool is_variant(const char *name)
{
    return strstr(name, "_sparsity_") || strstr(name, "_realtime");
}

/* `longer` is `shorter` followed by '_' and more: a split of it. */
static bool extends(const char *longer, const char *shorter)
{
    size_t n = strlen(shorter);
    return strlen(longer) > n && strncmp(longer, shorter, n) == 0 && longer[n] == '_';
}

static int add_unique(const char **out, int n, int max, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(out[i], name) == 0)
            return n;
    if (n < max)
        out[n++] = name;
    return n;
}

/* Names of one class (per-instruction or aggregated) for one source type. */
static int collect(const char *const *counters, size_t n_counters, const char *prefix,
                   const char *type, const char **out, int n, int max)
{
    for (size_t i = 0; i < n_counters; i++) {
        const char *c = counters[i];
        if (strncmp(c, prefix, strlen(prefix)) == 0 && !is_variant(c) && has_source_type(c, type))
            n = add_unique(out, n, max, c);
    }
    return n;
}

static int count_class(const char *const *counters, size_t n_counters, const char *prefix,
                       const char *type)
{
    const char *scratch[GPU_METRICS_MAX];
    return collect(counters, n_counters, prefix, type, scratch, 0, GPU_METRICS_MAX);
}

int gpu_tensor_metrics_choose(const char *const *counters, size_t n_counters, precision prec,
                              const gpu_metric_options *opt, const char **out, int max)
{
    static const char *const all_types[] = {"fp16", "bf16", "tf32", "fp64", "fp8"};
    const char *one_type[1] = {prec == PREC_FP16 ? "fp16" : prec == PREC_BF16 ? "bf16" : "tf32"};
    const char *const *types = opt->tensor_all_types ? all_types : one_type;
    int n_types = opt->tensor_all_types ? (int)(sizeof all_types / sizeof all_types[0]) : 1;

    const char *chosen[GPU_METRICS_MAX];
    int n = 0;
    for (int t = 0; t < n_types; t++) {
        bool per_class = count_class(counters, n_counters, PER_CLASS_PREFIX, types[t]) > 0;
        bool aggregate = count_class(counters, n_counters, AGGREGATE_PREFIX, types[t]) > 0;
        bool use_class = per_class && (!opt->tensor_aggregate || !aggregate);
        const char *prefix = use_class ? PER_CLASS_PREFIX : AGGREGATE_PREFIX;
        n = collect(counters, n_counters, prefix, types[t], chosen, n, GPU_METRICS_MAX);
    }
    /* a counter and its dst split both chosen: keep the counter */
    int kept = 0;
    for (int i = 0; i < n; i++) {
        bool split = false;
        for (int j = 0; j < n && !split; j++)
            split = j != i && extends(chosen[i], chosen[j]);
        if (!split && kept < max)
            out[kept++] = chosen[i];
    }
    return kept;
}

static bool listed(const char *const *counters, size_t n_counters, const char *name)
{
    for (size_t i = 0; i < n_counters; i++)
        if (strcmp(counters[i], name) == 0)
            return true;
    return false;
}

static int add_metric(gpu_metric_plan *plan, const char *base, gpu_metric_role role, char *err,
                      size_t err_len)
{
    if (plan->n == GPU_METRICS_MAX) {
        snprintf(err, err_len, "more than %d metrics in the plan", GPU_METRICS_MAX);
        return -1;
    }
    int w = snprintf(plan->name[plan->n], GPU_METRIC_NAME_LEN, "%s.sum", base);
    if (w < 0 || w >= GPU_METRIC_NAME_LEN) {
        snprintf(err, err_len, "metric name too long: %s", base);
        return -1;
    }
    plan->role[plan->n++] = role;
    return 0;
}

int gpu_metric_plan_build(const char *const *counters, size_t n_counters, precision prec,
                          const gpu_metric_options *opt, gpu_metric_plan *plan, char *err,
                          size_t err_len)
{
    memset(plan, 0, sizeof *plan);
    for (int i = 0; i < N_FIXED; i++) {
        if (!listed(counters, n_counters, fixed_metrics[i])) {
            snprintf(err, err_len, "this GPU's profiler has no counter %s", fixed_metrics[i]);
            return -1;
        }
        if (add_metric(plan, fixed_metrics[i], (gpu_metric_role)i, err, err_len))
            return -1;
    }
    const char *tensor[GPU_METRICS_MAX];
    int nt = gpu_tensor_metrics_choose(counters, n_counters, prec, opt, tensor,
                                       GPU_METRICS_MAX - N_FIXED);
    for (int i = 0; i < nt; i++)
        if (add_metric(plan, tensor[i], GPU_METRIC_TENSOR, err, err_len))
            return -1;
    plan->n_tensor = nt;
    return 0;
}

gpu_counts gpu_metric_counts(const gpu_metric_plan *plan, const double *values)
{
    double v[GPU_METRIC_TENSOR] = {0};
    double tensor = 0;
    for (int i = 0; i < plan->n; i++) {
        if (plan->role[i] == GPU_METRIC_TENSOR)
            tensor += values[i];
        else
            v[plan->role[i]] = values[i];
    }
    return (gpu_counts){
        .flops_fp64 = v[GPU_METRIC_DADD] + v[GPU_METRIC_DMUL] + 2 * v[GPU_METRIC_DFMA],
        .flops_fp32 = v[GPU_METRIC_FADD] + v[GPU_METRIC_FMUL] + 2 * v[GPU_METRIC_FFMA],
        .flops_fp16 = 2 * v[GPU_METRIC_HADD] + 2 * v[GPU_METRIC_HMUL] + 4 * v[GPU_METRIC_HFMA],
        .flops_tensor = tensor,
        .dram_read = v[GPU_METRIC_DRAM_READ],
        .dram_write = v[GPU_METRIC_DRAM_WRITE],
        .l2 = v[GPU_METRIC_L2],
        .l1 = v[GPU_METRIC_L1],
    };
}
