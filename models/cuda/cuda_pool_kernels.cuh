/* The pooling kernels of cuda_pool.cu (which says what they do and why),
 * apart from their launches: the backend's .cu and the host emulator's tests
 * (tests/emu/) include the same code. */
#ifndef ROOFLINE_CUDA_POOL_KERNELS_CUH
#define ROOFLINE_CUDA_POOL_KERNELS_CUH

#include "cuda_device.cuh"

enum { POOL_THREADS = 256 };

struct pool_dims {
    int c, h, w, oh, ow, kernel, stride, pad, layout;
    /* c, h, w, oh, ow as multiply-shift divisors, for element indices below
     * 2^31 (narrow): splitting an index into (n, c, h, w) by 64-bit
     * divisions costs some 250 instructions, several times what a pooling
     * kernel may spend on an element at HBM speed. */
    fast_divisor c_div, h_div, w_div, oh_div, ow_div;
    bool narrow;
};

/* The dims of a pool over `batch` images (the divisors and whether every
 * index of its input and output is below 2^31). */
static inline pool_dims pool_dims_make(int batch, int c, int h, int w, int oh, int ow,
                                       int kernel, int stride, int pad, int layout)
{
    pool_dims d;
    d.c = c, d.h = h, d.w = w, d.oh = oh, d.ow = ow;
    d.kernel = kernel, d.stride = stride, d.pad = pad, d.layout = layout;
    int64_t in = (int64_t)batch * c * h * w, out = (int64_t)batch * c * oh * ow;
    d.narrow = (in > out ? in : out) < ((int64_t)1 << 31);
    d.c_div = fast_divisor_of((uint32_t)c), d.h_div = fast_divisor_of((uint32_t)h);
    d.w_div = fast_divisor_of((uint32_t)w), d.oh_div = fast_divisor_of((uint32_t)oh);
    d.ow_div = fast_divisor_of((uint32_t)ow);
    return d;
}

__device__ __forceinline__ int64_t offset_of(const pool_dims &d, int64_t n, int c, int h, int w,
                                             int height, int width)
{
    if (d.layout == LAYOUT_NHWC)
        return ((n * height + h) * width + w) * d.c + c;
    return ((n * d.c + c) * height + h) * width + w;
}

/* q = j / f.divisor and *r = the remainder, by multiply and shift where
 * narrow, else by the 64-bit operators. */
__device__ __forceinline__ int64_t split_index(bool narrow, const fast_divisor &f, int64_t j,
                                               int *r)
{
    if (narrow) {
        uint32_t rem, q = fast_divmod(f, (uint32_t)j, &rem);
        *r = (int)rem;
        return q;
    }
    *r = (int)(j % f.divisor);
    return j / f.divisor;
}

/* (n, c, h, w) of element j of a tensor of height x width (given also as
 * divisors) in the layout. */
__device__ __forceinline__ void coords_of(const pool_dims &d, int64_t j,
                                          const fast_divisor &height, const fast_divisor &width,
                                          int64_t &n, int &c, int &h, int &w)
{
    if (d.layout == LAYOUT_NHWC) {
        j = split_index(d.narrow, d.c_div, j, &c);
        j = split_index(d.narrow, width, j, &w);
        n = split_index(d.narrow, height, j, &h);
    } else {
        j = split_index(d.narrow, width, j, &w);
        j = split_index(d.narrow, height, j, &h);
        n = split_index(d.narrow, d.c_div, j, &c);
    }
}

/* torch's adaptive bins: bin i of `out` over `in` is [start, end). In 32
 * bits, unsigned (a 64-bit division is several times dearer): sides are
 * far below the 65536 at which a product could overflow. */
__device__ __forceinline__ int bin_start(int i, int in, int out)
{
    return (int)((uint32_t)i * (uint32_t)in / (uint32_t)out);
}
__device__ __forceinline__ int bin_end(int i, int in, int out)
{
    return (int)(((uint32_t)(i + 1) * (uint32_t)in + (uint32_t)out - 1) / (uint32_t)out);
}

/* The first and last adaptive bins of `out` over `in` that hold position i */
__device__ __forceinline__ int first_bin(int i, int in, int out)
{
    return (int)((uint32_t)i * (uint32_t)out / (uint32_t)in);
}
__device__ __forceinline__ int last_bin(int i, int in, int out)
{
    return (int)(((uint32_t)(i + 1) * (uint32_t)out + (uint32_t)in - 1) / (uint32_t)in) - 1;
}

/* f(tap, row, col) for each tap kr * kernel + kc of output (r, q)'s max pool
 * window that falls inside the input, in row-major order (padding is never
 * chosen). */
template <typename F>
__device__ __forceinline__ void max_window(const pool_dims &d, int r, int q, F f)
{
    for (int kr = 0; kr < d.kernel; kr++) {
        int row = r * d.stride - d.pad + kr;
        if (row < 0 || row >= d.h)
            continue;
        for (int kc = 0; kc < d.kernel; kc++) {
            int col = q * d.stride - d.pad + kc;
            if (col >= 0 && col < d.w)
                f(kr * d.kernel + kc, row, col);
        }
    }
}

template <typename T>
__global__ void maxpool_kernel(T *y, uint8_t *where, const T *x, pool_dims d, int64_t n_out)
{
    GRID_STRIDE(j, n_out) {
        int64_t n;
        int c, r, q;
        coords_of(d, j, d.oh_div, d.ow_div, n, c, r, q);
        float best = 0.0f;
        int at = -1;
        max_window(d, r, q, [&](int tap, int row, int col) {
            float v = to_float(x[offset_of(d, n, c, row, col, d.h, d.w)]);
            if (at < 0 || v > best) {
                best = v;
                at = tap;
            }
        });
        y[j] = from_float<T>(best);
        where[j] = (uint8_t)(at < 0 ? 0 : at);
    }
}

/* The max pool outputs [r0, r1] x [q0, q1] whose windows hold input (h, w):
 * r stride - pad <= h <= r stride - pad + kernel - 1 */
__device__ __forceinline__ void windows_holding(const pool_dims &d, int h, int w, int &r0, int &r1,
                                                int &q0, int &q1)
{
    r0 = h + d.pad - d.kernel + 1, q0 = w + d.pad - d.kernel + 1;
    r0 = r0 > 0 ? (r0 + d.stride - 1) / d.stride : 0;
    q0 = q0 > 0 ? (q0 + d.stride - 1) / d.stride : 0;
    r1 = (h + d.pad) / d.stride, q1 = (w + d.pad) / d.stride;
    r1 = r1 < d.oh - 1 ? r1 : d.oh - 1;
    q1 = q1 < d.ow - 1 ? q1 : d.ow - 1;
}

template <typename T>
__global__ void maxpool_backward_kernel(T *dx, const T *dy, const uint8_t *where, pool_dims d,
                                        bool acc, int64_t n_in)
{
    GRID_STRIDE(j, n_in) {
        int64_t n;
        int c, h, w;
        coords_of(d, j, d.h_div, d.w_div, n, c, h, w);
        int r0, r1, q0, q1;
        windows_holding(d, h, w, r0, r1, q0, q1);
        float g = 0.0f;
        for (int r = r0; r <= r1; r++)
            for (int q = q0; q <= q1; q++) {
                int64_t o = offset_of(d, n, c, r, q, d.oh, d.ow);
                int at = (h - (r * d.stride - d.pad)) * d.kernel + (w - (q * d.stride - d.pad));
                if (where[o] == at)
                    g += to_float(dy[o]);
            }
        dx[j] = from_float<T>(acc ? to_float(dx[j]) + g : g);
    }
}

/* ---- max pool on 16-byte vectors ------------------------------------------------ */
/* In NHWC where the channels are whole vectors and every index is narrow
 * (cuda_device.cuh says why vectors): a thread takes W neighbouring channels
 * of one position, splits its index once, loads each tap as one vector and
 * the window indices as W bytes; each lane keeps the first maximum and sums
 * its gradient in the order of the per-element kernels. vectors_per_row =
 * c / W. */
template <int W> struct alignas(W) byte_vec {
    uint8_t b[W];
};

/* (n, r, q) of position p of an NHWC tensor of height x width */
__device__ __forceinline__ void position_of(uint32_t p, const fast_divisor &height,
                                            const fast_divisor &width, int64_t &n, int &r,
                                            int &q)
{
    uint32_t ru, qu;
    n = fast_divmod(height, fast_divmod(width, p, &qu), &ru);
    r = (int)ru, q = (int)qu;
}

template <typename T>
__global__ void maxpool_vec_kernel(T *y, uint8_t *where, const T *x, pool_dims d,
                                   fast_divisor vectors_per_row, uint32_t vectors)
{
    constexpr int W = vec16<T>::width;
    VEC_STRIDE_LOOP(v, vectors)
    {
        int c0, r, q;
        int64_t n;
        position_of(vec_row_channel<T>(vectors_per_row, v, &c0), d.oh_div, d.ow_div, n, r, q);
        float best[W];
        int best_at[W];
        bool seen = false; /* a tap inside the input */
#pragma unroll
        for (int k = 0; k < W; k++)
            best[k] = 0.0f, best_at[k] = 0;
        max_window(d, r, q, [&](int tap, int row, int col) {
            vec16<T> xv = load_vec(x, offset_of(d, n, c0, row, col, d.h, d.w) / W);
#pragma unroll
            for (int k = 0; k < W; k++) {
                float value = to_float(xv.v[k]);
                if (!seen || value > best[k])
                    best[k] = value, best_at[k] = tap;
            }
            seen = true;
        });
        vec16<T> out;
        byte_vec<W> taps;
#pragma unroll
        for (int k = 0; k < W; k++)
            out.v[k] = from_float<T>(best[k]), taps.b[k] = (uint8_t)best_at[k];
        store_vec(y, v, out);
        ((byte_vec<W> *)where)[v] = taps;
    }
}

template <typename T>
__global__ void maxpool_backward_vec_kernel(T *dx, const T *dy, const uint8_t *where, pool_dims d,
                                            bool acc, fast_divisor vectors_per_row,
                                            uint32_t vectors)
{
    constexpr int W = vec16<T>::width;
    VEC_STRIDE_LOOP(v, vectors)
    {
        int c0, h, w;
        int64_t n;
        position_of(vec_row_channel<T>(vectors_per_row, v, &c0), d.h_div, d.w_div, n, h, w);
        int r0, r1, q0, q1;
        windows_holding(d, h, w, r0, r1, q0, q1);
        float g[W];
#pragma unroll
        for (int k = 0; k < W; k++)
            g[k] = 0.0f;
        for (int r = r0; r <= r1; r++)
            for (int q = q0; q <= q1; q++) {
                int64_t o = offset_of(d, n, c0, r, q, d.oh, d.ow);
                int at = (h - (r * d.stride - d.pad)) * d.kernel + (w - (q * d.stride - d.pad));
                vec16<T> dv = load_vec(dy, o / W);
                byte_vec<W> taps = ((const byte_vec<W> *)where)[o / W];
#pragma unroll
                for (int k = 0; k < W; k++)
                    if (taps.b[k] == at)
                        g[k] += to_float(dv.v[k]);
            }
        store_vec_sums(dx, v, g, acc);
    }
}

template <typename T>
__global__ void avgpool_kernel(T *y, const T *x, pool_dims d, int64_t n_out)
{
    GRID_STRIDE(j, n_out) {
        int64_t n;
        int c, r, q;
        coords_of(d, j, d.oh_div, d.ow_div, n, c, r, q);
        int r0 = bin_start(r, d.h, d.oh), r1 = bin_end(r, d.h, d.oh);
        int q0 = bin_start(q, d.w, d.ow), q1 = bin_end(q, d.w, d.ow);
        float sum = 0.0f;
        for (int row = r0; row < r1; row++)
            for (int col = q0; col < q1; col++)
                sum += to_float(x[offset_of(d, n, c, row, col, d.h, d.w)]);
        y[j] = from_float<T>(sum / (float)((r1 - r0) * (q1 - q0)));
    }
}

template <typename T>
__global__ void avgpool_backward_kernel(T *dx, const T *dy, pool_dims d, bool acc, int64_t n_in)
{
    GRID_STRIDE(j, n_in) {
        int64_t n;
        int c, h, w;
        coords_of(d, j, d.h_div, d.w_div, n, c, h, w);
        /* bins r with start(r) <= h < end(r) are floor(h oh / H) ..
         * ceil((h + 1) oh / H) - 1: only those are visited (VGG's 7x7 to
         * 7x7 pool would test all 49 for each element), in the same order */
        float g = 0.0f;
        for (int r = first_bin(h, d.h, d.oh); r <= last_bin(h, d.h, d.oh); r++) {
            int r0 = bin_start(r, d.h, d.oh), r1 = bin_end(r, d.h, d.oh);
            if (h < r0 || h >= r1)
                continue;
            for (int q = first_bin(w, d.w, d.ow); q <= last_bin(w, d.w, d.ow); q++) {
                int q0 = bin_start(q, d.w, d.ow), q1 = bin_end(q, d.w, d.ow);
                if (w >= q0 && w < q1)
                    g += to_float(dy[offset_of(d, n, c, r, q, d.oh, d.ow)]) /
                         (float)((r1 - r0) * (q1 - q0));
            }
        }
        dx[j] = from_float<T>(acc ? to_float(dx[j]) + g : g);
    }
}

/* The global average pool (output 1x1: the classifier heads of ResNet and
 * MobileNetV2) on 16-byte vectors of NHWC channels: no bins to work out
 * (the backward of avgpool_backward_kernel spends some fifty integer
 * divisions an element on them), one vector a thread, the sums in the
 * per-element kernels' order and the same division, so the same bits. Vector
 * v of y holds channels cv W.. of image n (v = n per_row + cv); per_image is
 * per_row times the plane. */
template <typename T>
__global__ void global_avgpool_vec_kernel(T *y, const T *x, int plane, fast_divisor per_row,
                                          uint32_t vectors)
{
    constexpr int W = vec16<T>::width;
    VEC_STRIDE_LOOP(v, vectors)
    {
        uint32_t cv, n = fast_divmod(per_row, v, &cv);
        int64_t first = (int64_t)n * plane * per_row.divisor + cv;
        float sum[W];
#pragma unroll
        for (int k = 0; k < W; k++)
            sum[k] = 0.0f;
        for (int p = 0; p < plane; p++) {
            vec16<T> xv = load_vec(x, first + (int64_t)p * per_row.divisor);
#pragma unroll
            for (int k = 0; k < W; k++)
                sum[k] += to_float(xv.v[k]);
        }
        vec16<T> out;
#pragma unroll
        for (int k = 0; k < W; k++)
            out.v[k] = from_float<T>(sum[k] / (float)plane);
        store_vec(y, v, out);
    }
}

template <typename T>
__global__ void global_avgpool_backward_vec_kernel(T *dx, const T *dy, int plane,
                                                   fast_divisor per_row, fast_divisor per_image,
                                                   bool acc, uint32_t vectors)
{
    constexpr int W = vec16<T>::width;
    VEC_STRIDE_LOOP(v, vectors)
    {
        uint32_t cv;
        fast_divmod(per_row, v, &cv);
        vec16<T> g = load_vec(dy, (int64_t)fast_div(per_image, v) * per_row.divisor + cv);
        float share[W];
#pragma unroll
        for (int k = 0; k < W; k++)
            share[k] = 0.0f + to_float(g.v[k]) / (float)plane; /* -0 becomes +0, as there */
        store_vec_sums(dx, v, share, acc);
    }
}

#endif
