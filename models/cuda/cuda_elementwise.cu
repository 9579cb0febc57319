/* The backend's elementwise kernels: type conversion, fill, ReLU/ReLU6,
 * the residual add (with its activation), dropout, and a conv/fc bias with
 * its activation. One thread per element in a grid-stride loop; values are
 * computed in fp32 whatever the storage type. */
#include "cuda_device.cuh"
#include "cuda_internal.h"

extern "C" {
#include "../rng.h"
}

enum { THREADS = 256 };

template <typename D, typename S>
__global__ void convert_kernel(D *dst, const S *src, int64_t n)
{
    GRID_STRIDE(j, n) dst[j] = from_float<D>(to_float(src[j]));
}

int cuda_convert(backend *b, void *dst, elem_type dst_elem, const void *src, elem_type src_elem,
                 int64_t n)
{
    unsigned blocks = cuda_blocks(b, n, THREADS);
    int rc = with_elem(dst_elem, [&](auto d) {
        using D = decltype(d);
        return with_elem(src_elem, [&](auto s) {
            using S = decltype(s);
            convert_kernel<D, S><<<blocks, THREADS, 0, b->stream>>>((D *)dst, (const S *)src, n);
            return 0;
        });
    });
    if (rc)
        return cuda_fail(b, "unknown element type");
    LAUNCH_TRY(b);
    return 0;
}

template <typename T> __global__ void fill_kernel(T *dst, float value, int64_t n)
{
    GRID_STRIDE(j, n) dst[j] = from_float<T>(value);
}

int cuda_fill(backend *b, void *dst, elem_type elem, float value, int64_t n)
{
    unsigned blocks = cuda_blocks(b, n, THREADS);
    with_elem(elem, [&](auto tag) {
        using T = decltype(tag);
        fill_kernel<T><<<blocks, THREADS, 0, b->stream>>>((T *)dst, value, n);
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}

/* ---- activations, add, dropout: forward ---------------------------------------- */

template <typename T> __global__ void activate_kernel(T *y, const T *x, int act, int64_t n)
{
    GRID_STRIDE(j, n) y[j] = from_float<T>(activate(to_float(x[j]), act));
}

template <typename T>
__global__ void add_kernel(T *y, const T *x0, const T *x1, int act, int64_t n)
{
    GRID_STRIDE(j, n) y[j] = from_float<T>(activate(to_float(x0[j]) + to_float(x1[j]), act));
}

/* The mask of the CPU backend, bit for bit: keep where uniform(seed, stream,
 * j) >= p, j the element's NCHW index, stream = step x layers + layer. */
template <typename T>
__global__ void dropout_kernel(T *y, uint8_t *keep, const T *x, float p, uint64_t seed,
                               const uint64_t *forward_count, uint64_t n_layers, uint64_t layer,
                               int channels, int64_t plane, int layout, int64_t n)
{
    uint64_t stream = *forward_count * n_layers + layer;
    float scale = 1.0f / (1.0f - p);
    GRID_STRIDE(j, n) {
        int64_t nchw = j;
        if (layout == LAYOUT_NHWC && plane > 1) {
            int64_t image = j / (plane * channels), rest = j % (plane * channels);
            nchw = (image * channels + rest % channels) * plane + rest / channels;
        }
        bool k = rng_uniform(seed, stream, (uint64_t)nchw) >= (double)p;
        keep[j] = k;
        y[j] = from_float<T>(k ? to_float(x[j]) * scale : 0.0f);
    }
}

__global__ void step_counter_kernel(uint64_t *count)
{
    *count += 1;
}

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
    unsigned blocks = cuda_blocks(b, n, THREADS);
    const void *x = cuda_input(b, i, 0);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        switch (l->type) {
        case LAYER_RELU:
        case LAYER_RELU6:
            activate_kernel<T><<<blocks, THREADS, 0, b->stream>>>(
                (T *)cl->out, (const T *)x, l->type == LAYER_RELU ? ACT_RELU : ACT_RELU6, n);
            break;
        case LAYER_ADD:
            add_kernel<T><<<blocks, THREADS, 0, b->stream>>>(
                (T *)cl->out, (const T *)x, (const T *)cuda_input(b, i, 1), b->fusion[i].act, n);
            break;
        case LAYER_DROPOUT:
            dropout_kernel<T><<<blocks, THREADS, 0, b->stream>>>(
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

/* dx = dy masked by the activation's output (dx may be dy itself). */
template <typename T>
__global__ void activate_backward_kernel(T *dx, const T *dy, const T *y, int act, bool acc,
                                         int64_t n)
{
    GRID_STRIDE(j, n) {
        float g = passes(to_float(y[j]), act) ? to_float(dy[j]) : 0.0f;
        dx[j] = from_float<T>(acc ? to_float(dx[j]) + g : g);
    }
}

/* The add's gradient g (masked by a fused activation) to both inputs; an
 * input gradient that is dy's own buffer (in place) receives g in place. */
template <typename T>
__global__ void add_backward_kernel(T *dy, const T *y, T *dx0, T *dx1, int act, bool acc0,
                                    bool acc1, int64_t n)
{
    GRID_STRIDE(j, n) {
        float g = to_float(dy[j]);
        if (act != ACT_NONE && !passes(to_float(y[j]), act))
            g = 0.0f;
        if (dx0)
            dx0[j] = from_float<T>(acc0 && dx0 != dy ? to_float(dx0[j]) + g : g);
        if (dx1)
            dx1[j] = from_float<T>(acc1 && dx1 != dy ? to_float(dx1[j]) + g : g);
    }
}

template <typename T>
__global__ void dropout_backward_kernel(T *dx, const T *dy, const uint8_t *keep, float p,
                                        bool acc, int64_t n)
{
    float scale = 1.0f / (1.0f - p);
    GRID_STRIDE(j, n) {
        float g = keep[j] ? to_float(dy[j]) * scale : 0.0f;
        dx[j] = from_float<T>(acc ? to_float(dx[j]) + g : g);
    }
}

int cuda_pointwise_backward(backend *b, int i, const bool accumulate[LAYER_MAX_INPUTS])
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    int64_t n = cuda_elems(b, i);
    unsigned blocks = cuda_blocks(b, n, THREADS);
    void *dx0 = cuda_input_grad(b, i, 0);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        switch (l->type) {
        case LAYER_RELU:
        case LAYER_RELU6:
            activate_backward_kernel<T><<<blocks, THREADS, 0, b->stream>>>(
                (T *)dx0, (const T *)cl->grad, (const T *)cl->out,
                l->type == LAYER_RELU ? ACT_RELU : ACT_RELU6, accumulate[0], n);
            break;
        case LAYER_ADD:
            add_backward_kernel<T><<<blocks, THREADS, 0, b->stream>>>(
                (T *)cl->grad, (const T *)cl->out, (T *)dx0, (T *)cuda_input_grad(b, i, 1),
                b->fusion[i].act, accumulate[0], accumulate[1], n);
            break;
        case LAYER_DROPOUT:
            dropout_backward_kernel<T><<<blocks, THREADS, 0, b->stream>>>(
                (T *)dx0, (const T *)cl->grad, cl->mask, l->drop_p, accumulate[0], n);
            break;
        default: break;
        }
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}

/* ---- conv and fc bias ------------------------------------------------------------ */

template <typename T>
__global__ void bias_act_kernel(T *y, const T *bias, int act, int channels, int64_t plane,
                                int layout, int64_t n)
{
    GRID_STRIDE(j, n) {
        int c = channel_of(j, channels, plane, layout);
        y[j] = from_float<T>(activate(to_float(y[j]) + to_float(bias[c]), act));
    }
}

int cuda_bias_act(backend *b, int i, act_kind act)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    int64_t n = cuda_elems(b, i);
    unsigned blocks = cuda_blocks(b, n, THREADS);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        bias_act_kernel<T><<<blocks, THREADS, 0, b->stream>>>(
            (T *)cl->out, (const T *)cl->bias_copy, act, l->out_shape.c,
            (int64_t)l->out_shape.h * l->out_shape.w, b->pp.layout, n);
        return 0;
    });
    LAUNCH_TRY(b);
    return 0;
}
