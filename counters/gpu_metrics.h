/* The metrics of the counter pass and their arithmetic (notes/cupti.md §2):
 * which counters to collect on the running chip, chosen from the chip's own
 * list of base counters, and how their values become FLOPs by precision and
 * bytes per memory level. Plain C: the list comes from CUPTI's profiler host
 * (cupti_metrics.cu) on a GPU, and from fixtures in the tests.
 *
 * Conventions:
 * - CUDA-core FLOPs from the SASS thread-instruction counters (predicated-off
 *   threads excluded): fp64 = dadd + dmul + 2 dfma, fp32 = fadd + fmul +
 *   2 ffma (an FMA is two FLOPs), fp16 = 2 hadd + 2 hmul + 4 hfma, Nsight
 *   Compute's convention: the fp16 instructions are counted as packed half2
 *   (a scalar half instruction is then counted twice).
 * - Tensor FLOPs are the sum of the chosen sm__ops_path_tensor_* counters,
 *   whose unit is the math op with a multiply-add counted as 2 (on the H100
 *   the op_hgmma counters read exactly 2MNK for a GEMM, notes/cupti.md).
 * - Bytes: dram__bytes_read/write.sum, lts__t_bytes.sum (L2, bytes requested
 *   at the tag stage) and l1tex__t_bytes.sum (L1, idem; it does not see TMA
 *   loads on Hopper, so it under-counts TMA kernels). */
#ifndef ROOFLINE_GPU_METRICS_H
#define ROOFLINE_GPU_METRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "../models/precision.h"
#include "gpu_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { GPU_METRICS_MAX = 40, GPU_METRIC_NAME_LEN = 96 };

typedef enum {
    GPU_METRIC_DRAM_READ,
    GPU_METRIC_DRAM_WRITE,
    GPU_METRIC_L2,
    GPU_METRIC_L1,
    GPU_METRIC_DADD,
    GPU_METRIC_DMUL,
    GPU_METRIC_DFMA,
    GPU_METRIC_FADD,
    GPU_METRIC_FMUL,
    GPU_METRIC_FFMA,
    GPU_METRIC_HADD,
    GPU_METRIC_HMUL,
    GPU_METRIC_HFMA,
    GPU_METRIC_TENSOR,      /* a tensor-pipe counter: FLOPs directly */
} gpu_metric_role;

typedef struct {
    /* every floating-point tensor source type (fp16, bf16, tf32, fp64, fp8),
     * not only the step's precision: more replay passes (on GH100, counted
     * offline with CUDA 13.0's profiler host library: 5 against the bf16 and
     * tf32 plans' 2 and fp16's 3; fp16's counters are the costly ones) */
    bool tensor_all_types;
    /* the chip's aggregated sm__ops_path_tensor_src_* counters rather than the
     * per-instruction-class ones (op_hgmma + op_hmma on the H100), where it
     * has both; the aggregate's equality to the sum is not yet verified */
    bool tensor_aggregate;
} gpu_metric_options;

typedef struct {
    int n;
    char name[GPU_METRICS_MAX][GPU_METRIC_NAME_LEN]; /* with the rollup: "dram__bytes_read.sum" */
    gpu_metric_role role[GPU_METRICS_MAX];
    int n_tensor;
} gpu_metric_plan;

/* What opening a metric pass tells about it. */
typedef struct {
    int passes;             /* replay passes per kernel (cuptiProfilerHostGetNumOfPasses) */
    int metrics;            /* counters collected per kernel */
    char chip[32];          /* the profiler's chip name, e.g. GH100 */
} gpu_metric_info;

/* The tensor-pipe base counters (no rollup) to sum for a step in `prec`,
 * chosen from the chip's base counter names: source types fp16, bf16, or tf32
 * (fp32 steps too, to show TF32 that slipped in), or all floating-point types;
 * per instruction class where the chip has such counters (unless
 * opt->tensor_aggregate), else its aggregated ones; never the sparsity or
 * realtime variants, nor one whose name extends another chosen name (the dst
 * split of a counter already chosen). Writes up to `max` pointers into the
 * given list to out[] in list order; returns how many were chosen. */
int gpu_tensor_metrics_choose(const char *const *counters, size_t n_counters, precision prec,
                              const gpu_metric_options *opt, const char **out, int max);

/* The whole plan: the 4 memory and 9 SASS counters, which the chip must have,
 * then the tensor counters. Returns 0, or -1 with one line in err. */
int gpu_metric_plan_build(const char *const *counters, size_t n_counters, precision prec,
                          const gpu_metric_options *opt, gpu_metric_plan *plan, char *err,
                          size_t err_len);

/* Metric values of one range (in plan order) -> FLOPs and bytes. */
gpu_counts gpu_metric_counts(const gpu_metric_plan *plan, const double *values);

#ifdef __cplusplus
}
#endif

#endif
