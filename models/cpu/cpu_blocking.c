/* The blocked-layout plan of cpu_blocking.h: start from every tensor that its
 * producer could write blocked, then unblock, until nothing changes, each one
 * a producer or a consumer cannot take in that layout. Unblocking only ever
 * removes, so this ends, with the largest plan that satisfies every layer. */
#include "cpu_blocking.h"

#include <stdbool.h>

static bool keeps_layout(layer_type t)
{
    return t == LAYER_BN || t == LAYER_RELU || t == LAYER_RELU6 || t == LAYER_ADD ||
           t == LAYER_MAXPOOL || t == LAYER_AVGPOOL;
}

/* the block layer i writes given its inputs' blocks (0: it writes NCHW) */
static int producible(const network *net, int i, const int *conv_dst, const int *block)
{
    const layer *l = &net->layers[i];
    if (l->type == LAYER_CONV)
        return conv_dst[i];
    if (!keeps_layout(l->type))
        return 0;
    int first = l->inputs[0] == GRAPH_INPUT ? 0 : block[l->inputs[0]];
    for (int k = 0; k < l->n_inputs; k++)
        if (l->inputs[k] == GRAPH_INPUT || block[l->inputs[k]] != first)
            return 0;
    return first;
}

/* whether consumer c reads the output of layer i in block B */
static bool readable(const network *net, int c, int i, int B, const int *conv_src,
                     const int *block)
{
    const layer *l = &net->layers[c];
    tensor_shape s = net->layers[i].out_shape;
    switch (l->type) {
    case LAYER_CONV: return conv_src[c] == B;
    case LAYER_BN: return true;
    case LAYER_FC:
    case LAYER_DROPOUT: return s.h == 1 && s.w == 1;
    default: return keeps_layout(l->type) && block[c] == B;
    }
}

int cpu_decide_blocks(const network *net, const int *conv_src, const int *conv_dst, int *block)
{
    int n = net->n_layers;
    for (int i = 0; i < n; i++)
        block[i] = i == n - 1 ? 0 : producible(net, i, conv_dst, block);
    bool changed = true;
    while (changed) {
        changed = false;
        for (int i = 0; i < n; i++) {
            int B = block[i];
            if (!B)
                continue;
            bool ok = producible(net, i, conv_dst, block) == B &&
                      net->layers[i].out_shape.c % B == 0;
            for (int c = i + 1; ok && c < n; c++)
                for (int k = 0; k < net->layers[c].n_inputs; k++)
                    if (net->layers[c].inputs[k] == i && !readable(net, c, i, B, conv_src, block))
                        ok = false;
            if (!ok) {
                block[i] = 0;
                changed = true;
            }
        }
    }
    int blocked = 0;
    for (int i = 0; i < n; i++)
        blocked += block[i] != 0;
    return blocked;
}
