/* fp16's dynamic loss scale, as PyTorch's GradScaler keeps it: start at 2^16;
 * a step with a non-finite gradient is skipped and halves the scale; 2000
 * clean steps in a row double it. Plain C, so the host tests the state machine
 * that the device runs (the update kernel calls loss_scale_update). */
#ifndef ROOFLINE_LOSS_SCALE_H
#define ROOFLINE_LOSS_SCALE_H

#include <stdint.h>

#ifdef __CUDACC__
#define LOSS_SCALE_FN static inline __host__ __device__
#else
#define LOSS_SCALE_FN static inline
#endif

#define LOSS_SCALE_INIT 65536.0f
#define LOSS_SCALE_BACKOFF 0.5f
#define LOSS_SCALE_GROWTH 2.0f
enum { LOSS_SCALE_GROWTH_INTERVAL = 2000 };

typedef struct {
    float scale;              /* the loss and every gradient are multiplied by it */
    int32_t found_inf;        /* set during a step when a gradient is not finite */
    int32_t clean_steps;      /* since the last change of scale */
    int64_t skipped_steps;    /* steps whose update was skipped */
} loss_scale_state;

LOSS_SCALE_FN loss_scale_state loss_scale_initial(void)
{
    loss_scale_state s = {LOSS_SCALE_INIT, 0, 0, 0};
    return s;
}

/* After a step's gradients were checked (found_inf) and its update skipped or
 * applied: the scale for the next step; clears found_inf. */
LOSS_SCALE_FN void loss_scale_update(loss_scale_state *s)
{
    if (s->found_inf) {
        s->scale *= LOSS_SCALE_BACKOFF;
        s->clean_steps = 0;
        s->skipped_steps++;
    } else if (++s->clean_steps == LOSS_SCALE_GROWTH_INTERVAL) {
        s->scale *= LOSS_SCALE_GROWTH;
        s->clean_steps = 0;
    }
    s->found_inf = 0;
}

#endif
