/* The DRAM bytes each operation of the CUDA backend's step moves by the
 * design of its kernels: what a GPU trace's rows carry where no counter could
 * be read (source "analytic"), so that a kernel's roofline point sits at the
 * traffic it must have rather than at the cost model's (models/cost.h), which
 * books each layer's pass alone and so counts, for a fused operation, the
 * tensors its kernel never writes or reads (a ReLU's output over a batch
 * norm's, a residual add's input that the add normalises itself).
 *
 * The convention is a kernel's compulsory traffic: every tensor one kernel
 * reads is counted once (its re-reads within the kernel, a stencil's or the
 * loss's, are taken to hit the caches), every tensor it writes once, and a
 * tensor read by two kernels of one operation twice (batch norm reads its
 * input for the statistics, then again to normalise it). A gradient added to
 * (beta = 1) is read and written. cuDNN's and cuBLASLt's calls are counted by
 * their operands; their workspaces, the batch norm sums' partial sums and
 * single values (the loss scale, the step counter) are not counted.
 *
 * Plain C, the kernels' design written down: models/cuda's files launch what
 * this counts (cuda_norm.cu, cuda_elementwise.cu, cuda_conv.cu, cuda_fc.cu,
 * cuda_pool.cu, cuda_loss_sgd.cu); a kernel that changes what it reads or
 * writes changes this file too. */
#ifndef ROOFLINE_CUDA_TRAFFIC_H
#define ROOFLINE_CUDA_TRAFFIC_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "../cost.h"
#include "cuda_plan.h"

/* What the traffic of a step depends on. */
typedef struct {
    const network *net;
    int batch;
    const precision_plan *pp;
    const layer_fusion *fusion;   /* fusion_plan_make's, per layer */
    const mem_plan *plan;         /* which input gradients are the output gradient itself */
    const bool *bias_in_call;     /* per layer: a conv's or fc's bias (and ReLU) applied in
                                     the library's call (cuBLASLt's epilogue, cuDNN's fused
                                     conv+bias+ReLU); NULL: by a kernel of its own */
} cuda_traffic_plan;

typedef struct {
    int64_t read, written;
} cuda_traffic;

/* The bytes of one operation: a layer's pass, the loss (layer STEP_LOSS,
 * PASS_FWD: forward and backward in one) or the fused update (layer
 * STEP_ALL_LAYERS, PASS_UPDATE); an operation that launches nothing (a layer
 * fused into another's kernel, an add whose gradients are passed on in place
 * unmasked, a pass the layer does not have) moves 0. */
cuda_traffic cuda_op_traffic(const cuda_traffic_plan *t, int layer, pass phase);

#ifdef __cplusplus
}
#endif

#endif
