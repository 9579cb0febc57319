#include "cuda_plan.h"

#include <string.h>

#include "../backend.h"

precision_plan precision_plan_of(precision p)
{
    precision_plan pp = {.prec = p, .elem = ELEM_F32, .elem_bytes = 4, .layout = LAYOUT_NCHW};
    switch (p) {
    case PREC_FP32: break;
    case PREC_TF32:
        pp.layout = LAYOUT_NHWC;
        pp.tensor_cores = true;
        break;
    case PREC_FP16:
        pp = (precision_plan){.prec = p, .elem = ELEM_F16, .elem_bytes = 2,
                              .layout = LAYOUT_NHWC, .tensor_cores = true,
                              .master_copy = true, .loss_scaling = true};
        break;
    case PREC_BF16:
        pp = (precision_plan){.prec = p, .elem = ELEM_BF16, .elem_bytes = 2,
                              .layout = LAYOUT_NHWC, .tensor_cores = true,
                              .master_copy = true};
        break;
    case PREC_COUNT: break;
    }
    return pp;
}

const char *elem_type_name(elem_type t)
{
    switch (t) {
    case ELEM_F32: return "f32";
    case ELEM_F16: return "f16";
    case ELEM_BF16: return "bf16";
    }
    return "?";
}

memplan_rules cuda_memplan_rules(bool fusion)
{
    memplan_rules r = {.add_in_place = fusion, .add_normalises_both = fusion,
                       .grad_in_place = fusion, .reuse_dead_activations = fusion};
    return r;
}

static bool is_activation(layer_type t)
{
    return t == LAYER_RELU || t == LAYER_RELU6;
}

void fusion_plan_make(const network *net, const mem_plan *mp, bool enable, layer_fusion *fusion)
{
    int n = net->n_layers;
    for (int i = 0; i < n; i++)
        fusion[i] = (layer_fusion){.fwd_by = -1, .bwd_by = -1, .act = ACT_NONE,
                                   .bn_applied_by = -1, .add_bn = -1, .add_bn2 = -1,
                                   .bias_grad_by = -1, .sums_bias_of = -1};
    if (!enable)
        return;
    for (int i = 0; i < n; i++) {
        const layer *l = &net->layers[i];
        int in = l->inputs[0];
        /* an add in place over a batch norm normalises it */
        if (l->type == LAYER_ADD && mp->out_owner[i] != i) {
            for (int k = 0; k < 2; k++) {
                int bn = l->inputs[k];
                if (bn >= 0 && net->layers[bn].type == LAYER_BN && mp->out_owner[bn] == bn &&
                    mp->out_owner[i] == bn) {
                    fusion[i].add_bn = bn;
                    fusion[bn].bn_applied_by = i;
                } else if (bn >= 0 && net->layers[bn].type == LAYER_BN && mp->out_owner[bn] < 0) {
                    fusion[i].add_bn2 = bn;
                    fusion[bn].bn_applied_by = i;
                }
            }
            continue;
        }
        /* an activation in place over the layer before it */
        if (!is_activation(l->type) || in < 0 || mp->out_owner[i] == i)
            continue;
        const layer *p = &net->layers[in];
        bool by_kernel = p->type == LAYER_BN || p->type == LAYER_ADD;
        bool by_bias = (p->type == LAYER_CONV || p->type == LAYER_FC) && p->has_bias;
        if (!(by_kernel || by_bias))
            continue;
        /* a batch norm normalised by an add has no output of its own to act on */
        if (p->type == LAYER_BN && fusion[in].bn_applied_by >= 0)
            continue;
        fusion[in].act = l->type == LAYER_RELU ? ACT_RELU : ACT_RELU6;
        fusion[i].fwd_by = in;
        /* the mask is applied on the fly by batch norm's and the add's
         * backward; after a conv or fc it runs as its own kernel, which
         * sums the layer's bias gradient too: in place, the activation is
         * the layer's only consumer, so what it writes is the whole
         * gradient of the layer's output */
        if (by_kernel) {
            fusion[i].bwd_by = in;
        } else {
            fusion[i].sums_bias_of = in;
            fusion[in].bias_grad_by = i;
        }
    }
}

bool fusion_own_bias_grad(const layer *l, const layer_fusion *f)
{
    return l->has_bias && f->bias_grad_by < 0;
}

void permute_nchw_nhwc(const float *src, float *dst, int64_t n, int c, int h, int w,
                       bool to_nhwc)
{
    int64_t plane = (int64_t)h * w, image = plane * c;
    for (int64_t b = 0; b < n; b++)
        for (int ch = 0; ch < c; ch++)
            for (int64_t p = 0; p < plane; p++) {
                int64_t nchw = b * image + ch * plane + p, nhwc = b * image + p * c + ch;
                if (to_nhwc)
                    dst[nhwc] = src[nchw];
                else
                    dst[nchw] = src[nhwc];
            }
}

conv_shape conv_shape_of(const layer *l, const layer_fusion *f, int batch, precision prec)
{
    return (conv_shape){.n = batch, .c = l->in_shape.c, .h = l->in_shape.h, .w = l->in_shape.w,
                        .k = l->out_channels, .r = l->kernel, .s = l->kernel, .pad = l->pad,
                        .stride = l->stride, .groups = l->groups, .out_h = l->out_shape.h,
                        .out_w = l->out_shape.w, .input_grad = l->computes_input_grad,
                        .bias_relu = l->has_bias && f && f->act == ACT_RELU, .prec = prec};
}

bool conv_shape_equal(const conv_shape *a, const conv_shape *b)
{
    return a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w && a->k == b->k &&
           a->r == b->r && a->s == b->s && a->pad == b->pad && a->stride == b->stride &&
           a->groups == b->groups && a->out_h == b->out_h && a->out_w == b->out_w &&
           a->input_grad == b->input_grad && a->bias_relu == b->bias_relu && a->prec == b->prec;
}

int conv_shape_groups(const network *net, const layer_fusion *fusion, int batch, precision prec,
                      int *first_of_shape)
{
    int distinct = 0;
    for (int i = 0; i < net->n_layers; i++) {
        first_of_shape[i] = -1;
        if (net->layers[i].type != LAYER_CONV)
            continue;
        conv_shape s = conv_shape_of(&net->layers[i], fusion ? &fusion[i] : NULL, batch, prec);
        for (int j = 0; j < i && first_of_shape[i] < 0; j++) {
            if (first_of_shape[j] != j)
                continue;
            conv_shape t = conv_shape_of(&net->layers[j], fusion ? &fusion[j] : NULL, batch, prec);
            if (conv_shape_equal(&s, &t))
                first_of_shape[i] = j;
        }
        if (first_of_shape[i] < 0) {
            first_of_shape[i] = i;
            distinct++;
        }
    }
    return distinct;
}

void cuda_scratch_elems(int n_layers, const int64_t *pass_bytes, int elem_bytes,
                        int64_t *scratch_elems)
{
    for (int i = 0; i < n_layers; i++) {
        const int64_t *p = &pass_bytes[3 * i];
        int64_t backward = p[1] > p[2] ? p[1] : p[2];
        scratch_elems[2 * i] = (p[0] + elem_bytes - 1) / elem_bytes;
        scratch_elems[2 * i + 1] = (backward + elem_bytes - 1) / elem_bytes;
    }
}

int64_t cuda_planned_bytes(const network *net, int batch, const precision_plan *pp,
                           const mem_plan *mp)
{
    int64_t bytes = mp->arena_elems * pp->elem_bytes;
    /* the input in the compute type and the labels; the staging chunk */
    int64_t input = (int64_t)batch * shape_elems(net->input), largest = input;
    bytes += input * pp->elem_bytes + (int64_t)batch * 4;
    for (int i = 0; i < net->n_layers; i++)
        for (int k = 0; k < BUF_KIND_COUNT; k++) {
            int64_t e = backend_buffer_elems(net, i, batch, (buffer_kind)k);
            largest = e > largest ? e : largest;
        }
    bytes += 4 * (largest < (int64_t)CUDA_STAGING_ELEMS ? largest : (int64_t)CUDA_STAGING_ELEMS);
    for (int i = 0; i < net->n_layers; i++) {
        const layer *l = &net->layers[i];
        int64_t out = backend_buffer_elems(net, i, batch, BUF_OUTPUT);
        int64_t params = backend_buffer_elems(net, i, batch, BUF_WEIGHT) +
                         backend_buffer_elems(net, i, batch, BUF_BIAS);
        if (l->type == LAYER_BN) {
            /* gamma, beta, their gradients and momentum in fp32; mean, rstd,
             * running mean and variance */
            bytes += params * 4 * 3 + (int64_t)l->in_shape.c * 4 * 4;
        } else if (params) {
            /* master and momentum in fp32, gradient (and copy) in elem */
            bytes += params * (8 + pp->elem_bytes * (pp->master_copy ? 2 : 1));
        }
        if (l->type == LAYER_MAXPOOL || l->type == LAYER_DROPOUT)
            bytes += out; /* one byte a value: window index, or keep */
    }
    return bytes;
}

bool conv_is_depthwise(const conv_shape *s)
{
    return s->groups > 1 && s->groups == s->c && s->k == s->c;
}

bool depthwise_own_fits(const conv_shape *s)
{
    int64_t in = (int64_t)s->n * s->c * s->h * s->w, out = (int64_t)s->n * s->k * s->out_h * s->out_w;
    return conv_is_depthwise(s) && s->r == s->s && (s->r == 3 || s->r == 5) && s->stride >= 1 &&
           in < ((int64_t)1 << 31) && out < ((int64_t)1 << 31);
}

depthwise_filter_plan depthwise_filter_plan_of(const conv_shape *s, bool nhwc, int sm_count)
{
    enum { CHANNELS_PER_BLOCK = 32, MIN_POSITIONS = 256, MAX_SLICES = 1024, BLOCKS_PER_SM = 4 };
    depthwise_filter_plan p;
    int64_t positions = (int64_t)s->n * s->out_h * s->out_w;
    p.channel_groups = nhwc ? (s->c + CHANNELS_PER_BLOCK - 1) / CHANNELS_PER_BLOCK : s->c;
    int64_t target = (int64_t)(sm_count > 0 ? sm_count : 1) * BLOCKS_PER_SM;
    int64_t slices = (target + p.channel_groups - 1) / p.channel_groups;
    int64_t most = positions / MIN_POSITIONS;
    if (slices > most)
        slices = most;
    if (slices > MAX_SLICES)
        slices = MAX_SLICES;
    p.slices = slices > 0 ? (int)slices : 1;
    p.partial_bytes = (int64_t)p.slices * s->c * s->r * s->s * (int64_t)sizeof(float);
    return p;
}

int conv_algo_pick(const conv_algo_result *r, int n, double tolerance)
{
    int fastest = -1;
    for (int k = 0; k < n; k++)
        if (r[k].usable && (fastest < 0 || r[k].ms < r[fastest].ms))
            fastest = k;
    if (fastest < 0)
        return -1;
    double limit = r[fastest].ms * (1.0 + tolerance);
    int best = fastest;
    for (int k = 0; k < n; k++) {
        if (!r[k].usable || r[k].ms > limit)
            continue;
        if (r[k].memory < r[best].memory ||
            (r[k].memory == r[best].memory && r[k].ms < r[best].ms))
            best = k;
    }
    return best;
}

depthwise_pick depthwise_choose(const depthwise_trial *t)
{
    if (t->own_ms < 0.0f)
        return DW_PICK_CUDNN;
    if (t->cudnn_ms < 0.0f)
        return DW_PICK_OWN;
    if (!t->verified || !t->matched)
        return DW_PICK_CUDNN;
    return t->own_ms < t->cudnn_ms ? DW_PICK_OWN : DW_PICK_CUDNN;
}

bool conv_bias_choose_fused(conv_bias_choice mode, const conv_bias_trial *t)
{
    if (mode == CONV_BIAS_OWN || t->fused_ms < 0.0f)
        return false;
    if (mode == CONV_BIAS_CUDNN)
        return true;
    if (!t->verified || !t->matched || t->own_ms < 0.0f)
        return false;
    return t->fused_ms < t->own_ms;
}

bool conv_api_choose_graph(conv_api_choice mode, const conv_api_trial *t)
{
    if (mode == CONV_API_LEGACY || t->graph_ms < 0.0f)
        return false;
    if (mode == CONV_API_GRAPH || t->legacy_ms < 0.0f)
        return true;
    if (!t->verified || !t->matched)
        return false;
    return t->graph_ms < t->legacy_ms;
}

double trial_match_tolerance(const precision_plan *pp)
{
    switch (pp->elem) {
    case ELEM_F16: return 1e-2;
    case ELEM_BF16: return 4e-2;
    case ELEM_F32: break;
    }
    return pp->tensor_cores ? 2e-2 : 1e-3;
}

double fused_match_tolerance(const precision_plan *pp)
{
    /* fp32 without tensor cores: two fp32 ways differ by rounding (some
     * 1e-6 of the largest output, Winograd some 1e-5); tf32's 11-bit inputs
     * move it by some 1e-4 */
    if (pp->elem == ELEM_F32 && !pp->tensor_cores)
        return 3e-5;
    return trial_match_tolerance(pp);
}
