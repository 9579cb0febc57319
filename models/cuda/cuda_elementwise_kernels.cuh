/* The elementwise kernels of cuda_elementwise.cu (which says what they do),
 * apart from their launches: the backend's .cu and the host emulator's tests
 * (tests/emu/) include the same code. */
#ifndef ROOFLINE_CUDA_ELEMENTWISE_KERNELS_CUH
#define ROOFLINE_CUDA_ELEMENTWISE_KERNELS_CUH

#include "cuda_device.cuh"
#include "fast_divide.h"

extern "C" {
#include "../rng.h"
}

enum { EW_THREADS = 256 };

template <typename D, typename S>
__global__ void convert_kernel(D *dst, const S *src, int64_t n)
{
    GRID_STRIDE(j, n) dst[j] = from_float<D>(to_float(src[j]));
}

template <typename T> __global__ void fill_kernel(T *dst, float value, int64_t n)
{
    GRID_STRIDE(j, n) dst[j] = from_float<T>(value);
}

/* ---- activations, add, dropout: forward ---------------------------------------- */

template <typename T> __global__ void activate_kernel(T *y, const T *x, int act, int64_t n)
{
    GRID_STRIDE(j, n) y[j] = from_float<T>(activate(to_float(x[j]), act));
}

template <typename T>
__global__ void add_kernel(T *y, const T *x0, const T *x1, int act, int64_t n)
{
    GRID_STRIDE(j, n) y[j] = from_float<T>(activate(to_float(x0[j]) + to_float(x1[j]), act));
}

/* The mask of the CPU backend, bit for bit: keep where uniform(seed, stream,
 * j) >= p, j the element's NCHW index, stream = step x layers + layer. */
template <typename T>
__global__ void dropout_kernel(T *y, uint8_t *keep, const T *x, float p, uint64_t seed,
                               const uint64_t *forward_count, uint64_t n_layers, uint64_t layer,
                               int channels, int64_t plane, int layout, int64_t n)
{
    uint64_t stream = *forward_count * n_layers + layer;
    float scale = 1.0f / (1.0f - p);
    GRID_STRIDE(j, n) {
        int64_t nchw = j;
        if (layout == LAYOUT_NHWC && plane > 1) {
            int64_t image = j / (plane * channels), rest = j % (plane * channels);
            nchw = (image * channels + rest % channels) * plane + rest / channels;
        }
        bool k = rng_uniform(seed, stream, (uint64_t)nchw) >= (double)p;
        keep[j] = k;
        y[j] = from_float<T>(k ? to_float(x[j]) * scale : 0.0f);
    }
}

__global__ void step_counter_kernel(uint64_t *count)
{
    *count += 1;
}

/* ---- backward ------------------------------------------------------------------ */

/* dx = dy masked by the activation's output (dx may be dy itself). */
template <typename T>
__global__ void activate_backward_kernel(T *dx, const T *dy, const T *y, int act, bool acc,
                                         int64_t n)
{
    GRID_STRIDE(j, n) {
        float g = passes(to_float(y[j]), act) ? to_float(dy[j]) : 0.0f;
        dx[j] = from_float<T>(acc ? to_float(dx[j]) + g : g);
    }
}

/* The add's gradient g (masked by a fused activation) to both inputs; an
 * input gradient that is dy's own buffer (in place) receives g in place. */
template <typename T>
__global__ void add_backward_kernel(T *dy, const T *y, T *dx0, T *dx1, int act, bool acc0,
                                    bool acc1, int64_t n)
{
    GRID_STRIDE(j, n) {
        float g = to_float(dy[j]);
        if (act != ACT_NONE && !passes(to_float(y[j]), act))
            g = 0.0f;
        if (dx0)
            dx0[j] = from_float<T>(acc0 && dx0 != dy ? to_float(dx0[j]) + g : g);
        if (dx1)
            dx1[j] = from_float<T>(acc1 && dx1 != dy ? to_float(dx1[j]) + g : g);
    }
}

template <typename T>
__global__ void dropout_backward_kernel(T *dx, const T *dy, const uint8_t *keep, float p,
                                        bool acc, int64_t n)
{
    float scale = 1.0f / (1.0f - p);
    GRID_STRIDE(j, n) {
        float g = keep[j] ? to_float(dy[j]) * scale : 0.0f;
        dx[j] = from_float<T>(acc ? to_float(dx[j]) + g : g);
    }
}

/* ---- conv and fc bias ------------------------------------------------------------ */

template <typename T>
__global__ void bias_act_kernel(T *y, const T *bias, int act, channel_finder channel, int64_t n)
{
    GRID_STRIDE(j, n) {
        int c = channel.of(j);
        y[j] = from_float<T>(activate(to_float(y[j]) + to_float(bias[c]), act));
    }
}

/* ---- 16-byte vectors (cuda_device.cuh says why) --------------------------------- */

/* activate_backward_kernel on whole vectors (vec_fits) */
template <typename T>
__global__ void activate_backward_vec_kernel(T *dx, const T *dy, const T *y, int act, bool acc,
                                             uint32_t vectors)
{
    constexpr int W = vec16<T>::width;
    VEC_STRIDE_LOOP(v, vectors)
    {
        vec16<T> g = load_vec(dy, v), out = load_vec(y, v);
        float d[W];
#pragma unroll
        for (int k = 0; k < W; k++)
            d[k] = passes(to_float(out.v[k]), act) ? to_float(g.v[k]) : 0.0f;
        store_vec_sums(dx, v, d, acc);
    }
}

/* add_backward_kernel on whole vectors (vec_fits); dy is read whole before
 * either input gradient, which may be dy's own buffer, is written. */
template <typename T>
__global__ void add_backward_vec_kernel(T *dy, const T *y, T *dx0, T *dx1, int act, bool acc0,
                                        bool acc1, uint32_t vectors)
{
    constexpr int W = vec16<T>::width;
    VEC_STRIDE_LOOP(v, vectors)
    {
        vec16<T> g = load_vec((const T *)dy, v);
        float d[W];
#pragma unroll
        for (int k = 0; k < W; k++)
            d[k] = to_float(g.v[k]);
        if (act != ACT_NONE) { /* the output is read only to mask */
            vec16<T> out = load_vec(y, v);
#pragma unroll
            for (int k = 0; k < W; k++)
                if (!passes(to_float(out.v[k]), act))
                    d[k] = 0.0f;
        }
        if (dx0)
            store_vec_sums(dx0, v, d, acc0 && dx0 != dy);
        if (dx1)
            store_vec_sums(dx1, v, d, acc1 && dx1 != dy);
    }
}

/* bias_act_kernel on whole vectors (Map: nhwc_vectors, whose vector v has
 * the bias vector of its first channel, or nchw_vectors, one bias a vector) */
template <typename T, typename Map>
__global__ void bias_act_vec_kernel(T *y, const T *bias, int act, Map map, uint32_t vectors)
{
    constexpr int W = vec16<T>::width;
    VEC_STRIDE_LOOP(v, vectors)
    {
        int c0 = map.first_channel(v);
        vec16<T> x = load_vec((const T *)y, v), b;
        if (Map::span == W)
            b = load_vec(bias, c0 / W);
        else
#pragma unroll
            for (int k = 0; k < W; k++)
                b.v[k] = bias[c0];
#pragma unroll
        for (int k = 0; k < W; k++)
            x.v[k] = from_float<T>(activate(to_float(x.v[k]) + to_float(b.v[k]), act));
        store_vec(y, v, x);
    }
}

#endif
