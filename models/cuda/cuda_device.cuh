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

/* The channel of element e of an (n, c, h, w) tensor stored in `layout`,
 * plane = h * w. A 64-bit division costs some seventy instructions, about
 * twice what an fp32 elementwise kernel may spend per element at HBM speed,
 * so tensors of fewer than 2^31 elements (all of the suite's) divide by
 * multiply and shift (fast_divide.h); larger ones by the 64-bit operators. */
struct channel_finder {
    fast_divisor plane, channels;
    int64_t plane64;
    int layout;
    bool narrow; /* every index < 2^31 */

    __device__ __forceinline__ int of(int64_t e) const
    {
        if (!narrow)
            return layout == LAYOUT_NHWC ? (int)(e % channels.divisor)
                                         : (int)((e / plane64) % channels.divisor);
        uint32_t q = layout == LAYOUT_NHWC ? (uint32_t)e : fast_div(plane, (uint32_t)e), c;
        fast_divmod(channels, q, &c);
        return (int)c;
    }
};

/* The finder for n elements of `channels` channels of `plane` elements. */
static inline channel_finder channel_finder_of(int channels, int64_t plane, int layout, int64_t n)
{
    channel_finder f;
    f.narrow = n < ((int64_t)1 << 31);
    f.plane = fast_divisor_of(f.narrow ? (uint32_t)plane : 1u);
    f.channels = fast_divisor_of((uint32_t)channels);
    f.plane64 = plane;
    f.layout = layout;
    return f;
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

/* Which channels the W elements of vector v hold, for the per-channel
 * vector kernels: in NHWC (or where a plane is one element) W consecutive
 * channels from a multiple of W, the channels being whole vectors; in NCHW
 * W elements of one channel, the planes being whole vectors. span is how
 * many channels a vector holds, so that lane k's channel is first + k %
 * span; blocks() is the grid a launch takes. */
template <typename T> struct nhwc_vectors {
    static constexpr int span = vec16<T>::width;
    fast_divisor per_row; /* channels / W */

    __device__ __forceinline__ int first_channel(uint32_t v) const
    {
        uint32_t cv;
        fast_divmod(per_row, v, &cv);
        return (int)cv * span;
    }
    unsigned blocks(unsigned want, int threads) const;
};

template <typename T> struct nchw_vectors {
    static constexpr int span = 1;
    fast_divisor per_plane, channels; /* plane / W, C */

    __device__ __forceinline__ int first_channel(uint32_t v) const
    {
        uint32_t c;
        fast_divmod(channels, fast_div(per_plane, v), &c);
        return (int)c;
    }
    /* a thread's channel changes along its vectors anyway, and the lanes of
     * a warp mostly share one, so the parameters' loads are broadcasts */
    unsigned blocks(unsigned want, int) const { return want; }
};

#define VEC_STRIDE_LOOP(v, total)                                                             \
    for (uint32_t v = blockIdx.x * blockDim.x + threadIdx.x; v < (total);                     \
         v += gridDim.x * blockDim.x)

/* VEC_STRIDE_LOOP from the last vector to the first, for the second pass of
 * batch norm over a tensor whose first pass (the sums) went from the first
 * row to the last: the grid starts where that pass ended, on what L2 still
 * holds of it (50 MB on an H100, against 100-400 MB for ResNet-50's early
 * activations at batch 256). A thread keeps its channels: `total` is whole
 * rows and the grid's stride whole rows. */
#define VEC_STRIDE_LOOP_BACK(v, total)                                                        \
    for (uint32_t v##_ahead = blockIdx.x * blockDim.x + threadIdx.x,                          \
                  v = (total) - 1u - v##_ahead;                                               \
         v##_ahead < (total);                                                                 \
         v##_ahead += gridDim.x * blockDim.x, v = (total) - 1u - v##_ahead)

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

/* Blocks of a grid-stride pass over NHWC vectors: whole rows a stride
 * (vec_row_blocks says why). */
template <typename T> inline unsigned nhwc_vectors<T>::blocks(unsigned want, int threads) const
{
    return vec_row_blocks(want, per_row.divisor, threads);
}

/* Calls f(map, vectors) with the vector map that n elements of `channels`
 * channels of `plane` elements in `layout` allow (whole vectors in a row or
 * in a plane, vec_fits), and returns true; false where none does and the
 * per-element kernel must run. */
template <typename T, typename F>
static bool with_vector_map(int layout, int channels, int64_t plane, int64_t n,
                            const void *const *pointers, int count, F f)
{
    const int W = vec16<T>::width;
    if (!vec_fits<T>(n, pointers, count))
        return false;
    uint32_t vectors = (uint32_t)(n / W);
    if (layout == LAYOUT_NHWC || plane == 1) {
        if (channels % W != 0)
            return false;
        nhwc_vectors<T> map;
        map.per_row = fast_divisor_of((uint32_t)(channels / W));
        f(map, vectors);
        return true;
    }
    if (plane % W != 0)
        return false;
    nchw_vectors<T> map;
    map.per_plane = fast_divisor_of((uint32_t)(plane / W));
    map.channels = fast_divisor_of((uint32_t)channels);
    f(map, vectors);
    return true;
}

#define GRID_STRIDE(i, n)                                                                     \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                 \
         i += (int64_t)gridDim.x * blockDim.x)

#endif
