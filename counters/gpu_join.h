/* The join of the two passes over a step. Correlation ids do not survive from
 * one step to the next, so the k-th kernel the metric pass launched is matched
 * to the k-th kernel of the timing pass (in launch order), and the two must
 * agree on the kernel's name and on the operation that launched it. Any
 * disagreement is an error naming the first place it happens: the passes did
 * not run the same kernels, and a silent shift would book every FLOP after it
 * on the wrong kernel. A launch whose callback gave no symbol name (CUPTI
 * documents the name for every launch callback; should one launch path leave
 * it out) is matched by its place and its operation alone, and counted in
 * metric->unnamed (by gpu_metric_pass_add_launch). Communication kernels
 * (phase comm, or an NCCL name) are only timed: the metric pass runs without
 * the gradient hooks and must launch none of them. */
#ifndef ROOFLINE_GPU_JOIN_H
#define ROOFLINE_GPU_JOIN_H

#include <stdbool.h>
#include <stddef.h>

#include "gpu_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Timed only: launched by a gradient hook (phase comm) or named ncclKernel_*. */
bool gpu_kernel_is_comm(const gpu_kernel *k);

/* Fills map[i] (timing->n entries) with the range of timing kernel i, or -1
 * for a communication kernel. The timing kernels must be in launch order
 * (gpu_kernel_list_sort). Names are compared as given (both passes see the
 * mangled names) and, where they differ, once more demangled when `demangle`
 * (malloc'd result) is not NULL, in case one API gave a readable name. Returns
 * 0, or -1 with one line in err. */
int gpu_join(const gpu_kernel_list *timing, const gpu_metric_pass *metric,
             char *(*demangle)(const char *name), int *map, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
