/* Max pool (the window index of the first maximum kept, one byte) and
 * adaptive average pool with torch's window bounds, as the CPU backend does.
 * Backward is a gather, one thread per input element summing the outputs
 * whose window holds it: no atomics, no zeroing, the same order every run. */
#include "cuda_device.cuh"
#include "cuda_internal.h"

enum { THREADS = 256 };

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

static pool_dims dims_of(const backend *b, const layer *l)
{
    pool_dims d;
    d.c = l->in_shape.c;
    d.h = l->in_shape.h;
    d.w = l->in_shape.w;
    d.oh = l->out_shape.h;
    d.ow = l->out_shape.w;
    d.kernel = l->kernel;
    d.stride = l->stride;
    d.pad = l->pad;
    d.layout = b->pp.layout;
    return d;
}

int cuda_pool_forward(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    pool_dims d = dims_of(b, l);
    int64_t n_out = cuda_elems(b, i);
    unsigned blocks = cuda_blocks(b, n_out, THREADS);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        const T *x = (const T *)cuda_input(b, i, 0);
        if (l->type == LAYER_MAXPOOL)
            maxpool_kernel<T><<<blocks, THREADS, 0, b->stream>>>((T *)cl->out, cl->mask, x, d,
                                                                 n_out);
        else
            avgpool_kernel<T><<<blocks, THREADS, 0, b->stream>>>((T *)cl->out, x, d, n_out);
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}

int cuda_pool_backward(backend *b, int i, bool accumulate)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    pool_dims d = dims_of(b, l);
    int64_t n_in = (int64_t)b->cfg.batch * shape_elems(l->in_shape);
    unsigned blocks = cuda_blocks(b, n_in, THREADS);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        T *dx = (T *)cuda_input_grad(b, i, 0);
        if (l->type == LAYER_MAXPOOL)
            maxpool_backward_kernel<T><<<blocks, THREADS, 0, b->stream>>>(
                dx, (const T *)cl->grad, cl->mask, d, accumulate, n_in);
        else
            avgpool_backward_kernel<T><<<blocks, THREADS, 0, b->stream>>>(
                dx, (const T *)cl->grad, d, accumulate, n_in);
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}
