#include "ddp_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../digest.h"

int ddp_fail(ddp *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
    return -1;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ddp_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int ddp_comm_bytes(ddp_comm_precision p)
{
    return p == DDP_COMM_BF16 ? 2 : 4;
}

const char *ddp_comm_name(ddp_comm_precision p)
{
    return p == DDP_COMM_BF16 ? "bf16" : "fp32";
}

const char *ddp_transport_name(const ddp *d)
{
    return d->tr->name;
}

int64_t ddp_device_bytes(const ddp *d)
{
    return d->device_bytes;
}

const ddp_plan *ddp_get_plan(const ddp *d)
{
    return &d->plan;
}

const char *ddp_error(const ddp *d)
{
    return d->err;
}

/* Gradients are summed element by element: every rank must hold them in one
 * layout (a CPU backend's blocked weights follow the instruction set). */
static int same_layouts(ddp *d)
{
    uint64_t h = DIGEST_START, lo, hi;
    for (int t = 0; t < d->plan.n_tensors; t++)
        h = digest_bytes(h, &d->grads[t].layout, sizeof d->grads[t].layout);
    if (ddp_min_max_u64(d->world, h, &lo, &hi, "comparing the ranks' gradient layouts", d->err,
                        sizeof d->err))
        return -1;
    if (lo != hi)
        return ddp_fail(d, "the ranks keep their gradients in different memory layouts "
                           "(oneDNN chooses them by the CPU's instruction set): run every "
                           "rank on one CPU type, or set DNNL_MAX_CPU_ISA to the oldest of "
                           "theirs (e.g. AVX2) on all of them");
    return 0;
}

/* Where every planned tensor lives; all on the host or all on one device. */
static int find_gradients(ddp *d)
{
    d->grads = calloc((size_t)d->plan.n_tensors, sizeof *d->grads);
    if (!d->grads)
        return ddp_fail(d, "out of memory for %d gradient descriptors", d->plan.n_tensors);
    for (int t = 0; t < d->plan.n_tensors; t++) {
        const ddp_tensor *pt = &d->plan.tensors[t];
        ddp_grad_storage *g = &d->grads[t];
        if (d->access.grad_storage(d->b, pt->layer, pt->kind, g))
            return ddp_fail(d, "the %s backend lends no gradient of layer %s: %s", d->ops->name,
                            d->net->layers[pt->layer].name, d->ops->error(d->b));
        if (g->elems != pt->elems || !g->ptr)
            return ddp_fail(d, "layer %s: the backend's %s gradient holds %lld elements, the "
                               "plan expects %lld", d->net->layers[pt->layer].name,
                            pt->kind == BUF_WEIGHT_GRAD ? "weight" : "bias",
                            (long long)g->elems, (long long)pt->elems);
        if (t == 0)
            d->device = g->device;
        else if (g->device != d->device)
            return ddp_fail(d, "layer %s: gradients both on the host and on a device",
                            d->net->layers[pt->layer].name);
    }
    return same_layouts(d);
}

ddp *ddp_create(ddp_world *w, const network *net, const backend_ops *ops, backend *b,
                const ddp_backend_access *access, const ddp_options *o, char *err,
                size_t err_len)
{
    if (!access || !access->grad_storage) {
        snprintf(err, err_len, "the %s backend does not lend its gradient buffers "
                               "(backend_ops.grad_storage), which data-parallel training needs",
                 ops->name);
        return NULL;
    }
    ddp *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, err_len, "out of memory for the DDP context");
        return NULL;
    }
    *d = (ddp){.world = w, .net = net, .ops = ops, .b = b, .access = *access, .opt = *o};
    int rc = ddp_plan_build(&d->plan, net, o->bucket_cap_bytes, o->first_bucket_bytes,
                            ddp_comm_bytes(o->comm), d->err, sizeof d->err);
    if (rc == 0)
        rc = find_gradients(d);
    if (rc == 0) {
        if (!d->device) {
            d->tr = &ddp_mpi_transport;
        } else {
#if defined(HAVE_NCCL) && defined(HAVE_CUDA) && defined(HAVE_MPI)
            d->tr = &ddp_nccl_transport;
#else
            rc = ddp_fail(d, "the %s backend's gradients are on a GPU and this build has no "
                             "NCCL (nccl.h was not found when it was built)", ops->name);
#endif
        }
    }
    if (rc == 0)
        rc = d->tr->setup(d);
    if (rc) {
        snprintf(err, err_len, "%s", d->err);
        ddp_destroy(d);
        return NULL;
    }
    return d;
}

void ddp_destroy(ddp *d)
{
    if (!d)
        return;
    if (d->tr && d->state)
        d->tr->destroy(d);
    free(d->grads);
    ddp_plan_free(&d->plan);
    free(d);
}

static int launch_ready(ddp *d, int layer)
{
    while (d->next_bucket < d->plan.n_buckets &&
           d->plan.buckets[d->next_bucket].ready_layer >= layer)
        if (d->tr->launch(d, d->next_bucket++))
            return -1;
    return 0;
}

static int on_grads_ready(void *ctx, int layer, char *err, size_t err_len)
{
    ddp *d = ctx;
    double t0 = ddp_now();
    int rc = launch_ready(d, layer);
    if (rc == 0)
        rc = d->tr->progress(d);
    d->cur.hook_ms += (ddp_now() - t0) * 1e3;
    if (rc)
        snprintf(err, err_len, "%s", d->err);
    return rc;
}

static int on_before_update(void *ctx, char *err, size_t err_len)
{
    ddp *d = ctx;
    double t0 = ddp_now();
    /* every bucket goes out, whichever layers reported (a plan's layer
     * always does; this keeps a missed call from hanging the peers) */
    int rc = launch_ready(d, -1);
    if (rc == 0)
        rc = d->tr->finish(d);
    d->cur.wait_ms += (ddp_now() - t0) * 1e3;
    d->next_bucket = 0;
    if (rc)
        snprintf(err, err_len, "%s", d->err);
    return rc;
}

step_grad_hooks ddp_hooks(ddp *d)
{
    return (step_grad_hooks){.ctx = d, .grads_ready = on_grads_ready,
                             .before_update = on_before_update};
}

void ddp_step_begin(ddp *d)
{
    memset(&d->cur, 0, sizeof d->cur);
    d->cur.done_in_backward = -1;
    d->next_bucket = 0;
}

int ddp_step_end(ddp *d, ddp_step_stats *out)
{
    d->cur.bytes = d->plan.total_elems * ddp_comm_bytes(d->opt.comm);
    d->cur.buckets = d->plan.n_buckets;
    if (d->tr->step_end(d, &d->cur))
        return -1;
    *out = d->cur;
    return 0;
}

/* The median over reps of buckets [first, n) reduced alone; every rep starts
 * aligned, so that a rank arriving late does not count as communication. */
static int comm_alone_from(ddp *d, int first, int reps, double *ms)
{
    *ms = NAN;
    double *t = calloc((size_t)reps, sizeof *t);
    if (!t)
        return ddp_fail(d, "out of memory");
    int rc = 0;
    for (int r = 0; r < reps && rc == 0; r++) {
        rc = ddp_barrier(d->world, 0, "timing the reductions alone", d->err, sizeof d->err);
        if (rc == 0)
            rc = d->tr->time_buckets(d, first, &t[r]);
    }
    if (rc == 0)
        *ms = ddp_median(t, reps);
    free(t);
    return rc;
}

int ddp_comm_alone(ddp *d, int reps, double *ms)
{
    return comm_alone_from(d, 0, reps, ms);
}

int ddp_comm_alone_last(ddp *d, int reps, double *ms)
{
    return comm_alone_from(d, d->plan.n_buckets - 1, reps, ms);
}

/* A digest of the bits of every parameter: equal digests on every rank mean
 * (but for a collision) bit-identical weights. */
int ddp_same_weights(ddp_world *w, const backend_ops *ops, backend *b, const network *net,
                     bool *same, char *err, size_t err_len)
{
    uint64_t h = DIGEST_START;
    float *buf = NULL;
    size_t cap = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const buffer_kind kinds[2] = {BUF_WEIGHT, BUF_BIAS};
        for (int k = 0; k < 2; k++) {
            int64_t n = backend_buffer_elems(net, i, 1, kinds[k]);
            if (n == 0)
                continue;
            if ((size_t)n > cap) {
                float *grown = realloc(buf, (size_t)n * sizeof *buf);
                if (!grown) {
                    free(buf);
                    snprintf(err, err_len, "out of memory reading %lld weights of layer %s",
                             (long long)n, net->layers[i].name);
                    return -1;
                }
                buf = grown;
                cap = (size_t)n;
            }
            if (ops->read(b, i, kinds[k], buf)) {
                snprintf(err, err_len, "reading the weights of layer %s: %s",
                         net->layers[i].name, ops->error(b));
                free(buf);
                return -1;
            }
            h = digest_bytes(h, buf, (size_t)n * sizeof *buf);
        }
    }
    free(buf);
    uint64_t lo, hi;
    if (ddp_min_max_u64(w, h, &lo, &hi, "comparing the weights of the ranks", err, err_len))
        return -1;
    *same = lo == hi;
    return 0;
}
