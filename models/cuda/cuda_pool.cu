/* Max pool (the window index of the first maximum kept, one byte) and
 * adaptive average pool with torch's window bounds, as the CPU backend does.
 * Backward is a gather, one thread per input element summing the outputs
 * whose window holds it: no atomics, no zeroing, the same order every run.
 * Max pool runs on 16-byte vectors of channels in NHWC where they fit
 * (VGG-16's five pools move more bytes than any other pass of its step
 * but the convolutions'). */
#include "cuda_pool_kernels.cuh"
#include "cuda_internal.h"

static pool_dims dims_of(const backend *b, const layer *l)
{
    return pool_dims_make(b->cfg.batch, l->in_shape.c, l->in_shape.h, l->in_shape.w,
                          l->out_shape.h, l->out_shape.w, l->kernel, l->stride, l->pad,
                          b->pp.layout);
}

/* Calls f(vectors_per_row, vectors) and returns true where n elements of a
 * max pool may run on the vector kernels (NHWC, whole vectors of channels,
 * aligned, narrow); false where the per-element ones must. */
template <typename T, typename F>
static bool with_pool_vectors(const pool_dims &d, int64_t n, const void *const *pointers,
                              int count, F f)
{
    if (!d.narrow || !vec_fits_nhwc<T>(d.layout, d.c, n, pointers, count))
        return false;
    f(fast_divisor_of((uint32_t)(d.c / vec16<T>::width)), (uint32_t)(n / vec16<T>::width));
    return true;
}

int cuda_pool_forward(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    pool_dims d = dims_of(b, l);
    int64_t n_out = cuda_elems(b, i);
    unsigned blocks = cuda_blocks(b, n_out, POOL_THREADS);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        const T *x = (const T *)cuda_input(b, i, 0);
        const void *pointers[] = {cl->out, cl->mask, x};
        if (l->type == LAYER_MAXPOOL &&
            with_pool_vectors<T>(d, n_out, pointers, 3, [&](fast_divisor per_row, uint32_t count) {
                maxpool_vec_kernel<T><<<cuda_blocks(b, count, POOL_THREADS), POOL_THREADS, 0,
                                        b->stream>>>((T *)cl->out, cl->mask, x, d, per_row,
                                                     count);
            }))
            return 0;
        if (l->type == LAYER_MAXPOOL)
            maxpool_kernel<T><<<blocks, POOL_THREADS, 0, b->stream>>>((T *)cl->out, cl->mask, x,
                                                                      d, n_out);
        else
            avgpool_kernel<T><<<blocks, POOL_THREADS, 0, b->stream>>>((T *)cl->out, x, d,
                                                                      n_out);
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
    unsigned blocks = cuda_blocks(b, n_in, POOL_THREADS);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        T *dx = (T *)cuda_input_grad(b, i, 0);
        const void *pointers[] = {dx, cl->grad, cl->mask};
        if (l->type == LAYER_MAXPOOL &&
            with_pool_vectors<T>(d, n_in, pointers, 3, [&](fast_divisor per_row, uint32_t count) {
                maxpool_backward_vec_kernel<T><<<cuda_blocks(b, count, POOL_THREADS),
                                                 POOL_THREADS, 0, b->stream>>>(
                    dx, (const T *)cl->grad, cl->mask, d, accumulate, per_row, count);
            }))
            return 0;
        if (l->type == LAYER_MAXPOOL)
            maxpool_backward_kernel<T><<<blocks, POOL_THREADS, 0, b->stream>>>(
                dx, (const T *)cl->grad, cl->mask, d, accumulate, n_in);
        else
            avgpool_backward_kernel<T><<<blocks, POOL_THREADS, 0, b->stream>>>(
                dx, (const T *)cl->grad, d, accumulate, n_in);
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}
