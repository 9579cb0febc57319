/* The GPU per-kernel counters without a GPU: the metric-to-FLOP arithmetic,
 * the per-chip choice of tensor counters from a chip's counter list, the join
 * of the timing and metric passes (mismatches included), the kernels.csv rows,
 * the analytic fallback, and the whole gpu_trace_step driven by fake passes
 * over a fake backend. Where CUPTI is built in, the profiler host API (which
 * works without a GPU) checks the plans for real chips. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../counters/gpu_fallback.h"
#include "../counters/gpu_join.h"
#include "../counters/gpu_metrics.h"
#include "../counters/gpu_ops.h"
#include "../counters/gpu_rows.h"
#include "../counters/gpu_trace.h"
#include "../counters/step_trace.h"
#ifdef HAVE_CUPTI
#include "../counters/cupti_metrics.h"
#endif
#include "helpers.h"

/* ---- operation ids ---------------------------------------------------------- */

Test(gpu_ops, ids_round_trip_and_foreign_ids_are_refused)
{
    for (int layer = STEP_ALL_LAYERS; layer < 300; layer++)
        for (int p = 0; p < GPU_PHASE_COUNT; p++) {
            uint64_t id = gpu_op_id(layer, (gpu_phase)p);
            cr_assert_neq(id, 0);
            int l;
            gpu_phase ph;
            cr_assert(gpu_op_decode(id, &l, &ph));
            cr_assert_eq(l, layer);
            cr_assert_eq(ph, (gpu_phase)p);
        }
    int l;
    gpu_phase ph;
    cr_expect_not(gpu_op_decode(0, &l, &ph));
    cr_expect_not(gpu_op_decode(42, &l, &ph));
    cr_expect_not(gpu_op_decode(gpu_op_id(3, GPU_PHASE_FWD) ^ (1ull << 60), &l, &ph));
    cr_expect_not(gpu_op_decode(gpu_op_id(3, GPU_PHASE_FWD) + GPU_PHASE_COUNT, &l, &ph));
    cr_expect_eq(gpu_phase_of(STEP_LOSS, PASS_FWD), GPU_PHASE_LOSS);
    cr_expect_eq(gpu_phase_of(4, PASS_BWD_WEIGHTS), GPU_PHASE_BWD_WEIGHTS);
    cr_expect_str_eq(gpu_phase_name(GPU_PHASE_COMM), "comm");
    cr_expect_str_eq(gpu_phase_name(GPU_PHASE_LOSS), "loss");
}

Test(gpu_ops, nccl_kernels_by_name_mangled_or_not)
{
    cr_expect(gpu_kernel_name_is_nccl("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
    cr_expect(gpu_kernel_name_is_nccl("_Z32ncclDevKernel_AllReduce_Sum_f32P11ncclDevComm"));
    cr_expect(gpu_kernel_name_is_nccl("_ZN4nccl6kernelEv")); /* namespace nccl */
    cr_expect(gpu_kernel_name_is_nccl("_ZN10ncclKernelEv"));
    cr_expect_not(gpu_kernel_name_is_nccl("_Z9ffma_loopPfi"));
    cr_expect_not(gpu_kernel_name_is_nccl("sm90_xmma_gemm_bf16bf16_bf16f32"));
}

/* ---- metric choice and arithmetic ------------------------------------------- */

/* Subsets of the base counter lists CUPTI 13.0's profiler host reports per
 * chip (cuptiProfilerHostGetBaseMetrics, COUNTER), every tensor name kept. */
#define FIXED_COUNTERS                                                                        \
    "dram__bytes_read", "dram__bytes_write", "lts__t_bytes", "l1tex__t_bytes",                \
        "smsp__sass_thread_inst_executed_op_dadd_pred_on",                                    \
        "smsp__sass_thread_inst_executed_op_dmul_pred_on",                                    \
        "smsp__sass_thread_inst_executed_op_dfma_pred_on",                                    \
        "smsp__sass_thread_inst_executed_op_fadd_pred_on",                                    \
        "smsp__sass_thread_inst_executed_op_fmul_pred_on",                                    \
        "smsp__sass_thread_inst_executed_op_ffma_pred_on",                                    \
        "smsp__sass_thread_inst_executed_op_hadd_pred_on",                                    \
        "smsp__sass_thread_inst_executed_op_hmul_pred_on",                                    \
        "smsp__sass_thread_inst_executed_op_hfma_pred_on", "sm__cycles_elapsed"

static const char *const gh100[] = {
    FIXED_COUNTERS,
    "sm__ops_path_tensor_op_bgmma_src_int1",
    "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32",
    "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off",
    "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_on",
    "sm__ops_path_tensor_op_hgmma_src_fp16",
    "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off",
    "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_on",
    "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32",
    "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off",
    "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_on",
    "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32",
    "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off",
    "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_on",
    "sm__ops_path_tensor_op_hmma_src_fp16",
    "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16",
    "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16_sparsity_off",
    "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32",
    "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_on",
    "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32",
    "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32_sparsity_on",
    "sm__ops_path_tensor_op_igmma_src_int8",
    "sm__ops_path_tensor_op_imma_src_int8",
    "sm__ops_path_tensor_src_bf16_dst_fp32",
    "sm__ops_path_tensor_src_fp16",
    "sm__ops_path_tensor_src_fp64",
    "sm__ops_path_tensor_src_fp8",
    "sm__ops_path_tensor_src_fp8_sparsity_off",
    "sm__ops_path_tensor_src_int1",
    "sm__ops_path_tensor_src_int8",
    "sm__ops_path_tensor_src_tf32_dst_fp32",
    "smsp__ops_path_tensor_op_hmma_src_bf16_dst_fp32",
    "smsp__ops_path_tensor_src_fp64",
};

static const char *const ga100[] = {
    FIXED_COUNTERS,
    "sm__ops_path_tensor_src_bf16_dst_fp32",
    "sm__ops_path_tensor_src_bf16_dst_fp32_sparsity_on",
    "sm__ops_path_tensor_src_fp16_dst_fp16",
    "sm__ops_path_tensor_src_fp16_dst_fp32",
    "sm__ops_path_tensor_src_fp64",
    "sm__ops_path_tensor_src_int8",
    "sm__ops_path_tensor_src_tf32_dst_fp32",
};

static const char *const tu104[] = {
    FIXED_COUNTERS,
    "sm__ops_path_tensor_src_fp16_bf16_tf32_dst_fp32",
    "sm__ops_path_tensor_src_fp16_dst_fp16",
    "sm__ops_path_tensor_src_int4",
};

static const char *const gb100[] = {
    FIXED_COUNTERS,
    "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32",
    "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_realtime",
    "sm__ops_path_tensor_op_utchmma_src_bf16_dst_fp32",
    "sm__ops_path_tensor_op_utchmma_src_bf16_dst_fp32_realtime",
    "sm__ops_path_tensor_op_utcqmma_src_fp4_fp6_fp8_dst_fp32",
    "sm__ops_path_tensor_src_bf16_dst_fp32",
    "sm__ops_path_tensor_src_bf16_dst_fp32_realtime",
    "sm__ops_path_tensor_src_fp4_fp6_fp8_dst_fp32",
    "sm__ops_path_tensor_src_fp64",
};

#define LIST(a) (a), sizeof(a) / sizeof((a)[0])

/* The chosen names, sorted and joined with spaces. */
static void choose(const char *const *list, size_t n, precision prec, bool all, bool aggregate,
                   char *out, size_t len)
{
    const char *names[GPU_METRICS_MAX];
    gpu_metric_options mo = {.tensor_all_types = all, .tensor_aggregate = aggregate};
    int k = gpu_tensor_metrics_choose(list, n, prec, &mo, names, GPU_METRICS_MAX);
    for (int i = 1; i < k; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    out[0] = '\0';
    for (int i = 0; i < k; i++) {
        const char *short_name = names[i] + strlen("sm__ops_path_tensor_");
        strncat(out, i ? " " : "", len - strlen(out) - 1);
        strncat(out, short_name, len - strlen(out) - 1);
    }
}

Test(gpu_metrics, h100_sums_hgmma_and_hmma_of_the_step_precision)
{
    char got[1024];
    choose(LIST(gh100), PREC_BF16, false, false, got, sizeof got);
    cr_expect_str_eq(got, "op_hgmma_src_bf16_dst_fp32 op_hmma_src_bf16_dst_fp32");
    /* the dst splits of op_hmma_src_fp16 are part of it */
    choose(LIST(gh100), PREC_FP16, false, false, got, sizeof got);
    cr_expect_str_eq(got, "op_hgmma_src_fp16 op_hmma_src_fp16");
    /* an fp32 step counts TF32, which cuDNN may use if allowed */
    choose(LIST(gh100), PREC_FP32, false, false, got, sizeof got);
    cr_expect_str_eq(got, "op_hgmma_src_tf32_dst_fp32 op_hmma_src_tf32_dst_fp32");
    choose(LIST(gh100), PREC_TF32, false, false, got, sizeof got);
    cr_expect_str_eq(got, "op_hgmma_src_tf32_dst_fp32 op_hmma_src_tf32_dst_fp32");
}

Test(gpu_metrics, h100_aggregate_and_all_types)
{
    char got[1024];
    choose(LIST(gh100), PREC_BF16, false, true, got, sizeof got);
    cr_expect_str_eq(got, "src_bf16_dst_fp32");
    choose(LIST(gh100), PREC_FP16, false, true, got, sizeof got);
    cr_expect_str_eq(got, "src_fp16");
    /* fp64 and fp8 have no per-class counters on GH100: the aggregated ones */
    choose(LIST(gh100), PREC_BF16, true, false, got, sizeof got);
    cr_expect_str_eq(got, "op_hgmma_src_bf16_dst_fp32 op_hgmma_src_fp16 op_hgmma_src_tf32_dst_fp32 "
                          "op_hmma_src_bf16_dst_fp32 op_hmma_src_fp16 op_hmma_src_tf32_dst_fp32 "
                          "src_fp64 src_fp8");
    choose(LIST(gh100), PREC_BF16, true, true, got, sizeof got);
    cr_expect_str_eq(got, "src_bf16_dst_fp32 src_fp16 src_fp64 src_fp8 src_tf32_dst_fp32");
}

Test(gpu_metrics, ampere_turing_and_blackwell)
{
    char got[1024];
    choose(LIST(ga100), PREC_BF16, false, false, got, sizeof got);
    cr_expect_str_eq(got, "src_bf16_dst_fp32");
    choose(LIST(ga100), PREC_FP16, false, false, got, sizeof got);
    cr_expect_str_eq(got, "src_fp16_dst_fp16 src_fp16_dst_fp32");
    choose(LIST(tu104), PREC_FP16, false, false, got, sizeof got);
    cr_expect_str_eq(got, "src_fp16_bf16_tf32_dst_fp32 src_fp16_dst_fp16");
    /* one counter for three source types: counted once */
    choose(LIST(tu104), PREC_FP16, true, false, got, sizeof got);
    cr_expect_str_eq(got, "src_fp16_bf16_tf32_dst_fp32 src_fp16_dst_fp16");
    choose(LIST(gb100), PREC_BF16, false, false, got, sizeof got);
    cr_expect_str_eq(got, "op_hmma_src_bf16_dst_fp32 op_utchmma_src_bf16_dst_fp32");
    choose(LIST(gb100), PREC_BF16, false, true, got, sizeof got);
    cr_expect_str_eq(got, "src_bf16_dst_fp32");
    /* a chip without tensor counters for the type: none, not an error */
    static const char *const plain[] = {FIXED_COUNTERS};
    choose(LIST(plain), PREC_BF16, true, false, got, sizeof got);
    cr_expect_str_eq(got, "");
}

Test(gpu_metrics, plan_has_the_fixed_counters_then_the_tensor_ones)
{
    gpu_metric_plan plan;
    char err[200];
    gpu_metric_options mo = {0};
    cr_assert_eq(gpu_metric_plan_build(LIST(gh100), PREC_BF16, &mo, &plan, err, sizeof err), 0,
                 "%s", err);
    cr_expect_eq(plan.n, 15);
    cr_expect_eq(plan.n_tensor, 2);
    cr_expect_str_eq(plan.name[0], "dram__bytes_read.sum");
    cr_expect_str_eq(plan.name[3], "l1tex__t_bytes.sum");
    cr_expect_str_eq(plan.name[9], "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum");
    cr_expect_str_eq(plan.name[13], "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum");
    cr_expect_eq(plan.role[14], GPU_METRIC_TENSOR);

    static const char *const no_l1[] = {"dram__bytes_read", "dram__bytes_write", "lts__t_bytes"};
    cr_expect_eq(gpu_metric_plan_build(LIST(no_l1), PREC_BF16, &mo, &plan, err, sizeof err), -1);
    cr_expect(strstr(err, "l1tex__t_bytes") != NULL, "%s", err);
}

Test(gpu_metrics, fma_counts_two_and_half2_counts_per_lane)
{
    gpu_metric_plan plan;
    char err[200];
    gpu_metric_options mo = {0};
    cr_assert_eq(gpu_metric_plan_build(LIST(gh100), PREC_FP16, &mo, &plan, err, sizeof err), 0);
    /* dram r, w, l2, l1, dadd dmul dfma, fadd fmul ffma, hadd hmul hfma, 2 tensor */
    double values[] = {1000, 500, 7000, 9000, 1, 2, 3, 10, 20, 30, 100, 200, 300, 4096, 8192};
    cr_assert_eq(plan.n, (int)(sizeof values / sizeof values[0]));
    gpu_counts c = gpu_metric_counts(&plan, values);
    cr_expect_eq(c.flops_fp64, 1 + 2 + 2 * 3);
    cr_expect_eq(c.flops_fp32, 10 + 20 + 2 * 30);
    cr_expect_eq(c.flops_fp16, 2 * 100 + 2 * 200 + 4 * 300);
    cr_expect_eq(c.flops_tensor, 4096 + 8192); /* math ops: already FLOPs */
    cr_expect_eq(c.dram_read, 1000);
    cr_expect_eq(c.dram_write, 500);
    cr_expect_eq(c.l2, 7000);
    cr_expect_eq(c.l1, 9000);
}

/* ---- the join ----------------------------------------------------------------- */

typedef struct {
    gpu_kernel_list timing;
    gpu_metric_pass metric;
    int map[64];
} join_case;

static void add_timed(join_case *j, const char *name, uint64_t op)
{
    gpu_kernel k = {.name = (char *)name, .op = op, .correlation = (uint32_t)(10 + j->timing.n)};
    cr_assert_eq(gpu_kernel_list_add(&j->timing, &k), 0);
}

static void add_ranges(join_case *j)
{
    j->metric.n_ranges = j->metric.n_launches;
    j->metric.counts = calloc((size_t)j->metric.n_ranges + 1, sizeof *j->metric.counts);
    cr_assert_not_null(j->metric.counts);
}

/* Four kernels and an NCCL all-reduce launched by a gradient hook. */
static void four_kernels(join_case *j, bool metric_too)
{
    memset(j, 0, sizeof *j);
    uint64_t conv = gpu_op_id(0, GPU_PHASE_FWD), loss = gpu_op_id(STEP_LOSS, GPU_PHASE_LOSS);
    uint64_t bwd = gpu_op_id(0, GPU_PHASE_BWD_WEIGHTS);
    add_timed(j, "_Z8conv_fwdv", conv);
    add_timed(j, "_Z9conv_tailv", conv);
    add_timed(j, "_Z7softmaxv", loss);
    add_timed(j, "_Z8conv_bwdv", bwd);
    add_timed(j, "ncclDevKernel_AllReduce", gpu_op_id(0, GPU_PHASE_COMM));
    if (!metric_too)
        return;
    gpu_metric_pass_add_launch(&j->metric, "_Z8conv_fwdv", conv);
    gpu_metric_pass_add_launch(&j->metric, "_Z9conv_tailv", conv);
    gpu_metric_pass_add_launch(&j->metric, "_Z7softmaxv", loss);
    gpu_metric_pass_add_launch(&j->metric, "_Z8conv_bwdv", bwd);
    add_ranges(j);
}

static void free_case(join_case *j)
{
    gpu_kernel_list_free(&j->timing);
    gpu_metric_pass_free(&j->metric);
}

Test(gpu_join, launch_order_with_communication_left_out)
{
    join_case j;
    four_kernels(&j, true);
    char err[400] = "";
    cr_assert_eq(gpu_join(&j.timing, &j.metric, NULL, j.map, err, sizeof err), 0, "%s", err);
    int want[] = {0, 1, 2, 3, -1};
    for (int i = 0; i < 5; i++)
        cr_expect_eq(j.map[i], want[i], "kernel %d -> %d", i, j.map[i]);
    free_case(&j);
}

Test(gpu_join, a_renamed_kernel_is_an_error_naming_where)
{
    join_case j;
    four_kernels(&j, true);
    free(j.metric.launch[2].name);
    j.metric.launch[2].name = strdup("_Z12softmax_fastv");
    char err[400] = "";
    cr_assert_eq(gpu_join(&j.timing, &j.metric, NULL, j.map, err, sizeof err), -1);
    cr_expect(strstr(err, "kernel 2") && strstr(err, "_Z7softmaxv") &&
                  strstr(err, "_Z12softmax_fastv") && strstr(err, "(loss)"),
              "%s", err);
    free_case(&j);
}

/* A launch whose callback gave no symbol name joins by its place and its
 * operation, counted; of another operation it is still an error. */
Test(gpu_join, an_unnamed_launch_joins_by_place_and_operation)
{
    join_case j;
    four_kernels(&j, false);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(gpu_metric_pass_add_launch(&j.metric, i == 1 ? NULL : j.timing.v[i].name,
                                                j.timing.v[i].op),
                     0);
    add_ranges(&j);
    cr_expect_eq(j.metric.unnamed, 1);
    char err[400] = "";
    cr_assert_eq(gpu_join(&j.timing, &j.metric, NULL, j.map, err, sizeof err), 0, "%s", err);
    cr_expect_eq(j.map[1], 1);

    j.metric.launch[1].op = gpu_op_id(1, GPU_PHASE_FWD);
    cr_assert_eq(gpu_join(&j.timing, &j.metric, NULL, j.map, err, sizeof err), -1);
    cr_expect(strstr(err, "kernel 1") && strstr(err, "an unnamed kernel (layer 1 fwd)"), "%s",
              err);
    free_case(&j);
}

Test(gpu_join, a_kernel_of_another_operation_is_an_error)
{
    join_case j;
    four_kernels(&j, true);
    j.metric.launch[1].op = gpu_op_id(1, GPU_PHASE_FWD);
    char err[400] = "";
    cr_assert_eq(gpu_join(&j.timing, &j.metric, NULL, j.map, err, sizeof err), -1);
    cr_expect(strstr(err, "kernel 1") && strstr(err, "layer 0 fwd") && strstr(err, "layer 1 fwd"),
              "%s", err);
    free_case(&j);
}

Test(gpu_join, counts_that_differ_are_errors)
{
    join_case j;
    char err[400] = "";
    /* the metric pass launched one kernel fewer */
    four_kernels(&j, false);
    gpu_metric_pass_add_launch(&j.metric, "_Z8conv_fwdv", gpu_op_id(0, GPU_PHASE_FWD));
    gpu_metric_pass_add_launch(&j.metric, "_Z9conv_tailv", gpu_op_id(0, GPU_PHASE_FWD));
    gpu_metric_pass_add_launch(&j.metric, "_Z7softmaxv", gpu_op_id(STEP_LOSS, GPU_PHASE_LOSS));
    add_ranges(&j);
    cr_expect_eq(gpu_join(&j.timing, &j.metric, NULL, j.map, err, sizeof err), -1);
    cr_expect(strstr(err, "timing pass ran 4 kernels but the metric pass only 3"), "%s", err);
    free_case(&j);

    /* one more */
    four_kernels(&j, true);
    gpu_metric_pass_add_launch(&j.metric, "_Z5extrav", 0);
    free(j.metric.counts);
    add_ranges(&j);
    cr_expect_eq(gpu_join(&j.timing, &j.metric, NULL, j.map, err, sizeof err), -1);
    cr_expect(strstr(err, "launched 5 kernels but the timing pass only 4"), "%s", err);
    free_case(&j);

    /* ranges for memsets too */
    four_kernels(&j, true);
    j.metric.n_ranges = 6;
    j.metric.memory_ops = 2;
    cr_expect_eq(gpu_join(&j.timing, &j.metric, NULL, j.map, err, sizeof err), -1);
    cr_expect(strstr(err, "6 ranges for 4 kernel launches") && strstr(err, "memory operations"),
              "%s", err);
    free_case(&j);

    four_kernels(&j, true);
    j.metric.dropped = 3;
    cr_expect_eq(gpu_join(&j.timing, &j.metric, NULL, j.map, err, sizeof err), -1);
    cr_expect(strstr(err, "dropped 3 ranges"), "%s", err);
    free_case(&j);

    four_kernels(&j, true);
    j.metric.graph_launches = 1;
    cr_expect_eq(gpu_join(&j.timing, &j.metric, NULL, j.map, err, sizeof err), -1);
    cr_expect(strstr(err, "CUDA graph"), "%s", err);
    free_case(&j);
}

Test(gpu_join, an_nccl_kernel_in_the_metric_pass_is_an_error)
{
    join_case j;
    four_kernels(&j, true);
    gpu_metric_pass_add_launch(&j.metric, "ncclDevKernel_AllReduce", 0);
    free(j.metric.counts);
    add_ranges(&j);
    char err[400] = "";
    cr_expect_eq(gpu_join(&j.timing, &j.metric, NULL, j.map, err, sizeof err), -1);
    cr_expect(strstr(err, "NCCL") && strstr(err, "never replayed"), "%s", err);
    free_case(&j);
}

/* "_Z7softmaxv" reads "softmax()" */
static char *toy_demangle(const char *name)
{
    return strdup(strcmp(name, "_Z7softmaxv") == 0 ? "softmax()" : name);
}

Test(gpu_join, a_name_one_pass_gave_readable_still_matches)
{
    join_case j;
    four_kernels(&j, true);
    free(j.metric.launch[2].name);
    j.metric.launch[2].name = strdup("softmax()");
    char err[400] = "";
    cr_expect_eq(gpu_join(&j.timing, &j.metric, NULL, j.map, err, sizeof err), -1);
    cr_expect_eq(gpu_join(&j.timing, &j.metric, toy_demangle, j.map, err, sizeof err), 0, "%s",
                 err);
    free_case(&j);
}

Test(gpu_join, launch_order_is_correlation_order)
{
    gpu_kernel_list l = {0};
    gpu_kernel a = {.name = "a", .correlation = 7, .start_ns = 50};
    gpu_kernel b = {.name = "b", .correlation = 3, .start_ns = 90};
    gpu_kernel c = {.name = "c", .correlation = 7, .start_ns = 10};
    gpu_kernel_list_add(&l, &a);
    gpu_kernel_list_add(&l, &b);
    gpu_kernel_list_add(&l, &c);
    gpu_kernel_list_sort(&l);
    cr_expect_str_eq(l.v[0].name, "b");
    cr_expect_str_eq(l.v[1].name, "c");
    cr_expect_str_eq(l.v[2].name, "a");
    gpu_kernel_list_free(&l);
}

/* ---- why the counters are not read ------------------------------------------- */

Test(gpu_fallback, each_refusal_has_its_cause_and_fix)
{
    char line[600];
    cr_expect_eq(gpu_cause_of_cupti(GPU_CUPTI_INSUFFICIENT_PRIVILEGES), GPU_CAUSE_PERMISSION);
    gpu_cause_line(GPU_CAUSE_PERMISSION, "cuptiRangeProfilerEnable failed", line, sizeof line);
    cr_expect(strstr(line, "not permitted") && strstr(line, "ERR_NVGPUCTRPERM") &&
                  strstr(line, "root") && strstr(line, "NVreg_RestrictProfilingToAdminUsers=0") &&
                  strstr(line, "(cuptiRangeProfilerEnable failed)"),
              "%s", line);
    cr_expect_null(strchr(line, '\n'));
    cr_expect_eq(gpu_cause_of_cupti(GPU_CUPTI_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED),
                 GPU_CAUSE_OTHER_PROFILER);
    gpu_cause_line(GPU_CAUSE_OTHER_PROFILER, "", line, sizeof line);
    cr_expect(strstr(line, "another profiler") && strstr(line, "Nsight"), "%s", line);
    cr_expect_eq(gpu_cause_of_cupti(GPU_CUPTI_MIG_DEVICE_NOT_SUPPORTED), GPU_CAUSE_MIG);
    gpu_cause_line(GPU_CAUSE_MIG, NULL, line, sizeof line);
    cr_expect(strstr(line, "MIG") && strstr(line, "nvidia-smi -mig 0"), "%s", line);
    cr_expect_eq(gpu_cause_of_cupti(GPU_CUPTI_VIRTUALIZED_DEVICE_NOT_SUPPORTED), GPU_CAUSE_VGPU);
    cr_expect_eq(gpu_cause_of_cupti(GPU_CUPTI_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES),
                 GPU_CAUSE_VGPU);
    gpu_cause_line(GPU_CAUSE_VGPU, NULL, line, sizeof line);
    cr_expect(strstr(line, "vGPU") && strstr(line, "enable_profiling"), "%s", line);
    cr_expect_eq(gpu_cause_of_cupti(GPU_CUPTI_HARDWARE_BUSY), GPU_CAUSE_BUSY);
    cr_expect_eq(gpu_cause_of_cupti(GPU_CUPTI_NOT_INITIALIZED), GPU_CAUSE_NO_LIBRARIES);
    /* anything else is a bug to report, not a machine to work around */
    cr_expect_eq(gpu_cause_of_cupti(999), GPU_CAUSE_NONE);
    cr_expect_eq(gpu_cause_of_cupti(1), GPU_CAUSE_NONE);
    cr_expect_eq(gpu_cause_of_cupti(-1), GPU_CAUSE_NONE);
    for (int c = GPU_CAUSE_PERMISSION; c <= GPU_CAUSE_NO_LIBRARIES; c++)
        cr_expect_eq(gpu_cause_of_cupti(gpu_cause_cupti_code((gpu_cause)c)), (gpu_cause)c,
                     "cause %d", c);
}

Test(gpu_fallback, device_supported_verdicts)
{
    int S = GPU_SUPPORT_SUPPORTED, U = GPU_SUPPORT_UNSUPPORTED, D = GPU_SUPPORT_DISABLED;
    cr_expect_eq(gpu_cause_of_support(S, S, S, S, S, S), GPU_CAUSE_NONE);
    cr_expect_eq(gpu_cause_of_support(S, S, D, S, S, S), GPU_CAUSE_VGPU);
    cr_expect_eq(gpu_cause_of_support(U, S, U, S, S, S), GPU_CAUSE_VGPU);
    cr_expect_eq(gpu_cause_of_support(U, S, S, S, S, S), GPU_CAUSE_UNSUPPORTED_GPU);
    cr_expect_eq(gpu_cause_of_support(S, S, S, U, S, S), GPU_CAUSE_CONFIDENTIAL);
    cr_expect_eq(gpu_cause_of_support(S, U, S, S, S, S), GPU_CAUSE_SLI);
    cr_expect_eq(gpu_cause_of_support(S, S, S, S, U, S), GPU_CAUSE_CMP);
    cr_expect_eq(gpu_cause_of_support(S, S, S, S, S, U), GPU_CAUSE_WSL);
}

/* ---- a fake GPU: backend and passes ------------------------------------------ */

/* Kernels a fake backend "launches": the fake passes record them as CUPTI
 * would, under the pushed operation (timing) or the current one (metric). */
typedef struct {
    /* timing pass */
    bool timing;
    uint64_t stack[8];
    int depth;
    gpu_kernel_list kernels;
    uint32_t correlation;
    uint64_t clock_ns;
    /* metric pass */
    bool recording;
    uint64_t op;
    gpu_metric_pass metric;
    int metric_opens;
    /* what to do */
    int timing_refusal;         /* CUptiResult for timing_start, 0: fine */
    int open_refusal;           /* idem for metrics_open */
    int stop_refusal;           /* idem for metrics_stop, after the step */
    int rename_launch;          /* launch k of the metric pass gets another name, -1: none */
    int extra_launch;           /* the metric pass launches one more kernel */
} fake_gpu;

static void fake_launch(fake_gpu *g, const char *name, int64_t duration)
{
    if (g->timing) {
        gpu_kernel k = {.name = (char *)name,
                        .op = g->depth ? g->stack[g->depth - 1] : 0,
                        .start_ns = g->clock_ns,
                        .end_ns = g->clock_ns + (uint64_t)duration,
                        .correlation = g->correlation++};
        g->clock_ns += (uint64_t)duration + 100;
        cr_assert_eq(gpu_kernel_list_add(&g->kernels, &k), 0);
    }
    if (g->recording) {
        int k = g->metric.n_launches;
        const char *launched = k == g->rename_launch ? "renamed" : name;
        cr_assert_eq(gpu_metric_pass_add_launch(&g->metric, launched, g->op), 0);
    }
}

static int fake_timing_start(void *ctx, int device, char *err, size_t err_len)
{
    fake_gpu *g = ctx;
    cr_expect_eq(device, 0);
    if (g->timing_refusal) {
        snprintf(err, err_len, "cuptiActivityEnable: refused");
        return g->timing_refusal;
    }
    g->timing = true;
    g->correlation = 100;
    return 0;
}

static int fake_push(void *ctx, uint64_t op, char *err, size_t err_len)
{
    fake_gpu *g = ctx;
    (void)err;
    (void)err_len;
    cr_assert(g->depth < 8);
    g->stack[g->depth++] = op;
    return 0;
}

static int fake_pop(void *ctx, char *err, size_t err_len)
{
    fake_gpu *g = ctx;
    if (g->depth == 0) {
        snprintf(err, err_len, "pop without push");
        return 18;
    }
    g->depth--;
    return 0;
}

static int fake_timing_discard(void *ctx, char *err, size_t err_len)
{
    fake_gpu *g = ctx;
    (void)err;
    (void)err_len;
    gpu_kernel_list_free(&g->kernels);
    return 0;
}

static int fake_timing_stop(void *ctx, gpu_kernel_list *out, char *err, size_t err_len)
{
    fake_gpu *g = ctx;
    (void)err;
    (void)err_len;
    cr_expect_eq(g->depth, 0, "every push popped");
    g->timing = false;
    /* CUPTI delivers records in no order */
    for (int i = 0; i + 1 < g->kernels.n; i += 2) {
        gpu_kernel t = g->kernels.v[i];
        g->kernels.v[i] = g->kernels.v[i + 1];
        g->kernels.v[i + 1] = t;
    }
    *out = g->kernels;
    g->kernels = (gpu_kernel_list){0};
    return 0;
}

static int fake_metrics_open(void *ctx, int device, precision prec, const gpu_metric_options *mo,
                             int max_ranges, gpu_metric_info *info, char *err, size_t err_len)
{
    fake_gpu *g = ctx;
    (void)device;
    (void)prec;
    (void)mo;
    cr_expect_gt(max_ranges, 0);
    if (g->open_refusal) {
        snprintf(err, err_len, "cuptiProfilerGetCounterAvailability: CUPTI_ERROR_X");
        return g->open_refusal;
    }
    g->metric_opens++;
    *info = (gpu_metric_info){.passes = 2, .metrics = 15};
    snprintf(info->chip, sizeof info->chip, "GH100");
    return 0;
}

static int fake_metrics_start(void *ctx, char *err, size_t err_len)
{
    fake_gpu *g = ctx;
    (void)err;
    (void)err_len;
    g->recording = true;
    return 0;
}

static void fake_metrics_op(void *ctx, uint64_t op)
{
    ((fake_gpu *)ctx)->op = op;
}

static int fake_metrics_stop(void *ctx, gpu_metric_pass *out, char *err, size_t err_len)
{
    fake_gpu *g = ctx;
    (void)err;
    (void)err_len;
    if (g->extra_launch)
        fake_launch(g, "_Z5extrav", 10);
    g->recording = false;
    if (g->stop_refusal) {
        snprintf(err, err_len, "cuptiRangeProfilerDecodeData: CUPTI_ERROR_Y");
        return g->stop_refusal;
    }
    g->metric.n_ranges = g->metric.n_launches;
    g->metric.counts = calloc((size_t)g->metric.n_ranges + 1, sizeof *g->metric.counts);
    cr_assert_not_null(g->metric.counts);
    /* kernel k: (k + 1) thousand fp32 FLOPs, 10 (k + 1) DRAM bytes read */
    for (int k = 0; k < g->metric.n_ranges; k++)
        g->metric.counts[k] = (gpu_counts){.flops_fp32 = 1000.0 * (k + 1),
                                           .flops_tensor = 7,
                                           .dram_read = 10.0 * (k + 1),
                                           .dram_write = 3,
                                           .l2 = 50,
                                           .l1 = 90};
    *out = g->metric;
    g->metric = (gpu_metric_pass){0};
    return 0;
}

static void fake_metrics_close(void *ctx)
{
    (void)ctx;
}

static char *fake_demangle(const char *name)
{
    char *s = malloc(strlen(name) + 20);
    if (s)
        sprintf(s, "%s(float, int)", name);
    return s;
}

static gpu_passes fake_passes(fake_gpu *g)
{
    return (gpu_passes){.ctx = g,
                        .timing_start = fake_timing_start,
                        .push = fake_push,
                        .pop = fake_pop,
                        .timing_discard = fake_timing_discard,
                        .timing_stop = fake_timing_stop,
                        .metrics_open = fake_metrics_open,
                        .metrics_start = fake_metrics_start,
                        .metrics_op = fake_metrics_op,
                        .metrics_stop = fake_metrics_stop,
                        .metrics_close = fake_metrics_close,
                        .demangle = fake_demangle};
}

/* The backend: every operation launches one kernel named after it, conv
 * operations two. */
struct backend {
    fake_gpu *gpu;
    const network *net;
    int hook_calls;
};

static backend *fake_create(const network *net, const backend_config *cfg, char *err,
                            size_t err_len)
{
    (void)net, (void)cfg, (void)err, (void)err_len;
    return NULL;
}
static void fake_destroy(backend *b)
{
    (void)b;
}
static const char *fake_error(const backend *b)
{
    (void)b;
    return "fake backend error";
}

static int launch_for(backend *b, int layer, const char *what)
{
    char name[96];
    const char *type = layer_type_name(b->net->layers[layer].type);
    /* a mangled function name: _Z, the length, the identifier, v for no parameter */
    snprintf(name, sizeof name, "_Z%zu%s_%sv", strlen(type) + 1 + strlen(what), type, what);
    fake_launch(b->gpu, name, 1000 + 100 * layer);
    if (b->net->layers[layer].type == LAYER_CONV)
        fake_launch(b->gpu, "_Z13conv_epiloguev", 300);
    return 0;
}

static int fake_forward(backend *b, int layer)
{
    return launch_for(b, layer, "fwd");
}
static int fake_loss(backend *b)
{
    fake_launch(b->gpu, "_Z12softmax_xentv", 500);
    return 0;
}
static int fake_read_loss(backend *b, float *loss)
{
    (void)b;
    *loss = 2.3f;
    return 0;
}
static int fake_backward_data(backend *b, int layer, const bool accumulate[LAYER_MAX_INPUTS])
{
    (void)accumulate;
    return launch_for(b, layer, "bwd_data");
}
static int fake_backward_weights(backend *b, int layer)
{
    return launch_for(b, layer, "bwd_weights");
}
static int fake_update_all(backend *b, const sgd_params *sgd)
{
    (void)sgd;
    fake_launch(b->gpu, "_Z14sgd_update_allv", 800);
    return 0;
}
static int fake_sync(backend *b)
{
    (void)b;
    return 0;
}
static void fake_kernel_name(const backend *b, int layer, pass phase, char *buf, size_t len)
{
    (void)b;
    snprintf(buf, len, "fake:%d:%s", layer, pass_name(phase));
}

static const backend_ops fake_ops = {
    .name = "fake",
    .create = fake_create,
    .destroy = fake_destroy,
    .error = fake_error,
    .forward = fake_forward,
    .loss = fake_loss,
    .read_loss = fake_read_loss,
    .backward_data = fake_backward_data,
    .backward_weights = fake_backward_weights,
    .update_all = fake_update_all,
    .sync = fake_sync,
    .kernel_name = fake_kernel_name,
};

/* conv, bn, relu, global average pool, fc: 5 layers */
static network tiny_network(void)
{
    network net;
    net_init(&net, "tiny", 8, 10, (tensor_shape){3, 8, 8});
    int x = net_conv(&net, "conv1", GRAPH_INPUT, 4, 3, 1, 1, 1, false);
    x = net_bn(&net, "bn1", x);
    x = net_relu(&net, "relu", x);
    x = net_avgpool(&net, "avgpool", x, 1);
    net_fc(&net, "fc", x, 10);
    cr_assert_eq(net.status, NET_OK, "%s", net.err);
    return net;
}

typedef struct {
    network net;
    struct backend b;
    fake_gpu gpu;
    step_driver d;
    char *dir;
    char path[512];
} fake_run;

static void fake_run_init(fake_run *r)
{
    memset(r, 0, sizeof *r);
    r->net = tiny_network();
    r->gpu.rename_launch = -1;
    r->b = (struct backend){.gpu = &r->gpu, .net = &r->net};
    cr_assert_eq(step_init(&r->d, &fake_ops, &r->b, &r->net, (sgd_params){0.1f, 0.9f, 5e-4f}), 0);
    r->dir = temp_dir();
    format_or_fail(r->path, sizeof r->path, "%s/kernels.csv", r->dir);
}

static void fake_run_free(fake_run *r)
{
    step_free(&r->d);
    net_free(&r->net);
    gpu_kernel_list_free(&r->gpu.kernels);
    gpu_metric_pass_free(&r->gpu.metric);
    remove_temp_dir(r->dir);
}

/* kernels.csv split into rows of 21 fields (the header checked). */
typedef struct {
    int n;
    char *text;
    char *field[64][21];
} csv_rows;

static void read_rows(const fake_run *r, csv_rows *rows)
{
    rows->text = read_text(r->dir, "kernels.csv");
    rows->n = 0;
    char *line = rows->text;
    char *end = strchr(line, '\n');
    cr_assert_not_null(end);
    *end = '\0';
    cr_assert_str_eq(line, KERNELS_CSV_HEADER);
    for (line = end + 1; *line; line = end + 1) {
        end = strchr(line, '\n');
        cr_assert_not_null(end, "unterminated row");
        *end = '\0';
        cr_assert_lt(rows->n, 64);
        int n = 0;
        for (char *p = line;; n++) {
            cr_assert_lt(n, 21, "row %d has too many fields", rows->n);
            rows->field[rows->n][n] = p;
            char *comma = strchr(p, ',');
            if (!comma)
                break;
            *comma = '\0';
            p = comma + 1;
        }
        cr_assert_eq(n + 1, 21, "row %d has %d fields", rows->n, n + 1);
        rows->n++;
    }
}

enum { F_SEQ = 6, F_KERNEL, F_LAYER, F_TYPE, F_PHASE, F_NS, F_FP64, F_FP32, F_FP16, F_TENSOR,
       F_DRAM_R, F_DRAM_W, F_L2, F_L1, F_SOURCE };

/* The tiny step launches: fwd conv (2) bn relu avgpool fc, loss, then
 * backward weights+data per layer in reverse (fc w d, avgpool d, relu d,
 * bn w d, conv w (2); conv1 has no input gradient), update: 16 kernels. */
enum { TINY_KERNELS = 16 };

Test(gpu_trace, counted_rows_carry_their_layer_phase_and_counts, .timeout = 30)
{
    fake_run r;
    fake_run_init(&r);
    gpu_passes p = fake_passes(&r.gpu);
    gpu_trace_options opt = {.env = "test", .repeat = 2, .counters = GPU_COUNTERS_CUPTI};
    gpu_trace_result res;
    char err[400] = "";
    cr_assert_eq(gpu_trace_step_with(&p, &r.d, 4, PREC_BF16, &opt, r.path, &res, err, sizeof err),
                 0, "%s", err);
    cr_expect_eq(res.kernels, TINY_KERNELS);
    cr_expect_eq(res.rows, TINY_KERNELS);
    cr_expect_eq(res.replay_passes, 2);
    cr_expect_eq(res.metrics, 15);
    cr_expect_str_eq(res.chip, "GH100");
    cr_expect_str_eq(res.source, "cupti");
    cr_expect_str_eq(res.timing, "cupti");
    cr_expect_str_eq(res.why, "");
    cr_expect_eq(res.unattributed, 0);
    cr_expect_eq(r.gpu.metric_opens, 1);

    csv_rows rows;
    read_rows(&r, &rows);
    cr_assert_eq(rows.n, TINY_KERNELS);
    const char *expect[TINY_KERNELS][4] = {
        {"conv1", "conv", "fwd", "_Z8conv_fwdv(float; int)"},
        {"conv1", "conv", "fwd", "_Z13conv_epiloguev(float; int)"},
        {"bn1", "bn", "fwd", NULL},
        {"relu", "relu", "fwd", NULL},
        {"avgpool", "avgpool", "fwd", NULL},
        {"fc", "fc", "fwd", NULL},
        {"loss", "loss", "loss", "_Z12softmax_xentv(float; int)"},
        {"fc", "fc", "bwd_weights", NULL},
        {"fc", "fc", "bwd_data", NULL},
        {"avgpool", "avgpool", "bwd_data", NULL},
        {"relu", "relu", "bwd_data", NULL},
        {"bn1", "bn", "bwd_weights", NULL},
        {"bn1", "bn", "bwd_data", NULL},
        {"conv1", "conv", "bwd_weights", "_Z16conv_bwd_weightsv(float; int)"},
        {"conv1", "conv", "bwd_weights", "_Z13conv_epiloguev(float; int)"},
        {"all", "sgd", "update", "_Z14sgd_update_allv(float; int)"},
    };
    for (int i = 0; i < TINY_KERNELS; i++) {
        char **f = rows.field[i];
        cr_expect_str_eq(f[0], "test");
        cr_expect_str_eq(f[1], "tiny");
        cr_expect_str_eq(f[3], "4");
        cr_expect_str_eq(f[4], "bf16");
        cr_expect_str_eq(f[5], "2");
        cr_expect_eq(atoi(f[F_SEQ]), i);
        cr_expect_str_eq(f[F_LAYER], expect[i][0], "row %d", i);
        cr_expect_str_eq(f[F_TYPE], expect[i][1], "row %d", i);
        cr_expect_str_eq(f[F_PHASE], expect[i][2], "row %d", i);
        if (expect[i][3])
            cr_expect_str_eq(f[F_KERNEL], expect[i][3], "row %d", i);
        cr_expect_gt(atoll(f[F_NS]), 0);
        /* the fake metric pass gave kernel k (k+1) thousand fp32 FLOPs */
        cr_expect_eq(atoll(f[F_FP32]), 1000LL * (i + 1), "row %d: %s", i, f[F_FP32]);
        cr_expect_str_eq(f[F_TENSOR], "7");
        cr_expect_eq(atoll(f[F_DRAM_R]), 10LL * (i + 1));
        cr_expect_str_eq(f[F_L2], "50");
        cr_expect_str_eq(f[F_L1], "90");
        cr_expect_str_eq(f[F_SOURCE], "cupti");
    }
    free(rows.text);
    fake_run_free(&r);
}

Test(gpu_trace, counters_refused_fall_back_to_the_analytic_model, .timeout = 30)
{
    fake_run r;
    fake_run_init(&r);
    r.gpu.open_refusal = GPU_CUPTI_INSUFFICIENT_PRIVILEGES;
    gpu_passes p = fake_passes(&r.gpu);
    gpu_trace_options opt = {.env = "test", .counters = GPU_COUNTERS_CUPTI};
    gpu_trace_result res;
    char err[400] = "";
    cr_assert_eq(gpu_trace_step_with(&p, &r.d, 4, PREC_FP32, &opt, r.path, &res, err, sizeof err),
                 0, "%s", err);
    cr_expect_str_eq(res.source, "analytic");
    cr_expect(strstr(res.why, "not permitted") && strstr(res.why, "CUPTI_ERROR_X"), "%s",
              res.why);
    cr_expect_null(strchr(res.why, '\n'));
    cr_expect_eq(res.replay_passes, 0);

    /* every operation's analytic FLOPs and bytes, spread over its kernels */
    int64_t want_flops = 0, want_read = 0;
    for (int l = STEP_LOSS; l < r.net.n_layers; l++)
        for (int ph = 0; ph < GPU_PHASE_COUNT; ph++) {
            if ((l == STEP_LOSS) != (ph == GPU_PHASE_LOSS) || ph == GPU_PHASE_UPDATE ||
                ph == GPU_PHASE_COMM)
                continue;
            gpu_counts c = gpu_op_analytic(&r.d, 4, PREC_FP32, l, (gpu_phase)ph);
            want_flops += (int64_t)c.flops_fp32;
            want_read += isfinite(c.dram_read) ? (int64_t)c.dram_read : 0;
        }
    gpu_counts update = gpu_op_analytic(&r.d, 4, PREC_FP32, STEP_ALL_LAYERS, GPU_PHASE_UPDATE);
    want_flops += (int64_t)update.flops_fp32;
    want_read += (int64_t)update.dram_read;

    csv_rows rows;
    read_rows(&r, &rows);
    cr_assert_eq(rows.n, TINY_KERNELS);
    int64_t flops = 0, read = 0;
    for (int i = 0; i < rows.n; i++) {
        char **f = rows.field[i];
        cr_expect_str_eq(f[F_SOURCE], "analytic");
        cr_expect_str_eq(f[F_L2], "");
        cr_expect_str_eq(f[F_L1], "");
        cr_expect_str_eq(f[F_TENSOR], "0"); /* fp32: conv and fc on CUDA cores */
        flops += atoll(f[F_FP32]);
        read += atoll(f[F_DRAM_R]);
    }
    /* conv1's bwd_data does not exist: nothing is lost, nothing invented */
    cr_expect_eq(res.ops_without_kernels, 0);
    cr_expect_eq(flops, want_flops);
    cr_expect_eq(read, want_read);
    cr_expect_eq((int64_t)res.flops, want_flops);
    /* the conv's two kernels share its forward cost by duration: 1000 : 300 */
    int64_t conv_fwd = (int64_t)gpu_op_analytic(&r.d, 4, PREC_FP32, 0, GPU_PHASE_FWD).flops_fp32;
    cr_expect_eq(atoll(rows.field[0][F_FP32]) + atoll(rows.field[1][F_FP32]), conv_fwd);
    cr_expect(llabs(atoll(rows.field[0][F_FP32]) - llround(conv_fwd * 1000.0 / 1300.0)) <= 1);
    free(rows.text);
    fake_run_free(&r);
}

/* The tiny network's step traced with counters over r's fake passes. */
static int trace_counted(fake_run *r, gpu_trace_result *res, char *err, size_t err_len)
{
    gpu_passes p = fake_passes(&r->gpu);
    gpu_trace_options opt = {.env = "test", .counters = GPU_COUNTERS_CUPTI};
    err[0] = '\0';
    return gpu_trace_step_with(&p, &r->d, 4, PREC_FP32, &opt, r->path, res, err, err_len);
}

/* A refusal CUPTI gives no known cause for (as under MPS, which the device
 * check cannot see) falls back as long as the step has not run: nothing was
 * counted, and the timing pass's rows are kept. After the step, a CUPTI
 * error that is not a known refusal is an error and writes nothing. */
Test(gpu_trace, an_unknown_refusal_before_the_step_falls_back_after_it_fails, .timeout = 30)
{
    fake_run r;
    gpu_trace_result res;
    char err[400];
    fake_run_init(&r);
    r.gpu.open_refusal = 999; /* CUPTI_ERROR_UNKNOWN */
    cr_assert_eq(trace_counted(&r, &res, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(res.source, "analytic");
    cr_expect_str_eq(res.timing, "cupti");
    cr_expect(strstr(res.why, "GPU counters unavailable") && strstr(res.why, "CUPTI_ERROR_X"),
              "%s", res.why);
    csv_rows rows;
    read_rows(&r, &rows);
    cr_expect_eq(rows.n, TINY_KERNELS);
    free(rows.text);
    fake_run_free(&r);

    fake_run_init(&r);
    r.gpu.stop_refusal = 999;
    cr_expect_neq(trace_counted(&r, &res, err, sizeof err), 0);
    cr_expect(strstr(err, "metric pass") && strstr(err, "CUPTI_ERROR_Y"), "%s", err);
    cr_expect_neq(access(r.path, F_OK), 0, "%s written", r.path);
    fake_run_free(&r);

    /* a known refusal after the step still falls back with its cause */
    fake_run_init(&r);
    r.gpu.stop_refusal = GPU_CUPTI_HARDWARE_BUSY;
    cr_assert_eq(trace_counted(&r, &res, err, sizeof err), 0, "%s", err);
    cr_expect(strstr(res.why, "held by another client"), "%s", res.why);
    fake_run_free(&r);
}

Test(gpu_trace, tensor_precisions_book_conv_and_fc_on_tensor_cores, .timeout = 30)
{
    fake_run r;
    fake_run_init(&r);
    gpu_counts conv = gpu_op_analytic(&r.d, 4, PREC_BF16, 0, GPU_PHASE_FWD);
    gpu_counts bn = gpu_op_analytic(&r.d, 4, PREC_BF16, 1, GPU_PHASE_FWD);
    layer_cost c0 = cost_layer(&r.net, 0, 4, PREC_BF16);
    cr_expect_eq(conv.flops_tensor, (double)c0.flops[PASS_FWD]);
    cr_expect_eq(conv.flops_fp32, 0);
    cr_expect_eq(bn.flops_tensor, 0);
    cr_expect_gt(bn.flops_fp32, 0);
    gpu_counts comm = gpu_op_analytic(&r.d, 4, PREC_BF16, 0, GPU_PHASE_COMM);
    cr_expect_eq(comm.flops_fp32 + comm.flops_tensor, 0);
    cr_expect(isnan(comm.dram_read));
    fake_run_free(&r);
}

/* VGG's pattern: a conv with bias under a ReLU whose backward sums the bias
 * gradient (the CUDA backend's bias_grad_by). */
static int relu_sums_conv_bias(const backend *b, int layer)
{
    (void)b;
    return layer == 0 ? 1 : -1;
}

Test(gpu_trace, bias_adds_are_cuda_core_flops_booked_where_they_run, .timeout = 30)
{
    network net;
    net_init(&net, "biased", 2, 10, (tensor_shape){3, 8, 8});
    int x = net_conv(&net, "conv", GRAPH_INPUT, 4, 3, 1, 1, 1, true);
    x = net_relu(&net, "relu", x);
    x = net_avgpool(&net, "avgpool", x, 1);
    net_fc(&net, "fc", x, 10);
    cr_assert_eq(net.status, NET_OK, "%s", net.err);
    backend_ops ops = fake_ops;
    step_driver d = {.ops = &ops, .net = &net};
    layer_cost conv = cost_layer(&net, 0, 4, PREC_BF16), relu = cost_layer(&net, 1, 4, PREC_BF16);
    layer_cost fc = cost_layer(&net, 3, 4, PREC_BF16);
    int64_t conv_bias = 4 * 4 * 8 * 8, fc_bias = 4 * 10;

    /* the GEMM on tensor cores, its bias adds on CUDA cores */
    gpu_counts fwd = gpu_op_analytic(&d, 4, PREC_BF16, 0, GPU_PHASE_FWD);
    cr_expect_eq(fwd.flops_tensor, (double)(2 * conv.macs));
    cr_expect_eq(fwd.flops_fp32, (double)conv_bias);
    gpu_counts fc_fwd = gpu_op_analytic(&d, 4, PREC_BF16, 3, GPU_PHASE_FWD);
    cr_expect_eq(fc_fwd.flops_tensor, (double)(2 * fc.macs));
    cr_expect_eq(fc_fwd.flops_fp32, (double)fc_bias);
    gpu_counts wgrad = gpu_op_analytic(&d, 4, PREC_BF16, 0, GPU_PHASE_BWD_WEIGHTS);
    cr_expect_eq(wgrad.flops_tensor + wgrad.flops_fp32, (double)conv.flops[PASS_BWD_WEIGHTS]);
    cr_expect_eq(wgrad.flops_fp32, (double)conv_bias);
    gpu_counts relu_bwd = gpu_op_analytic(&d, 4, PREC_BF16, 1, GPU_PHASE_BWD_DATA);
    cr_expect_eq(relu_bwd.flops_fp32, (double)relu.flops[PASS_BWD_DATA]);

    /* the ReLU's backward sums the conv's bias gradient: its adds move there */
    ops.bias_grad_by = relu_sums_conv_bias;
    wgrad = gpu_op_analytic(&d, 4, PREC_BF16, 0, GPU_PHASE_BWD_WEIGHTS);
    cr_expect_eq(wgrad.flops_tensor, (double)(2 * conv.macs));
    cr_expect_eq(wgrad.flops_fp32, 0);
    relu_bwd = gpu_op_analytic(&d, 4, PREC_BF16, 1, GPU_PHASE_BWD_DATA);
    cr_expect_eq(relu_bwd.flops_fp32, (double)(relu.flops[PASS_BWD_DATA] + conv_bias));
    /* nothing is lost or counted twice over the step */
    op_cost all = trace_op_cost(&d, STEP_ALL_LAYERS, PASS_BWD_WEIGHTS, 4, PREC_BF16);
    cr_expect_eq(all.gemm_flops + all.other_flops,
                 conv.flops[PASS_BWD_WEIGHTS] + fc.flops[PASS_BWD_WEIGHTS]);
    net_free(&net);
}

Test(gpu_trace, a_mismatch_between_the_passes_is_an_error_and_writes_nothing, .timeout = 30)
{
    fake_run r;
    fake_run_init(&r);
    r.gpu.rename_launch = 5;
    gpu_passes p = fake_passes(&r.gpu);
    gpu_trace_options opt = {.env = "test", .counters = GPU_COUNTERS_CUPTI};
    gpu_trace_result res;
    char err[400] = "";
    cr_expect_eq(gpu_trace_step_with(&p, &r.d, 4, PREC_BF16, &opt, r.path, &res, err, sizeof err),
                 -1);
    cr_expect(strstr(err, "kernel 5") && strstr(err, "renamed"), "%s", err);
    cr_expect_null(fopen(r.path, "r"), "no kernels.csv after a failed join");
    fake_run_free(&r);

    fake_run_init(&r);
    r.gpu.extra_launch = 1;
    p = fake_passes(&r.gpu);
    cr_expect_eq(gpu_trace_step_with(&p, &r.d, 4, PREC_BF16, &opt, r.path, &res, err, sizeof err),
                 -1);
    cr_expect(strstr(err, "launched 17 kernels but the timing pass only 16"), "%s", err);
    fake_run_free(&r);
}

/* A data-parallel hook: an NCCL all-reduce after each layer's gradients. */
static int hook_allreduce(void *ctx, int layer, char *err, size_t err_len)
{
    (void)layer, (void)err, (void)err_len;
    struct backend *b = ctx;
    b->hook_calls++;
    fake_launch(b->gpu, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 2000);
    return 0;
}

Test(gpu_trace, communication_is_timed_under_comm_and_never_replayed, .timeout = 30)
{
    fake_run r;
    fake_run_init(&r);
    r.d.grad_hooks = (step_grad_hooks){.ctx = &r.b, .grads_ready = hook_allreduce};
    gpu_passes p = fake_passes(&r.gpu);
    gpu_trace_options opt = {.env = "test", .counters = GPU_COUNTERS_CUPTI};
    gpu_trace_result res;
    char err[400] = "";
    cr_assert_eq(gpu_trace_step_with(&p, &r.d, 4, PREC_BF16, &opt, r.path, &res, err, sizeof err),
                 0, "%s", err);
    /* conv1, bn1 and fc have parameters: 3 all-reduces, in the timing pass only */
    cr_expect_eq(r.b.hook_calls, 3);
    cr_expect_eq(res.comm_kernels, 3);
    cr_expect_eq(res.kernels, TINY_KERNELS + 3);
    cr_expect_eq(r.d.grad_hooks.grads_ready, hook_allreduce, "the hooks are given back");
    csv_rows rows;
    read_rows(&r, &rows);
    int comm = 0;
    for (int i = 0; i < rows.n; i++) {
        char **f = rows.field[i];
        if (strcmp(f[F_PHASE], "comm") != 0) {
            cr_expect_str_eq(f[F_SOURCE], "cupti");
            continue;
        }
        comm++;
        cr_expect_str_eq(f[F_TYPE], "comm");
        cr_expect(strcmp(f[F_LAYER], "fc") == 0 || strcmp(f[F_LAYER], "bn1") == 0 ||
                      strcmp(f[F_LAYER], "conv1") == 0,
                  "%s", f[F_LAYER]);
        cr_expect_str_eq(f[F_SOURCE], "analytic");
        cr_expect_str_eq(f[F_FP32], "0");
        cr_expect_str_eq(f[F_DRAM_R], "");
    }
    cr_expect_eq(comm, 3);
    free(rows.text);
    fake_run_free(&r);
}

Test(gpu_trace, no_activity_api_means_host_timing_per_operation, .timeout = 30)
{
    fake_run r;
    fake_run_init(&r);
    r.gpu.timing_refusal = GPU_CUPTI_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    gpu_passes p = fake_passes(&r.gpu);
    gpu_trace_options opt = {.env = "test", .counters = GPU_COUNTERS_CUPTI};
    gpu_trace_result res;
    char err[400] = "";
    cr_assert_eq(gpu_trace_step_with(&p, &r.d, 4, PREC_FP32, &opt, r.path, &res, err, sizeof err),
                 0, "%s", err);
    cr_expect_str_eq(res.timing, "host");
    cr_expect_str_eq(res.source, "analytic");
    cr_expect(strstr(res.why, "another profiler") && strstr(res.why, "refused"), "%s", res.why);
    cr_expect_eq(r.gpu.metric_opens, 0);
    csv_rows rows;
    read_rows(&r, &rows);
    /* one row per operation: 5 fwd, loss, 7 backward (conv1 has no bwd_data), update */
    cr_expect_eq(rows.n, 14);
    cr_expect_str_eq(rows.field[0][F_KERNEL], "fake:0:fwd");
    free(rows.text);
    fake_run_free(&r);

    /* built without CUPTI: the same, saying so */
    fake_run_init(&r);
    cr_assert_eq(gpu_trace_step_with(NULL, &r.d, 4, PREC_FP32, &opt, r.path, &res, err, sizeof err),
                 0, "%s", err);
    cr_expect_str_eq(res.timing, "host");
    cr_expect(strstr(res.why, "without CUPTI"), "%s", res.why);
    fake_run_free(&r);
}

Test(gpu_trace, timing_only_and_a_captured_step)
{
    fake_run r;
    fake_run_init(&r);
    gpu_passes p = fake_passes(&r.gpu);
    gpu_trace_options opt = {.env = "test", .counters = GPU_COUNTERS_NONE};
    gpu_trace_result res;
    char err[400] = "";
    cr_assert_eq(gpu_trace_step_with(&p, &r.d, 4, PREC_FP32, &opt, r.path, &res, err, sizeof err),
                 0, "%s", err);
    cr_expect_eq(r.gpu.metric_opens, 0);
    cr_expect_str_eq(res.source, "analytic");
    cr_expect_str_eq(res.why, "");
    cr_expect_gt(res.kernel_ms, 0);
    cr_expect_geq(res.span_ms, res.kernel_ms);
    /* a second trace appends without a second header */
    cr_assert_eq(gpu_trace_step_with(&p, &r.d, 4, PREC_FP32, &opt, r.path, &res, err, sizeof err),
                 0, "%s", err);
    char *text = read_text(r.dir, "kernels.csv");
    cr_expect_eq(count_lines(text), 1 + 2 * TINY_KERNELS);
    free(text);

    /* warm-up steps are run and forgotten */
    opt.timing_warmup = 2;
    cr_assert_eq(gpu_trace_step_with(&p, &r.d, 4, PREC_FP32, &opt, r.path, &res, err, sizeof err),
                 0, "%s", err);
    cr_expect_eq(res.kernels, TINY_KERNELS);
    cr_expect_gt(res.step_ms, 0);
    opt.timing_warmup = 0;

    r.d.captured = true;
    cr_expect_eq(gpu_trace_step_with(&p, &r.d, 4, PREC_FP32, &opt, r.path, &res, err, sizeof err),
                 -1);
    cr_expect(strstr(err, "graph"), "%s", err);
    r.d.captured = false;
    fake_run_free(&r);
}

Test(gpu_rows, kernel_names_need_no_quoting)
{
    char out[128];
    gpu_kernel_field("void gemm<float, 128, \"x\">(float const*, int)", out, sizeof out);
    cr_expect_str_eq(out, "void gemm<float; 128; 'x'>(float const*; int)");
    gpu_kernel_field("abcdef", out, 4);
    cr_expect_str_eq(out, "abc");
}

Test(gpu_rows, unattributed_kernels_are_layer_none)
{
    fake_run r;
    fake_run_init(&r);
    gpu_row rows[2] = {{.seq = 0, .kernel = "_Z5straybv", .duration_ns = 10},
                       {.seq = 1, .kernel = "ncclKernel", .duration_ns = 10}};
    gpu_row_set_op(&rows[0], 0, "_Z5straybv");
    gpu_row_set_op(&rows[1], 0, "ncclKernel_AllGather");
    cr_expect_eq(rows[0].layer, GPU_ROW_NO_LAYER);
    cr_expect_eq(rows[1].layer, STEP_ALL_LAYERS);
    cr_expect_eq(rows[1].phase, GPU_PHASE_COMM);
    cr_assert_geq(gpu_rows_spread_analytic(&r.d, 4, PREC_FP32, rows, 2), 0);
    gpu_csv_labels labels = {.env = "e", .batch = 4, .prec = PREC_FP32};
    char err[200];
    cr_assert_eq(gpu_rows_write(r.path, &r.net, &labels, rows, 2, err, sizeof err), 0, "%s", err);
    csv_rows csv;
    read_rows(&r, &csv);
    cr_assert_eq(csv.n, 2);
    cr_expect_str_eq(csv.field[0][F_LAYER], "none");
    cr_expect_str_eq(csv.field[0][F_TYPE], "none");
    cr_expect_str_eq(csv.field[0][F_PHASE], "none");
    cr_expect_str_eq(csv.field[1][F_LAYER], "all");
    cr_expect_str_eq(csv.field[1][F_TYPE], "comm");
    cr_expect_str_eq(csv.field[1][F_PHASE], "comm");
    free(csv.text);
    fake_run_free(&r);
}

/* ---- the profiler host of CUPTI 13, which runs without a GPU ----------------- */

#ifdef HAVE_CUPTI
Test(cupti_host, plans_for_real_chips_offline)
{
    gpu_metric_plan plan;
    int passes = 0;
    char err[400] = "";
    gpu_metric_options mo = {0};
    cr_assert_eq(cupti_metrics_plan_offline("GH100", PREC_BF16, &mo, &plan, &passes, err,
                                            sizeof err),
                 0, "%s", err);
    cr_expect_eq(plan.n, 15);
    cr_expect_str_eq(plan.name[13], "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum");
    cr_expect_str_eq(plan.name[14], "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32.sum");
    /* the SASS counters are instrumented and take a pass of their own */
    cr_expect_eq(passes, 2, "GH100 bf16: %d passes", passes);

    cr_assert_eq(cupti_metrics_plan_offline("GH100", PREC_FP16, &mo, &plan, &passes, err,
                                            sizeof err),
                 0, "%s", err);
    cr_expect_eq(plan.n_tensor, 2);
    cr_expect_eq(passes, 3, "GH100 fp16: %d passes", passes);

    cr_assert_eq(cupti_metrics_plan_offline("GA100", PREC_FP16, &mo, &plan, &passes, err,
                                            sizeof err),
                 0, "%s", err);
    cr_expect_str_eq(plan.name[13], "sm__ops_path_tensor_src_fp16_dst_fp16.sum");
    cr_expect_str_eq(plan.name[14], "sm__ops_path_tensor_src_fp16_dst_fp32.sum");

    cr_assert_eq(cupti_metrics_plan_offline("TU104", PREC_FP32, &mo, &plan, &passes, err,
                                            sizeof err),
                 0, "%s", err);
    cr_expect_str_eq(plan.name[13], "sm__ops_path_tensor_src_fp16_bf16_tf32_dst_fp32.sum");

    mo.tensor_all_types = true;
    cr_assert_eq(cupti_metrics_plan_offline("GH100", PREC_BF16, &mo, &plan, &passes, err,
                                            sizeof err),
                 0, "%s", err);
    cr_expect_eq(plan.n_tensor, 8);
    cr_expect_leq(passes, 6, "GH100, every type: %d passes", passes);

    cr_expect_neq(cupti_metrics_plan_offline("XX999", PREC_BF16, &mo, &plan, &passes, err,
                                             sizeof err),
                  0);
}
#endif
