/* Max pool (the window index of the first maximum kept, one byte) and
 * adaptive average pool with torch's window bounds, as the CPU backend does.
 * Backward is a gather, one thread per input element summing the outputs
 * whose window holds it: no atomics, no zeroing, the same order every run.
 * Max pool runs on 16-byte vectors of channels in NHWC where they fit
 * (VGG-16's five pools move more bytes than any other pass of its step
 * but the convolutions'), and so does the global average pool both ways. */
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

/* ... and a global average pool (the vector kernels of cuda_pool_kernels.cuh
 * say why): f(per_row, vectors of y) where it may run on them. */
template <typename T, typename F>
static bool with_global_pool_vectors(const layer *l, const pool_dims &d, int64_t n_out,
                                     const void *const *pointers, int count, F f)
{
    if (l->type != LAYER_AVGPOOL || d.oh != 1 || d.ow != 1 || !d.narrow ||
        !vec_fits_nhwc<T>(d.layout, d.c, n_out, pointers, count))
        return false;
    f(fast_divisor_of((uint32_t)(d.c / vec16<T>::width)), (uint32_t)(n_out / vec16<T>::width));
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
        const void *pooled[] = {cl->out, x};
        if (with_global_pool_vectors<T>(l, d, n_out, pooled, 2,
                                        [&](fast_divisor per_row, uint32_t count) {
                                            global_avgpool_vec_kernel<T>
                                                <<<cuda_blocks(b, count, POOL_THREADS),
                                                   POOL_THREADS, 0, b->stream>>>(
                                                    (T *)cl->out, x, d.h * d.w, per_row, count);
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
    int64_t n_in = (int64_t)b->cfg.batch * shape_elems(l->in_shape), n_out = cuda_elems(b, i);
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
        const void *pooled[] = {dx, cl->grad};
        if (with_global_pool_vectors<T>(
                l, d, n_out, pooled, 2, [&](fast_divisor per_row, uint32_t) {
                    uint32_t count = (uint32_t)(n_in / vec16<T>::width);
                    fast_divisor per_image = fast_divisor_of(per_row.divisor * d.h * d.w);
                    global_avgpool_backward_vec_kernel<T>
                        <<<cuda_blocks(b, count, POOL_THREADS), POOL_THREADS, 0, b->stream>>>(
                            dx, (const T *)cl->grad, d.h * d.w, per_row, per_image, accumulate,
                            count);
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
