/* Batch norm in training mode, and the per-channel sums it shares with the
 * conv/fc bias gradient. A channel's sums run in two kernels: partial sums
 * over chunks of its elements (fp32 within a thread, which sees at most a few
 * thousand), then one pass per channel adding the chunks in double in a
 * fixed order, so results do not depend on scheduling. Statistics are taken
 * around a shift (the channel's first element) so that the variance does not
 * cancel when the mean is large. Running statistics follow PyTorch: momentum
 * 0.1, the unbiased variance; eps 1e-5.
 *
 * Fusions (cuda_plan.c): a ReLU/ReLU6 after batch norm is applied by the
 * normalising kernel and masks the gradient on the fly in backward, the mask
 * recomputed from the input (so the activation's output is kept only for
 * layers that read it); a batch
 * norm feeding a residual add is normalised by the add's kernel,
 * y = act(bn(x) + other), and where the add's other input is a batch norm
 * too (a ResNet downsample) both are: y = act(bn(x) + bn2(x2)). */
#include "cuda_device.cuh"
#include "cuda_internal.h"

static const float bn_eps = 1e-5f, bn_momentum = 0.1f;

enum { SUM_STATS, SUM_GRAD, SUM_PLAIN };
enum { TILE = 32, ROWS = 8, NCHW_THREADS = 256, APPLY_THREADS = 256 };

/* The view of a tensor as [outer][C][inner]: NCHW is [N][C][HW], NHWC is
 * [NHW][C][1]. */
struct channel_view {
    int channels;
    int64_t outer, inner;
    int layout;
};

static channel_view view_of(const backend *b, tensor_shape s)
{
    channel_view v;
    v.channels = s.c;
    int64_t plane = (int64_t)s.h * s.w;
    if (b->pp.layout == LAYOUT_NHWC) {
        v.outer = (int64_t)b->cfg.batch * plane;
        v.inner = 1;
    } else {
        v.outer = b->cfg.batch;
        v.inner = plane;
    }
    v.layout = b->pp.layout;
    return v;
}

/* Chunks of `outer` each channel's sum is split into: enough blocks to fill
 * the GPU, no chunk under 64 rows. */
static int chunks_for(const backend *b, const channel_view *v)
{
    int64_t tiles = v->layout == LAYOUT_NHWC ? (v->channels + TILE - 1) / TILE : v->channels;
    int64_t want = 4 * (int64_t)b->sm_count / (tiles > 0 ? tiles : 1);
    int64_t most = v->layout == LAYOUT_NHWC ? v->outer / 64 : v->outer;
    if (want > most)
        want = most;
    if (want > 1024)
        want = 1024;
    return want > 1 ? (int)want : 1;
}

int64_t cuda_bn_partials_needed(const backend *b)
{
    int64_t need = 0;
    for (int i = 0; i < b->net->n_layers; i++) {
        const layer *l = &b->net->layers[i];
        bool sums = l->type == LAYER_BN || ((l->type == LAYER_CONV || l->type == LAYER_FC) &&
                                            l->has_bias);
        if (!sums)
            continue;
        channel_view v = view_of(b, l->out_shape);
        int64_t n = (int64_t)chunks_for(b, &v) * v.channels * 2;
        need = n > need ? n : need;
    }
    return need;
}

/* The normalised value of element j (channel c) as the forward computed it:
 * a fused activation's mask is taken from it, so backward does not need the
 * activation's output (which then need not be kept for it). */
__device__ __forceinline__ float normalised(float x, int c, const float *gamma,
                                            const float *beta, const float *mean,
                                            const float *rstd)
{
    return gamma[c] * (x - mean[c]) * rstd[c] + beta[c];
}

/* What one element adds to the two sums of its channel c. */
template <typename T> struct summand {
    int mode, act;
    const T *x, *dy;
    const float *mean, *rstd, *gamma, *beta;

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
        if (act != ACT_NONE &&
            !passes(normalised(to_float(x[at]), c, gamma, beta, mean, rstd), act))
            g = 0.0f;
        s1 += g;
        if (mode == SUM_GRAD)
            s2 += g * (to_float(x[at]) - mean[c]);
    }
};

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

/* NCHW: a block is one channel over a chunk of images, threads along HW. */
template <typename T>
__global__ void partial_sums_nchw(summand<T> f, int channels, int64_t outer, int64_t inner,
                                  int64_t per_chunk, float *partials)
{
    __shared__ float s1s[NCHW_THREADS], s2s[NCHW_THREADS];
    int c = blockIdx.x;
    int64_t first = blockIdx.y * per_chunk, last = first + per_chunk;
    last = last < outer ? last : outer;
    float shift = f.mode == SUM_STATS ? to_float(f.x[(int64_t)c * inner]) : 0.0f;
    float s1 = 0.0f, s2 = 0.0f;
    for (int64_t img = first; img < last; img++) {
        int64_t base = (img * channels + c) * inner;
        for (int64_t p = threadIdx.x; p < inner; p += NCHW_THREADS)
            f.add(base + p, c, shift, s1, s2);
    }
    s1s[threadIdx.x] = s1;
    s2s[threadIdx.x] = s2;
    __syncthreads();
    for (int half = NCHW_THREADS / 2; half > 0; half /= 2) {
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

/* Per channel, the chunks in double and in order, then what the sums are for. */
template <typename T>
__global__ void finish_sums(int mode, const float *partials, int chunks, int channels,
                            int64_t count, const T *x, int64_t shift_stride, float *mean,
                            float *rstd, float *run_mean, float *run_var, float *out1,
                            float *out2, void *bias_grad, int bias_elem)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= channels)
        return;
    double s1 = 0.0, s2 = 0.0;
    for (int k = 0; k < chunks; k++) {
        s1 += partials[((int64_t)k * channels + c) * 2];
        s2 += partials[((int64_t)k * channels + c) * 2 + 1];
    }
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

/* Runs both kernels of one channel sum over tensor shape s. */
template <typename T>
static int channel_sums(backend *b, tensor_shape s, summand<T> f, float *mean, float *rstd,
                        float *run_mean, float *run_var, float *out1, float *out2,
                        void *bias_grad)
{
    channel_view v = view_of(b, s);
    int chunks = chunks_for(b, &v);
    if ((int64_t)chunks * v.channels * 2 > b->bn_partials_elems)
        return cuda_fail(b, "batch norm sums need more scratch than planned");
    int64_t per_chunk = (v.outer + chunks - 1) / chunks;
    if (v.layout == LAYOUT_NHWC) {
        dim3 grid((unsigned)((v.channels + TILE - 1) / TILE), (unsigned)chunks), block(TILE, ROWS);
        partial_sums_nhwc<T><<<grid, block, 0, b->stream>>>(f, v.channels, v.outer, per_chunk,
                                                            b->bn_partials);
    } else {
        dim3 grid((unsigned)v.channels, (unsigned)chunks);
        partial_sums_nchw<T><<<grid, NCHW_THREADS, 0, b->stream>>>(f, v.channels, v.outer,
                                                                   v.inner, per_chunk,
                                                                   b->bn_partials);
    }
    LAUNCH_TRY(b);
    int64_t count = v.outer * v.inner;
    int64_t shift_stride = v.layout == LAYOUT_NHWC ? 1 : v.inner;
    finish_sums<T><<<(v.channels + 127) / 128, 128, 0, b->stream>>>(
        f.mode, b->bn_partials, chunks, v.channels, count, f.x, shift_stride, mean, rstd,
        run_mean, run_var, out1, out2, bias_grad, (int)b->pp.elem);
    LAUNCH_TRY(b);
    return 0;
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
                                bool second, int act, int channels, int64_t plane, int layout,
                                int64_t n)
{
    GRID_STRIDE(j, n) {
        int c = channel_of(j, channels, plane, layout);
        float v = bn.at(j, c);
        if (second)
            v += bn2.at(j, c);
        else if (other)
            v += to_float(other[j]);
        y[j] = from_float<T>(activate(v, act));
    }
}

template <typename T> static bn_norm<T> norm_of(backend *b, int bn)
{
    cuda_layer *cl = &b->layers[bn];
    bn_norm<T> f = {(const T *)cuda_input(b, bn, 0), cl->w, cl->bias, cl->mean, cl->rstd};
    return f;
}

/* y = act(bn(x) + other), or + bn2(x2) where bn2 >= 0 */
template <typename T>
static int bn_apply(backend *b, int bn, T *y, const T *other, int bn2, int act)
{
    const layer *l = &b->net->layers[bn];
    int64_t n = cuda_elems(b, bn);
    bn_norm<T> first = norm_of<T>(b, bn), second = bn2 >= 0 ? norm_of<T>(b, bn2) : first;
    bn_apply_kernel<T><<<cuda_blocks(b, n, APPLY_THREADS), APPLY_THREADS, 0, b->stream>>>(
        y, first, other, second, bn2 >= 0, act, l->out_shape.c,
        (int64_t)l->out_shape.h * l->out_shape.w, b->pp.layout, n);
    LAUNCH_TRY(b);
    return 0;
}

int cuda_bn_forward(backend *b, int i)
{
    cuda_layer *cl = &b->layers[i];
    const layer_fusion *f = &b->fusion[i];
    return with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        summand<T> s = {SUM_STATS, ACT_NONE, (const T *)cuda_input(b, i, 0), NULL,
                        NULL,      NULL,     NULL,                           NULL};
        if (channel_sums<T>(b, b->net->layers[i].in_shape, s, cl->mean, cl->rstd, cl->run_mean,
                            cl->run_var, NULL, NULL, NULL))
            return -1;
        if (f->bn_applied_by >= 0)
            return 0; /* the add normalises it */
        return bn_apply<T>(b, i, (T *)cl->out, (const T *)NULL, -1, f->act);
    });
}

int cuda_bn_apply_add(backend *b, int add)
{
    const layer *l = &b->net->layers[add];
    int bn = b->fusion[add].add_bn, bn2 = b->fusion[add].add_bn2;
    int other = l->inputs[0] == bn ? 1 : 0;
    return with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        const T *raw = bn2 >= 0 ? (const T *)NULL : (const T *)cuda_input(b, add, other);
        return bn_apply<T>(b, bn, (T *)b->layers[add].out, raw, bn2, b->fusion[add].act);
    });
}

/* ---- backward ------------------------------------------------------------------- */

int cuda_bn_backward_weights(backend *b, int i)
{
    cuda_layer *cl = &b->layers[i];
    return with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        summand<T> s = {SUM_GRAD, b->fusion[i].act, (const T *)cuda_input(b, i, 0),
                        (const T *)cl->grad, cl->mean, cl->rstd, cl->w, cl->bias};
        return channel_sums<T>(b, b->net->layers[i].out_shape, s, NULL, cl->rstd, NULL, NULL,
                               (float *)cl->dbias, (float *)cl->dw, NULL);
    });
}

/* dx = gamma rstd (g - d-beta / M - x-hat d-gamma / M), g the masked dy. */
template <typename T>
__global__ void bn_backward_data_kernel(T *dx, const T *dy, const T *x, const float *gamma,
                                        const float *beta, const float *mean, const float *rstd,
                                        const float *dbeta, const float *dgamma, int act,
                                        float inv_count, bool acc, int channels, int64_t plane,
                                        int layout, int64_t n)
{
    GRID_STRIDE(j, n) {
        int c = channel_of(j, channels, plane, layout);
        float g = to_float(dy[j]), xv = to_float(x[j]);
        if (act != ACT_NONE && !passes(normalised(xv, c, gamma, beta, mean, rstd), act))
            g = 0.0f;
        float xhat = (xv - mean[c]) * rstd[c];
        float d = gamma[c] * rstd[c] * (g - dbeta[c] * inv_count - xhat * dgamma[c] * inv_count);
        dx[j] = from_float<T>(acc ? to_float(dx[j]) + d : d);
    }
}

int cuda_bn_backward_data(backend *b, int i, bool accumulate)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    int64_t n = cuda_elems(b, i);
    int64_t plane = (int64_t)l->out_shape.h * l->out_shape.w;
    float inv_count = (float)(1.0 / ((double)b->cfg.batch * plane));
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        bn_backward_data_kernel<T><<<cuda_blocks(b, n, APPLY_THREADS), APPLY_THREADS, 0,
                                     b->stream>>>(
            (T *)cuda_input_grad(b, i, 0), (const T *)cl->grad, (const T *)cuda_input(b, i, 0),
            cl->w, cl->bias, cl->mean, cl->rstd, (const float *)cl->dbias,
            (const float *)cl->dw, b->fusion[i].act, inv_count, accumulate, l->out_shape.c, plane,
            b->pp.layout, n);
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}

/* ---- conv and fc bias gradient --------------------------------------------------- */

int cuda_bias_grad(backend *b, int i, void *dbias, elem_type dbias_elem)
{
    cuda_layer *cl = &b->layers[i];
    if (dbias_elem != b->pp.elem)
        return cuda_fail(b, "a bias gradient is kept in the compute type");
    return with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        summand<T> s = {SUM_PLAIN, ACT_NONE, (const T *)cl->grad, (const T *)cl->grad,
                        NULL,      NULL,     NULL,                NULL};
        return channel_sums<T>(b, b->net->layers[i].out_shape, s, NULL, NULL, NULL, NULL, NULL,
                               NULL, dbias);
    });
}
