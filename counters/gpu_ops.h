/* Which operation of a training step launched a GPU kernel. The step driver's
 * observer names each operation by (layer, pass); the GPU trace packs that pair
 * into the 64-bit external correlation id CUPTI attaches to every CUDA API call
 * made while the id is pushed, so kernels launched inside cuDNN or cuBLAS carry
 * the operation that called the library. Phase "comm" is reserved for the
 * gradient hooks (data-parallel reduction): NCCL kernels on their own stream. */
#ifndef ROOFLINE_GPU_OPS_H
#define ROOFLINE_GPU_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "../models/cost.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kernels.csv phases (DESIGN.md §7): the four passes, then the loss and
 * the communication of data-parallel training. */
typedef enum {
    GPU_PHASE_FWD,
    GPU_PHASE_BWD_DATA,
    GPU_PHASE_BWD_WEIGHTS,
    GPU_PHASE_UPDATE,
    GPU_PHASE_LOSS,
    GPU_PHASE_COMM,
    GPU_PHASE_COUNT
} gpu_phase;

/* fwd, bwd_data, bwd_weights, update, loss, comm ("?" out of range) */
const char *gpu_phase_name(gpu_phase p);

/* The phase of a step-driver operation: the loss (layer STEP_LOSS) is "loss",
 * every other operation its pass. */
gpu_phase gpu_phase_of(int layer, pass phase);

/* The id of an operation: never 0 (CUPTI's "no id"), and distinct for every
 * (layer, phase) with layer >= STEP_ALL_LAYERS. */
uint64_t gpu_op_id(int layer, gpu_phase phase);

/* Unpacks an id made by gpu_op_id; false for 0 and for anything else. */
bool gpu_op_decode(uint64_t id, int *layer, gpu_phase *phase);

/* NCCL's kernels are named ncclKernel_* / ncclDevKernel_*: they are timed but
 * never replayed (they would wait forever for peers that are not replaying). */
bool gpu_kernel_name_is_nccl(const char *name);

#ifdef __cplusplus
}
#endif

#endif
