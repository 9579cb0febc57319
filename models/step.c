#include "step.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int step_init(step_driver *d, const backend_ops *ops, backend *b, const network *net,
              sgd_params sgd)
{
    memset(d, 0, sizeof *d);
    d->ops = ops;
    d->b = b;
    d->net = net;
    d->sgd = sgd;
    d->grad_written = calloc((size_t)net->n_layers, sizeof *d->grad_written);
    return d->grad_written ? 0 : -1;
}

void step_free(step_driver *d)
{
    free(d->grad_written);
    d->grad_written = NULL;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs one operation; when tracing, synchronised and timed on its own. */
#define TRACED(d, layer_index, phase, is_loss, call)                                          \
    do {                                                                                      \
        double t0_ = 0;                                                                       \
        if ((d)->trace) {                                                                     \
            if ((d)->ops->sync((d)->b))                                                       \
                return -1;                                                                    \
            t0_ = now_seconds();                                                              \
        }                                                                                     \
        if (call)                                                                             \
            return -1;                                                                        \
        if ((d)->trace) {                                                                     \
            if ((d)->ops->sync((d)->b))                                                       \
                return -1;                                                                    \
            (d)->trace((d)->trace_ctx, layer_index, phase, is_loss, now_seconds() - t0_);     \
        }                                                                                     \
    } while (0)

int step_forward_backward(step_driver *d, float *loss)
{
    const network *net = d->net;
    for (int i = 0; i < net->n_layers; i++)
        TRACED(d, i, PASS_FWD, false, d->ops->forward(d->b, i));
    TRACED(d, -1, PASS_FWD, true, d->ops->loss(d->b, loss));

    memset(d->grad_written, 0, (size_t)net->n_layers * sizeof *d->grad_written);
    d->grad_written[net->n_layers - 1] = true; /* the loss wrote the logits' gradient */
    for (int i = net->n_layers - 1; i >= 0; i--) {
        const layer *l = &net->layers[i];
        if (l->params > 0)
            TRACED(d, i, PASS_BWD_WEIGHTS, false, d->ops->backward_weights(d->b, i));
        if (!l->computes_input_grad)
            continue;
        bool accumulate[LAYER_MAX_INPUTS] = {false, false};
        for (int k = 0; k < l->n_inputs; k++) {
            int in = l->inputs[k];
            if (in == GRAPH_INPUT)
                continue;
            accumulate[k] = d->grad_written[in];
            d->grad_written[in] = true;
        }
        /* the two inputs of an add may be one tensor: the second adds */
        if (l->n_inputs == 2 && l->inputs[0] == l->inputs[1])
            accumulate[1] = true;
        TRACED(d, i, PASS_BWD_DATA, false, d->ops->backward_data(d->b, i, accumulate));
    }
    return 0;
}

int step_run(step_driver *d, float *loss)
{
    if (step_forward_backward(d, loss))
        return -1;
    for (int i = 0; i < d->net->n_layers; i++)
        if (d->net->layers[i].params > 0)
            TRACED(d, i, PASS_UPDATE, false, d->ops->update(d->b, i, &d->sgd));
    return d->ops->sync(d->b);
}
