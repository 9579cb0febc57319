/* Depthwise convolution on the backend's own kernels: one filter of side 3
 * or 5 per channel, the layer's tensors exactly as cuDNN's (the precision
 * plan's element type and layout), sums in fp32. Depthwise layers move few
 * FLOPs per byte, so each kernel is a plain pass over its output in memory
 * order (coalesced in either layout), the neighbouring reads served by the
 * caches; the filter gradient sums each channel's taps over slices of the
 * positions into fp32 partial sums that a second kernel adds in a fixed
 * order, so every step gives the same bits. cuda_conv.cu chooses between
 * these and cuDNN per pass (--depthwise). */
#include <string.h>

#include <type_traits>

#include "cuda_depthwise_kernels.cuh"
#include "cuda_internal.h"

#ifndef OWN_DEPTHWISE_ID
#error "OWN_DEPTHWISE_ID, the checksum of the own depthwise kernels' source, comes from the Makefile"
#endif

uint32_t cuda_depthwise_source_id(void) { return OWN_DEPTHWISE_ID; }

static dw_geom geom_of(const backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    return dw_geom_make(b->cfg.batch, l->in_shape.c, l->in_shape.h, l->in_shape.w,
                        l->out_shape.h, l->out_shape.w, l->stride, l->pad,
                        b->pp.layout == LAYOUT_NHWC);
}

static unsigned dw_blocks(const backend *b, uint32_t n)
{
    return cuda_blocks(b, (int64_t)n, DW_THREADS);
}

/* The vector kernels' grid: whole rows of c channels a stride, so that a
 * thread keeps its channels' weights (dw_weight_cache). */
template <typename T> static unsigned dw_vec_blocks(const backend *b, uint32_t vectors, int c)
{
    return vec_row_blocks(dw_blocks(b, vectors), (uint32_t)(c / vec16<T>::width), DW_THREADS);
}

/* Calls f with the element type's tag and the filter side K (3 or 5,
 * depthwise_own_fits) as a compile-time constant: every kernel is a template
 * over both. */
template <typename F> static void with_elem_and_side(const backend *b, int side, F f)
{
    with_elem(b->pp.elem, [&](auto tag) {
        if (side == 3)
            f(tag, std::integral_constant<int, 3>{});
        else
            f(tag, std::integral_constant<int, 5>{});
        return 0;
    });
}

int cuda_dw_forward(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    dw_geom g = geom_of(b, i);
    uint32_t total = (uint32_t)((int64_t)g.n * g.c * g.oh * g.ow);
    const void *x = cuda_input(b, i, 0);
    with_elem_and_side(b, l->kernel, [&](auto tag, auto side) {
        using T = decltype(tag);
        constexpr int K = decltype(side)::value;
        const void *pointers[] = {x, cl->out}; /* the weights are read as scalars */
        if (vec_fits_nhwc<T>(b->pp.layout, g.c, total, pointers, 2)) {
            uint32_t vectors = total / vec16<T>::width;
            fast_divisor per_row = fast_divisor_of((uint32_t)(g.c / vec16<T>::width));
            dw_forward_vec_kernel<T, K><<<dw_vec_blocks<T>(b, vectors, g.c), DW_THREADS, 0,
                                          b->stream>>>(
                (const T *)x, (const T *)cl->w_copy, (T *)cl->out, g, per_row, vectors);
        } else {
            dw_forward_kernel<T, K><<<dw_blocks(b, total), DW_THREADS, 0, b->stream>>>(
                (const T *)x, (const T *)cl->w_copy, (T *)cl->out, g, total);
        }
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
    with_elem_and_side(b, l->kernel, [&](auto tag, auto side) {
        using T = decltype(tag);
        constexpr int K = decltype(side)::value;
        const T *dy = (const T *)cl->grad, *w = (const T *)cl->w_copy;
        const void *pointers[] = {dy, dx};
        if (vec_fits_nhwc<T>(b->pp.layout, g.c, total, pointers, 2)) {
            uint32_t vectors = total / vec16<T>::width;
            fast_divisor per_row = fast_divisor_of((uint32_t)(g.c / vec16<T>::width));
            dw_backward_data_vec_kernel<T, K><<<dw_vec_blocks<T>(b, vectors, g.c), DW_THREADS,
                                                0, b->stream>>>(dy, w, (T *)dx, g, per_row, vectors,
                                                             accumulate);
        } else {
            dw_backward_data_kernel<T, K><<<dw_blocks(b, total), DW_THREADS, 0, b->stream>>>(
                dy, w, (T *)dx, g, total, accumulate);
        }
    });
    LAUNCH_TRY(b);
    return 0;
}

size_t cuda_dw_filter_workspace(const backend *b, int i)
{
    conv_shape s = conv_shape_of(&b->net->layers[i], &b->fusion[i], b->cfg.batch, b->pp.prec);
    depthwise_filter_plan p =
        depthwise_filter_plan_of(&s, b->pp.layout == LAYOUT_NHWC, b->sm_count);
    return (size_t)p.partial_bytes;
}

int cuda_dw_backward_weights(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    dw_geom g = geom_of(b, i);
    conv_shape s = conv_shape_of(l, &b->fusion[i], b->cfg.batch, b->pp.prec);
    depthwise_filter_plan plan = depthwise_filter_plan_of(&s, g.nhwc, b->sm_count);
    cuda_workspace ws = cuda_workspace_of(b, i, true);
    if ((size_t)plan.partial_bytes > ws.bytes)
        return cuda_fail(b, "the depthwise filter gradient needs %lld bytes of workspace, %zu "
                            "planned",
                         (long long)plan.partial_bytes, ws.bytes);
    uint32_t positions = (uint32_t)((int64_t)g.n * g.oh * g.ow);
    uint32_t per_slice = (positions + plan.slices - 1) / plan.slices;
    uint32_t taps = (uint32_t)g.c * l->kernel * l->kernel;
    float *partial = (float *)ws.ptr;
    const void *x = cuda_input(b, i, 0);
    dim3 grid((unsigned)plan.channel_groups, (unsigned)plan.slices);
    with_elem_and_side(b, l->kernel, [&](auto tag, auto side) {
        using T = decltype(tag);
        constexpr int K = decltype(side)::value;
        const T *xt = (const T *)x, *dyt = (const T *)cl->grad;
        const dim3 vec_block(dw_filter_vec<K>::cols, dw_filter_vec<K>::rows);
        if (dw_filter_vec_fits<T, K>(g.nhwc, g.c, xt, dyt))
            dw_filter_nhwc_vec_kernel<T, K><<<grid, vec_block, 0, b->stream>>>(
                xt, dyt, partial, g, positions, per_slice);
        else if (g.nhwc)
            dw_filter_nhwc_kernel<T, K>
                <<<grid, dim3(DW_CHANNELS_PER_BLOCK, DW_FILTER_ROWS), 0, b->stream>>>(
                    xt, dyt, partial, g, positions, per_slice);
        else
            dw_filter_nchw_kernel<T, K><<<grid, DW_THREADS, 0, b->stream>>>(
                xt, dyt, partial, g, positions, per_slice);
    });
    LAUNCH_TRY(b);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        dw_filter_sum_kernel<T><<<dw_sum_blocks(taps), dim3(32, DW_SUM_ROWS), 0, b->stream>>>(
            partial, (T *)cl->dw, plan.slices, taps);
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}

/* ---- plan time: inputs to try both implementations on, and their agreement ---- */

int cuda_trial_fill_random(backend *b, void *p, int64_t n, uint32_t seed)
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

int cuda_trial_compare(backend *b, const void *got, const void *want, int64_t n,
                       unsigned *maxima, double *relative)
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
