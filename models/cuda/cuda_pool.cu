/* Max pool (the window index of the first maximum kept, one byte) and
 * adaptive average pool with torch's window bounds, as the CPU backend does.
 * Backward is a gather, one thread per input element summing the outputs
 * whose window holds it: no atomics, no zeroing, the same order every run. */
#include "cuda_pool_kernels.cuh"
#include "cuda_internal.h"

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
    unsigned blocks = cuda_blocks(b, n_out, POOL_THREADS);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        const T *x = (const T *)cuda_input(b, i, 0);
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
