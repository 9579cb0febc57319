/* The backend-independent training step: forward, softmax cross-entropy,
 * backward in reverse order (gradients of a branch accumulate), SGD update. */
#ifndef ROOFLINE_STEP_H
#define ROOFLINE_STEP_H

#include "backend.h"
#include "cost.h"

/* Called after each operation of a traced step with its wall time; the step
 * synchronises the backend around every operation only when tracing. layer is
 * -1 for the loss. */
typedef void (*step_trace_fn)(void *ctx, int layer, pass phase, bool is_loss, double seconds);

typedef struct {
    const backend_ops *ops;
    backend *b;
    const network *net;
    sgd_params sgd;
    bool *grad_written;      /* per layer output, scratch for one step */
    step_trace_fn trace;     /* NULL for a timed (untraced) step */
    void *trace_ctx;
} step_driver;

int step_init(step_driver *d, const backend_ops *ops, backend *b, const network *net,
              sgd_params sgd);
void step_free(step_driver *d);

/* One training step on the batch set in the backend; the loss before the
 * update. Returns 0, or -1 with the backend's error. */
int step_run(step_driver *d, float *loss);

/* Forward and loss only, then backward; no update (tests use it). */
int step_forward_backward(step_driver *d, float *loss);

#endif
