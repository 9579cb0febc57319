/* ReLU, ReLU6, residual add and dropout: elementwise OpenMP loops. The
 * activations mask their gradient with their own output, as PyTorch's in-place
 * ReLU does. An add whose activation is fused into it (cpu_backend.c,
 * cpu_layer.act_layer) applies it in forward and masks in backward, through
 * the same two functions as the activation alone. */
#include "../rng.h"
#include "cpu_internal.h"

/* A ReLU's or ReLU6's value at v; act LAYER_ADD (an add with nothing fused
 * into it): v itself. act is the same across a loop: gcc splits the loop by
 * it, and each stays vectorized. */
static inline float activate(int act, float v)
{
    if (act == LAYER_RELU)
        return v > 0.0f ? v : 0.0f;
    if (act == LAYER_RELU6)
        return v > 0.0f ? (v < 6.0f ? v : 6.0f) : 0.0f;
    return v;
}

/* dy through that activation, masked by its output y as PyTorch's in-place
 * ReLU masks it; the data test is branch-free (&) so that it vectorizes. */
static inline float through_act(int act, float y, float dy)
{
    bool pass = act == LAYER_ADD || ((y > 0.0f) & (act == LAYER_RELU || y < 6.0f));
    return pass ? dy : 0.0f;
}

int cpu_pointwise_forward(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *x = cpu_input(b, i, 0);
    float *y = cl->out;
    int64_t n = backend_buffer_elems(b->net, i, b->cfg.batch, BUF_OUTPUT);
    if (cl->fused_into >= 0) /* the layer before has applied it */
        return 0;
    switch (l->type) {
    case LAYER_RELU:
    case LAYER_RELU6: {
        int act = (int)l->type;
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; j++)
            y[j] = activate(act, x[j]);
        return 0;
    }
    case LAYER_ADD: {
        const float *x2 = cpu_input(b, i, 1);
        int act = cl->act_layer < 0 ? LAYER_ADD : (int)b->net->layers[cl->act_layer].type;
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; j++)
            y[j] = activate(act, x[j] + x2[j]);
        return 0;
    }
    case LAYER_DROPOUT: {
        float scale = 1.0f / (1.0f - l->drop_p);
        uint64_t stream = b->forward_count * (uint64_t)b->net->n_layers + (uint64_t)i;
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; j++) {
            cl->keep[j] = rng_uniform(b->cfg.seed, stream, (uint64_t)j) >= l->drop_p;
            y[j] = cl->keep[j] ? x[j] * scale : 0.0f;
        }
        return 0;
    }
    default: return cpu_fail(b, "layer %s is not elementwise", l->name);
    }
}

/* An add's backward: its gradient to both inputs in one pass over dy (or to
 * the one that is not the network's input). d0 and d1 may be one buffer
 * (add(x, x)), which the element-by-element order keeps right. */
static int add_backward(backend *b, int i, const bool accumulate[LAYER_MAX_INPUTS])
{
    const layer *l = &b->net->layers[i];
    const cpu_layer *cl = &b->layers[i];
    int64_t n = backend_buffer_elems(b->net, i, b->cfg.batch, BUF_OUTPUT);
    int act = cl->act_layer < 0 ? LAYER_ADD : (int)b->net->layers[cl->act_layer].type;
    const float *dy = cl->act_layer < 0 ? cl->grad : b->layers[cl->act_layer].grad;
    const float *y = cl->out;
    float *d0 = l->inputs[0] == GRAPH_INPUT ? NULL : b->layers[l->inputs[0]].grad;
    float *d1 = l->inputs[1] == GRAPH_INPUT ? NULL : b->layers[l->inputs[1]].grad;
    bool acc0 = accumulate[0], acc1 = accumulate[1];
    if (d0 && d1) {
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; j++) {
            float g = through_act(act, y[j], dy[j]);
            d0[j] = acc0 ? d0[j] + g : g;
            d1[j] = acc1 ? d1[j] + g : g;
        }
    } else if (d0 || d1) {
        float *d = d0 ? d0 : d1;
        bool acc = d0 ? acc0 : acc1;
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; j++) {
            float g = through_act(act, y[j], dy[j]);
            d[j] = acc ? d[j] + g : g;
        }
    }
    return 0;
}

int cpu_pointwise_backward(backend *b, int i, const bool accumulate[LAYER_MAX_INPUTS])
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *dy = cl->grad, *y = cl->out;
    int64_t n = backend_buffer_elems(b->net, i, b->cfg.batch, BUF_OUTPUT);
    if (l->type == LAYER_ADD)
        return add_backward(b, i, accumulate);
    if (cl->fused_into >= 0) /* the layer before reads dy and masks it itself */
        return 0;
    float *dx = b->layers[l->inputs[0]].grad;
    bool acc = accumulate[0];
    switch (l->type) {
    case LAYER_RELU:
    case LAYER_RELU6: {
        int act = (int)l->type;
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; j++) {
            float g = through_act(act, y[j], dy[j]);
            dx[j] = acc ? dx[j] + g : g;
        }
        return 0;
    }
    case LAYER_DROPOUT: {
        float scale = 1.0f / (1.0f - l->drop_p);
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; j++) {
            float g = cl->keep[j] ? dy[j] * scale : 0.0f;
            dx[j] = acc ? dx[j] + g : g;
        }
        return 0;
    }
    default: return cpu_fail(b, "layer %s is not elementwise", l->name);
    }
}
