/* An analytic training step at a machine's roofs: every operation's FLOPs
 * (the cost model) and bytes (the cost model's minimum, or what the CUDA
 * backend's kernels move by design, fusions included) put against measured
 * roofs, each operation taking max(FLOPs / peak, bytes / bandwidth). The sum
 * is the least time the step can take with those bytes on that machine: a
 * bound to hold a backend's design against before it runs there, and the
 * number a measured step is a multiple of. */
#ifndef ROOFLINE_STEP_ROOFS_H
#define ROOFLINE_STEP_ROOFS_H

#include <stddef.h>

#include "../models/graph.h"
#include "../models/precision.h"
#include "roofline.h"
#include "roofs.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    STEP_BYTES_MODEL, /* models/cost.h: each tensor once from DRAM per layer pass */
    STEP_BYTES_CUDA   /* models/cuda/cuda_traffic.h: the CUDA backend's kernels */
} step_bytes_source;

/* One (layer type, phase) of the step: sums over its operations, each
 * operation's roof time taken alone (a compute-bound conv and a memory-bound
 * one do not average). The loss is type "loss", phase "loss"; the update
 * "sgd", "update", as in kernels.csv. */
typedef struct {
    const char *layer_type, *phase;
    double flops, bytes;
    double compute_ns, memory_ns; /* of the operations where each is the larger */
    double roof_ns;               /* sum of max(flops / peak, bytes / bandwidth) */
    char ceiling[ROOF_CEILING_LEN]; /* the compute roof its FLOPs are held against */
} step_roof_row;

typedef struct {
    step_roof_row *rows; /* in order of first appearance: forward, loss, backward, update */
    int n;
    double flops, bytes, roof_ns; /* the step */
    double dram_gbs;              /* the bandwidth used */
} step_roofs;

enum { STEP_ROOFS_OK = 0, STEP_ROOFS_NO_ROOF = -1, STEP_ROOFS_FAILED = -2 };

/* The step of net at batch and prec against r: conv and fc FLOPs against
 * the precision's roof (roofs_precision_ceiling: tf32, fp16, bf16 tensor;
 * fp32 FMA), everything else against fp32_fma (batch norm and the
 * elementwise kernels compute in fp32 whatever they store). Returns
 * STEP_ROOFS_OK; STEP_ROOFS_NO_ROOF with err when a roof is missing (no DRAM
 * row, or no compute ceiling the step needs) or the batch is beyond the
 * cost model's counts; STEP_ROOFS_FAILED out of memory. */
int step_roofs_build(const network *net, int batch, precision prec, step_bytes_source src,
                     const roofs *r, step_roofs *out, char *err, size_t err_len);
void step_roofs_free(step_roofs *s);

#ifdef __cplusplus
}
#endif

#endif
