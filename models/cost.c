#include "cost.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* Counting conventions (one FLOP per add, mul, compare or select; an FMA is 2):
 * - conv/fc: 2 per MAC in each of fwd, bwd_data and bwd_weights (notes §2);
 *   bias adds N*Co*Ho*Wo in fwd and its gradient as many in bwd_weights. A layer
 *   whose input needs no gradient (the first conv) has no bwd_data.
 * - batch norm, training: fwd 5 per element (sum 1, sum of squares 2, then
 *   y = x*a + c 2). Backward is two passes over x and dy, because dx needs the
 *   finished d-gamma and d-beta reductions: bwd_weights reduces them (x-hat 2,
 *   d-beta 1, d-gamma 2: 5 per element), bwd_data computes
 *   dx = k*(dy - c0 - x-hat*c1) with x-hat recomputed (6 per element).
 * - relu 1, relu6 2 per element, forward and backward.
 * - max pool: K*K-1 compares per output; backward adds each output gradient
 *   into its window's argmax, kept by forward as a 1-byte window index.
 * - average pool: one add per input of each window and one scale per output
 *   (a window's size in all); backward the same.
 * - residual add: 1 per element forward. Backward charges it the sum of the
 *   two gradients at the fork it closes (1 per element, read 2, write 1).
 * - dropout: 1 multiply per element each way, plus a 1-byte mask.
 * - SGD update (PyTorch's form: g += wd*w; v = m*v + g; w -= lr*v): 6 per
 *   parameter, 7 with fp16's loss-scale unscale. Reads w, g, v and writes v, w
 *   (fp32 master, 4 B each), gradients in the compute precision, plus the
 *   low-precision weight copy written for fp16/bf16: 20 B per parameter in
 *   every precision. Batch-norm parameters, statistics and gradients stay fp32.
 * - softmax cross-entropy: 5 per logit forward and backward together, logits
 *   read and their gradient written once, in fp32. */

static const char *const pass_names[PASS_COUNT] = {"fwd", "bwd_data", "bwd_weights", "update"};

const char *pass_name(pass p)
{
    return (unsigned)p < PASS_COUNT ? pass_names[p] : "?";
}

enum { FP32_BYTES = 4, MASK_BYTES = 1 };

/* The average-pool windows of torchvision's adaptive pooling: bin i covers
 * [floor(i*in/out), ceil((i+1)*in/out)). Returns the summed window sizes. */
static int64_t adaptive_window_sum(int in, int out)
{
    int64_t sum = 0;
    for (int i = 0; i < out; i++) {
        int start = (int)((int64_t)i * in / out);
        int end = (int)(((int64_t)(i + 1) * in + out - 1) / out);
        sum += end - start;
    }
    return sum;
}

/* Backward of a consumer of this tensor needs the tensor itself. */
static bool backward_reads_input(layer_type t)
{
    return t == LAYER_CONV || t == LAYER_FC || t == LAYER_BN;
}

/* Whether the tensor `index` (a layer output or the image) must be kept for
 * backward: a consumer reads it, or its own layer's backward reads its output
 * (relu masks with y, as PyTorch's in-place ReLU does). */
static bool tensor_is_saved(const network *net, int index)
{
    if (index != GRAPH_INPUT) {
        layer_type own = net->layers[index].type;
        if (own == LAYER_RELU || own == LAYER_RELU6)
            return true;
    }
    for (int i = 0; i < net->n_layers; i++) {
        const layer *l = &net->layers[i];
        for (int k = 0; k < l->n_inputs; k++)
            if (l->inputs[k] == index && backward_reads_input(l->type))
                return true;
    }
    return false;
}

static void cost_gemm_like(const layer *l, int64_t n, int b, layer_cost *c)
{
    int64_t in = n * shape_elems(l->in_shape);
    int64_t out = n * shape_elems(l->out_shape);
    int64_t weights = l->params;
    int64_t bias_ops = l->has_bias ? out : 0;
    if (l->type == LAYER_CONV)
        c->macs = out * (l->in_shape.c / l->groups) * l->kernel * l->kernel;
    else
        c->macs = out * shape_elems(l->in_shape);
    c->flops[PASS_FWD] = 2 * c->macs + bias_ops;
    c->bytes[PASS_FWD] = b * (in + weights + out);
    c->written[PASS_FWD] = b * out;
    if (l->computes_input_grad) {
        c->flops[PASS_BWD_DATA] = 2 * c->macs;
        c->bytes[PASS_BWD_DATA] = b * (out + weights + in);
        c->written[PASS_BWD_DATA] = b * in;
    }
    c->flops[PASS_BWD_WEIGHTS] = 2 * c->macs + bias_ops;
    c->bytes[PASS_BWD_WEIGHTS] = b * (in + out + weights);
    c->written[PASS_BWD_WEIGHTS] = b * weights;
}

static void cost_batch_norm(const layer *l, int64_t n, int b, layer_cost *c)
{
    int64_t elems = n * shape_elems(l->in_shape);
    int64_t ch = l->in_shape.c;
    /* fwd: gamma, beta read; saved mean, inv-std written; running stats updated */
    c->flops[PASS_FWD] = 5 * elems;
    c->bytes[PASS_FWD] = b * 2 * elems + FP32_BYTES * 8 * ch;
    c->written[PASS_FWD] = b * elems + FP32_BYTES * 4 * ch;
    /* bwd_weights: x, dy, mean, inv-std read; d-gamma, d-beta written */
    c->flops[PASS_BWD_WEIGHTS] = 5 * elems;
    c->bytes[PASS_BWD_WEIGHTS] = b * 2 * elems + FP32_BYTES * 4 * ch;
    c->written[PASS_BWD_WEIGHTS] = FP32_BYTES * 2 * ch;
    /* bwd_data: x, dy, gamma, the statistics and both reductions read; dx written */
    if (l->computes_input_grad) {
        c->flops[PASS_BWD_DATA] = 6 * elems;
        c->bytes[PASS_BWD_DATA] = b * 3 * elems + FP32_BYTES * 5 * ch;
        c->written[PASS_BWD_DATA] = b * elems;
    }
    c->saved_bytes += FP32_BYTES * 2 * ch; /* mean and inv-std */
}

static void cost_elementwise(const layer *l, int64_t n, int b, layer_cost *c)
{
    int64_t elems = n * shape_elems(l->out_shape);
    int64_t per_elem = l->type == LAYER_RELU6 ? 2 : 1;
    c->flops[PASS_FWD] = per_elem * elems;
    c->bytes[PASS_FWD] = b * 2 * elems;
    c->written[PASS_FWD] = b * elems;
    if (l->type == LAYER_ADD)
        c->bytes[PASS_FWD] = b * 3 * elems;
    if (l->type == LAYER_DROPOUT) {
        c->bytes[PASS_FWD] += MASK_BYTES * elems;
        c->written[PASS_FWD] += MASK_BYTES * elems;
        c->saved_bytes += MASK_BYTES * elems;
    }
    if (!l->computes_input_grad)
        return;
    c->flops[PASS_BWD_DATA] = per_elem * elems;
    c->bytes[PASS_BWD_DATA] = b * 3 * elems; /* relu: y, dy -> dx; add: two grads -> sum */
    c->written[PASS_BWD_DATA] = b * elems;
    if (l->type == LAYER_DROPOUT)
        c->bytes[PASS_BWD_DATA] = b * 2 * elems + MASK_BYTES * elems;
}

static void cost_pool(const layer *l, int64_t n, int b, layer_cost *c)
{
    int64_t in = n * shape_elems(l->in_shape);
    int64_t out = n * shape_elems(l->out_shape);
    if (l->type == LAYER_MAXPOOL) {
        c->flops[PASS_FWD] = ((int64_t)l->kernel * l->kernel - 1) * out;
        c->bytes[PASS_FWD] = b * (in + out) + MASK_BYTES * out;
        c->written[PASS_FWD] = b * out + MASK_BYTES * out;
        c->saved_bytes += MASK_BYTES * out;
        if (l->computes_input_grad) {
            c->flops[PASS_BWD_DATA] = out;
            c->bytes[PASS_BWD_DATA] = b * (out + in) + MASK_BYTES * out;
            c->written[PASS_BWD_DATA] = b * in;
        }
        return;
    }
    int64_t windows = adaptive_window_sum(l->in_shape.h, l->pool_out) *
                      adaptive_window_sum(l->in_shape.w, l->pool_out);
    c->flops[PASS_FWD] = n * l->in_shape.c * windows;
    c->bytes[PASS_FWD] = b * (in + out);
    c->written[PASS_FWD] = b * out;
    if (l->computes_input_grad) {
        c->flops[PASS_BWD_DATA] = c->flops[PASS_FWD];
        c->bytes[PASS_BWD_DATA] = b * (out + in);
        c->written[PASS_BWD_DATA] = b * in;
    }
}

static void cost_update(const layer *l, precision prec, layer_cost *c)
{
    if (l->params == 0)
        return;
    int64_t flops_per_param = prec == PREC_FP16 ? 7 : 6;
    c->flops[PASS_UPDATE] = flops_per_param * l->params;
    if (l->type == LAYER_BN || !precision_has_master_copy(prec)) {
        c->bytes[PASS_UPDATE] = 5 * FP32_BYTES * l->params;
        c->written[PASS_UPDATE] = 2 * FP32_BYTES * l->params;
        return;
    }
    int b = precision_bytes(prec);
    c->bytes[PASS_UPDATE] = (4 * FP32_BYTES + 2 * b) * l->params;
    c->written[PASS_UPDATE] = (2 * FP32_BYTES + b) * l->params;
}

static layer_cost layer_counts(const network *net, int index, int batch, precision prec)
{
    const layer *l = &net->layers[index];
    int b = precision_bytes(prec);
    int64_t n = batch;
    layer_cost c = {0};
    switch (l->type) {
    case LAYER_CONV:
    case LAYER_FC: cost_gemm_like(l, n, b, &c); break;
    case LAYER_BN: cost_batch_norm(l, n, b, &c); break;
    case LAYER_RELU:
    case LAYER_RELU6:
    case LAYER_ADD:
    case LAYER_DROPOUT: cost_elementwise(l, n, b, &c); break;
    case LAYER_MAXPOOL:
    case LAYER_AVGPOOL: cost_pool(l, n, b, &c); break;
    case LAYER_TYPE_COUNT: break;
    }
    cost_update(l, prec, &c);
    if (tensor_is_saved(net, index))
        c.saved_bytes += b * n * shape_elems(l->out_shape);
    return c;
}

/* ---- counts that do not fit ------------------------------------------------
 * Every count above is a * batch + c with a, c >= 0 (per-image terms plus
 * per-parameter ones), so count(batch) <= batch x count(1), and so is every
 * sum of counts the step takes. A batch fits when batch x the largest count
 * at batch 1 does; beyond it the counts would wrap around (VGG-16 at 4096x4096
 * and batch 300000: -9.2e18 FLOPs), so they are pinned at INT64_MAX instead. */

static int64_t largest_of(const int64_t *v, int n, int64_t largest)
{
    for (int i = 0; i < n; i++)
        if (v[i] > largest)
            largest = v[i];
    return largest;
}

static int64_t layer_largest(const layer_cost *c)
{
    int64_t largest = c->macs > c->saved_bytes ? c->macs : c->saved_bytes;
    largest = largest_of(c->flops, PASS_COUNT, largest);
    largest = largest_of(c->bytes, PASS_COUNT, largest);
    largest = largest_of(c->written, PASS_COUNT, largest);
    const int64_t sums[] = {layer_cost_flops(c), layer_cost_bytes(c)};
    return largest_of(sums, 2, largest);
}

static bool fits(int64_t largest_at_1, int batch)
{
    return batch <= 1 || largest_at_1 <= INT64_MAX / batch;
}

static void saturate(int64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        v[i] = INT64_MAX;
}

layer_cost cost_layer(const network *net, int index, int batch, precision prec)
{
    layer_cost one = layer_counts(net, index, 1, prec);
    if (fits(layer_largest(&one), batch))
        return batch == 1 ? one : layer_counts(net, index, batch, prec);
    layer_cost c = {.saturated = true, .macs = INT64_MAX, .saved_bytes = INT64_MAX};
    saturate(c.flops, PASS_COUNT);
    saturate(c.bytes, PASS_COUNT);
    saturate(c.written, PASS_COUNT);
    return c;
}

int64_t layer_cost_flops(const layer_cost *c)
{
    if (c->saturated)
        return INT64_MAX;
    int64_t sum = 0;
    for (int p = 0; p < PASS_COUNT; p++)
        sum += c->flops[p];
    return sum;
}

int64_t layer_cost_bytes(const layer_cost *c)
{
    if (c->saturated)
        return INT64_MAX;
    int64_t sum = 0;
    for (int p = 0; p < PASS_COUNT; p++)
        sum += c->bytes[p];
    return sum;
}

static footprint step_footprint(const network *net, int batch, precision prec,
                                int64_t saved_activations)
{
    int b = precision_bytes(prec);
    int64_t n = batch;
    footprint m = {0};
    int64_t largest_pair = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const layer *l = &net->layers[i];
        bool fp32_only = l->type == LAYER_BN;
        m.weights += FP32_BYTES * l->params;
        m.momentum += FP32_BYTES * l->params;
        m.grads += (fp32_only ? FP32_BYTES : b) * l->params;
        if (precision_has_master_copy(prec) && !fp32_only)
            m.master_copy += b * l->params;
        if (l->type == LAYER_BN)
            m.buffers += FP32_BYTES * 2 * (int64_t)l->in_shape.c; /* running mean, var */
        int64_t pair = b * n * (shape_elems(l->in_shape) + shape_elems(l->out_shape));
        if (pair > largest_pair)
            largest_pair = pair;
    }
    m.saved_activations = saved_activations;
    /* the image is saved by the first conv already; labels are int32 */
    m.batch = FP32_BYTES * n;
    if (!tensor_is_saved(net, GRAPH_INPUT))
        m.batch += b * n * shape_elems(net->input);
    m.transient = largest_pair;
    m.total = m.weights + m.master_copy + m.grads + m.momentum + m.buffers +
              m.saved_activations + m.batch + m.transient;
    return m;
}

static step_cost step_counts(const network *net, int batch, precision prec,
                             layer_cost *per_layer)
{
    step_cost s = {.batch = batch, .prec = prec};
    int64_t saved = 0;
    if (tensor_is_saved(net, GRAPH_INPUT))
        saved += precision_bytes(prec) * (int64_t)batch * shape_elems(net->input);
    for (int i = 0; i < net->n_layers; i++) {
        layer_cost c = layer_counts(net, i, batch, prec);
        if (per_layer)
            per_layer[i] = c;
        s.fwd_macs += c.macs;
        for (int p = 0; p < PASS_COUNT; p++) {
            s.flops[p] += c.flops[p];
            s.bytes[p] += c.bytes[p];
            s.written[p] += c.written[p];
        }
        saved += c.saved_bytes;
    }
    int64_t logits = (int64_t)batch * net->classes;
    s.loss_flops = 5 * logits;
    s.loss_bytes = 2 * FP32_BYTES * logits;
    s.loss_written = FP32_BYTES * logits;
    s.step_flops = s.loss_flops;
    s.step_bytes = s.loss_bytes;
    for (int p = 0; p < PASS_COUNT; p++) {
        s.step_flops += s.flops[p];
        s.step_bytes += s.bytes[p];
    }
    s.memory = step_footprint(net, batch, prec, saved);
    return s;
}

static int64_t step_largest(const step_cost *s)
{
    int64_t largest = s->fwd_macs;
    const int64_t totals[] = {s->step_flops, s->step_bytes, s->memory.total};
    return largest_of(totals, 3, largest);
}

int cost_max_batch(const network *net, precision prec)
{
    step_cost one = step_counts(net, 1, prec, NULL);
    int64_t largest = step_largest(&one);
    if (largest <= 0)
        return INT_MAX;
    int64_t max = INT64_MAX / largest;
    return max > INT_MAX ? INT_MAX : (int)max;
}

step_cost cost_step(const network *net, int batch, precision prec, layer_cost *per_layer)
{
    if (batch <= cost_max_batch(net, prec))
        return step_counts(net, batch, prec, per_layer);
    step_cost s = {.batch = batch, .prec = prec, .saturated = true,
                   .fwd_macs = INT64_MAX, .loss_flops = INT64_MAX, .loss_bytes = INT64_MAX,
                   .loss_written = INT64_MAX, .step_flops = INT64_MAX, .step_bytes = INT64_MAX};
    saturate(s.flops, PASS_COUNT);
    saturate(s.bytes, PASS_COUNT);
    saturate(s.written, PASS_COUNT);
    footprint *m = &s.memory;
    int64_t *fields[] = {&m->weights, &m->master_copy, &m->grads, &m->momentum, &m->buffers,
                         &m->saved_activations, &m->batch, &m->transient, &m->total};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        *fields[i] = INT64_MAX;
    for (int i = 0; per_layer && i < net->n_layers; i++)
        per_layer[i] = cost_layer(net, i, batch, prec);
    return s;
}
