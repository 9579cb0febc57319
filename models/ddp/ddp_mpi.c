/* The host transport: each bucket is packed into a flat buffer (fp32, or
 * bf16 rounded to nearest even), reduced in place by MPI_Iallreduce, and
 * progressed by MPI_Test from every gradient hook while backward runs (MPI
 * moves data only inside MPI calls unless it has a progress thread); before
 * the update each bucket is waited for with the world's timeout and its sum,
 * times 1/size, written back into the gradients. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_bf16.h"
#include "ddp_internal.h"

#ifdef HAVE_MPI

typedef struct {
    void *buf;                  /* fp32 or bf16 */
    MPI_Request req;
    bool in_flight;
} host_bucket;

typedef struct {
    host_bucket *buckets;
    MPI_Datatype type;
    MPI_Op op;
    bool own_op;
    int in_flight;              /* buckets launched and not seen done */
    double busy_since;          /* when in_flight last rose from 0 */
} host_state;

/* MPI has no bf16: a sum over uint16 words holding bf16, each pair added in
 * fp32 and rounded back (what NCCL's bf16 sum does too). */
static void bf16_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = ddp_to_bf16(ddp_from_bf16(a[i]) + ddp_from_bf16(b[i]));
}

static int mpi_setup(ddp *d)
{
    host_state *s = calloc(1, sizeof *s);
    if (!s)
        return ddp_fail(d, "out of memory for the MPI transport");
    d->state = s;
    s->buckets = calloc((size_t)d->plan.n_buckets, sizeof *s->buckets);
    if (!s->buckets)
        return ddp_fail(d, "out of memory for %d buckets", d->plan.n_buckets);
    if (d->plan.largest_bucket_elems > INT_MAX)
        return ddp_fail(d, "a bucket of %lld elements is more than one MPI call takes: give "
                           "a --bucket-mb cap", (long long)d->plan.largest_bucket_elems);
    size_t elem = (size_t)ddp_comm_bytes(d->opt.comm);
    for (int k = 0; k < d->plan.n_buckets; k++) {
        host_bucket *hb = &s->buckets[k];
        hb->req = MPI_REQUEST_NULL;
        /* 64-byte aligned: the copies and sums vectorise */
        size_t bytes = ((size_t)d->plan.buckets[k].elems * elem + 63) & ~(size_t)63;
        if (posix_memalign(&hb->buf, 64, bytes))
            return ddp_fail(d, "out of memory for bucket %d (%.1f MiB)", k, bytes / 1048576.0);
        memset(hb->buf, 0, bytes);
    }
    if (d->opt.comm == DDP_COMM_BF16) {
        s->type = MPI_UINT16_T;
        int rc = MPI_Op_create(bf16_sum, 1, &s->op);
        if (rc != MPI_SUCCESS)
            return ddp_mpi_fail(d->err, sizeof d->err, __FILE__, __LINE__, "MPI_Op_create", rc);
        s->own_op = true;
    } else {
        s->type = MPI_FLOAT;
        s->op = MPI_SUM;
    }
    return 0;
}

static void mpi_destroy(ddp *d)
{
    host_state *s = d->state;
    if (s->buckets) {
        /* a bucket still in flight (a failed step) may yet be written by
         * MPI: its buffer is left alone, the process is ending anyway */
        for (int k = 0; k < d->plan.n_buckets; k++)
            if (!s->buckets[k].in_flight)
                free(s->buckets[k].buf);
        free(s->buckets);
    }
    if (s->own_op)
        MPI_Op_free(&s->op);
    free(s);
    d->state = NULL;
}

static void pack(ddp *d, int k, void *buf)
{
    const ddp_bucket *bk = &d->plan.buckets[k];
    for (int t = bk->first; t < bk->first + bk->count; t++) {
        const ddp_tensor *pt = &d->plan.tensors[t];
        const float *g = d->grads[t].ptr;
        if (d->opt.comm == DDP_COMM_BF16) {
            uint16_t *dst = (uint16_t *)buf + pt->offset;
            for (int64_t i = 0; i < pt->elems; i++)
                dst[i] = ddp_to_bf16(g[i]);
        } else {
            memcpy((float *)buf + pt->offset, g, (size_t)pt->elems * sizeof *g);
        }
    }
}

/* The averages into the gradients: the sum times 1/size (exact for a power
 * of two, so 2 ranks reproduce a global batch's mean as closely as fp32
 * lets any order of sums). */
static void unpack(ddp *d, int k, const void *buf)
{
    const ddp_bucket *bk = &d->plan.buckets[k];
    float scale = 1.0f / (float)d->world->size;
    for (int t = bk->first; t < bk->first + bk->count; t++) {
        const ddp_tensor *pt = &d->plan.tensors[t];
        float *g = d->grads[t].ptr;
        if (d->opt.comm == DDP_COMM_BF16) {
            const uint16_t *src = (const uint16_t *)buf + pt->offset;
            for (int64_t i = 0; i < pt->elems; i++)
                g[i] = ddp_from_bf16(src[i]) * scale;
        } else {
            const float *src = (const float *)buf + pt->offset;
            for (int64_t i = 0; i < pt->elems; i++)
                g[i] = src[i] * scale;
        }
    }
}

static void mark_done(ddp *d, host_bucket *hb)
{
    host_state *s = d->state;
    hb->in_flight = false;
    if (--s->in_flight == 0)
        d->cur.comm_ms += (ddp_now() - s->busy_since) * 1e3;
}

static int start(ddp *d, int k)
{
    host_state *s = d->state;
    host_bucket *hb = &s->buckets[k];
    int rc = MPI_Iallreduce(MPI_IN_PLACE, hb->buf, (int)d->plan.buckets[k].elems, s->type, s->op,
                            d->world->comm, &hb->req);
    if (rc != MPI_SUCCESS)
        return ddp_mpi_fail(d->err, sizeof d->err, __FILE__, __LINE__, "MPI_Iallreduce", rc);
    hb->in_flight = true;
    if (s->in_flight++ == 0)
        s->busy_since = ddp_now();
    return 0;
}

static int mpi_launch(ddp *d, int k)
{
    host_state *s = d->state;
    double t0 = ddp_now();
    pack(d, k, s->buckets[k].buf);
    double ms = (ddp_now() - t0) * 1e3;
    d->cur.copy_ms += ms;
    d->cur.pack_ms += ms;
    return start(d, k);
}

static int mpi_progress(ddp *d)
{
    host_state *s = d->state;
    for (int k = 0; k < d->plan.n_buckets; k++) {
        host_bucket *hb = &s->buckets[k];
        if (!hb->in_flight)
            continue;
        int done = 0;
        int rc = MPI_Test(&hb->req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return ddp_mpi_fail(d->err, sizeof d->err, __FILE__, __LINE__, "MPI_Test", rc);
        if (done)
            mark_done(d, hb);
    }
    return 0;
}

static int wait_bucket(ddp *d, int k)
{
    host_state *s = d->state;
    host_bucket *hb = &s->buckets[k];
    if (!hb->in_flight)
        return 0;
    char what[96];
    snprintf(what, sizeof what, "reducing gradient bucket %d of %d", k + 1, d->plan.n_buckets);
    if (ddp_wait(d->world, &hb->req, 0, what, d->err, sizeof d->err))
        return -1;
    mark_done(d, hb);
    return 0;
}

static int mpi_finish(ddp *d)
{
    host_state *s = d->state;
    d->cur.done_in_backward = 0;
    for (int k = 0; k < d->plan.n_buckets; k++)
        d->cur.done_in_backward += !s->buckets[k].in_flight;
    for (int k = 0; k < d->plan.n_buckets; k++) {
        if (wait_bucket(d, k))
            return -1;
        double t0 = ddp_now();
        unpack(d, k, s->buckets[k].buf);
        d->cur.copy_ms += (ddp_now() - t0) * 1e3;
    }
    return 0;
}

static int mpi_step_end(ddp *d, ddp_step_stats *st)
{
    /* on the step's own thread everything DDP did lengthened the step */
    st->exposed_ms = st->hook_ms + st->wait_ms;
    (void)d;
    return 0;
}

static int mpi_time_buckets(ddp *d, int first, double *ms)
{
    int rc = 0;
    double t0 = ddp_now();
    for (int k = first; k < d->plan.n_buckets && rc == 0; k++)
        rc = start(d, k);
    for (int k = first; k < d->plan.n_buckets && rc == 0; k++)
        rc = wait_bucket(d, k);
    *ms = (ddp_now() - t0) * 1e3;
    return rc;
}

#else /* no MPI: ddp_create is never reached (--ddp is refused) */

static int mpi_setup(ddp *d)
{
    return ddp_fail(d, "this build has no MPI (mpicc was not found when it was built)");
}

static void mpi_destroy(ddp *d)
{
    d->state = NULL;
}

static int mpi_launch(ddp *d, int k)
{
    (void)k;
    return mpi_setup(d);
}

static int mpi_progress(ddp *d)
{
    return mpi_setup(d);
}

static int mpi_finish(ddp *d)
{
    return mpi_setup(d);
}

static int mpi_step_end(ddp *d, ddp_step_stats *st)
{
    (void)st;
    return mpi_setup(d);
}

static int mpi_time_buckets(ddp *d, int first, double *ms)
{
    (void)first, (void)ms;
    return mpi_setup(d);
}

#endif

const ddp_transport ddp_mpi_transport = {
    .name = "mpi",
    .setup = mpi_setup,
    .launch = mpi_launch,
    .progress = mpi_progress,
    .finish = mpi_finish,
    .step_end = mpi_step_end,
    .time_buckets = mpi_time_buckets,
    .destroy = mpi_destroy,
};
