#include "cuda_traffic.h"

#include "../backend.h"
#include "../step.h"

enum { F32 = 4, MASK = 1, LABEL = 4 };

typedef struct {
    const cuda_traffic_plan *t;
    const layer *l;
    int index;
    int64_t in, out; /* elements of the input (all images) and of the output */
    int64_t e;       /* bytes of an activation, gradient or computed-with weight */
    cuda_traffic c;
} op;

static void reads(op *o, int64_t bytes)
{
    o->c.read += bytes;
}

static void writes(op *o, int64_t bytes)
{
    o->c.written += bytes;
}

/* The input gradient k: written, and read first where it is added to. */
static void input_grad(op *o, int k)
{
    writes(o, o->in * o->e);
    if (step_grad_accumulates(o->t->net, o->index, k))
        reads(o, o->in * o->e);
}

static int64_t weight_elems(const op *o)
{
    return backend_buffer_elems(o->t->net, o->index, o->t->batch, BUF_WEIGHT);
}

/* conv (cuDNN or the own depthwise kernels: the same tensors) and fc */
static void gemm_like(op *o, pass phase)
{
    int64_t w = weight_elems(o) * o->e, bias = (int64_t)o->l->out_channels * o->e;
    bool has_bias = o->l->has_bias;
    switch (phase) {
    case PASS_FWD:
        reads(o, o->in * o->e + w);
        writes(o, o->out * o->e);
        if (has_bias && o->t->bias_in_call && o->t->bias_in_call[o->index]) {
            reads(o, bias);
        } else if (has_bias) { /* bias (and activation) over the output, in place */
            reads(o, o->out * o->e + bias);
            writes(o, o->out * o->e);
        }
        return;
    case PASS_BWD_DATA:
        reads(o, w + o->out * o->e);
        input_grad(o, 0);
        return;
    case PASS_BWD_WEIGHTS:
        reads(o, o->in * o->e + o->out * o->e);
        writes(o, w);
        /* the channel sums of dy, kept in the compute type, unless the
         * activation's backward summed them as it wrote dy */
        if (fusion_own_bias_grad(o->l, &o->t->fusion[o->index])) {
            reads(o, o->out * o->e);
            writes(o, bias);
        }
        return;
    default: return;
    }
}

/* gamma, beta, mean and rstd: fp32 per channel. The vector kernels (every
 * NHWC layer of the zoo) read all they are given; the per-element ones skip
 * those a fused activation's mask alone needs, a few per-channel floats. */
static int64_t bn_params(const layer *l, int how_many)
{
    return (int64_t)how_many * l->out_shape.c * F32;
}

static void batch_norm(op *o, pass phase)
{
    const layer_fusion *f = &o->t->fusion[o->index];
    switch (phase) {
    case PASS_FWD:
        /* the statistics: x, then (a second kernel) each channel's shift, the
         * first element, again; mean and rstd written, the running ones updated */
        reads(o, o->in * o->e + (int64_t)o->l->out_shape.c * o->e + bn_params(o->l, 2));
        writes(o, bn_params(o->l, 4));
        if (f->bn_applied_by < 0) { /* normalised here, else by the add */
            reads(o, o->in * o->e + bn_params(o->l, 4));
            writes(o, o->out * o->e);
        }
        return;
    case PASS_BWD_WEIGHTS: /* the gradient sums: x and dy with the parameters, then rstd */
        reads(o, o->in * o->e + o->out * o->e + bn_params(o->l, 5));
        writes(o, bn_params(o->l, 2));
        return;
    case PASS_BWD_DATA: /* a fused activation's mask is recomputed from x */
        reads(o, o->out * o->e + o->in * o->e + bn_params(o->l, 6));
        input_grad(o, 0);
        return;
    default: return;
    }
}

/* Whether input k's gradient is the add's output gradient itself (passed on
 * in place), or is not needed (the network's input). */
static bool grad_is_dy(const op *o, int k, bool *needed)
{
    const mem_plan *mp = o->t->plan;
    int in = o->l->inputs[k];
    *needed = in != GRAPH_INPUT && mp->grad_buffer[in] >= 0;
    return *needed && mp->grad_buffer[in] == mp->grad_buffer[o->index];
}

static void residual_add(op *o, pass phase)
{
    const layer_fusion *f = &o->t->fusion[o->index];
    int64_t tensor = o->out * o->e;
    if (phase == PASS_FWD) {
        if (f->add_bn >= 0) { /* y = act(bn(x) + other) or act(bn(x) + bn2(x2)) */
            const layer *bn = &o->t->net->layers[f->add_bn];
            reads(o, 2 * tensor + bn_params(bn, 4));
            if (f->add_bn2 >= 0)
                reads(o, bn_params(&o->t->net->layers[f->add_bn2], 4));
        } else {
            reads(o, 2 * tensor);
        }
        writes(o, tensor);
        return;
    }
    if (phase != PASS_BWD_DATA)
        return;
    bool needed[2], is_dy[2];
    for (int k = 0; k < 2; k++)
        is_dy[k] = grad_is_dy(o, k, &needed[k]);
    bool masked = f->act != ACT_NONE;
    if (!masked && (!needed[0] || is_dy[0]) && (!needed[1] || is_dy[1]))
        return; /* g is in place already: no kernel */
    reads(o, tensor * (masked ? 2 : 1)); /* dy, and y for the mask */
    if (is_dy[0] && is_dy[1]) {
        writes(o, tensor);
        return;
    }
    for (int k = 0; k < 2; k++) {
        if (!needed[k])
            continue;
        writes(o, tensor);
        if (!is_dy[k] && step_grad_accumulates(o->t->net, o->index, k))
            reads(o, tensor);
    }
}

/* ReLU, ReLU6, pools and dropout: one kernel each way; `mask` bytes an
 * output element kept from forward to backward (max pool's window index,
 * dropout's keep flag), `reads_y` whether backward reads the output */
static void pointwise(op *o, pass phase, int64_t mask_elems, bool reads_y)
{
    const layer_fusion *f = &o->t->fusion[o->index];
    if (phase == PASS_FWD && f->fwd_by < 0) {
        reads(o, o->in * o->e);
        writes(o, o->out * o->e + mask_elems * MASK);
    } else if (phase == PASS_BWD_DATA && f->bwd_by < 0) {
        reads(o, o->out * o->e * (reads_y ? 2 : 1) + mask_elems * MASK);
        input_grad(o, 0);
        if (f->sums_bias_of >= 0) /* the conv/fc bias gradient, summed on the way */
            writes(o, (int64_t)o->l->out_shape.c * o->e);
    }
}

static cuda_traffic loss(const cuda_traffic_plan *t)
{
    int64_t n = t->batch, logits = n * t->net->classes * t->pp->elem_bytes;
    /* softmax_xent: logits and labels in, the logits' gradient and each
     * image's loss out; then their mean */
    return (cuda_traffic){.read = logits + n * LABEL + n * F32, .written = logits + n * F32};
}

/* One parameter tensor of the fused update: fp32 master and momentum read
 * and written, the gradient read (twice with fp16's check for overflow), the
 * copy computed with written where there is one. */
static void update_tensor(const cuda_traffic_plan *t, int64_t elems, bool bn, cuda_traffic *c)
{
    int64_t grad = elems * (bn ? F32 : t->pp->elem_bytes);
    c->read += 2 * elems * F32 + grad * (t->pp->loss_scaling ? 2 : 1);
    c->written += 2 * elems * F32;
    if (t->pp->master_copy && !bn)
        c->written += elems * t->pp->elem_bytes;
}

static cuda_traffic update(const cuda_traffic_plan *t, int layer_index)
{
    cuda_traffic c = {0, 0};
    for (int i = 0; i < t->net->n_layers; i++) {
        const layer *l = &t->net->layers[i];
        if ((layer_index != STEP_ALL_LAYERS && i != layer_index) || l->params <= 0)
            continue;
        bool bn = l->type == LAYER_BN;
        update_tensor(t, backend_buffer_elems(t->net, i, t->batch, BUF_WEIGHT), bn, &c);
        if (bn || l->has_bias)
            update_tensor(t, backend_buffer_elems(t->net, i, t->batch, BUF_BIAS), bn, &c);
    }
    return c;
}

cuda_traffic cuda_op_traffic(const cuda_traffic_plan *t, int layer_index, pass phase)
{
    cuda_traffic none = {0, 0};
    if (layer_index == STEP_LOSS)
        return phase == PASS_FWD ? loss(t) : none;
    if (phase == PASS_UPDATE)
        return update(t, layer_index);
    if (layer_index < 0 || layer_index >= t->net->n_layers)
        return none;
    const layer *l = &t->net->layers[layer_index];
    if ((phase == PASS_BWD_DATA && !l->computes_input_grad) ||
        (phase == PASS_BWD_WEIGHTS && l->params <= 0))
        return none;
    op o = {.t = t,
            .l = l,
            .index = layer_index,
            .in = (int64_t)t->batch * shape_elems(l->in_shape),
            .out = (int64_t)t->batch * shape_elems(l->out_shape),
            .e = t->pp->elem_bytes};
    switch (l->type) {
    case LAYER_CONV:
    case LAYER_FC: gemm_like(&o, phase); break;
    case LAYER_BN: batch_norm(&o, phase); break;
    case LAYER_ADD: residual_add(&o, phase); break;
    case LAYER_RELU:
    case LAYER_RELU6: pointwise(&o, phase, 0, true); break;
    case LAYER_MAXPOOL: pointwise(&o, phase, o.out, false); break;
    case LAYER_AVGPOOL: pointwise(&o, phase, 0, false); break;
    case LAYER_DROPOUT: pointwise(&o, phase, o.out, false); break;
    case LAYER_TYPE_COUNT: break;
    }
    return o.c;
}
