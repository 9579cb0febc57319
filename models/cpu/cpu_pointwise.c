/* ReLU, ReLU6, residual add and dropout: elementwise OpenMP loops. The
 * activations mask their gradient with their own output, as PyTorch's in-place
 * ReLU does. */
#include "../rng.h"
#include "cpu_internal.h"

int cpu_pointwise_forward(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *x = cpu_input(b, i, 0);
    float *y = cl->out;
    int64_t n = backend_buffer_elems(b->net, i, b->cfg.batch, BUF_OUTPUT);
    if (cl->fused_into >= 0) /* the batch norm before has applied it (cpu_norm.c) */
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
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; j++)
            y[j] = x[j] + x2[j];
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

int cpu_pointwise_backward(backend *b, int i, const bool accumulate[LAYER_MAX_INPUTS])
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *dy = cl->grad, *y = cl->out;
    int64_t n = backend_buffer_elems(b->net, i, b->cfg.batch, BUF_OUTPUT);
    if (l->type == LAYER_ADD) {
        if (l->inputs[0] == GRAPH_INPUT || l->inputs[1] == GRAPH_INPUT) {
            int k = l->inputs[0] == GRAPH_INPUT;
            if (l->inputs[k] != GRAPH_INPUT)
                cpu_store(b->layers[l->inputs[k]].grad, dy, n, accumulate[k]);
            return 0;
        }
        /* both gradients in one pass over dy; d0 and d1 may be one buffer
         * (add(x, x)), which the element-by-element order keeps right */
        float *d0 = b->layers[l->inputs[0]].grad, *d1 = b->layers[l->inputs[1]].grad;
        bool acc0 = accumulate[0], acc1 = accumulate[1];
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < n; j++) {
            float g = dy[j];
            d0[j] = acc0 ? d0[j] + g : g;
            d1[j] = acc1 ? d1[j] + g : g;
        }
        return 0;
    }
    if (cl->fused_into >= 0) /* the batch norm reads dy and masks it itself */
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
