/* The DDP context shared by ddp.c and its transports (ddp_mpi.c,
 * ddp_nccl.c): the plan, where each planned tensor lives, and the transport's
 * operations on a bucket. */
#ifndef ROOFLINE_DDP_INTERNAL_H
#define ROOFLINE_DDP_INTERNAL_H

#include "ddp.h"

typedef struct {
    const char *name;
    int (*setup)(ddp *d);
    /* pack the bucket's gradients and start its reduction */
    int (*launch)(ddp *d, int bucket);
    /* advance what is in flight (host transports) */
    int (*progress)(ddp *d);
    /* every bucket launched: wait for them (host) or make the step's stream
     * wait (device), the averages written back into the gradients */
    int (*finish)(ddp *d);
    /* after the step's sync: fill the transport's part of the stats */
    int (*step_end)(ddp *d, ddp_step_stats *s);
    /* buckets [first, n_buckets) reduced back to back with nothing else
     * running, once (the ranks aligned just before): the wall time in ms */
    int (*time_buckets)(ddp *d, int first, double *ms);
    void (*destroy)(ddp *d);
} ddp_transport;

extern const ddp_transport ddp_mpi_transport;
#if defined(HAVE_NCCL) && defined(HAVE_CUDA) && defined(HAVE_MPI)
extern const ddp_transport ddp_nccl_transport;
#endif

struct ddp {
    ddp_world *world;
    const network *net;
    const backend_ops *ops;
    backend *b;
    ddp_backend_access access;
    ddp_options opt;
    ddp_plan plan;
    ddp_grad_storage *grads;    /* per plan tensor */
    bool device;                /* the gradients live on a device */
    int next_bucket;            /* the next bucket to launch this step */
    const ddp_transport *tr;
    void *state;                /* the transport's */
    int64_t device_bytes;       /* device memory the transport holds (its buckets) */
    ddp_step_stats cur;         /* of the step under way */
    char err[DDP_ERR_LEN];
};

int ddp_fail(ddp *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
