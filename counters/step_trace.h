/* The per-layer trace of one training step (the CPU side of the per-kernel
 * counters): every layer's forward, backward-data, backward-weights and
 * update, and the loss, synchronised and timed on its own, with FLOPs from the
 * CPU's counters where the PMU allows (source "perf") and otherwise, like the
 * bytes always on CPU, from the analytic cost model (source "analytic").
 * Layout conversions a backend runs around an operation's kernel (oneDNN's
 * reorders) are rows of their own after it: the same layer and phase, layer
 * type "reorder", no FLOPs, the bytes of the tensors they read and wrote. */
#ifndef ROOFLINE_STEP_TRACE_H
#define ROOFLINE_STEP_TRACE_H

#include <stdbool.h>
#include <stddef.h>

#include "../models/step.h"

#define KERNELS_CSV_HEADER                                                                    \
    "env,model,res,batch,precision,repeat,seq,kernel,layer,layer_type,phase,duration_ns,"     \
    "flops_fp64,flops_fp32,flops_fp16,flops_tensor,dram_read_bytes,dram_write_bytes,"         \
    "l2_bytes,l1_bytes,source"

typedef struct {
    const char *env;
    int repeat;
    bool use_perf;      /* false: analytic FLOPs without trying the counters */
} trace_options;

typedef struct {
    int rows;
    double total_ms;            /* sum of the rows' durations */
    long long flops, bytes;     /* sums of the rows */
    int layout_rows;            /* rows of layout conversions (layer type "reorder") */
    double layout_ms;           /* their durations, part of total_ms */
    const char *source;         /* "perf" or "analytic" */
    char perf_why[240];         /* why the counters were not used, or "" */
} trace_result;

/* The analytic cost of one operation of a step (layer STEP_LOSS: the loss;
 * STEP_ALL_LAYERS: every layer's pass): its own and that of the operations
 * the backend fused into it (backend_ops.fused_into). The GEMM FLOPs of conv
 * and fc (2 a MAC) in gemm_flops, the rest in other_flops, a conv or fc's bias
 * gradient's adds in the backward-data of the layer that sums them where the
 * backend moved them (backend_ops.bias_grad_by). */
typedef struct {
    int64_t gemm_flops, other_flops, bytes, written;
} op_cost;

op_cost trace_op_cost(const step_driver *d, int layer, pass phase, int batch, precision prec);

/* Runs one traced training step with the driver (parameters are updated as in
 * any step) and appends its rows to the kernels.csv at `path`, the header
 * first when the file is new. Returns 0, or -1 with one line in err. */
int trace_step(step_driver *d, int batch, precision prec, const trace_options *opt,
               const char *path, trace_result *result, char *err, size_t err_len);

#endif
