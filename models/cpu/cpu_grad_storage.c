/* backend_ops.grad_storage of the CPU backend: a layer's gradient storage
 * (the host fp32 arrays the update reads, a convolution's weight gradient
 * in the layout oneDNN chose: cpu_dnnl.c), so that data-parallel training
 * (models/ddp) reduces it in place instead of through read/write copies. */
#include "cpu_internal.h"

int cpu_grad_storage(backend *b, int layer, buffer_kind kind, grad_memory *out)
{
    if (layer < 0 || layer >= b->net->n_layers)
        return cpu_fail(b, "no layer %d", layer);
    cpu_layer *cl = &b->layers[layer];
    float *p = kind == BUF_WEIGHT_GRAD ? cl->dw : kind == BUF_BIAS_GRAD ? cl->dbias : NULL;
    int64_t n = backend_buffer_elems(b->net, layer, b->cfg.batch, kind);
    if (!p || n == 0)
        return cpu_fail(b, "layer %s has no %s gradient", b->net->layers[layer].name,
                        kind == BUF_BIAS_GRAD ? "bias" : "weight");
    uint64_t layout = kind == BUF_WEIGHT_GRAD ? cl->dnnl.weights_layout : 0;
    *out = (grad_memory){.ptr = p, .elems = n, .elem = GRAD_F32, .device = false,
                         .layout = layout};
    return 0;
}
