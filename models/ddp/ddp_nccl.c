/* The device transport: NCCL on a communication stream of its own. When a
 * bucket's last layer has queued its backward, an event recorded on the
 * step's stream lets the communication stream pack the bucket, all-reduce it
 * (ncclSum; the sum is scaled by 1/ranks in fp32 as it is written back, as
 * the MPI transport does: NCCL's ncclAvg multiplies each input by 1/ranks
 * rounded to the element type before summing, and bf16's 1/3 is 0.2% off)
 * and write it back, while the step's stream goes on with the backward; the
 * update waits on the event after the last bucket. Nothing blocks the host:
 * the step stays queued ahead of the GPU. The communicator is made as
 * bin/allreduce makes its own (ddp_nccl_comm.h: rank 0's unique id broadcast
 * over MPI, the creation bounded by a guard). A watchdog thread polls
 * ncclCommGetAsyncError and the reductions' completion; an asynchronous
 * error, or a bucket's reduction not done within the world's timeout of the
 * bucket being packed (a lost peer leaves NCCL's kernels spinning), or an
 * ncclAllReduce call that does not return within it (NCCL connects peers
 * inside a first call), ends the rank with one line, after ncclCommAbort
 * unless the main thread is inside an NCCL call, so that it never hangs.
 *
 * Compiled wherever NCCL is found; it has never run on a GPU (the GPU machines
 * at hand have one GPU each and NCCL refuses two ranks on one device). */
#if defined(HAVE_NCCL) && defined(HAVE_CUDA) && defined(HAVE_MPI)

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ddp_internal.h"
#include "ddp_nccl_comm.h"
#include "ddp_pack.h"

typedef struct {
    void *buf;                   /* comm elem type */
    cudaEvent_t ready, start, end;
    cudaEvent_t packed, reduced; /* around its ncclAllReduce, for the watchdog */
    char what[48];               /* "reducing gradient bucket k of n", for the line */
} dev_bucket;

/* A wait the watchdog bounds: `done` not complete within the limit, counted
 * from when `after` completed (NULL: from the arming; done NULL: until
 * disarmed), is a lost peer. */
typedef struct {
    cudaEvent_t after, done;
    const char *what;
} watch_item;

typedef struct {
    ncclComm_t comm;
    bool have_comm;
    cudaStream_t stream;         /* communication */
    cudaStream_t compute;        /* the backend's step */
    dev_bucket *buckets;
    cudaEvent_t bwd_end, all_done, alone[2];
    ncclDataType_t type;
    int comm_elem;               /* ddp_elem code */
    int device;
    /* the watchdog's view, under lock */
    pthread_t watchdog;
    bool watchdog_running, stop;
    pthread_mutex_t lock;
    const watch_item *watch;     /* watched in order while armed */
    int n_watch, next_watch;
    watch_item one;              /* a single wait's (arm_one) */
    watch_item *steps_watch;     /* a step's: each bucket's reduction */
    bool armed;
    /* the main thread is inside an NCCL call on comm: the watchdog ending the
     * rank then exits without ncclCommAbort (NCCL allows one thread at a time
     * on a communicator) */
    bool in_call;
    bool reported;               /* the main thread reported an NCCL error: not again */
    double clock_from, limit_s;
    const ddp_world *world;      /* who this rank is and its timeout option, for the line */
} nccl_state;

static int nccl_failed(ddp *d, const char *file, int line, const char *call, ncclResult_t r)
{
    nccl_state *s = d->state;
    return ddp_nccl_fail(s && s->have_comm ? s->comm : NULL, d->err, sizeof d->err, file, line,
                         call, r);
}

#define NCCL_TRY(d, call)                                                                     \
    do {                                                                                      \
        ncclResult_t r_ = (call);                                                             \
        if (r_ != ncclSuccess)                                                                \
            return nccl_failed((d), __FILE__, __LINE__, #call, r_);                           \
    } while (0)

#define CUDA_TRY(d, call)                                                                     \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess)                                                                \
            return ddp_fail((d), "%s:%d: %s failed: %s", __FILE__, __LINE__, #call,           \
                            cudaGetErrorString(e_));                                          \
    } while (0)

/* ---- watchdog ------------------------------------------------------------- */

/* ncclCommAbort has been seen to hang (joining a proxy thread stuck in
 * poll(), NVIDIA/nccl issues 863, 992, 1777): it gets this long, then the
 * rank exits anyway, so that timeout + grace stays well under a minute. */
enum { ABORT_GRACE_S = 10 };

static void *abort_main(void *arg)
{
    ncclCommAbort(*(ncclComm_t *)arg); /* NCCL's kernels return, the GPU is left usable */
    return NULL;
}

/* Called with s->lock held: nccl_destroy clears have_comm under the lock
 * before it tears the communicator down, so the two never touch it at once
 * (the main thread then waits on the lock until _exit). */
_Noreturn static void watchdog_end(nccl_state *s, char *why, size_t why_len)
{
    bool abort_comm = s->have_comm && !s->in_call;
    if (abort_comm) {
        size_t n = strlen(why);
        snprintf(why + n, why_len - n, "; NCCL communicator aborted");
    }
    ddp_world_say(s->world, "train", why);
    pthread_t t;
    struct timespec until;
    if (abort_comm && pthread_create(&t, NULL, abort_main, &s->comm) == 0 &&
        clock_gettime(CLOCK_REALTIME, &until) == 0) {
        until.tv_sec += ABORT_GRACE_S;
        pthread_timedjoin_np(t, NULL, &until);
    }
    _exit(1);
}

/* 1 when ev has completed, 0 while it is pending, -1 with the line in why
 * when the GPU reports an error (a fault of this rank, not a lost peer). */
static int event_state(cudaEvent_t ev, const char *what, char *why, size_t why_len)
{
    cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess)
        return 1;
    if (e == cudaErrorNotReady)
        return 0;
    snprintf(why, why_len, "CUDA error while %s: %s", what, cudaGetErrorString(e));
    return -1;
}

/* Called with s->lock held: the watch's next item after this poll, or a
 * line in why when it has waited past the limit or the GPU failed. */
static void poll_watch(nccl_state *s, char *why, size_t why_len)
{
    while (s->next_watch < s->n_watch) {
        const watch_item *w = &s->watch[s->next_watch];
        int done = w->done ? event_state(w->done, w->what, why, why_len) : 0;
        if (done < 0)
            return;
        if (done) {
            s->next_watch++;
            s->clock_from = ddp_now();
            continue;
        }
        int after = w->after ? event_state(w->after, w->what, why, why_len) : 1;
        if (after < 0)
            return;
        if (!after)
            s->clock_from = ddp_now(); /* the rank's own work still runs: no peer waited for */
        else if (ddp_now() - s->clock_from > s->limit_s)
            ddp_no_answer(why, why_len, s->limit_s, w->what, s->world->timeout_option);
        return;
    }
    s->armed = false; /* every wait done: nothing to watch until the next arm */
}

static void *watchdog_main(void *arg)
{
    nccl_state *s = arg;
    cudaSetDevice(s->device);
    for (;;) {
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
        pthread_mutex_lock(&s->lock);
        if (s->stop) {
            pthread_mutex_unlock(&s->lock);
            return NULL;
        }
        char why[DDP_ERR_LEN] = "";
        /* an error the main thread has reported already gets no second line */
        if (s->have_comm && !s->reported)
            ddp_nccl_async_failed(s->comm,
                                  s->armed ? s->watch[s->next_watch].what : "running the steps",
                                  why, sizeof why);
        if (!why[0] && s->armed)
            poll_watch(s, why, sizeof why);
        if (why[0])
            watchdog_end(s, why, sizeof why); /* the lock held: see watchdog_end */
        pthread_mutex_unlock(&s->lock);
    }
}

/* Called with s->lock held: watches the n waits of `items` in order, each
 * for limit_s (see watch_item). */
static void arm_locked(nccl_state *s, const watch_item *items, int n, double limit_s)
{
    s->watch = items;
    s->n_watch = n;
    s->next_watch = 0;
    s->clock_from = ddp_now();
    s->limit_s = limit_s;
    s->armed = n > 0;
}

static void arm(nccl_state *s, const watch_item *items, int n, double limit_s)
{
    pthread_mutex_lock(&s->lock);
    arm_locked(s, items, n, limit_s);
    pthread_mutex_unlock(&s->lock);
}

/* Called with s->lock held: one wait, ev (NULL: until disarmed) within
 * limit_s from now. */
static void arm_one_locked(nccl_state *s, cudaEvent_t ev, double limit_s, const char *what)
{
    s->one = (watch_item){.after = NULL, .done = ev, .what = what};
    arm_locked(s, &s->one, 1, limit_s);
}

static void arm_one(nccl_state *s, cudaEvent_t ev, double limit_s, const char *what)
{
    pthread_mutex_lock(&s->lock);
    arm_one_locked(s, ev, limit_s, what);
    pthread_mutex_unlock(&s->lock);
}

static void disarm(nccl_state *s)
{
    pthread_mutex_lock(&s->lock);
    s->armed = false;
    s->in_call = false;
    s->watch = NULL;
    s->n_watch = s->next_watch = 0;
    pthread_mutex_unlock(&s->lock);
}

/* The main thread enters NCCL calls that queue reductions, bounded as a wait
 * (disarm ends it): NCCL 2.22 and later connect an algorithm's peers inside
 * the first call that uses it, a rendezvous with every peer on this thread,
 * so a peer that hangs there would hang it unwatched. */
static void enter_calls(nccl_state *s, const char *what)
{
    pthread_mutex_lock(&s->lock);
    arm_one_locked(s, NULL, s->world->timeout_s, what);
    s->in_call = true;
    pthread_mutex_unlock(&s->lock);
}

/* ---- setup ---------------------------------------------------------------- */

/* Bounded by its own guard (ddp_nccl_comm.h), before the watchdog may read
 * the communicator. */
static int make_comm(ddp *d)
{
    nccl_state *s = d->state;
    if (ddp_nccl_comm_open(d->world, "train", &s->comm, d->err, sizeof d->err))
        return -1;
    pthread_mutex_lock(&s->lock);
    s->have_comm = true;
    pthread_mutex_unlock(&s->lock);
    return 0;
}

static int nccl_setup(ddp *d)
{
    nccl_state *s = calloc(1, sizeof *s);
    if (!s)
        return ddp_fail(d, "out of memory for the NCCL transport");
    d->state = s;
    pthread_mutex_init(&s->lock, NULL);
    s->device = d->opt.device;
    s->world = d->world;
    CUDA_TRY(d, cudaSetDevice(s->device));
    s->compute = d->access.stream ? (cudaStream_t)d->access.stream(d->b) : NULL;
    int lo = 0, hi = 0;
    CUDA_TRY(d, cudaDeviceGetStreamPriorityRange(&lo, &hi));
    /* the highest priority, as PyTorch gives its NCCL streams: a bucket's
     * kernels start ahead of backward's queued ones */
    CUDA_TRY(d, cudaStreamCreateWithPriority(&s->stream, cudaStreamNonBlocking, hi));
    if (d->opt.comm == DDP_COMM_BF16) {
        s->type = ncclBfloat16;
        s->comm_elem = DDP_BF16;
    } else {
        s->type = ncclFloat32;
        s->comm_elem = DDP_F32;
    }
    s->buckets = calloc((size_t)d->plan.n_buckets, sizeof *s->buckets);
    s->steps_watch = calloc((size_t)d->plan.n_buckets, sizeof *s->steps_watch);
    if (!s->buckets || !s->steps_watch)
        return ddp_fail(d, "out of memory for %d buckets", d->plan.n_buckets);
    size_t elem = (size_t)ddp_comm_bytes(d->opt.comm);
    for (int k = 0; k < d->plan.n_buckets; k++) {
        dev_bucket *db = &s->buckets[k];
        size_t bytes = (size_t)d->plan.buckets[k].elems * elem;
        CUDA_TRY(d, cudaMalloc(&db->buf, bytes));
        d->device_bytes += (int64_t)bytes;
        CUDA_TRY(d, cudaEventCreateWithFlags(&db->ready, cudaEventDisableTiming));
        CUDA_TRY(d, cudaEventCreate(&db->start));
        CUDA_TRY(d, cudaEventCreate(&db->end));
        CUDA_TRY(d, cudaEventCreateWithFlags(&db->packed, cudaEventDisableTiming));
        CUDA_TRY(d, cudaEventCreateWithFlags(&db->reduced, cudaEventDisableTiming));
        /* the MPI transport's words for the same wait */
        snprintf(db->what, sizeof db->what, "reducing gradient bucket %d of %d", k + 1,
                 d->plan.n_buckets);
        /* a step's clock for a bucket starts when it is packed: before, the
         * rank's own backward and the buckets before it still run */
        s->steps_watch[k] =
            (watch_item){.after = db->packed, .done = db->reduced, .what = db->what};
    }
    CUDA_TRY(d, cudaEventCreate(&s->bwd_end));
    CUDA_TRY(d, cudaEventCreate(&s->all_done));
    CUDA_TRY(d, cudaEventCreate(&s->alone[0]));
    CUDA_TRY(d, cudaEventCreate(&s->alone[1]));
    if (pthread_create(&s->watchdog, NULL, watchdog_main, s) != 0)
        return ddp_fail(d, "cannot start the NCCL watchdog thread");
    s->watchdog_running = true;
    return make_comm(d);
}

/* Finalize and destroy after a clean run. After a failure (a peer lost: an
 * asynchronous error, which ncclAllReduce also returns; or reductions of this
 * rank still in flight that the others may never join) ncclCommDestroy would
 * wait forever for NCCL's kernels (it synchronizes the streams they ran on):
 * abort instead. The watchdog stays up and bounds the teardown either way. */
static void close_comm(nccl_state *s)
{
    pthread_mutex_lock(&s->lock);
    s->have_comm = false; /* the watchdog no longer touches it */
    pthread_mutex_unlock(&s->lock);
    ncclResult_t async = ncclSuccess;
    bool clean = ncclCommGetAsyncError(s->comm, &async) == ncclSuccess &&
                 async == ncclSuccess && cudaStreamQuery(s->stream) == cudaSuccess;
    if (clean && ncclCommFinalize(s->comm) == ncclSuccess)
        ncclCommDestroy(s->comm);
    else
        ncclCommAbort(s->comm);
}

static void nccl_destroy(ddp *d)
{
    nccl_state *s = d->state;
    if (s->have_comm) {
        arm_one(s, NULL, d->world->timeout_s, "destroying the NCCL communicator");
        close_comm(s);
        disarm(s);
    }
    if (s->watchdog_running) {
        pthread_mutex_lock(&s->lock);
        s->stop = true;
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->watchdog, NULL);
    }
    if (s->buckets) {
        for (int k = 0; k < d->plan.n_buckets; k++) {
            dev_bucket *db = &s->buckets[k];
            cudaFree(db->buf);
            cudaEvent_t evs[5] = {db->ready, db->start, db->end, db->packed, db->reduced};
            for (int e = 0; e < 5; e++)
                if (evs[e])
                    cudaEventDestroy(evs[e]);
        }
        free(s->buckets);
    }
    free(s->steps_watch);
    cudaEvent_t evs[4] = {s->bwd_end, s->all_done, s->alone[0], s->alone[1]};
    for (int e = 0; e < 4; e++)
        if (evs[e])
            cudaEventDestroy(evs[e]);
    if (s->stream)
        cudaStreamDestroy(s->stream);
    pthread_mutex_destroy(&s->lock);
    free(s);
    d->state = NULL;
}

/* ---- a step --------------------------------------------------------------- */

static int copy_tensors(ddp *d, int k, bool into_bucket)
{
    nccl_state *s = d->state;
    const ddp_bucket *bk = &d->plan.buckets[k];
    char *base = s->buckets[k].buf;
    size_t elem = (size_t)ddp_comm_bytes(d->opt.comm);
    for (int t = bk->first; t < bk->first + bk->count; t++) {
        const ddp_tensor *pt = &d->plan.tensors[t];
        const ddp_grad_storage *g = &d->grads[t];
        void *slot = base + (size_t)pt->offset * elem;
        int rc = into_bucket
                     ? ddp_cuda_convert(slot, s->comm_elem, g->ptr, g->elem, pt->elems, 1.0f,
                                        s->stream)
                     : ddp_cuda_convert(g->ptr, g->elem, slot, s->comm_elem, pt->elems,
                                        1.0f / (float)d->world->size, s->stream);
        if (rc != 0)
            return ddp_fail(d, "%s:%d: copying layer %s's gradient %s bucket %d: %s", __FILE__,
                            __LINE__, d->net->layers[pt->layer].name,
                            into_bucket ? "into" : "out of", k,
                            cudaGetErrorString((cudaError_t)rc));
    }
    return 0;
}

static int nccl_launch(ddp *d, int k)
{
    nccl_state *s = d->state;
    dev_bucket *db = &s->buckets[k];
    CUDA_TRY(d, cudaEventRecord(db->ready, s->compute));
    CUDA_TRY(d, cudaStreamWaitEvent(s->stream, db->ready, 0));
    CUDA_TRY(d, cudaEventRecord(db->start, s->stream));
    if (copy_tensors(d, k, true))
        return -1;
    CUDA_TRY(d, cudaEventRecord(db->packed, s->stream));
    enter_calls(s, db->what);
    ncclResult_t r = ncclAllReduce(db->buf, db->buf, (size_t)d->plan.buckets[k].elems, s->type,
                                   ncclSum, s->comm, s->stream);
    disarm(s);
    if (r != ncclSuccess)
        return nccl_failed(d, __FILE__, __LINE__, "ncclAllReduce", r);
    CUDA_TRY(d, cudaEventRecord(db->reduced, s->stream));
    /* the average goes back at once: only the update reads these gradients
     * again, and it waits for the last bucket */
    if (copy_tensors(d, k, false))
        return -1;
    CUDA_TRY(d, cudaEventRecord(db->end, s->stream));
    return 0;
}

static int nccl_progress(ddp *d)
{
    (void)d; /* NCCL progresses on the GPU and in its own proxy thread */
    return 0;
}

static int nccl_finish(ddp *d)
{
    nccl_state *s = d->state;
    CUDA_TRY(d, cudaEventRecord(s->bwd_end, s->compute));
    CUDA_TRY(d, cudaEventRecord(s->all_done, s->stream));
    CUDA_TRY(d, cudaStreamWaitEvent(s->compute, s->all_done, 0));
    /* each bucket's reduction from when it was packed: the step is queued
     * long before the GPU has run it, and a slow step is no sign of a lost
     * peer */
    arm(s, s->steps_watch, d->plan.n_buckets, d->world->timeout_s);
    return 0;
}

static int nccl_step_end(ddp *d, ddp_step_stats *st)
{
    nccl_state *s = d->state;
    /* the step's sync waited for all_done: read the timings */
    CUDA_TRY(d, cudaEventSynchronize(s->all_done));
    disarm(s);
    char why[DDP_ERR_LEN];
    pthread_mutex_lock(&s->lock);
    bool failed = ddp_nccl_async_failed(s->comm, "reducing the gradients", why, sizeof why);
    s->reported = failed;
    pthread_mutex_unlock(&s->lock);
    if (failed)
        return ddp_fail(d, "%s", why);
    double comm = 0.0;
    for (int k = 0; k < d->plan.n_buckets; k++) {
        float ms = 0.0f;
        CUDA_TRY(d, cudaEventElapsedTime(&ms, s->buckets[k].start, s->buckets[k].end));
        comm += ms;
    }
    float exposed = 0.0f;
    CUDA_TRY(d, cudaEventElapsedTime(&exposed, s->bwd_end, s->all_done));
    st->comm_ms = comm;
    st->exposed_ms = exposed > 0.0f ? exposed : 0.0;
    return 0;
}

static int nccl_time_buckets(ddp *d, int first, double *ms)
{
    nccl_state *s = d->state;
    int rc = 0;
    if (cudaEventRecord(s->alone[0], s->stream) != cudaSuccess)
        rc = ddp_fail(d, "cudaEventRecord failed");
    enter_calls(s, "timing the reductions alone");
    for (int k = first; k < d->plan.n_buckets && rc == 0; k++) {
        ncclResult_t nr = ncclAllReduce(s->buckets[k].buf, s->buckets[k].buf,
                                        (size_t)d->plan.buckets[k].elems, s->type, ncclSum,
                                        s->comm, s->stream);
        if (nr != ncclSuccess)
            rc = nccl_failed(d, __FILE__, __LINE__, "ncclAllReduce", nr);
    }
    disarm(s);
    if (rc == 0 && cudaEventRecord(s->alone[1], s->stream) != cudaSuccess)
        rc = ddp_fail(d, "cudaEventRecord failed");
    if (rc == 0) {
        arm_one(s, s->alone[1], d->world->timeout_s, "timing the reductions alone");
        cudaError_t e = cudaEventSynchronize(s->alone[1]);
        disarm(s);
        float el = 0.0f;
        if (e == cudaSuccess)
            e = cudaEventElapsedTime(&el, s->alone[0], s->alone[1]);
        if (e != cudaSuccess)
            rc = ddp_fail(d, "timing the reductions alone: %s", cudaGetErrorString(e));
        *ms = el;
    }
    return rc;
}

const ddp_transport ddp_nccl_transport = {
    .name = "nccl",
    .setup = nccl_setup,
    .launch = nccl_launch,
    .progress = nccl_progress,
    .finish = nccl_finish,
    .step_end = nccl_step_end,
    .time_buckets = nccl_time_buckets,
    .destroy = nccl_destroy,
};

#else
/* ISO C wants a translation unit to declare something */
typedef int ddp_nccl_unavailable;
#endif
