/* Host transfers of the CUDA backend: every buffer in the host's layout
 * (NCHW activations, PyTorch's weight layouts) and fp32, whatever the device
 * holds (NHWC, fp16/bf16 copies, gradients times the loss scale). These are
 * for initialisation and tests, outside the timed steps: they synchronise. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* What a buffer kind is on the device. */
typedef struct {
    void *ptr;
    elem_type elem;
    bool scaled;        /* holds gradient x loss scale */
    bool permuted;      /* in the device layout: (n, c, h, w) below are its host axes */
    int64_t n;
    int c, h, w;
} device_buffer;

static device_buffer buffer_of(backend *b, int i, buffer_kind kind)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    bool nhwc = b->pp.layout == LAYOUT_NHWC, bn = l->type == LAYER_BN;
    elem_type e = b->pp.elem;
    device_buffer d = {NULL, ELEM_F32, false, false, 0, 0, 0, 0};
    switch (kind) {
    case BUF_OUTPUT:
    case BUF_OUTPUT_GRAD:
        d.ptr = kind == BUF_OUTPUT ? cl->out : cl->grad;
        d.elem = e;
        d.scaled = kind == BUF_OUTPUT_GRAD;
        d.permuted = nhwc;
        d.n = b->cfg.batch;
        d.c = l->out_shape.c, d.h = l->out_shape.h, d.w = l->out_shape.w;
        break;
    case BUF_WEIGHT:
    case BUF_WEIGHT_GRAD:
        d.ptr = kind == BUF_WEIGHT ? (void *)cl->w : cl->dw;
        d.elem = kind == BUF_WEIGHT || bn ? ELEM_F32 : e;
        d.scaled = kind == BUF_WEIGHT_GRAD;
        if (nhwc && l->type == LAYER_CONV) {
            /* (K, C/g, R, S) held as (K, R, S, C/g) */
            d.permuted = true;
            d.n = l->out_channels, d.c = l->in_shape.c / l->groups, d.h = d.w = l->kernel;
        } else if (nhwc && l->type == LAYER_FC) {
            /* each row over the input's (c, h, w), held as (h, w, c) */
            d.permuted = true;
            d.n = l->out_channels, d.c = l->in_shape.c, d.h = l->in_shape.h, d.w = l->in_shape.w;
        }
        break;
    case BUF_BIAS:
    case BUF_BIAS_GRAD:
        d.ptr = kind == BUF_BIAS ? (void *)cl->bias : cl->dbias;
        d.elem = kind == BUF_BIAS || bn ? ELEM_F32 : e;
        d.scaled = kind == BUF_BIAS_GRAD;
        break;
    case BUF_RUNNING_MEAN: d.ptr = cl->run_mean; break;
    case BUF_RUNNING_VAR: d.ptr = cl->run_var; break;
    case BUF_KIND_COUNT: break;
    }
    return d;
}

/* The scale the gradients held now were made with: the loss kernel's, which
 * the update may have changed since for the next step. */
static int current_scale(backend *b, float *scale)
{
    CUDA_TRY(b, cudaMemcpyAsync(scale, b->grad_scale, sizeof *scale, cudaMemcpyDeviceToHost,
                                b->stream));
    CUDA_TRY(b, cudaStreamSynchronize(b->stream));
    return 0;
}

/* Where an element is not 4 bytes on the device, the element offset of a
 * chunk in bytes. */
static size_t elem_size(elem_type e)
{
    return e == ELEM_F32 ? 4 : 2;
}

/* The device's buffer as fp32 in its own layout, into host memory; through
 * the staging buffer in chunks where it is held in fp16/bf16. */
static int download(backend *b, const device_buffer *d, int64_t n, float *host)
{
    if (d->elem == ELEM_F32) {
        CUDA_TRY(b, cudaMemcpyAsync(host, d->ptr, (size_t)n * 4, cudaMemcpyDeviceToHost,
                                    b->stream));
    }
    for (int64_t at = 0; d->elem != ELEM_F32 && at < n; at += b->staging_elems) {
        int64_t len = n - at < b->staging_elems ? n - at : b->staging_elems;
        const char *src = (const char *)d->ptr + (size_t)at * elem_size(d->elem);
        if (cuda_convert(b, b->staging, ELEM_F32, src, d->elem, len))
            return -1;
        CUDA_TRY(b, cudaMemcpyAsync(host + at, b->staging, (size_t)len * 4,
                                    cudaMemcpyDeviceToHost, b->stream));
    }
    CUDA_TRY(b, cudaStreamSynchronize(b->stream));
    return 0;
}

static int upload(backend *b, const device_buffer *d, int64_t n, const float *host)
{
    if (d->elem == ELEM_F32) {
        CUDA_TRY(b, cudaMemcpyAsync(d->ptr, host, (size_t)n * 4, cudaMemcpyHostToDevice,
                                    b->stream));
    }
    for (int64_t at = 0; d->elem != ELEM_F32 && at < n; at += b->staging_elems) {
        int64_t len = n - at < b->staging_elems ? n - at : b->staging_elems;
        char *dst = (char *)d->ptr + (size_t)at * elem_size(d->elem);
        CUDA_TRY(b, cudaMemcpyAsync(b->staging, host + at, (size_t)len * 4,
                                    cudaMemcpyHostToDevice, b->stream));
        if (cuda_convert(b, dst, d->elem, b->staging, ELEM_F32, len))
            return -1;
    }
    CUDA_TRY(b, cudaStreamSynchronize(b->stream));
    return 0;
}

/* The device buffer behind (layer, kind), its element count and the loss
 * scale its values carry (1 where none); -1 where there is no such buffer. */
static int open_buffer(backend *b, int i, buffer_kind kind, device_buffer *d, int64_t *n,
                       float *scale)
{
    b->current_layer = i;
    if (i < 0 || i >= b->net->n_layers)
        return cuda_fail(b, "no layer %d", i);
    *n = backend_buffer_elems(b->net, i, b->cfg.batch, kind);
    *d = *n ? buffer_of(b, i, kind) : device_buffer{};
    if (!d->ptr || *n == 0)
        return cuda_fail(b, "layer %s has no buffer of kind %d", b->net->layers[i].name, kind);
    *scale = 1.0f;
    return d->scaled ? current_scale(b, scale) : 0;
}

extern "C" int cuda_read(backend *b, int i, buffer_kind kind, float *dst)
{
    device_buffer d;
    int64_t n;
    float scale;
    if (open_buffer(b, i, kind, &d, &n, &scale))
        return -1;
    float *held = d.permuted ? (float *)malloc((size_t)n * sizeof *held) : dst;
    if (!held)
        return cuda_fail(b, "out of host memory");
    int rc = download(b, &d, n, held);
    if (rc == 0 && d.permuted)
        permute_nchw_nhwc(held, dst, d.n, d.c, d.h, d.w, false);
    if (held != dst)
        free(held);
    if (rc == 0 && scale != 1.0f)
        for (int64_t j = 0; j < n; j++)
            dst[j] /= scale;
    return rc;
}

/* A gradient where the update reads it: in the device layout (NHWC weights
 * for tensor-core precisions), the plan's element type (batch norm: fp32),
 * times the loss scale; DDP sums it over the ranks as it is. */
extern "C" int cuda_grad_storage(backend *b, int i, buffer_kind kind, grad_memory *out)
{
    if (i < 0 || i >= b->net->n_layers)
        return cuda_fail(b, "no layer %d", i);
    if (kind != BUF_WEIGHT_GRAD && kind != BUF_BIAS_GRAD)
        return cuda_fail(b, "layer %s: buffer kind %d is not a gradient", b->net->layers[i].name,
                         kind);
    device_buffer d = buffer_of(b, i, kind);
    int64_t n = backend_buffer_elems(b->net, i, b->cfg.batch, kind);
    if (!d.ptr || n == 0)
        return cuda_fail(b, "layer %s has no %s gradient", b->net->layers[i].name,
                         kind == BUF_BIAS_GRAD ? "bias" : "weight");
    grad_elem e = d.elem == ELEM_F16 ? GRAD_F16 : d.elem == ELEM_BF16 ? GRAD_BF16 : GRAD_F32;
    *out = grad_memory{d.ptr, n, e, true, 0}; /* one layout on every rank: the precision's */
    return 0;
}

extern "C" int cuda_write(backend *b, int i, buffer_kind kind, const float *src)
{
    device_buffer d;
    int64_t n;
    float scale;
    if (open_buffer(b, i, kind, &d, &n, &scale))
        return -1;
    float *held = (float *)malloc((size_t)n * sizeof *held);
    if (!held)
        return cuda_fail(b, "out of host memory");
    if (d.permuted)
        permute_nchw_nhwc(src, held, d.n, d.c, d.h, d.w, true);
    else
        memcpy(held, src, (size_t)n * sizeof *held);
    for (int64_t j = 0; scale != 1.0f && j < n; j++)
        held[j] *= scale;
    int rc = upload(b, &d, n, held);
    free(held);
    if (rc)
        return -1;
    /* the copy the kernels compute with follows its master */
    cuda_layer *cl = &b->layers[i];
    if (kind == BUF_WEIGHT && cl->w_copy != cl->w)
        rc = cuda_convert(b, cl->w_copy, b->pp.elem, cl->w, ELEM_F32, n);
    if (kind == BUF_BIAS && cl->bias_copy != cl->bias)
        rc = cuda_convert(b, cl->bias_copy, b->pp.elem, cl->bias, ELEM_F32, n);
    if (rc == 0 && cudaStreamSynchronize(b->stream) != cudaSuccess)
        return cuda_fail(b, "writing a buffer: %s", cudaGetErrorString(cudaGetLastError()));
    return rc;
}

extern "C" int cuda_set_batch(backend *b, const float *images, const int32_t *labels)
{
    b->current_layer = CUDA_NO_LAYER;
    const network *net = b->net;
    int n = b->cfg.batch;
    for (int k = 0; k < n; k++)
        if (labels[k] < 0 || labels[k] >= net->classes)
            return cuda_fail(b, "label %d of image %d is outside 0..%d", labels[k], k,
                             net->classes - 1);
    int64_t elems = (int64_t)n * shape_elems(net->input);
    device_buffer d = {b->input, b->pp.elem, false, b->pp.layout == LAYOUT_NHWC,
                       n, net->input.c, net->input.h, net->input.w};
    float *held = (float *)malloc((size_t)elems * sizeof *held);
    if (!held)
        return cuda_fail(b, "out of host memory");
    if (d.permuted)
        permute_nchw_nhwc(images, held, d.n, d.c, d.h, d.w, true);
    else
        memcpy(held, images, (size_t)elems * sizeof *held);
    int rc = upload(b, &d, elems, held);
    free(held);
    if (rc)
        return -1;
    CUDA_TRY(b, cudaMemcpyAsync(b->labels, labels, (size_t)n * sizeof *labels,
                                cudaMemcpyHostToDevice, b->stream));
    CUDA_TRY(b, cudaStreamSynchronize(b->stream));
    return 0;
}
