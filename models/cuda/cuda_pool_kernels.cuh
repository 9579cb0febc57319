/* The pooling kernels of cuda_pool.cu (which says what they do and why),
 * apart from their launches: the backend's .cu and the host emulator's tests
 * (tests/emu/) include the same code. */
#ifndef ROOFLINE_CUDA_POOL_KERNELS_CUH
#define ROOFLINE_CUDA_POOL_KERNELS_CUH

#include "cuda_device.cuh"

enum { POOL_THREADS = 256 };

struct pool_dims {
    int c, h, w, oh, ow, kernel, stride, pad, layout;
};

__device__ __forceinline__ int64_t offset_of(const pool_dims &d, int64_t n, int c, int h, int w,
                                             int height, int width)
{
    if (d.layout == LAYOUT_NHWC)
        return ((n * height + h) * width + w) * d.c + c;
    return ((n * d.c + c) * height + h) * width + w;
}

/* (n, c, h, w) of element j of a tensor of height x width in the layout. */
__device__ __forceinline__ void coords_of(const pool_dims &d, int64_t j, int height, int width,
                                          int64_t &n, int &c, int &h, int &w)
{
    if (d.layout == LAYOUT_NHWC) {
        c = (int)(j % d.c);
        j /= d.c;
        w = (int)(j % width);
        j /= width;
        h = (int)(j % height);
        n = j / height;
    } else {
        w = (int)(j % width);
        j /= width;
        h = (int)(j % height);
        j /= height;
        c = (int)(j % d.c);
        n = j / d.c;
    }
}

__device__ __forceinline__ int bin_start(int i, int in, int out) { return (int)((int64_t)i * in / out); }
__device__ __forceinline__ int bin_end(int i, int in, int out)
{
    return (int)(((int64_t)(i + 1) * in + out - 1) / out);
}

template <typename T>
__global__ void maxpool_kernel(T *y, uint8_t *where, const T *x, pool_dims d, int64_t n_out)
{
    GRID_STRIDE(j, n_out) {
        int64_t n;
        int c, r, q;
        coords_of(d, j, d.oh, d.ow, n, c, r, q);
        float best = 0.0f;
        int at = -1;
        for (int kr = 0; kr < d.kernel; kr++) {
            int row = r * d.stride - d.pad + kr;
            if (row < 0 || row >= d.h)
                continue;
            for (int kc = 0; kc < d.kernel; kc++) {
                int col = q * d.stride - d.pad + kc;
                if (col < 0 || col >= d.w)
                    continue;
                float v = to_float(x[offset_of(d, n, c, row, col, d.h, d.w)]);
                if (at < 0 || v > best) {
                    best = v;
                    at = kr * d.kernel + kc;
                }
            }
        }
        y[j] = from_float<T>(best);
        where[j] = (uint8_t)(at < 0 ? 0 : at);
    }
}

template <typename T>
__global__ void maxpool_backward_kernel(T *dx, const T *dy, const uint8_t *where, pool_dims d,
                                        bool acc, int64_t n_in)
{
    GRID_STRIDE(j, n_in) {
        int64_t n;
        int c, h, w;
        coords_of(d, j, d.h, d.w, n, c, h, w);
        /* outputs r with r*stride - pad <= h <= r*stride - pad + kernel - 1 */
        int r0 = h + d.pad - d.kernel + 1, q0 = w + d.pad - d.kernel + 1;
        r0 = r0 > 0 ? (r0 + d.stride - 1) / d.stride : 0;
        q0 = q0 > 0 ? (q0 + d.stride - 1) / d.stride : 0;
        int r1 = (h + d.pad) / d.stride, q1 = (w + d.pad) / d.stride;
        r1 = r1 < d.oh - 1 ? r1 : d.oh - 1;
        q1 = q1 < d.ow - 1 ? q1 : d.ow - 1;
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

template <typename T>
__global__ void avgpool_kernel(T *y, const T *x, pool_dims d, int64_t n_out)
{
    GRID_STRIDE(j, n_out) {
        int64_t n;
        int c, r, q;
        coords_of(d, j, d.oh, d.ow, n, c, r, q);
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
        coords_of(d, j, d.h, d.w, n, c, h, w);
        float g = 0.0f;
        for (int r = 0; r < d.oh; r++) {
            int r0 = bin_start(r, d.h, d.oh), r1 = bin_end(r, d.h, d.oh);
            if (h < r0 || h >= r1)
                continue;
            for (int q = 0; q < d.ow; q++) {
                int q0 = bin_start(q, d.w, d.ow), q1 = bin_end(q, d.w, d.ow);
                if (w >= q0 && w < q1)
                    g += to_float(dy[offset_of(d, n, c, r, q, d.oh, d.ow)]) /
                         (float)((r1 - r0) * (q1 - q0));
            }
        }
        dx[j] = from_float<T>(acc ? to_float(dx[j]) + g : g);
    }
}

#endif
