/* Data-parallel training (DDP): every rank runs the same step on its own
 * shard of the global batch, and the gradients are averaged over the ranks
 * before the update, so every rank applies the same update to the same
 * weights. The module plugs into the step driver's gradient hooks
 * (step_grad_hooks): grads_ready(layer) completes the buckets of the
 * gradients backward has produced and starts their reduction at once, so
 * that communication runs while the rest of the backward computes;
 * before_update waits for the last reductions (bounded by the world's
 * timeout) and writes the averages back.
 *
 * Two transports: MPI (host gradients: MPI_Iallreduce, progressed from the
 * hooks while backward runs) and NCCL (device gradients: ncclAllReduce on a
 * stream of its own that waits on an event of the step's stream, and the
 * update waits on the reductions' last event; a watchdog thread ends the run
 * on an asynchronous NCCL error or a reduction that does not finish in time).
 * Gradients travel in fp32 or bf16. Nothing here knows a backend's internals:
 * a backend lends its gradient storage through ddp_backend_access. */
#ifndef ROOFLINE_DDP_H
#define ROOFLINE_DDP_H

#include <stdbool.h>
#include <stdint.h>

#include "../backend.h"
#include "../step.h"
#include "ddp_plan.h"
#include "ddp_world.h"

/* A gradient's element type and storage: the backend's own (backend.h). */
typedef grad_elem ddp_elem;
#define DDP_F32 GRAD_F32
#define DDP_F16 GRAD_F16
#define DDP_BF16 GRAD_BF16
typedef grad_memory ddp_grad_storage;

/* What DDP needs of a backend beyond backend_ops. */
typedef struct {
    int (*grad_storage)(backend *b, int layer, buffer_kind kind, ddp_grad_storage *out);
    /* the stream a step's work is queued on (a cudaStream_t); NULL on a host
     * backend, or where the backend runs on the default stream */
    void *(*stream)(backend *b);
} ddp_backend_access;

typedef enum { DDP_COMM_FP32, DDP_COMM_BF16 } ddp_comm_precision;

typedef struct {
    int64_t bucket_cap_bytes;   /* 0: one reduction after the whole backward */
    int64_t first_bucket_bytes; /* the first bucket's cap (DDP_FIRST_BUCKET_BYTES) */
    ddp_comm_precision comm;
    int device;                 /* NCCL: this rank's CUDA device */
} ddp_options;

/* One step of one rank, in milliseconds. */
typedef struct {
    /* host time in the hooks during backward: packing, launching and
     * progressing reductions (on the MPI transport, time taken from compute) */
    double hook_ms;
    /* before the update: waiting for the last reductions and unpacking */
    double wait_ms;
    /* communication the step was made longer by: on MPI everything DDP did
     * on the step's thread (hook_ms + wait_ms); on NCCL how long the update
     * waited behind the reductions after the backward's last kernel */
    double exposed_ms;
    /* time with a reduction in flight (MPI: from a launch to the first test
     * that saw it done; NCCL: the reductions' own time on their stream) */
    double comm_ms;
    /* of hook_ms + wait_ms: copying the gradients into the buckets and the
     * averages back (host transports; a GPU packs on its own stream: 0) */
    double copy_ms;
    double pack_ms;             /* of copy_ms: the packing, in the hooks during backward */
    /* buckets whose reduction was seen complete before the update began to
     * wait for them (host transports; -1 where the transport cannot tell) */
    int done_in_backward;
    int64_t bytes;              /* gradient bytes each rank sends into the reductions */
    int buckets;
} ddp_step_stats;

typedef struct ddp ddp;

/* The communicator and buckets for this backend. With `access` NULL or
 * without grad_storage the backend cannot take part: an error naming it. */
ddp *ddp_create(ddp_world *w, const network *net, const backend_ops *ops, backend *b,
                const ddp_backend_access *access, const ddp_options *o, char *err,
                size_t err_len);
void ddp_destroy(ddp *d);

/* The hooks to put in step_driver.grad_hooks. */
step_grad_hooks ddp_hooks(ddp *d);

/* Around each step: begin before step_launch, end after step_wait (device
 * timings are read then). */
void ddp_step_begin(ddp *d);
int ddp_step_end(ddp *d, ddp_step_stats *out);

/* The step's reductions alone, back to back with no compute, on every rank
 * together: the median over `reps` of the time they take (the communication
 * cost that overlap hides). */
int ddp_comm_alone(ddp *d, int reps, double *ms);
/* The same for the last bucket alone, the one launched after the whole
 * backward, which nothing is left to hide. */
int ddp_comm_alone_last(ddp *d, int reps, double *ms);

/* A digest of every parameter (fp32 master weights, read through
 * backend_ops.read), and whether it is the same on every rank. */
int ddp_same_weights(ddp_world *w, const backend_ops *ops, backend *b, const network *net,
                     bool *same, char *err, size_t err_len);

const char *ddp_transport_name(const ddp *d);
const ddp_plan *ddp_get_plan(const ddp *d);
/* Device memory DDP holds beside the backend's (the NCCL buckets; 0 on MPI). */
int64_t ddp_device_bytes(const ddp *d);
/* The last failure (hooks included). */
const char *ddp_error(const ddp *d);

/* Median of n values (sorts them). */
double ddp_median(double *v, int n);

/* Element size of the communicated type. */
int ddp_comm_bytes(ddp_comm_precision p);
const char *ddp_comm_name(ddp_comm_precision p);

#endif
