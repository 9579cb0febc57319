/* Batch norm in training mode, and the per-channel sums it shares with the
 * conv/fc bias gradient. A channel's sums run in two kernels: partial sums
 * over chunks of its elements (fp32 within a thread, which sees at most a few
 * thousand), then one warp per channel adding the chunks in double in a
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
 * too (a ResNet downsample) both are: y = act(bn(x) + bn2(x2)).
 *
 * The kernels are in cuda_norm_kernels.cuh, which the host emulator's tests
 * (tests/emu/) include too; this file launches them. */
#include "cuda_internal.h"
#include "cuda_norm_kernels.cuh"

static channel_view view_of(const backend *b, tensor_shape s)
{
    return channel_view_of(b->cfg.batch, s.c, s.h, s.w, b->pp.layout);
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
        int64_t n = (int64_t)chunks_for(&v, b->sm_count) * v.channels * 2;
        need = n > need ? n : need;
    }
    return need;
}

/* Runs both kernels of one channel sum over tensor shape s. */
template <typename T>
static int channel_sums(backend *b, tensor_shape s, summand<T> f, float *mean, float *rstd,
                        float *run_mean, float *run_var, float *out1, float *out2,
                        void *bias_grad)
{
    channel_view v = view_of(b, s);
    int chunks = chunks_for(&v, b->sm_count);
    if ((int64_t)chunks * v.channels * 2 > b->bn_partials_elems)
        return cuda_fail(b, "batch norm sums need more scratch than planned");
    int64_t per_chunk = (v.outer + chunks - 1) / chunks;
    const void *pointers[] = {f.x, f.dy, f.out};
    if (v.layout == LAYOUT_NHWC &&
        vec_fits_nhwc<T>(v.layout, v.channels, v.outer * v.channels, pointers, 3)) {
        dim3 grid((unsigned)((v.channels + TILE - 1) / TILE), (unsigned)chunks);
        dim3 block(sum_vec_shape<T>::cols, sum_vec_shape<T>::lanes);
        with_sum_mode(f.mode, [&](auto mode) {
            partial_sums_nhwc_vec<T, decltype(mode)::value><<<grid, block, 0, b->stream>>>(
                f, v.channels, v.outer, b->bn_partials);
        });
    } else if (v.layout == LAYOUT_NHWC) {
        dim3 grid((unsigned)((v.channels + TILE - 1) / TILE), (unsigned)chunks), block(TILE, ROWS);
        partial_sums_nhwc<T><<<grid, block, 0, b->stream>>>(f, v.channels, v.outer, per_chunk,
                                                            b->bn_partials);
    } else {
        const int W = vec16<T>::width;
        bool vectors = v.inner % W == 0 && vec_fits<T>(v.outer * v.channels * v.inner, pointers, 3);
        int per_step = vectors ? W : 1;
        if (per_chunk * v.inner >= ((int64_t)1 << 31))
            return cuda_fail(b, "a batch norm chunk of %lld elements a channel passes the 2^31 "
                                "that the sums index", (long long)(per_chunk * v.inner));
        fast_divisor steps_per_plane = fast_divisor_of((uint32_t)(v.inner / per_step));
        dim3 grid((unsigned)v.channels, (unsigned)chunks);
        if (vectors)
            partial_sums_nchw<T, vec16<T>::width><<<grid, NCHW_THREADS, 0, b->stream>>>(
                f, v.channels, v.outer, steps_per_plane, per_chunk, b->bn_partials);
        else
            partial_sums_nchw<T, 1><<<grid, NCHW_THREADS, 0, b->stream>>>(
                f, v.channels, v.outer, steps_per_plane, per_chunk, b->bn_partials);
    }
    LAUNCH_TRY(b);
    int64_t count = v.outer * v.inner;
    int64_t shift_stride = v.layout == LAYOUT_NHWC ? 1 : v.inner;
    finish_sums<T><<<finish_blocks(v.channels), FINISH_THREADS, 0, b->stream>>>(
        f.mode, b->bn_partials, chunks, v.channels, count, f.x, shift_stride, mean, rstd,
        run_mean, run_var, out1, out2, bias_grad, (int)b->pp.elem);
    LAUNCH_TRY(b);
    return 0;
}

/* ---- forward -------------------------------------------------------------------- */

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
    int channels = l->out_shape.c;
    int64_t plane = (int64_t)l->out_shape.h * l->out_shape.w;
    const void *pointers[] = {y, first.x, other, second.x};
    bool vectors = with_vector_map<T>(
        b->pp.layout, channels, plane, n, pointers, 4, [&](auto map, uint32_t count) {
            unsigned blocks = map.blocks(cuda_blocks(b, count, APPLY_THREADS), APPLY_THREADS);
            with_apply_kind(other, bn2 >= 0, [&](auto kind) {
                bn_apply_vec_kernel<T, decltype(map), decltype(kind)::value>
                    <<<blocks, APPLY_THREADS, 0, b->stream>>>(y, first, other, second, act, map,
                                                              count);
            });
        });
    if (!vectors)
        bn_apply_kernel<T><<<cuda_blocks(b, n, APPLY_THREADS), APPLY_THREADS, 0, b->stream>>>(
            y, first, other, second, bn2 >= 0, act,
            channel_finder_of(channels, plane, b->pp.layout, n), n);
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
                        NULL,      NULL,     NULL,                           NULL,
                        NULL};
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
                        (const T *)cl->grad, cl->mean, cl->rstd, cl->w, cl->bias, NULL};
        return channel_sums<T>(b, b->net->layers[i].out_shape, s, NULL, cl->rstd, NULL, NULL,
                               (float *)cl->dbias, (float *)cl->dw, NULL);
    });
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
        T *dx = (T *)cuda_input_grad(b, i, 0);
        const T *dy = (const T *)cl->grad, *x = (const T *)cuda_input(b, i, 0);
        int channels = l->out_shape.c;
        const void *pointers[] = {dx, dy, x};
        bool vectors = with_vector_map<T>(
            b->pp.layout, channels, plane, n, pointers, 3, [&](auto map, uint32_t count) {
                unsigned blocks = map.blocks(cuda_blocks(b, count, APPLY_THREADS), APPLY_THREADS);
                using Map = decltype(map);
                bn_backward_data_vec_kernel<T, Map><<<blocks, APPLY_THREADS, 0, b->stream>>>(
                    dx, dy, x, cl->w, cl->bias, cl->mean, cl->rstd, (const float *)cl->dbias,
                    (const float *)cl->dw, b->fusion[i].act, inv_count, accumulate, map, count);
            });
        if (!vectors)
            bn_backward_data_kernel<T><<<cuda_blocks(b, n, APPLY_THREADS), APPLY_THREADS, 0,
                                         b->stream>>>(
                dx, dy, x, cl->w, cl->bias, cl->mean, cl->rstd, (const float *)cl->dbias,
                (const float *)cl->dw, b->fusion[i].act, inv_count, accumulate,
                channel_finder_of(channels, plane, b->pp.layout, n), n);
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
                        NULL,      NULL,     NULL,                NULL,
                        NULL};
        return channel_sums<T>(b, b->net->layers[i].out_shape, s, NULL, NULL, NULL, NULL, NULL,
                               NULL, dbias);
    });
}

int cuda_act_backward_bias(backend *b, int i)
{
    int biased = b->fusion[i].sums_bias_of;
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    /* the activation the plan fused into the biased layer: this one */
    int act = b->fusion[biased].act;
    return with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        summand<T> s = {SUM_PLAIN, act, (const T *)cl->out, (const T *)cl->grad,
                        NULL,      NULL, NULL,               NULL,
                        (T *)cuda_input_grad(b, i, 0)};
        return channel_sums<T>(b, l->out_shape, s, NULL, NULL, NULL, NULL, NULL, NULL,
                               b->layers[biased].dbias);
    });
}
