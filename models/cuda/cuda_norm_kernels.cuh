/* The batch norm kernels of cuda_norm.cu (which says what they do and why:
 * chunked channel sums around a shift, the fused activation, add and second
 * batch norm), apart from their launches: the backend's .cu and the host
 * emulator's tests (tests/emu/) include the same code. */
#ifndef ROOFLINE_CUDA_NORM_KERNELS_CUH
#define ROOFLINE_CUDA_NORM_KERNELS_CUH

#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "cuda_device.cuh"
#include "fast_divide.h"

static const float bn_eps = 1e-5f, bn_momentum = 0.1f;

/* What a channel sum adds: x - shift and its square (the statistics); the
 * gradient, masked by the fused activation, and its product with x - mean
 * (d-beta and d-gamma); the gradient alone (a conv or fc bias), masked
 * where the bias layer's ReLU/ReLU6 runs its backward in the same pass. */
enum { SUM_STATS, SUM_GRAD, SUM_PLAIN };
enum { TILE = 32, ROWS = 8, NCHW_THREADS = 256, APPLY_THREADS = 256 };

/* The view of a tensor as [outer][C][inner]: NCHW is [N][C][HW], NHWC is
 * [NHW][C][1]. Where a plane is one element (a fully connected layer's
 * output) both are [N][C] and take the NHWC kernels, which spread a row's
 * channels over threads. */
struct channel_view {
    int channels;
    int64_t outer, inner;
    int layout;
};

/* The view of a (batch, c, h, w) tensor stored in `layout`. */
static inline channel_view channel_view_of(int batch, int c, int h, int w, int layout)
{
    channel_view v;
    v.channels = c;
    int64_t plane = (int64_t)h * w;
    if (layout == LAYOUT_NHWC || plane == 1) {
        layout = LAYOUT_NHWC;
        v.outer = (int64_t)batch * plane;
        v.inner = 1;
    } else {
        v.outer = batch;
        v.inner = plane;
    }
    v.layout = layout;
    return v;
}

/* Chunks of `outer` each channel's sum is split into: enough blocks to fill
 * sm_count SMs, no chunk under 64 rows. */
static inline int chunks_for(const channel_view *v, int sm_count)
{
    int64_t tiles = v->layout == LAYOUT_NHWC ? (v->channels + TILE - 1) / TILE : v->channels;
    int64_t want = 4 * (int64_t)sm_count / (tiles > 0 ? tiles : 1);
    int64_t most = v->layout == LAYOUT_NHWC ? v->outer / 64 : v->outer;
    if (want > most)
        want = most;
    if (want > 1024)
        want = 1024;
    return want > 1 ? (int)want : 1;
}

/* The normalised value of element j (channel c) as the forward computed it:
 * a fused activation's mask is taken from it, so backward does not need the
 * activation's output (which then need not be kept for it). */
__device__ __forceinline__ float normalised_by(float x, float gamma, float beta, float mean,
                                               float rstd)
{
    return gamma * (x - mean) * rstd + beta;
}

__device__ __forceinline__ float normalised(float x, int c, const float *gamma,
                                            const float *beta, const float *mean,
                                            const float *rstd)
{
    return normalised_by(x, gamma[c], beta[c], mean[c], rstd[c]);
}

/* A thread's channels' parameters in registers, fetched again only when its
 * channels change (the NHWC vector kernels below say why). S channels from
 * c0 (S = 1: one channel), N parameters each (P_*). */
template <int S, int N> struct channel_cache {
    int first = -1;
    float p[N][S];

    __device__ __forceinline__ void get(int c0, const float *const *from)
    {
        if (c0 == first)
            return;
        first = c0;
#pragma unroll
        for (int n = 0; n < N; n++)
#pragma unroll
            for (int k = 0; k < S; k++)
                p[n][k] = from[n][c0 + k];
    }
    /* parameter n of lane k's channel */
    __device__ __forceinline__ float at(int n, int k) const { return p[n][k % S]; }
};

enum { P_GAMMA, P_BETA, P_MEAN, P_RSTD, P_DBETA, P_DGAMMA };

/* What one element adds to the two sums of its channel c. SUM_PLAIN with
 * an activation is a ReLU/ReLU6's backward fused with the bias gradient of
 * the conv or fc under it (cuda_plan.h, bias_grad_by): x is the
 * activation's output, whose mask gates dy, and the gated gradient is
 * stored to out (which may be dy itself) as it is summed, so the bias
 * gradient does not read the tensor again. */
template <typename T> struct summand {
    int mode, act; /* act: the activation whose mask SUM_GRAD (or SUM_PLAIN) applies */
    const T *x, *dy;
    const float *mean, *rstd, *gamma, *beta;
    T *out; /* SUM_PLAIN: where the gated gradient goes, or NULL */

    __device__ __forceinline__ void add(int64_t at, int c, float shift, float &s1,
                                        float &s2) const
    {
        if (mode == SUM_STATS) {
            float d = to_float(x[at]) - shift;
            s1 += d;
            s2 += d * d;
            return;
        }
        float g = to_float(dy[at]);
        if (mode == SUM_GRAD && act != ACT_NONE &&
            !passes(normalised(to_float(x[at]), c, gamma, beta, mean, rstd), act))
            g = 0.0f;
        if (mode == SUM_PLAIN && act != ACT_NONE && !passes(to_float(x[at]), act))
            g = 0.0f;
        if (mode == SUM_PLAIN && out)
            out[at] = from_float<T>(g);
        s1 += g;
        if (mode == SUM_GRAD)
            s2 += g * (to_float(x[at]) - mean[c]);
    }

    /* The parameters of channels c0 .. c0 + S - 1 into p, where add_vec
     * reads them: once a thread, whose channels stay the same over its rows
     * (the two 16-byte loads of a vector came with 4 W loads of parameters
     * that were the same every row, a load issue bound). */
    template <int S>
    __device__ __forceinline__ void get_params(int sum_mode, int c0, channel_cache<S, 4> &p) const
    {
        const float *from[4] = {gamma, beta, mean, rstd};
        if (sum_mode == SUM_GRAD)
            p.get(c0, from);
    }

    /* add() for the W elements of vector v, whose channels span S: lane k
     * is channel c0 + k % S, its sums s1[k % S] and s2[k % S] around
     * shift[k % S], its parameters in p (get_params). S = W: W consecutive
     * channels (NHWC); S = 1: all of channel c0 (NCHW planes). sum_mode is
     * this summand's mode, a constant where the kernel is instantiated for
     * one, so that the statistics keep no parameter registers. */
    template <int S>
    __device__ __forceinline__ void add_vec(int sum_mode, int64_t v, const float *shift,
                                            const channel_cache<S, 4> &p, float *s1,
                                            float *s2) const
    {
        constexpr int W = vec16<T>::width;
        if (sum_mode == SUM_STATS) {
            vec16<T> xv = load_vec(x, v);
#pragma unroll
            for (int k = 0; k < W; k++) {
                float d = to_float(xv.v[k]) - shift[k % S];
                s1[k % S] += d;
                s2[k % S] += d * d;
            }
            return;
        }
        vec16<T> gv = load_vec(dy, v), xv = gv;
        bool gate = sum_mode == SUM_PLAIN && act != ACT_NONE;
        if (sum_mode == SUM_GRAD || gate)
            xv = load_vec(x, v);
#pragma unroll
        for (int k = 0; k < W; k++) {
            float g = to_float(gv.v[k]), xk = to_float(xv.v[k]);
            if (sum_mode == SUM_GRAD && act != ACT_NONE &&
                !passes(normalised_by(xk, p.at(P_GAMMA, k), p.at(P_BETA, k), p.at(P_MEAN, k),
                                      p.at(P_RSTD, k)),
                        act))
                g = 0.0f;
            if (gate && !passes(xk, act)) {
                g = 0.0f;
                gv.v[k] = from_float<T>(0.0f);
            }
            s1[k % S] += g;
            if (sum_mode == SUM_GRAD)
                s2[k % S] += g * (xk - p.at(P_MEAN, k));
        }
        if (sum_mode == SUM_PLAIN && out)
            store_vec(out, v, gv);
    }
};

/* Calls f(std::integral_constant<int, mode>) for a summand's mode. */
template <typename F> static inline void with_sum_mode(int mode, F f)
{
    if (mode == SUM_STATS)
        f(std::integral_constant<int, SUM_STATS>{});
    else if (mode == SUM_GRAD)
        f(std::integral_constant<int, SUM_GRAD>{});
    else
        f(std::integral_constant<int, SUM_PLAIN>{});
}

/* NHWC: a block is TILE channels x ROWS rows of one chunk. */
template <typename T>
__global__ void partial_sums_nhwc(summand<T> f, int channels, int64_t outer, int64_t per_chunk,
                                  float *partials)
{
    __shared__ float s1s[ROWS][TILE], s2s[ROWS][TILE];
    int c = blockIdx.x * TILE + threadIdx.x;
    int64_t first = blockIdx.y * per_chunk, last = first + per_chunk;
    last = last < outer ? last : outer;
    float s1 = 0.0f, s2 = 0.0f;
    if (c < channels) {
        float shift = f.mode == SUM_STATS ? to_float(f.x[c]) : 0.0f;
        for (int64_t r = first + threadIdx.y; r < last; r += ROWS)
            f.add(r * channels + c, c, shift, s1, s2);
    }
    s1s[threadIdx.y][threadIdx.x] = s1;
    s2s[threadIdx.y][threadIdx.x] = s2;
    __syncthreads();
    if (threadIdx.y == 0 && c < channels) {
        for (int k = 1; k < ROWS; k++) {
            s1 += s1s[k][threadIdx.x];
            s2 += s2s[k][threadIdx.x];
        }
        float *p = partials + ((int64_t)blockIdx.y * channels + c) * 2;
        p[0] = s1;
        p[1] = s2;
    }
}

/* partial_sums_nhwc on 16-byte vectors (cuda_device.cuh says why):
 * a block covers TILE channels, as TILE / W threads of W channels each by
 * SUM_VEC_THREADS / (TILE / W) row lanes; the lanes are then added per
 * channel in lane order. Its "chunk" is not a run of rows but every
 * chunks-th group of LANES rows: the grid sweeps the tensor from the first
 * row to the last together, so that when it ends L2 holds the tensor's tail,
 * where the second pass (bn_apply_vec_kernel, bn_backward_data_vec_kernel:
 * VEC_STRIDE_LOOP_BACK) starts. Contiguous chunks would leave it the tail of
 * every chunk, which a pass over the whole tensor meets too late. Where
 * channels are whole vectors and the tensors 16-byte aligned
 * (vec_fits_nhwc). One instantiation per mode (with_sum_mode): the gradient
 * sums keep their W channels' four parameters in registers (79 with bf16, ptxas for sm_90: 3 blocks an SM,
 * 24 warps of two 16-byte loads in flight a thread, 24 KB, above the ~15 KB
 * an H100 SM needs in flight by Little's law, 3.35 TB/s x ~0.6 us / 132),
 * the statistics and the bias sums keep none and stay at 4 blocks (at most
 * 64 registers). */
enum { SUM_VEC_THREADS = 256 };

template <typename T> struct sum_vec_shape {
    static constexpr int width = vec16<T>::width, cols = TILE / width,
                         lanes = SUM_VEC_THREADS / cols;
};

template <typename T, int Mode>
__global__ void __launch_bounds__(SUM_VEC_THREADS, Mode == SUM_GRAD ? 3 : 4)
    partial_sums_nhwc_vec(summand<T> f, int channels, int64_t outer, float *partials)
{
    constexpr int W = sum_vec_shape<T>::width, LANES = sum_vec_shape<T>::lanes;
    __shared__ float s1s[LANES][TILE], s2s[LANES][TILE];
    int c0 = blockIdx.x * TILE + threadIdx.x * W;
    float s1[W], s2[W], shift[W];
    channel_cache<W, 4> p;
#pragma unroll
    for (int k = 0; k < W; k++)
        s1[k] = s2[k] = shift[k] = 0.0f;
    if (c0 < channels) {
        int64_t per_row = channels / W;
        if (Mode == SUM_STATS) {
            vec16<T> first_row = load_vec(f.x, c0 / W);
#pragma unroll
            for (int k = 0; k < W; k++)
                shift[k] = to_float(first_row.v[k]);
        }
        f.get_params(Mode, c0, p);
        for (int64_t r = (int64_t)blockIdx.y * LANES + threadIdx.y; r < outer;
             r += (int64_t)gridDim.y * LANES)
            f.add_vec(Mode, r * per_row + c0 / W, shift, p, s1, s2);
    }
#pragma unroll
    for (int k = 0; k < W; k++) {
        s1s[threadIdx.y][threadIdx.x * W + k] = s1[k];
        s2s[threadIdx.y][threadIdx.x * W + k] = s2[k];
    }
    __syncthreads();
    int t = threadIdx.y * blockDim.x + threadIdx.x, c = blockIdx.x * TILE + t;
    if (t < TILE && c < channels) {
        float a = 0.0f, b = 0.0f;
        for (int k = 0; k < LANES; k++) {
            a += s1s[k][t];
            b += s2s[k][t];
        }
        float *p = partials + ((int64_t)blockIdx.y * channels + c) * 2;
        p[0] = a;
        p[1] = b;
    }
}

/* NCHW: a block is one channel over a chunk of images. Its threads run over
 * the chunk's (image, position) pairs as one index, so that all of them
 * work however small the plane (7x7 in ResNet's last stage, 49 of 256
 * threads if they ran along the plane only), V elements a step: W, a 16-byte
 * vector, where planes are whole vectors, else 1. Unrolled, so that a
 * thread has several loads in flight. */
template <typename T, int V>
__global__ void partial_sums_nchw(summand<T> f, int channels, int64_t outer,
                                  fast_divisor steps_per_plane, int64_t per_chunk,
                                  float *partials)
{
    __shared__ float s1s[NCHW_THREADS], s2s[NCHW_THREADS];
    int c = blockIdx.x;
    int64_t inner = (int64_t)steps_per_plane.divisor * V;
    int64_t first = blockIdx.y * per_chunk, last = first + per_chunk;
    last = last < outer ? last : outer;
    uint32_t steps = last > first ? (uint32_t)((last - first) * steps_per_plane.divisor) : 0;
    float shift = f.mode == SUM_STATS ? to_float(f.x[(int64_t)c * inner]) : 0.0f;
    float s1 = 0.0f, s2 = 0.0f;
    channel_cache<1, 4> p;
    if (V > 1)
        f.get_params(f.mode, c, p);
#pragma unroll 4
    for (uint32_t t = threadIdx.x; t < steps; t += NCHW_THREADS) {
        uint32_t at_plane;
        uint32_t img = fast_divmod(steps_per_plane, t, &at_plane);
        int64_t at = ((first + img) * channels + c) * inner + (int64_t)at_plane * V;
        if (V == 1)
            f.add(at, c, shift, s1, s2);
        else
            f.add_vec(f.mode, at / V, &shift, p, &s1, &s2);
    }
    s1s[threadIdx.x] = s1;
    s2s[threadIdx.x] = s2;
    __syncthreads();
    for (unsigned half = NCHW_THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            s1s[threadIdx.x] += s1s[threadIdx.x + half];
            s2s[threadIdx.x] += s2s[threadIdx.x + half];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float *p = partials + ((int64_t)blockIdx.y * channels + c) * 2;
        p[0] = s1s[0];
        p[1] = s2s[0];
    }
}

/* Per channel, one warp: lane l adds chunks l, l + 32, ... in double, the
 * lanes are then added by a fixed shuffle tree (the same order every run),
 * and lane 0 does what the sums are for. A thread a channel adding its
 * chunks one after another (264 for ResNet-50's 64-channel layers, 528 for
 * MobileNetV2's narrow ones) left the GPU idle for tens of microseconds a
 * batch norm. */
enum { FINISH_THREADS = 128, FINISH_CHANNELS = FINISH_THREADS / 32 };

static inline unsigned finish_blocks(int channels)
{
    return (unsigned)((channels + FINISH_CHANNELS - 1) / FINISH_CHANNELS);
}

template <typename T>
__global__ void finish_sums(int mode, const float *partials, int chunks, int channels,
                            int64_t count, const T *x, int64_t shift_stride, float *mean,
                            float *rstd, float *run_mean, float *run_var, float *out1,
                            float *out2, void *bias_grad, int bias_elem)
{
    int c = blockIdx.x * FINISH_CHANNELS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (c >= channels) /* the whole warp: c is the warp's */
        return;
    double s1 = 0.0, s2 = 0.0;
    for (int k = lane; k < chunks; k += 32) {
        s1 += partials[((int64_t)k * channels + c) * 2];
        s2 += partials[((int64_t)k * channels + c) * 2 + 1];
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        s1 += __shfl_down_sync(0xffffffffu, s1, offset);
        s2 += __shfl_down_sync(0xffffffffu, s2, offset);
    }
    if (lane != 0)
        return;
    if (mode == SUM_STATS) {
        double m = (double)count, d = s1 / m;
        double var = s2 / m - d * d;
        var = var > 0.0 ? var : 0.0;
        double mu = (double)to_float(x[(int64_t)c * shift_stride]) + d;
        mean[c] = (float)mu;
        rstd[c] = (float)(1.0 / sqrt(var + (double)bn_eps));
        double unbiased = count > 1 ? var * m / (m - 1.0) : var;
        run_mean[c] = (float)((1.0 - bn_momentum) * run_mean[c] + bn_momentum * mu);
        run_var[c] = (float)((1.0 - bn_momentum) * run_var[c] + bn_momentum * unbiased);
    } else if (mode == SUM_GRAD) {
        out1[c] = (float)s1;               /* d-beta = sum(g) */
        out2[c] = (float)(s2 * rstd[c]);   /* d-gamma = sum(g * x-hat) */
    } else if (bias_elem == ELEM_F32) {
        ((float *)bias_grad)[c] = (float)s1;
    } else if (bias_elem == ELEM_F16) {
        ((__half *)bias_grad)[c] = __float2half_rn((float)s1);
    } else {
        ((__nv_bfloat16 *)bias_grad)[c] = __float2bfloat16_rn((float)s1);
    }
}

/* ---- forward -------------------------------------------------------------------- */

/* A batch norm's normalisation of its input, as a kernel argument. */
template <typename T> struct bn_norm {
    const T *x;
    const float *gamma, *beta, *mean, *rstd;

    __device__ __forceinline__ float at(int64_t j, int c) const
    {
        return normalised(to_float(x[j]), c, gamma, beta, mean, rstd);
    }
};

/* y = act(bn(x) [+ other | + bn2(x2)]) */
template <typename T>
__global__ void bn_apply_kernel(T *y, bn_norm<T> bn, const T *other, bn_norm<T> bn2,
                                bool second, int act, channel_finder channel, int64_t n)
{
    GRID_STRIDE(j, n) {
        int c = channel.of(j);
        float v = bn.at(j, c);
        if (second)
            v += bn2.at(j, c);
        else if (other)
            v += to_float(other[j]);
        y[j] = from_float<T>(activate(v, act));
    }
}

/* ---- backward ------------------------------------------------------------------- */

/* dx = gamma rstd (g - d-beta / M - x-hat d-gamma / M), g the masked dy. */
template <typename T>
__global__ void bn_backward_data_kernel(T *dx, const T *dy, const T *x, const float *gamma,
                                        const float *beta, const float *mean, const float *rstd,
                                        const float *dbeta, const float *dgamma, int act,
                                        float inv_count, bool acc, channel_finder channel,
                                        int64_t n)
{
    GRID_STRIDE(j, n) {
        int c = channel.of(j);
        float g = to_float(dy[j]), xv = to_float(x[j]);
        if (act != ACT_NONE && !passes(normalised(xv, c, gamma, beta, mean, rstd), act))
            g = 0.0f;
        float xhat = (xv - mean[c]) * rstd[c];
        float d = gamma[c] * rstd[c] * (g - dbeta[c] * inv_count - xhat * dgamma[c] * inv_count);
        dx[j] = from_float<T>(acc ? to_float(dx[j]) + d : d);
    }
}

/* ---- NHWC in 16-byte vectors ----------------------------------------------------- */
/* Where with_vector_map finds a map (cuda_device.cuh says why): the channel
 * of a vector's first element by a multiply-shift division of its index,
 * then the per-element kernels' own arithmetic.
 *
 * In NHWC a lane's W channels are W apart from its neighbour's, so a warp's
 * load of one parameter for one of its channels touches 32 x W x 4 bytes, a
 * cache line per lane: fetched for every vector, the parameters would cost
 * the L1 several times what the data costs. Each thread keeps its channels'
 * parameters in registers (channel_cache) and fetches them again only when
 * its channels change, which the launch avoids by a grid stride of whole
 * rows (nhwc_vectors::blocks). In NCHW a vector has one channel, mostly the
 * same as its neighbours', and the cache holds one value per parameter. */

/* What an apply adds to its batch norm: nothing, another tensor (a residual
 * add) or a second batch norm. */
enum { APPLY_ALONE, APPLY_OTHER, APPLY_SECOND };

/* Calls f(std::integral_constant<int, kind>) for the kind of apply that
 * `other` and `second` make. */
template <typename F> static inline void with_apply_kind(const void *other, bool second, F f)
{
    if (second)
        f(std::integral_constant<int, APPLY_SECOND>{});
    else if (other)
        f(std::integral_constant<int, APPLY_OTHER>{});
    else
        f(std::integral_constant<int, APPLY_ALONE>{});
}

/* bn_apply_kernel on whole vectors (Map: nhwc_vectors or nchw_vectors), for
 * one kind of apply (with_apply_kind): the plain apply, two thirds of the
 * step's, keeps no second batch norm's parameters, which cost it registers
 * and with them the threads, and the loads in flight, that HBM needs. */
template <typename T, typename Map, int Kind>
__global__ void bn_apply_vec_kernel(T *y, bn_norm<T> bn, const T *other, bn_norm<T> bn2, int act,
                                    Map map, uint32_t vectors)
{
    constexpr int W = vec16<T>::width;
    constexpr bool second = Kind == APPLY_SECOND, add = Kind == APPLY_OTHER;
    const float *from1[4] = {bn.gamma, bn.beta, bn.mean, bn.rstd};
    const float *from2[4] = {bn2.gamma, bn2.beta, bn2.mean, bn2.rstd};
    channel_cache<Map::span, 4> p1;
    channel_cache<Map::span, second ? 4 : 1> p2; /* unused but with a second batch norm */
    VEC_STRIDE_LOOP_BACK(v, vectors)
    {
        int c0 = map.first_channel(v);
        p1.get(c0, from1);
        if constexpr (second)
            p2.get(c0, from2);
        vec16<T> xa = load_vec(bn.x, v), xb = xa, out;
        if constexpr (second)
            xb = load_vec(bn2.x, v);
        else if constexpr (add)
            xb = load_vec(other, v);
#pragma unroll
        for (int k = 0; k < W; k++) {
            float s = normalised_by(to_float(xa.v[k]), p1.at(P_GAMMA, k), p1.at(P_BETA, k),
                                    p1.at(P_MEAN, k), p1.at(P_RSTD, k));
            if constexpr (second)
                s += normalised_by(to_float(xb.v[k]), p2.at(P_GAMMA, k), p2.at(P_BETA, k),
                                   p2.at(P_MEAN, k), p2.at(P_RSTD, k));
            else if constexpr (add)
                s += to_float(xb.v[k]);
            out.v[k] = from_float<T>(activate(s, act));
        }
        store_vec(y, v, out);
    }
}

/* bn_backward_data_kernel on whole vectors. */
template <typename T, typename Map>
__global__ void bn_backward_data_vec_kernel(T *dx, const T *dy, const T *x, const float *gamma,
                                            const float *beta, const float *mean,
                                            const float *rstd, const float *dbeta,
                                            const float *dgamma, int act, float inv_count,
                                            bool acc, Map map, uint32_t vectors)
{
    constexpr int W = vec16<T>::width;
    const float *from[6] = {gamma, beta, mean, rstd, dbeta, dgamma};
    channel_cache<Map::span, 6> p;
    VEC_STRIDE_LOOP_BACK(v, vectors)
    {
        p.get(map.first_channel(v), from);
        vec16<T> gv = load_vec(dy, v), xv = load_vec(x, v);
        float d[W];
#pragma unroll
        for (int k = 0; k < W; k++) {
            float g = to_float(gv.v[k]), xk = to_float(xv.v[k]);
            float ga = p.at(P_GAMMA, k), mu = p.at(P_MEAN, k), rs = p.at(P_RSTD, k);
            if (act != ACT_NONE && !passes(normalised_by(xk, ga, p.at(P_BETA, k), mu, rs), act))
                g = 0.0f;
            float xhat = (xk - mu) * rs;
            d[k] = ga * rs * (g - p.at(P_DBETA, k) * inv_count - xhat * p.at(P_DGAMMA, k) * inv_count);
        }
        store_vec_sums(dx, v, d, acc);
    }
}

#endif
