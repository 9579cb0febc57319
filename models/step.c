#include "step.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int step_init(step_driver *d, const backend_ops *ops, backend *b, const network *net,
              sgd_params sgd)
{
    memset(d, 0, sizeof *d);
    d->ops = ops;
    d->b = b;
    d->net = net;
    d->sgd = sgd;
    return 0;
}

void step_free(step_driver *d)
{
    (void)d;
}

bool step_grad_accumulates(const network *net, int index, int k)
{
    const layer *l = &net->layers[index];
    int in = l->inputs[k];
    if (in == GRAPH_INPUT)
        return false;
    /* the two inputs of an add may be one tensor: the second adds */
    if (k == 1 && l->inputs[0] == in)
        return true;
    /* backward runs in reverse: a later consumer's backward wrote it first */
    for (int j = index + 1; j < net->n_layers; j++) {
        const layer *c = &net->layers[j];
        if (!c->computes_input_grad)
            continue;
        for (int m = 0; m < c->n_inputs; m++)
            if (c->inputs[m] == in)
                return true;
    }
    return false;
}

const char *step_error(const step_driver *d)
{
    return d->err[0] ? d->err : d->ops->error(d->b);
}

static int fail(step_driver *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(step_driver *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* Runs one operation between the observer's calls. A backend failure leaves
 * d->err empty, so step_error gives the backend's message. */
#define OBSERVED(d, layer_index, phase, call)                                                 \
    do {                                                                                      \
        if ((d)->observer.op_begin &&                                                         \
            (d)->observer.op_begin((d)->observer.ctx, layer_index, phase, (d)->err,           \
                                   sizeof (d)->err))                                          \
            return -1;                                                                        \
        if (call)                                                                             \
            return -1;                                                                        \
        if ((d)->observer.op_end &&                                                           \
            (d)->observer.op_end((d)->observer.ctx, layer_index, phase, (d)->err,             \
                                 sizeof (d)->err))                                            \
            return -1;                                                                        \
    } while (0)

static int backward(step_driver *d)
{
    const network *net = d->net;
    for (int i = net->n_layers - 1; i >= 0; i--) {
        const layer *l = &net->layers[i];
        if (l->params > 0)
            OBSERVED(d, i, PASS_BWD_WEIGHTS, d->ops->backward_weights(d->b, i));
        if (l->computes_input_grad) {
            bool accumulate[LAYER_MAX_INPUTS] = {false, false};
            for (int k = 0; k < l->n_inputs; k++)
                accumulate[k] = step_grad_accumulates(net, i, k);
            OBSERVED(d, i, PASS_BWD_DATA, d->ops->backward_data(d->b, i, accumulate));
        }
        /* after its backward_data too, so a reduction never races the
         * kernels still reading this layer's weights */
        if (l->params > 0 && d->grad_hooks.grads_ready &&
            d->grad_hooks.grads_ready(d->grad_hooks.ctx, i, d->err, sizeof d->err))
            return -1;
    }
    return 0;
}

static int forward_and_loss(step_driver *d)
{
    for (int i = 0; i < d->net->n_layers; i++)
        OBSERVED(d, i, PASS_FWD, d->ops->forward(d->b, i));
    OBSERVED(d, STEP_LOSS, PASS_FWD, d->ops->loss(d->b));
    return 0;
}

static int update(step_driver *d)
{
    if (d->grad_hooks.before_update &&
        d->grad_hooks.before_update(d->grad_hooks.ctx, d->err, sizeof d->err))
        return -1;
    if (d->ops->update_all) {
        OBSERVED(d, STEP_ALL_LAYERS, PASS_UPDATE, d->ops->update_all(d->b, &d->sgd));
        return 0;
    }
    for (int i = 0; i < d->net->n_layers; i++)
        if (d->net->layers[i].params > 0)
            OBSERVED(d, i, PASS_UPDATE, d->ops->update(d->b, i, &d->sgd));
    return 0;
}

/* The operations of one step, queued. */
static int queue_step(step_driver *d)
{
    d->err[0] = '\0';
    if (forward_and_loss(d) || backward(d) || update(d))
        return -1;
    return 0;
}

int step_launch(step_driver *d)
{
    if (d->captured) {
        d->err[0] = '\0';
        return d->ops->replay(d->b);
    }
    return queue_step(d);
}

int step_wait(step_driver *d, float *loss)
{
    if (d->ops->sync(d->b) || d->ops->read_loss(d->b, loss))
        return -1;
    if (!isfinite(*loss))
        return fail(d, "the loss is %f: training diverged (try a smaller --lr)", *loss);
    return 0;
}

int step_run(step_driver *d, float *loss)
{
    if (step_launch(d))
        return -1;
    return step_wait(d, loss);
}

int step_capture(step_driver *d)
{
    if (!d->ops->capture_begin || !d->ops->capture_end || !d->ops->replay)
        return fail(d, "the %s backend cannot capture a step as a graph", d->ops->name);
    if (d->observer.op_begin || d->observer.op_end)
        return fail(d, "a traced step cannot be captured as a graph");
    if (d->ops->capture_begin(d->b))
        return -1;
    int rc = queue_step(d);
    /* end the capture even after a failure, so the backend stays usable */
    if (d->ops->capture_end(d->b) || rc)
        return -1;
    d->captured = true;
    return 0;
}

int step_forward_backward(step_driver *d, float *loss)
{
    d->err[0] = '\0';
    if (forward_and_loss(d) || backward(d))
        return -1;
    return step_wait(d, loss);
}
