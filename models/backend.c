#include "backend.h"

/* --depthwise's and --conv-bias's words, in their enums' shared order */
static const char *const who_runs[] = {"auto", "cudnn", "own"};
_Static_assert(DEPTHWISE_AUTO == 0 && DEPTHWISE_CUDNN == 1 && DEPTHWISE_OWN == 2 &&
                   CONV_BIAS_AUTO == 0 && CONV_BIAS_CUDNN == 1 && CONV_BIAS_OWN == 2,
               "who_runs follows the enums' order");

const char *depthwise_choice_name(depthwise_choice d)
{
    return (unsigned)d <= DEPTHWISE_OWN ? who_runs[d] : "?";
}

const char *conv_bias_choice_name(conv_bias_choice c)
{
    return (unsigned)c <= CONV_BIAS_OWN ? who_runs[c] : "?";
}

const char *conv_api_choice_name(conv_api_choice c)
{
    static const char *const names[] = {"auto", "legacy", "graph"};
    return (unsigned)c <= CONV_API_GRAPH ? names[c] : "?";
}

int64_t backend_buffer_elems(const network *net, int index, int batch, buffer_kind kind)
{
    const layer *l = &net->layers[index];
    int64_t bias = 0, weight = 0;
    if (l->type == LAYER_BN) {
        weight = bias = l->in_shape.c;
    } else if (l->type == LAYER_CONV || l->type == LAYER_FC) {
        bias = l->has_bias ? l->out_channels : 0;
        weight = l->params - bias;
    }
    switch (kind) {
    case BUF_OUTPUT:
    case BUF_OUTPUT_GRAD: return (int64_t)batch * shape_elems(l->out_shape);
    case BUF_WEIGHT:
    case BUF_WEIGHT_GRAD: return weight;
    case BUF_BIAS:
    case BUF_BIAS_GRAD: return bias;
    case BUF_RUNNING_MEAN:
    case BUF_RUNNING_VAR: return l->type == LAYER_BN ? l->in_shape.c : 0;
    case BUF_KIND_COUNT: break;
    }
    return 0;
}
