/* The backend's elementwise kernels: type conversion, fill, ReLU/ReLU6,
 * the residual add (with its activation), dropout, and a conv/fc bias with
 * its activation. One thread per element in a grid-stride loop; values are
 * computed in fp32 whatever the storage type. */
#include "cuda_elementwise_kernels.cuh"
#include "cuda_internal.h"

int cuda_convert(backend *b, void *dst, elem_type dst_elem, const void *src, elem_type src_elem,
                 int64_t n)
{
    unsigned blocks = cuda_blocks(b, n, EW_THREADS);
    int rc = with_elem(dst_elem, [&](auto d) {
        using D = decltype(d);
        return with_elem(src_elem, [&](auto s) {
            using S = decltype(s);
            convert_kernel<D, S><<<blocks, EW_THREADS, 0, b->stream>>>((D *)dst, (const S *)src, n);
            return 0;
        });
    });
    if (rc)
        return cuda_fail(b, "unknown element type");
    LAUNCH_TRY(b);
    return 0;
}

int cuda_fill(backend *b, void *dst, elem_type elem, float value, int64_t n)
{
    unsigned blocks = cuda_blocks(b, n, EW_THREADS);
    with_elem(elem, [&](auto tag) {
        using T = decltype(tag);
        fill_kernel<T><<<blocks, EW_THREADS, 0, b->stream>>>((T *)dst, value, n);
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}

/* ---- activations, add, dropout: forward ---------------------------------------- */

int cuda_step_counter(backend *b)
{
    step_counter_kernel<<<1, 1, 0, b->stream>>>(b->forward_count);
    LAUNCH_TRY(b);
    return 0;
}

int cuda_pointwise_forward(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    int64_t n = cuda_elems(b, i);
    unsigned blocks = cuda_blocks(b, n, EW_THREADS);
    const void *x = cuda_input(b, i, 0);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        switch (l->type) {
        case LAYER_RELU:
        case LAYER_RELU6:
            activate_kernel<T><<<blocks, EW_THREADS, 0, b->stream>>>(
                (T *)cl->out, (const T *)x, l->type == LAYER_RELU ? ACT_RELU : ACT_RELU6, n);
            break;
        case LAYER_ADD:
            add_kernel<T><<<blocks, EW_THREADS, 0, b->stream>>>(
                (T *)cl->out, (const T *)x, (const T *)cuda_input(b, i, 1), b->fusion[i].act, n);
            break;
        case LAYER_DROPOUT:
            dropout_kernel<T><<<blocks, EW_THREADS, 0, b->stream>>>(
                (T *)cl->out, cl->mask, (const T *)x, l->drop_p, b->cfg.seed, b->forward_count,
                (uint64_t)b->net->n_layers, (uint64_t)i, l->out_shape.c,
                (int64_t)l->out_shape.h * l->out_shape.w, b->pp.layout, n);
            break;
        default: break;
        }
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}

/* ---- backward ------------------------------------------------------------------ */

int cuda_pointwise_backward(backend *b, int i, const bool accumulate[LAYER_MAX_INPUTS])
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    int64_t n = cuda_elems(b, i);
    unsigned blocks = cuda_blocks(b, n, EW_THREADS);
    void *dx0 = cuda_input_grad(b, i, 0);
    int biased = b->fusion[i].sums_bias_of;
    if (biased >= 0 && !accumulate[0])
        return cuda_act_backward_bias(b, i);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        switch (l->type) {
        case LAYER_RELU:
        case LAYER_RELU6: {
            int act = l->type == LAYER_RELU ? ACT_RELU : ACT_RELU6;
            const void *pointers[] = {dx0, cl->grad, cl->out};
            if (vec_fits<T>(n, pointers, 3)) {
                uint32_t vectors = (uint32_t)(n / vec16<T>::width);
                activate_backward_vec_kernel<T><<<cuda_blocks(b, vectors, EW_THREADS), EW_THREADS,
                                                  0, b->stream>>>(
                    (T *)dx0, (const T *)cl->grad, (const T *)cl->out, act, accumulate[0], vectors);
            } else {
                activate_backward_kernel<T><<<blocks, EW_THREADS, 0, b->stream>>>(
                    (T *)dx0, (const T *)cl->grad, (const T *)cl->out, act, accumulate[0], n);
            }
            break;
        }
        case LAYER_ADD: {
            void *dx1 = cuda_input_grad(b, i, 1);
            /* an input gradient that is dy's own buffer (the plan passed it on
             * in place) already holds g unless a fused activation masks it:
             * then nothing is left to do, and where both are dy one store
             * masks it (MobileNetV2's adds, ResNet's identity blocks) */
            bool own0 = !dx0 || dx0 == cl->grad, own1 = !dx1 || dx1 == cl->grad;
            if (b->fusion[i].act == ACT_NONE && own0 && own1)
                break;
            if (dx0 == cl->grad && dx1 == cl->grad)
                dx1 = NULL;
            const void *pointers[] = {cl->grad, cl->out, dx0, dx1};
            if (vec_fits<T>(n, pointers, 4)) {
                uint32_t vectors = (uint32_t)(n / vec16<T>::width);
                add_backward_vec_kernel<T><<<cuda_blocks(b, vectors, EW_THREADS), EW_THREADS, 0,
                                             b->stream>>>(
                    (T *)cl->grad, (const T *)cl->out, (T *)dx0, (T *)dx1, b->fusion[i].act,
                    accumulate[0], accumulate[1], vectors);
            } else {
                add_backward_kernel<T><<<blocks, EW_THREADS, 0, b->stream>>>(
                    (T *)cl->grad, (const T *)cl->out, (T *)dx0, (T *)dx1, b->fusion[i].act,
                    accumulate[0], accumulate[1], n);
            }
            break;
        }
        case LAYER_DROPOUT:
            dropout_backward_kernel<T><<<blocks, EW_THREADS, 0, b->stream>>>(
                (T *)dx0, (const T *)cl->grad, cl->mask, l->drop_p, accumulate[0], n);
            break;
        default: break;
        }
        return 0;
    });
    LAUNCH_TRY(b);
    /* the plan never adds to a gradient it sums (the activation is the
     * layer's only consumer); were it to, the sums follow the whole of it */
    if (biased >= 0)
        return cuda_bias_grad(b, biased, b->layers[biased].dbias, b->pp.elem);
    return 0;
}

/* ---- conv and fc bias ------------------------------------------------------------ */

int cuda_bias_act(backend *b, int i, act_kind act)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    int64_t n = cuda_elems(b, i);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        int channels = l->out_shape.c;
        int64_t plane = (int64_t)l->out_shape.h * l->out_shape.w;
        const void *pointers[] = {cl->out, cl->bias_copy};
        bool vectors = with_vector_map<T>(
            b->pp.layout, channels, plane, n, pointers, 2, [&](auto map, uint32_t count) {
                using Map = decltype(map);
                bias_act_vec_kernel<T, Map><<<cuda_blocks(b, count, EW_THREADS), EW_THREADS, 0,
                                              b->stream>>>((T *)cl->out, (const T *)cl->bias_copy,
                                                           act, map, count);
            });
        if (!vectors)
            bias_act_kernel<T><<<cuda_blocks(b, n, EW_THREADS), EW_THREADS, 0, b->stream>>>(
                (T *)cl->out, (const T *)cl->bias_copy, act,
                channel_finder_of(channels, plane, b->pp.layout, n), n);
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}
