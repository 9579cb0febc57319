/* The backend-independent training step: forward, softmax cross-entropy,
 * backward in reverse order (gradients of a branch accumulate), SGD update.
 * Two places let other parts hook in without the driver knowing them: an
 * observer around every operation (the per-kernel trace) and the gradient
 * hooks (data-parallel reduction, as soon as a layer's gradients are ready). */
#ifndef ROOFLINE_STEP_H
#define ROOFLINE_STEP_H

#include "backend.h"
#include "cost.h"

enum { STEP_ERR_LEN = 400 };

/* Called before and after each operation of a step (layer STEP_LOSS for the
 * loss, with phase PASS_FWD; STEP_ALL_LAYERS for a fused update). A non-zero
 * return stops the step with the message written to err. */
typedef struct {
    void *ctx;
    int (*op_begin)(void *ctx, int layer, pass phase, char *err, size_t err_len);
    int (*op_end)(void *ctx, int layer, pass phase, char *err, size_t err_len);
} step_observer;

/* grads_ready: after the backward of `layer`, whose weight gradients are then
 * complete (called in backward order, only for layers with parameters).
 * before_update: after the whole backward, before the first update. */
typedef struct {
    void *ctx;
    int (*grads_ready)(void *ctx, int layer, char *err, size_t err_len);
    int (*before_update)(void *ctx, char *err, size_t err_len);
} step_grad_hooks;

typedef struct {
    const backend_ops *ops;
    backend *b;
    const network *net;
    sgd_params sgd;
    step_observer observer;     /* zero: none */
    step_grad_hooks grad_hooks; /* zero: none */
    bool captured;              /* the backend holds this step as one graph */
    char err[STEP_ERR_LEN];     /* the driver's or a hook's failure, else "" */
} step_driver;

int step_init(step_driver *d, const backend_ops *ops, backend *b, const network *net,
              sgd_params sgd);
void step_free(step_driver *d);

/* Queues one training step on the batch set in the backend (the captured
 * graph once step_capture succeeded). Returns 0, or -1: see step_error. */
int step_launch(step_driver *d);
/* Waits for the queued step; its loss (before the update). A loss that is not
 * finite is an error: the training diverged, and such a step is not a
 * representative one to time. */
int step_wait(step_driver *d, float *loss);
/* step_launch then step_wait. */
int step_run(step_driver *d, float *loss);

/* Records one whole step into the backend's graph (nothing runs); later
 * launches replay it. -1 where the backend cannot capture. */
int step_capture(step_driver *d);

/* Forward and loss only, then backward; no update (tests use it). */
int step_forward_backward(step_driver *d, float *loss);

/* Whether the backward of layer `index` adds its gradient for input k to what the
 * input's gradient already holds (the input has a later consumer, whose
 * backward ran first, or is the add's first input too) instead of writing it:
 * the accumulate[] that backward_data is given. */
bool step_grad_accumulates(const network *net, int index, int k);

/* Why the last call failed: the driver's own message, else the backend's. */
const char *step_error(const step_driver *d);

#endif
