/* Depthwise convolution on the backend's own kernels: one filter of side 3
 * or 5 per channel, the layer's tensors exactly as cuDNN's (the precision
 * plan's element type and layout), sums in fp32. Depthwise layers move few
 * FLOPs per byte, so each kernel is a plain pass over its output in memory
 * order (coalesced in either layout), the neighbouring reads served by the
 * caches; the filter gradient sums each channel's taps over slices of the
 * positions into fp32 partial sums that a second kernel adds in a fixed
 * order, so every step gives the same bits. cuda_conv.cu chooses between
 * these and cuDNN per pass (--depthwise). */
#include <math.h>
#include <string.h>

#include "cuda_device.cuh"
#include "cuda_internal.h"
#include "fast_divide.h"

enum { DW_THREADS = 256, DW_FILTER_ROWS = 8, DW_CHANNELS_PER_BLOCK = 32 };

/* Element counts below 2^31 (depthwise_own_fits): 32-bit index arithmetic,
 * the dimensions' divisions by multiply and shift (fast_divide.h). */
struct dw_geom {
    int n, c, h, w, oh, ow, stride, pad;
    bool nhwc;
    fast_divisor c_div, h_div, w_div, oh_div, ow_div, stride_div;
};

static dw_geom geom_of(const backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    dw_geom g;
    g.n = b->cfg.batch, g.c = l->in_shape.c, g.h = l->in_shape.h, g.w = l->in_shape.w;
    g.oh = l->out_shape.h, g.ow = l->out_shape.w, g.stride = l->stride, g.pad = l->pad;
    g.nhwc = b->pp.layout == LAYOUT_NHWC;
    g.c_div = fast_divisor_of((uint32_t)g.c), g.h_div = fast_divisor_of((uint32_t)g.h);
    g.w_div = fast_divisor_of((uint32_t)g.w), g.oh_div = fast_divisor_of((uint32_t)g.oh);
    g.ow_div = fast_divisor_of((uint32_t)g.ow), g.stride_div = fast_divisor_of((uint32_t)g.stride);
    return g;
}

/* (n, ch, y, x) of element e of an (n, c, h, w) tensor in its layout, given
 * the divisors c, h and w. */
__device__ __forceinline__ void dw_split(uint32_t e, const fast_divisor &c, const fast_divisor &h,
                                         const fast_divisor &w, bool nhwc, int &n, int &ch,
                                         int &y, int &x)
{
    uint32_t r0, r1, r2, q;
    if (nhwc) {
        q = fast_divmod(c, e, &r0);
        q = fast_divmod(w, q, &r1);
        n = (int)fast_divmod(h, q, &r2);
        ch = (int)r0, x = (int)r1, y = (int)r2;
    } else {
        q = fast_divmod(w, e, &r0);
        q = fast_divmod(h, q, &r1);
        n = (int)fast_divmod(c, q, &r2);
        x = (int)r0, y = (int)r1, ch = (int)r2;
    }
}

__device__ __forceinline__ uint32_t dw_at(int n, int ch, int y, int x, int c, int h, int w,
                                          bool nhwc)
{
    return nhwc ? (((uint32_t)n * h + y) * w + x) * c + ch : (((uint32_t)n * c + ch) * h + y) * w + x;
}

/* f(tap, index) for each tap r * K + s of output (oy, ox)'s window that
 * falls inside the input (padding reads nothing). */
template <int K, typename F>
__device__ __forceinline__ void dw_window(const dw_geom &g, int n, int ch, int oy, int ox, F f)
{
    int iy0 = oy * g.stride - g.pad, ix0 = ox * g.stride - g.pad;
#pragma unroll
    for (int r = 0; r < K; r++) {
        int iy = iy0 + r;
        if (iy < 0 || iy >= g.h)
            continue;
#pragma unroll
        for (int s = 0; s < K; s++) {
            int ix = ix0 + s;
            if (ix < 0 || ix >= g.w)
                continue;
            f(r * K + s, dw_at(n, ch, iy, ix, g.c, g.h, g.w, g.nhwc));
        }
    }
}

#define DW_STRIDE_LOOP(e, total)                                                              \
    for (uint32_t e = blockIdx.x * blockDim.x + threadIdx.x; e < (total);                     \
         e += gridDim.x * blockDim.x)

template <typename T, int K>
__global__ void dw_forward_kernel(const T *__restrict__ x, const T *__restrict__ w,
                                  T *__restrict__ y, dw_geom g, uint32_t total)
{
    DW_STRIDE_LOOP(e, total)
    {
        int n, ch, oy, ox;
        dw_split(e, g.c_div, g.oh_div, g.ow_div, g.nhwc, n, ch, oy, ox);
        const T *wc = w + ch * K * K;
        float acc = 0.0f;
        dw_window<K>(g, n, ch, oy, ox, [&](int tap, uint32_t at) {
            acc += to_float(x[at]) * to_float(wc[tap]);
        });
        y[e] = from_float<T>(acc);
    }
}

/* dx(iy, ix) gathers every output whose window covers it: oy = (iy + pad -
 * r) / stride where that divides exactly. */
template <typename T, int K>
__global__ void dw_backward_data_kernel(const T *__restrict__ dy, const T *__restrict__ w,
                                        T *__restrict__ dx, dw_geom g, uint32_t total,
                                        bool accumulate)
{
    DW_STRIDE_LOOP(e, total)
    {
        int n, ch, iy, ix;
        dw_split(e, g.c_div, g.h_div, g.w_div, g.nhwc, n, ch, iy, ix);
        const T *wc = w + ch * K * K;
        float acc = 0.0f;
#pragma unroll
        for (int r = 0; r < K; r++) {
            int ty = iy + g.pad - r;
            if (ty < 0)
                continue;
            uint32_t off;
            int oy = (int)fast_divmod(g.stride_div, (uint32_t)ty, &off);
            if (off || oy >= g.oh)
                continue;
#pragma unroll
            for (int s = 0; s < K; s++) {
                int tx = ix + g.pad - s;
                if (tx < 0)
                    continue;
                int ox = (int)fast_divmod(g.stride_div, (uint32_t)tx, &off);
                if (off || ox >= g.ow)
                    continue;
                acc += to_float(dy[dw_at(n, ch, oy, ox, g.c, g.oh, g.ow, g.nhwc)]) *
                       to_float(wc[r * K + s]);
            }
        }
        dx[e] = from_float<T>(accumulate ? to_float(dx[e]) + acc : acc);
    }
}

/* One channel's K x K tap sums over positions p (n, oy, ox) of a slice. */
template <typename T, int K>
__device__ __forceinline__ void dw_filter_position(const T *__restrict__ x,
                                                   const T *__restrict__ dy, const dw_geom &g,
                                                   int ch, uint32_t p, float *acc)
{
    uint32_t ox_u, oy_u;
    uint32_t t = fast_divmod(g.ow_div, p, &ox_u);
    int n = (int)fast_divmod(g.oh_div, t, &oy_u);
    int ox = (int)ox_u, oy = (int)oy_u;
    float d = to_float(dy[dw_at(n, ch, oy, ox, g.c, g.oh, g.ow, g.nhwc)]);
    dw_window<K>(g, n, ch, oy, ox, [&](int tap, uint32_t at) { acc[tap] += d * to_float(x[at]); });
}

/* acc = channel ch's tap sums over the positions of slice blockIdx.y that
 * fall to `lane` of `lanes` (zero where the thread is not active). */
template <typename T, int K>
__device__ __forceinline__ void dw_slice_sums(const T *__restrict__ x, const T *__restrict__ dy,
                                              const dw_geom &g, int ch, bool active,
                                              uint32_t lane, uint32_t lanes, uint32_t positions,
                                              uint32_t per_slice, float *acc)
{
#pragma unroll
    for (int t = 0; t < K * K; t++)
        acc[t] = 0.0f;
    if (!active)
        return;
    uint32_t first = blockIdx.y * per_slice;
    uint32_t end = first + per_slice < positions ? first + per_slice : positions;
    for (uint32_t p = first + lane; p < end; p += lanes)
        dw_filter_position<T, K>(x, dy, g, ch, p, acc);
}

/* NHWC: a block is 32 consecutive channels (threadIdx.x, coalesced) by
 * DW_FILTER_ROWS position lanes; blockIdx.x the channel group, blockIdx.y
 * the slice. */
template <typename T, int K>
__global__ void dw_filter_nhwc_kernel(const T *__restrict__ x, const T *__restrict__ dy,
                                      float *__restrict__ partial, dw_geom g, uint32_t positions,
                                      uint32_t per_slice)
{
    int ch = blockIdx.x * DW_CHANNELS_PER_BLOCK + threadIdx.x;
    float acc[K * K];
    dw_slice_sums<T, K>(x, dy, g, ch, ch < g.c, threadIdx.y, DW_FILTER_ROWS, positions,
                        per_slice, acc);
    __shared__ float lanes[DW_FILTER_ROWS][K * K][DW_CHANNELS_PER_BLOCK];
#pragma unroll
    for (int t = 0; t < K * K; t++)
        lanes[threadIdx.y][t][threadIdx.x] = acc[t];
    __syncthreads();
    for (int t = threadIdx.y; t < K * K; t += DW_FILTER_ROWS) {
        float sum = 0.0f;
        for (int j = 0; j < DW_FILTER_ROWS; j++)
            sum += lanes[j][t][threadIdx.x];
        if (ch < g.c)
            partial[((size_t)blockIdx.y * g.c + ch) * (K * K) + t] = sum;
    }
}

/* NCHW: a block is one channel (blockIdx.x) and one slice (blockIdx.y), its
 * threads along the positions (ox fastest, coalesced). */
template <typename T, int K>
__global__ void dw_filter_nchw_kernel(const T *__restrict__ x, const T *__restrict__ dy,
                                      float *__restrict__ partial, dw_geom g, uint32_t positions,
                                      uint32_t per_slice)
{
    int ch = blockIdx.x;
    float acc[K * K];
    dw_slice_sums<T, K>(x, dy, g, ch, true, threadIdx.x, DW_THREADS, positions, per_slice, acc);
    __shared__ float warps[K * K][DW_THREADS / 32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int t = 0; t < K * K; t++) {
        float v = acc[t];
        for (int off = 16; off > 0; off /= 2)
            v += __shfl_down_sync(0xffffffffu, v, off);
        if (lane == 0)
            warps[t][warp] = v;
    }
    __syncthreads();
    if (threadIdx.x < K * K) {
        float sum = 0.0f;
        for (int j = 0; j < DW_THREADS / 32; j++)
            sum += warps[threadIdx.x][j];
        partial[((size_t)blockIdx.y * g.c + ch) * (K * K) + threadIdx.x] = sum;
    }
}

/* dw[e] = the sum over slices, in slice order; e = channel x taps + tap. */
template <typename T>
__global__ void dw_filter_sum_kernel(const float *__restrict__ partial, T *__restrict__ dw,
                                     int slices, uint32_t n)
{
    DW_STRIDE_LOOP(e, n)
    {
        float sum = 0.0f;
        for (int j = 0; j < slices; j++)
            sum += partial[(size_t)j * n + e];
        dw[e] = from_float<T>(sum);
    }
}

static unsigned dw_blocks(const backend *b, uint32_t n)
{
    return cuda_blocks(b, (int64_t)n, DW_THREADS);
}

int cuda_dw_forward(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    dw_geom g = geom_of(b, i);
    uint32_t total = (uint32_t)((int64_t)g.n * g.c * g.oh * g.ow);
    const void *x = cuda_input(b, i, 0);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        if (l->kernel == 3)
            dw_forward_kernel<T, 3><<<dw_blocks(b, total), DW_THREADS, 0, b->stream>>>(
                (const T *)x, (const T *)cl->w_copy, (T *)cl->out, g, total);
        else
            dw_forward_kernel<T, 5><<<dw_blocks(b, total), DW_THREADS, 0, b->stream>>>(
                (const T *)x, (const T *)cl->w_copy, (T *)cl->out, g, total);
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}

int cuda_dw_backward_data(backend *b, int i, bool accumulate)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    dw_geom g = geom_of(b, i);
    uint32_t total = (uint32_t)((int64_t)g.n * g.c * g.h * g.w);
    void *dx = cuda_input_grad(b, i, 0);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        if (l->kernel == 3)
            dw_backward_data_kernel<T, 3><<<dw_blocks(b, total), DW_THREADS, 0, b->stream>>>(
                (const T *)cl->grad, (const T *)cl->w_copy, (T *)dx, g, total, accumulate);
        else
            dw_backward_data_kernel<T, 5><<<dw_blocks(b, total), DW_THREADS, 0, b->stream>>>(
                (const T *)cl->grad, (const T *)cl->w_copy, (T *)dx, g, total, accumulate);
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}

size_t cuda_dw_filter_workspace(const backend *b, int i)
{
    conv_shape s = conv_shape_of(&b->net->layers[i], b->cfg.batch, b->pp.prec);
    depthwise_filter_plan p =
        depthwise_filter_plan_of(&s, b->pp.layout == LAYOUT_NHWC, b->sm_count);
    return (size_t)p.partial_bytes;
}

int cuda_dw_backward_weights(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    dw_geom g = geom_of(b, i);
    conv_shape s = conv_shape_of(l, b->cfg.batch, b->pp.prec);
    depthwise_filter_plan plan = depthwise_filter_plan_of(&s, g.nhwc, b->sm_count);
    if ((size_t)plan.partial_bytes > b->workspace_bytes)
        return cuda_fail(b, "the depthwise filter gradient needs %lld bytes of workspace, %zu "
                            "allocated",
                         (long long)plan.partial_bytes, b->workspace_bytes);
    uint32_t positions = (uint32_t)((int64_t)g.n * g.oh * g.ow);
    uint32_t per_slice = (positions + plan.slices - 1) / plan.slices;
    uint32_t taps = (uint32_t)g.c * l->kernel * l->kernel;
    float *partial = (float *)b->workspace;
    const void *x = cuda_input(b, i, 0);
    dim3 grid((unsigned)plan.channel_groups, (unsigned)plan.slices);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        const T *xt = (const T *)x, *dyt = (const T *)cl->grad;
        if (g.nhwc) {
            dim3 block(DW_CHANNELS_PER_BLOCK, DW_FILTER_ROWS);
            if (l->kernel == 3)
                dw_filter_nhwc_kernel<T, 3><<<grid, block, 0, b->stream>>>(xt, dyt, partial, g,
                                                                            positions, per_slice);
            else
                dw_filter_nhwc_kernel<T, 5><<<grid, block, 0, b->stream>>>(xt, dyt, partial, g,
                                                                            positions, per_slice);
        } else if (l->kernel == 3) {
            dw_filter_nchw_kernel<T, 3><<<grid, DW_THREADS, 0, b->stream>>>(xt, dyt, partial, g,
                                                                            positions, per_slice);
        } else {
            dw_filter_nchw_kernel<T, 5><<<grid, DW_THREADS, 0, b->stream>>>(xt, dyt, partial, g,
                                                                            positions, per_slice);
        }
        return 0;
    });
    LAUNCH_TRY(b);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        dw_filter_sum_kernel<T><<<dw_blocks(b, taps), DW_THREADS, 0, b->stream>>>(
            partial, (T *)cl->dw, plan.slices, taps);
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}

/* ---- plan time: inputs to try both implementations on, and their agreement ---- */

template <typename T> __global__ void dw_fill_kernel(T *p, uint32_t n, uint32_t seed)
{
    DW_STRIDE_LOOP(e, n)
    {
        uint32_t h = (e + 1u) * 2654435761u ^ seed;
        h ^= h >> 16;
        h *= 0x7feb352du;
        h ^= h >> 15;
        h *= 0x846ca68bu;
        h ^= h >> 16;
        p[e] = from_float<T>((float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f);
    }
}

int cuda_dw_fill_random(backend *b, void *p, int64_t n, uint32_t seed)
{
    if (n <= 0 || n >= ((int64_t)1 << 31))
        return cuda_fail(b, "cannot fill %lld elements", (long long)n);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        dw_fill_kernel<T><<<dw_blocks(b, (uint32_t)n), DW_THREADS, 0, b->stream>>>(
            (T *)p, (uint32_t)n, seed);
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}

/* maxima[0] = max |got - want| (a NaN counts as infinite), maxima[1] = max
 * |want|, as the bits of non-negative floats, which order as integers. */
template <typename T>
__global__ void dw_compare_kernel(const T *__restrict__ got, const T *__restrict__ want,
                                  uint32_t n, unsigned *maxima)
{
    float diff = 0.0f, ref = 0.0f;
    DW_STRIDE_LOOP(e, n)
    {
        float a = to_float(got[e]), r = to_float(want[e]);
        float d = fabsf(a - r);
        diff = fmaxf(diff, d != d ? INFINITY : d);
        ref = fmaxf(ref, fabsf(r));
    }
    for (int off = 16; off > 0; off /= 2) {
        diff = fmaxf(diff, __shfl_down_sync(0xffffffffu, diff, off));
        ref = fmaxf(ref, __shfl_down_sync(0xffffffffu, ref, off));
    }
    if (threadIdx.x % 32 == 0) {
        atomicMax(&maxima[0], __float_as_uint(diff));
        atomicMax(&maxima[1], __float_as_uint(ref));
    }
}

int cuda_dw_compare(backend *b, const void *got, const void *want, int64_t n, unsigned *maxima,
                    double *relative)
{
    if (n <= 0 || n >= ((int64_t)1 << 31))
        return cuda_fail(b, "cannot compare %lld elements", (long long)n);
    CUDA_TRY(b, cudaMemsetAsync(maxima, 0, 2 * sizeof *maxima, b->stream));
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        dw_compare_kernel<T><<<dw_blocks(b, (uint32_t)n), DW_THREADS, 0, b->stream>>>(
            (const T *)got, (const T *)want, (uint32_t)n, maxima);
        return 0;
    });
    LAUNCH_TRY(b);
    unsigned host[2];
    CUDA_TRY(b, cudaMemcpyAsync(host, maxima, sizeof host, cudaMemcpyDeviceToHost, b->stream));
    CUDA_TRY(b, cudaStreamSynchronize(b->stream));
    float diff, ref;
    memcpy(&diff, &host[0], sizeof diff);
    memcpy(&ref, &host[1], sizeof ref);
    *relative = ref > 0.0f ? (double)diff / ref : (diff > 0.0f ? INFINITY : 0.0);
    return 0;
}
