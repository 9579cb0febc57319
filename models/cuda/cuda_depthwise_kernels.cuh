/* The depthwise convolution kernels of cuda_depthwise.cu (which says what
 * they do and why), apart from their launches: the backend's .cu and the
 * host emulator's tests (tests/emu/) include the same code. */
#ifndef ROOFLINE_CUDA_DEPTHWISE_KERNELS_CUH
#define ROOFLINE_CUDA_DEPTHWISE_KERNELS_CUH

#include <math.h>

#include "cuda_device.cuh"
#include "fast_divide.h"

enum { DW_THREADS = 256, DW_FILTER_ROWS = 8, DW_CHANNELS_PER_BLOCK = 32 };
/* the fp16/bf16 5x5 vector kernels take 252 registers a thread: 256 threads
 * fill the SM's 65536, so more would not launch */
static_assert(DW_THREADS <= 256, "the 5x5 depthwise kernels need at most 256 threads a block");

/* Element counts below 2^31 (depthwise_own_fits): 32-bit index arithmetic,
 * the dimensions' divisions by multiply and shift (fast_divide.h). */
struct dw_geom {
    int n, c, h, w, oh, ow, stride, pad;
    bool nhwc;
    fast_divisor c_div, h_div, w_div, oh_div, ow_div, stride_div;
};

/* A layer's geometry with its divisors: input (n, c, h, w), output oh x ow. */
static inline dw_geom dw_geom_make(int n, int c, int h, int w, int oh, int ow, int stride,
                                   int pad, bool nhwc)
{
    dw_geom g;
    g.n = n, g.c = c, g.h = h, g.w = w, g.oh = oh, g.ow = ow, g.stride = stride, g.pad = pad;
    g.nhwc = nhwc;
    g.c_div = fast_divisor_of((uint32_t)c), g.h_div = fast_divisor_of((uint32_t)h);
    g.w_div = fast_divisor_of((uint32_t)w), g.oh_div = fast_divisor_of((uint32_t)oh);
    g.ow_div = fast_divisor_of((uint32_t)ow), g.stride_div = fast_divisor_of((uint32_t)stride);
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

/* f(oy, ox, tap) for each output whose window covers input (iy, ix): oy =
 * (iy + pad - r) / stride where that divides exactly, tap = r * K + s. */
template <int K, typename F>
__device__ __forceinline__ void dw_gather(const dw_geom &g, int iy, int ix, F f)
{
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
            f(oy, ox, r * K + s);
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

/* dx(iy, ix) gathers every output whose window covers it (dw_gather). */
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
        dw_gather<K>(g, iy, ix, [&](int oy, int ox, int tap) {
            acc += to_float(dy[dw_at(n, ch, oy, ox, g.c, g.oh, g.ow, g.nhwc)]) * to_float(wc[tap]);
        });
        dx[e] = from_float<T>(accumulate ? to_float(dx[e]) + acc : acc);
    }
}

/* The forward and backward-data passes on 16-byte vectors in NHWC where the
 * channels are whole vectors (cuda_device.cuh says why; vec_fits_nhwc says
 * where): a thread takes W neighbouring channels of one position, splits
 * its index once, and loads each tap's inputs as one vector. Each element
 * sums its taps in the order the per-element kernels do. vectors_per_row =
 * c / W.
 *
 * The weights are (C, K, K), a channel's taps together, so a lane's W
 * channels' weights lie W K K elements from its neighbour's: a warp's load
 * of one tap touches a cache line per lane, and W K K such loads for every
 * vector (72 for bf16 3x3) would cost the L1 some thirty times what the
 * vector's inputs cost. A thread keeps its channels' weights in registers
 * instead, as T (K K vectors: 36 registers at 3x3, 100 at 5x5), and loads
 * them again only when its channels change, which the launch avoids by a
 * grid stride of whole rows (vec_row_blocks). */
template <typename T, int K> struct dw_weight_cache {
    int first = -1;
    vec16<T> taps[K * K];

    __device__ __forceinline__ void get(const T *__restrict__ w, int c0)
    {
        if (c0 == first)
            return;
        first = c0;
#pragma unroll
        for (int t = 0; t < K * K; t++)
#pragma unroll
            for (int k = 0; k < vec16<T>::width; k++)
                taps[t].v[k] = w[(c0 + k) * K * K + t];
    }
    /* channel c0 + k's weight at tap t */
    __device__ __forceinline__ float at(int t, int k) const { return to_float(taps[t].v[k]); }
};

/* (n, c0, y, x) of vector v of an NHWC tensor of height and width h, w */
template <typename T>
__device__ __forceinline__ void dw_vec_split(uint32_t v, const fast_divisor &vectors_per_row,
                                             const fast_divisor &h, const fast_divisor &w, int &n,
                                             int &c0, int &y, int &x)
{
    uint32_t yu, xu, q = fast_divmod(w, vec_row_channel<T>(vectors_per_row, v, &c0), &xu);
    n = (int)fast_divmod(h, q, &yu);
    y = (int)yu, x = (int)xu;
}

/* acc[k] += lane k's weight at tap r K + s times lane k of position (y, x0 +
 * dir s) of a rows x cols NHWC tensor t, for s = 0 .. K - 1 in order: the K
 * loads issued together, a position outside loading the nearest inside one
 * and adding nothing (behind one bounds test a tap, each load waited for the
 * one before). One window row of the forward (dir 1, the input) and of the
 * stride-1 backward data (dir -1, the output gradient). */
template <typename T, int K>
__device__ __forceinline__ void dw_row_taps(const T *__restrict__ t, int n, int c0, int y, int x0,
                                            int dir, int rows, int cols, int channels, int r,
                                            const dw_weight_cache<T, K> &weights, float *acc)
{
    constexpr int W = vec16<T>::width;
    int cy = y < 0 ? 0 : y >= rows ? rows - 1 : y;
    vec16<T> v[K];
    bool inside[K];
#pragma unroll
    for (int s = 0; s < K; s++) {
        int x = x0 + dir * s, cx = x < 0 ? 0 : x >= cols ? cols - 1 : x;
        inside[s] = y == cy && x == cx;
        v[s] = load_vec(t, dw_at(n, c0, cy, cx, channels, rows, cols, true) / W);
    }
#pragma unroll
    for (int s = 0; s < K; s++)
        if (inside[s])
#pragma unroll
            for (int k = 0; k < W; k++)
                acc[k] += to_float(v[s].v[k]) * weights.at(r * K + s, k);
}

template <typename T, int K>
__global__ void dw_forward_vec_kernel(const T *__restrict__ x, const T *__restrict__ w,
                                      T *__restrict__ y, dw_geom g, fast_divisor vectors_per_row,
                                      uint32_t vectors)
{
    constexpr int W = vec16<T>::width;
    dw_weight_cache<T, K> weights;
    VEC_STRIDE_LOOP(v, vectors)
    {
        int n, c0, oy, ox;
        dw_vec_split<T>(v, vectors_per_row, g.oh_div, g.ow_div, n, c0, oy, ox);
        weights.get(w, c0);
        float acc[W] = {};
        int iy0 = oy * g.stride - g.pad, ix0 = ox * g.stride - g.pad;
#pragma unroll
        for (int r = 0; r < K; r++)
            dw_row_taps<T, K>(x, n, c0, iy0 + r, ix0, 1, g.h, g.w, g.c, r, weights, acc);
        store_vec_sums(y, v, acc, false);
    }
}

template <typename T, int K>
__global__ void dw_backward_data_vec_kernel(const T *__restrict__ dy, const T *__restrict__ w,
                                            T *__restrict__ dx, dw_geom g,
                                            fast_divisor vectors_per_row, uint32_t vectors,
                                            bool accumulate)
{
    constexpr int W = vec16<T>::width;
    dw_weight_cache<T, K> weights;
    VEC_STRIDE_LOOP(v, vectors)
    {
        int n, c0, iy, ix;
        dw_vec_split<T>(v, vectors_per_row, g.h_div, g.w_div, n, c0, iy, ix);
        weights.get(w, c0);
        float acc[W] = {};
        if (g.stride == 1) {
            /* output (iy + pad - r, ix + pad - s) at tap r K + s, dw_gather's order */
#pragma unroll
            for (int r = 0; r < K; r++)
                dw_row_taps<T, K>(dy, n, c0, iy + g.pad - r, ix + g.pad, -1, g.oh, g.ow, g.c, r,
                                  weights, acc);
        } else {
            dw_gather<K>(g, iy, ix, [&](int oy, int ox, int tap) {
                vec16<T> d = load_vec(dy, dw_at(n, c0, oy, ox, g.c, g.oh, g.ow, true) / W);
#pragma unroll
                for (int k = 0; k < W; k++)
                    acc[k] += to_float(d.v[k]) * weights.at(tap, k);
            });
        }
        store_vec_sums(dx, v, acc, accumulate);
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

/* dw_filter_nhwc_kernel with V channels a thread, side by side: they share
 * a position's index arithmetic and its window's bounds, and each load takes
 * V elements in one instruction (dw_lanes), where a thread of one channel
 * spent some fifty instructions a position on nine 2-byte loads and nine
 * FMAs. V = 4 for 3 x 3 filters, 2 for 5 x 5 (4 would keep 100 sums in
 * registers). A block still covers DW_CHANNELS_PER_BLOCK channels of one
 * slice (the plan of cuda_plan.c is the same), as cols threads of V
 * channels by rows position lanes; a warp's rows are added by a fixed
 * shuffle tree, then the warps in order: the same bits every run. Where
 * channels are whole groups of V and the tensors aligned (dw_filter_vec_fits). */
template <typename T, int V> struct alignas(V * sizeof(T)) dw_lanes {
    T v[V];
};

template <int K> struct dw_filter_vec {
    static constexpr int channels = K == 3 ? 4 : 2, cols = DW_CHANNELS_PER_BLOCK / channels,
                         rows = DW_THREADS / cols, warps = DW_THREADS / 32;
};

template <typename T, int K>
static inline bool dw_filter_vec_fits(bool nhwc, int c, const void *x, const void *dy)
{
    const uintptr_t bytes = (uintptr_t)dw_filter_vec<K>::channels * sizeof(T);
    return nhwc && c % dw_filter_vec<K>::channels == 0 && (uintptr_t)x % bytes == 0 &&
           (uintptr_t)dy % bytes == 0;
}

template <typename T, int K>
__global__ void dw_filter_nhwc_vec_kernel(const T *__restrict__ x, const T *__restrict__ dy,
                                          float *__restrict__ partial, dw_geom g,
                                          uint32_t positions, uint32_t per_slice)
{
    constexpr int V = dw_filter_vec<K>::channels, COLS = dw_filter_vec<K>::cols,
                  ROWS = dw_filter_vec<K>::rows, WARPS = dw_filter_vec<K>::warps;
    using lanes_t = dw_lanes<T, V>;
    int ch0 = blockIdx.x * DW_CHANNELS_PER_BLOCK + threadIdx.x * V;
    float acc[V][K * K];
#pragma unroll
    for (int k = 0; k < V; k++)
#pragma unroll
        for (int t = 0; t < K * K; t++)
            acc[k][t] = 0.0f;
    if (ch0 < g.c) {
        uint32_t first = blockIdx.y * per_slice;
        uint32_t end = first + per_slice < positions ? first + per_slice : positions;
        for (uint32_t p = first + threadIdx.y; p < end; p += ROWS) {
            uint32_t ox_u, oy_u;
            uint32_t t = fast_divmod(g.ow_div, p, &ox_u);
            int n = (int)fast_divmod(g.oh_div, t, &oy_u);
            int ox = (int)ox_u, oy = (int)oy_u;
            lanes_t d = *(const lanes_t *)(dy + dw_at(n, ch0, oy, ox, g.c, g.oh, g.ow, true));
            dw_window<K>(g, n, ch0, oy, ox, [&](int tap, uint32_t at) {
                lanes_t xv = *(const lanes_t *)(x + at);
#pragma unroll
                for (int k = 0; k < V; k++)
                    acc[k][tap] += to_float(d.v[k]) * to_float(xv.v[k]);
            });
        }
    }
    /* a warp is 32 / COLS rows of the same COLS threads: rows 1.. onto row 0 */
#pragma unroll
    for (int k = 0; k < V; k++)
#pragma unroll
        for (int t = 0; t < K * K; t++)
            for (int off = 16; off >= COLS; off /= 2)
                acc[k][t] += __shfl_down_sync(0xffffffffu, acc[k][t], off);
    __shared__ float warp_sums[WARPS][K * K][DW_CHANNELS_PER_BLOCK];
    int tid = threadIdx.y * COLS + threadIdx.x;
    if (tid % 32 < COLS)
#pragma unroll
        for (int k = 0; k < V; k++)
#pragma unroll
            for (int t = 0; t < K * K; t++)
                warp_sums[tid / 32][t][threadIdx.x * V + k] = acc[k][t];
    __syncthreads();
    for (int e = tid; e < K * K * DW_CHANNELS_PER_BLOCK; e += DW_THREADS) {
        int t = e / DW_CHANNELS_PER_BLOCK, c = e % DW_CHANNELS_PER_BLOCK;
        int ch = blockIdx.x * DW_CHANNELS_PER_BLOCK + c;
        float sum = 0.0f;
        for (int j = 0; j < WARPS; j++)
            sum += warp_sums[j][t][c];
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

/* dw[e] = the sum over slices, e = channel x taps + tap. A block is 32
 * consecutive e (coalesced loads) by DW_SUM_ROWS rows: row y adds slices y,
 * y + DW_SUM_ROWS, ..., then row 0 adds the rows in order: a fixed order, the
 * same bits every run. One thread an e adding its hundreds of slices one
 * after another (MobileNetV2: up to 528, over some 1300 threads in all) left
 * the GPU idle for tens of microseconds. */
enum { DW_SUM_ROWS = DW_THREADS / 32 };

static inline unsigned dw_sum_blocks(uint32_t n)
{
    return (n + 31) / 32;
}

template <typename T>
__global__ void dw_filter_sum_kernel(const float *__restrict__ partial, T *__restrict__ dw,
                                     int slices, uint32_t n)
{
    __shared__ float rows[DW_SUM_ROWS][32];
    for (uint32_t base = blockIdx.x * 32; base < n; base += gridDim.x * 32) {
        uint32_t e = base + threadIdx.x;
        float sum = 0.0f;
        if (e < n)
            for (int j = threadIdx.y; j < slices; j += DW_SUM_ROWS)
                sum += partial[(size_t)j * n + e];
        rows[threadIdx.y][threadIdx.x] = sum;
        __syncthreads();
        if (threadIdx.y == 0 && e < n) {
            for (int r = 1; r < DW_SUM_ROWS; r++)
                sum += rows[r][threadIdx.x];
            dw[e] = from_float<T>(sum);
        }
        __syncthreads(); /* rows is written again in the next round */
    }
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

#endif
