/* The element types the stand-ins read and write (fp32, fp16, bf16), whatever
 * each library calls them (cudnnDataType_t, cudaDataType, ncclDataType_t):
 * one load and one store in double, rounding to nearest even. */
#ifndef ROOFLINE_EMU_HOST_ELEMENTS_H
#define ROOFLINE_EMU_HOST_ELEMENTS_H

#include <cstddef>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "footprint.h"

namespace emu_host {

/* A library's algorithm uses the workspace it needs as scratch: a NaN left
 * every 512 bytes of it (the memory plan's alignment; 0xffff is a NaN in
 * fp16 and bf16, 0xffffffff in fp32) makes a workspace that overlaps data
 * still to be read show in the results, where a real GPU would. */
inline void leave_nans(void *workspace, size_t bytes)
{
    footprint_exclude(workspace, bytes);
    for (size_t at = 0; workspace && at + 4 <= bytes; at += 512)
        for (size_t k = 0; k < 4; k++)
            ((unsigned char *)workspace)[at + k] = 0xff;
}

enum class element { f32, f16, bf16 };

inline double load_element(element t, const void *p, size_t i)
{
    if (t == element::f16)
        return __half2float(((const __half *)p)[i]);
    if (t == element::bf16)
        return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    return ((const float *)p)[i];
}

inline void store_element(element t, void *p, size_t i, double v)
{
    if (t == element::f16)
        ((__half *)p)[i] = __float2half_rn((float)v);
    else if (t == element::bf16)
        ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn((float)v);
    else
        ((float *)p)[i] = (float)v;
}

inline double element_bytes(element t) { return t == element::f32 ? 4.0 : 2.0; }

/* The source type of tensor-core math on t, as CUPTI's tensor counters name
 * it: float inputs reach the tensor cores as TF32. */
inline const char *tensor_source(element t)
{
    return t == element::f16 ? "fp16" : t == element::bf16 ? "bf16" : "tf32";
}

} // namespace emu_host

#endif
