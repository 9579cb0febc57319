/* Device-side helpers of the CUDA backend's own kernels: element types read
 * and written as float, the activation and its mask, the channel of an
 * element in either layout, and the dispatch from elem_type to a C++ type. */
#ifndef ROOFLINE_CUDA_DEVICE_CUH
#define ROOFLINE_CUDA_DEVICE_CUH

#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_plan.h"
#include "fast_divide.h"

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v)
{
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float activate(float v, int act)
{
    if (act == ACT_RELU)
        return v > 0.0f ? v : 0.0f;
    if (act == ACT_RELU6)
        return v > 0.0f ? (v < 6.0f ? v : 6.0f) : 0.0f;
    return v;
}

/* Whether the gradient passes an activation whose output was y (PyTorch's
 * in-place ReLU masks with its output, as the CPU backend does). */
__device__ __forceinline__ bool passes(float y, int act)
{
    if (act == ACT_RELU)
        return y > 0.0f;
    if (act == ACT_RELU6)
        return y > 0.0f && y < 6.0f;
    return true;
}

/* The channel of element e of an (n, c, h, w) tensor stored in `layout`;
 * plane = h * w. */
__device__ __forceinline__ int channel_of(int64_t e, int channels, int64_t plane, int layout)
{
    return layout == LAYOUT_NHWC ? (int)(e % channels) : (int)((e / plane) % channels);
}

/* Calls f with a value of the C++ type of `elem`; returns what f returns. */
template <typename F> static int with_elem(elem_type elem, F f)
{
    switch (elem) {
    case ELEM_F32: return f(float{});
    case ELEM_F16: return f(__half{});
    case ELEM_BF16: return f(__nv_bfloat16{});
    }
    return -1;
}

/* 16-byte vectors: W = 16 / sizeof(T) elements of T moved by one load or
 * store. An elementwise kernel that takes one fp16/bf16 element a thread has
 * 2 bytes in flight where HBM needs about 14 KB a SM (Little's law at 3 TB/s
 * and the latency of a DRAM access), and one that finds each element's
 * channel by a 64-bit modulo spends more on it than on the arithmetic; the
 * vector kernels move 16 bytes a thread and divide once per vector. */
template <typename T> struct alignas(16) vec16 {
    static constexpr int width = 16 / (int)sizeof(T);
    T v[width];
};

template <typename T> __device__ __forceinline__ vec16<T> load_vec(const T *p, int64_t v)
{
    return ((const vec16<T> *)p)[v];
}

template <typename T> __device__ __forceinline__ void store_vec(T *p, int64_t v, const vec16<T> &x)
{
    ((vec16<T> *)p)[v] = x;
}

/* Vector v of an NHWC tensor whose rows hold vectors_per_row = channels / W
 * vectors: returns its row (n, y, x flattened), and in *c0 its first channel. */
template <typename T>
__device__ __forceinline__ uint32_t vec_row_channel(const fast_divisor &vectors_per_row, uint32_t v,
                                                    int *c0)
{
    uint32_t cv;
    uint32_t row = fast_divmod(vectors_per_row, v, &cv);
    *c0 = (int)cv * vec16<T>::width;
    return row;
}

/* W fp32 sums stored as vector v of p, added to what p holds there when
 * accumulate. */
template <typename T>
__device__ __forceinline__ void store_vec_sums(T *p, uint32_t v, const float *sums, bool accumulate)
{
    vec16<T> out;
    if (accumulate)
        out = load_vec((const T *)p, v);
#pragma unroll
    for (int k = 0; k < vec16<T>::width; k++)
        out.v[k] = from_float<T>(accumulate ? to_float(out.v[k]) + sums[k] : sums[k]);
    store_vec(p, v, out);
}

#define VEC_STRIDE_LOOP(v, total)                                                             \
    for (uint32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < (total);                     \
         v += gridDim.x * blockDim.x)

/* Blocks of `threads` for a grid-stride pass over vectors in rows of
 * vectors_per_row, near `want`: a multiple of vectors_per_row / gcd(...,
 * threads), so that the grid's stride is whole rows and a thread's vectors
 * stay in the same channels (whose parameters it may then keep). */
static inline unsigned vec_row_blocks(unsigned want, uint32_t vectors_per_row, int threads)
{
    uint32_t a = vectors_per_row, b = (uint32_t)threads;
    while (b) {
        uint32_t t = a % b;
        a = b;
        b = t;
    }
    uint32_t unit = vectors_per_row / (a ? a : 1);
    uint32_t blocks = want / unit * unit;
    return blocks > unit ? blocks : unit;
}

/* Whether n elements may run as vectors of T: whole vectors, fewer than 2^31
 * of them (32-bit indices and fast divisions), every pointer (NULL allowed)
 * on a 16-byte boundary. */
template <typename T>
static inline bool vec_fits(int64_t n, const void *const *pointers, int count)
{
    const int W = vec16<T>::width;
    if (n % W != 0 || n / W >= ((int64_t)1 << 31))
        return false;
    for (int i = 0; i < count; i++)
        if ((uintptr_t)pointers[i] % 16 != 0)
            return false;
    return true;
}

/* ... and per channel: NHWC with the channels whole vectors, so that a vector
 * never crosses a row and its first channel is a multiple of W. */
template <typename T>
static inline bool vec_fits_nhwc(int layout, int channels, int64_t n, const void *const *pointers,
                                 int count)
{
    return layout == LAYOUT_NHWC && channels % vec16<T>::width == 0 &&
           vec_fits<T>(n, pointers, count);
}

#define GRID_STRIDE(i, n)                                                                     \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                 \
         i += (int64_t)gridDim.x * blockDim.x)

#endif
