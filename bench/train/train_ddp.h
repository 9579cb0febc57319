/* bin/train --ddp: the DDP module on this process's step driver, every
 * rank's step records gathered on rank 0 (which writes steps.csv for all
 * ranks, the summary and the scaling.csv row), the reductions timed alone
 * after the timed steps, and the check that every rank ends with the same
 * weights. A test hook kills one rank in the middle of a step. */
#ifndef ROOFLINE_TRAIN_DDP_H
#define ROOFLINE_TRAIN_DDP_H

#include <stdint.h>

#include "../../models/ddp/ddp.h"
#include "../../models/step.h"
#include "train_run.h"

/* One rank's timed step, as rank 0 receives it. */
typedef struct {
    double step_ms, exposed_ms, comm_ms, hook_ms, wait_ms, copy_ms, pack_ms;
    double hook_mpi_ms, wait_mpi_ms, unpack_ms; /* hook_ms - pack, wait_ms - unpack, copy - pack */
    long long peak_mem;
    float loss;
    int32_t rank;
    int32_t done_in_backward;   /* buckets reduced before the update waited; -1 unknown */
} train_rank_step;

typedef struct {
    const train_options *o;
    ddp_world *world;
    ddp *d;
    const network *net;
    const backend_ops *ops;
    backend *b;
    step_grad_hooks inner;      /* the DDP module's */
    int step;                   /* the step under way; warm-up steps are negative */
    int fault_layer;            /* the layer whose grads_ready kills a faulty rank */
    train_rank_step *all;       /* rank 0: iters x size, step-major */
    double comm_alone_ms;
    double last_alone_ms;       /* the last bucket alone; NaN where not timed */
    bool same_weights;
} train_ddp;

/* After the backend holds its initial weights: every rank has started and
 * holds the same weights, the DDP module is created and its hooks are put
 * in drv. 0, or -1 with the reason in err. */
int train_ddp_start(train_ddp *t, const train_options *o, ddp_world *w, const network *net,
                    const backend_ops *ops, backend *b, const ddp_backend_access *access,
                    step_driver *drv, char *err, size_t err_len);

/* Around one step (`it` as run_steps counts: warm-up negative). */
void train_ddp_step_begin(train_ddp *t, int it);
/* After step_wait: this rank's record; for a timed step (it >= 0) gathered
 * on rank 0 into t->all. */
int train_ddp_step_end(train_ddp *t, int it, double ms, float loss, long long peak_mem,
                       char *err, size_t err_len);

/* After the timed steps: the reductions alone, and the weights compared
 * between ranks (same_weights; a difference is an error). */
int train_ddp_finish(train_ddp *t, char *err, size_t err_len);

/* Rank 0: the summary lines (per rank and the breakdown). */
void train_ddp_print(const train_ddp *t, double flops_per_rank_step);

/* Rank 0: one scaling.csv row appended to o->scaling_out. */
int train_ddp_scaling_row(const train_ddp *t, const char *backend_name, int threads, char *err,
                          size_t err_len);

void train_ddp_free(train_ddp *t);

#endif
