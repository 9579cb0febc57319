/* ReLU, ReLU6, residual add and dropout: elementwise OpenMP loops. The
 * activations mask their gradient with their own output, as PyTorch's in-place
 * ReLU does. An add whose activation is fused into it (cpu_backend.c,
 * cpu_layer.act_layer) applies it in forward and masks in backward. */
#include "../rng.h"
#include "cpu_internal.h"

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
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; j++)
            y[j] = x[j] > 0.0f ? x[j] : 0.0f;
        return 0;
    case LAYER_RELU6:
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; j++)
            y[j] = x[j] > 0.0f ? (x[j] < 6.0f ? x[j] : 6.0f) : 0.0f;
        return 0;
    case LAYER_ADD: {
        const float *x2 = cpu_input(b, i, 1);
        int act = cl->act_layer < 0 ? LAYER_ADD : b->net->layers[cl->act_layer].type;
        if (act == LAYER_RELU) {
#pragma omp parallel for schedule(static)
            for (int64_t j = 0; j < n; j++) {
                float s = x[j] + x2[j];
                y[j] = s > 0.0f ? s : 0.0f;
            }
        } else if (act == LAYER_RELU6) {
#pragma omp parallel for schedule(static)
            for (int64_t j = 0; j < n; j++) {
                float s = x[j] + x2[j];
                y[j] = s > 0.0f ? (s < 6.0f ? s : 6.0f) : 0.0f;
            }
        } else {
#pragma omp parallel for schedule(static)
            for (int64_t j = 0; j < n; j++)
                y[j] = x[j] + x2[j];
        }
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

/* An add's backward: its gradient to both inputs in one pass over dy, where
 * a fused activation's gradient is masked by the output as that activation's
 * own backward would have. d0 and d1 may be one buffer (add(x, x)), which
 * the element-by-element order keeps right. */
static int add_backward(backend *b, int i, const bool accumulate[LAYER_MAX_INPUTS])
{
    const layer *l = &b->net->layers[i];
    const cpu_layer *cl = &b->layers[i];
    int64_t n = backend_buffer_elems(b->net, i, b->cfg.batch, BUF_OUTPUT);
    int act = cl->act_layer < 0 ? LAYER_ADD : b->net->layers[cl->act_layer].type;
    const float *dy = cl->act_layer < 0 ? cl->grad : b->layers[cl->act_layer].grad;
    const float *y = cl->out;
    float *d[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++)
        if (l->inputs[k] != GRAPH_INPUT)
            d[k] = b->layers[l->inputs[k]].grad;
    if (act == LAYER_ADD && (!d[0] || !d[1])) {
        int k = !d[0];
        if (d[k])
            cpu_store(d[k], dy, n, accumulate[k]);
        return 0;
    }
    bool acc0 = accumulate[0], acc1 = accumulate[1];
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < n; j++) {
        bool pass = act == LAYER_ADD || (y[j] > 0.0f && (act == LAYER_RELU || y[j] < 6.0f));
        float g = pass ? dy[j] : 0.0f;
        if (d[0])
            d[0][j] = acc0 ? d[0][j] + g : g;
        if (d[1])
            d[1][j] = acc1 ? d[1][j] + g : g;
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
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; j++) {
            float g = y[j] > 0.0f ? dy[j] : 0.0f;
            dx[j] = acc ? dx[j] + g : g;
        }
        return 0;
    case LAYER_RELU6:
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; j++) {
            float g = (y[j] > 0.0f && y[j] < 6.0f) ? dy[j] : 0.0f;
            dx[j] = acc ? dx[j] + g : g;
        }
        return 0;
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
