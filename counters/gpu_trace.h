/* The per-kernel trace of one GPU training step (issue 14): every kernel the
 * step launches, with its duration, FLOPs by precision (CUDA cores and tensor
 * cores) and DRAM, L2 and L1 bytes, attributed to the layer and phase that
 * launched it; rows appended to kernels.csv (DESIGN.md §7).
 *
 * Two passes, each one training step (so the parameters take two more
 * updates, as any step would give them; nothing is restored):
 * - timing pass: CUPTI's Activity API (concurrent kernels, runtime and driver
 *   API records for correlation). The step driver's observer pushes an
 *   external correlation id naming (layer, phase) around each operation and
 *   pops it after, with no synchronisation, so the step runs as untraced; the
 *   gradient hooks run under phase "comm".
 * - metric pass (opt->counters == GPU_COUNTERS_CUPTI): CUPTI's Range Profiler,
 *   auto range and kernel replay, one range per kernel, the counters of
 *   gpu_metrics.h. It runs without the gradient hooks (so no NCCL kernel is
 *   ever replayed) and is joined to the timing pass by launch order with a
 *   name and operation check: a mismatch is an error.
 * Where the counters cannot be read (not permitted, another profiler, vGPU,
 * MIG, ...) the trace goes on with the timing pass and the analytic FLOPs and
 * bytes of each operation spread over its kernels by duration (source
 * "analytic"), and result->why says why in one line with the fix. Where the
 * Activity API itself is unavailable (built without CUPTI, another profiler
 * attached) the CPU trace of step_trace.h runs instead: one row per operation,
 * synchronised and timed on the host (result->timing "host"). */
#ifndef ROOFLINE_GPU_TRACE_H
#define ROOFLINE_GPU_TRACE_H

#include <stddef.h>

#include "../models/step.h"
#include "gpu_kernels.h"
#include "gpu_metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GPU_COUNTERS_NONE,      /* timing pass only; FLOPs and bytes analytic */
    GPU_COUNTERS_CUPTI,     /* + the metric pass */
} gpu_counters;

typedef struct {
    const char *env;            /* kernels.csv labels */
    int repeat;
    gpu_counters counters;
    gpu_metric_options metrics; /* which tensor counters (zero: the step's precision) */
    int device;                 /* the CUDA device the backend runs on */
    /* steps run under the Activity API and thrown away before the timed one,
     * so that CUPTI's first-launch work on each kernel is not in step_ms
     * (each is one more update of the parameters); 0: none */
    int timing_warmup;
} gpu_trace_options;

typedef struct {
    int rows;
    int kernels;                /* kernels the traced step launched */
    int comm_kernels;           /* of which communication (timed only) */
    int unattributed;           /* launched outside every operation (layer "none") */
    int unnamed;                /* metric-pass launches joined without a name (gpu_join.h) */
    int ops_without_kernels;    /* operations with analytic work and no kernel */
    int replay_passes;          /* per kernel in the metric pass; 0 without one */
    int metrics;                /* counters read per kernel; 0 without */
    double step_ms;             /* host wall time of the timing pass's step, launch to sync */
    double kernel_ms;           /* sum of its kernels' durations */
    double span_ms;             /* its first kernel's start to its last kernel's end */
    double metric_pass_s;       /* wall time of the metric pass, setup to last value; 0 without */
    double flops;               /* sums over the rows: every precision */
    double dram_bytes;          /* read + written */
    const char *source;         /* of the rows' FLOPs and bytes: "cupti" or "analytic" */
    const char *timing;         /* "cupti" (per kernel) or "host" (per operation, synchronised) */
    char chip[32];              /* the profiler's chip name, "" when the metric pass did not open */
    char why[400];              /* why the counters or the Activity API were not used, or "" */
} gpu_trace_result;

/* Runs the timing pass over one step of the driver (and the metric pass over
 * a second step when asked), joins them and appends one row per kernel to the
 * kernels.csv at path (the header first when the file is new). The driver must
 * not hold a captured graph (trace before step_capture). Returns 0, or -1 with
 * one line in err (no row is written then). */
int gpu_trace_step(step_driver *d, int batch, precision prec, const gpu_trace_options *opt,
                   const char *path, gpu_trace_result *result, char *err, size_t err_len);

/* The two passes as gpu_trace_step drives them; CUPTI's (cupti_trace.cu and
 * cupti_metrics.cu, joined in gpu_trace_cupti.c), or the tests' own. Every int-returning entry
 * returns 0, or non-zero with one line in err: a CUptiResult value (> 0) for
 * a failing CUPTI call, so that gpu_fallback.h can tell a machine that forbids
 * counters from a bug, else -1. */
typedef struct {
    void *ctx;
    int (*timing_start)(void *ctx, int device, char *err, size_t err_len);
    int (*push)(void *ctx, uint64_t op, char *err, size_t err_len);
    int (*pop)(void *ctx, char *err, size_t err_len);
    /* waits for the device and drops what was recorded so far */
    int (*timing_discard)(void *ctx, char *err, size_t err_len);
    /* waits for the device, collects and stops; called after every start */
    int (*timing_stop)(void *ctx, gpu_kernel_list *out, char *err, size_t err_len);
    int (*metrics_open)(void *ctx, int device, precision prec, const gpu_metric_options *mo,
                        int max_ranges, gpu_metric_info *info, char *err, size_t err_len);
    int (*metrics_start)(void *ctx, char *err, size_t err_len);
    void (*metrics_op)(void *ctx, uint64_t op);     /* the operation now launching, 0: none */
    int (*metrics_stop)(void *ctx, gpu_metric_pass *out, char *err, size_t err_len);
    void (*metrics_close)(void *ctx);               /* after every successful open */
    char *(*demangle)(const char *name);            /* malloc'd, readable; NULL: copy it */
} gpu_passes;

/* gpu_trace_step with the given passes (NULL: as if built without CUPTI). */
int gpu_trace_step_with(const gpu_passes *passes, step_driver *d, int batch, precision prec,
                        const gpu_trace_options *opt, const char *path, gpu_trace_result *result,
                        char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
