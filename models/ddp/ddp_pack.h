/* The NCCL transport's device copies: a gradient into its bucket and the
 * average back, converting element types on the way (CUDA C++ in
 * ddp_pack.cu, called from C). */
#ifndef ROOFLINE_DDP_PACK_H
#define ROOFLINE_DDP_PACK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dst[i] = src[i] x scale for i < n, converted from src_elem to dst_elem
 * (ddp_elem codes: 0 fp32, 1 fp16, 2 bf16), queued on `stream` (a
 * cudaStream_t). Returns the launch's cudaError_t (0: queued). */
int ddp_cuda_convert(void *dst, int dst_elem, const void *src, int src_elem, int64_t n,
                     float scale, void *stream);

#ifdef __cplusplus
}
#endif

#endif
