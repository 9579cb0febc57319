/* What data-parallel training needs of the CPU backend: a layer's gradient
 * storage (the host fp32 arrays the update reads), so that models/ddp can
 * reduce it in place of a host copy through backend_ops.read/write. */
#include "../ddp/ddp_cpu.h"

#include "cpu_internal.h"

int cpu_ddp_grad_storage(backend *b, int layer, buffer_kind kind, ddp_grad_storage *out)
{
    if (layer < 0 || layer >= b->net->n_layers)
        return cpu_fail(b, "no layer %d", layer);
    cpu_layer *cl = &b->layers[layer];
    float *p = kind == BUF_WEIGHT_GRAD ? cl->dw : kind == BUF_BIAS_GRAD ? cl->dbias : NULL;
    int64_t n = backend_buffer_elems(b->net, layer, b->cfg.batch, kind);
    if (!p || n == 0)
        return cpu_fail(b, "layer %s has no %s gradient", b->net->layers[layer].name,
                        kind == BUF_BIAS_GRAD ? "bias" : "weight");
    *out = (ddp_grad_storage){.ptr = p, .elems = n, .elem = DDP_F32, .device = false};
    return 0;
}

const ddp_backend_access cpu_ddp_access = {.grad_storage = cpu_ddp_grad_storage, .stream = NULL};
