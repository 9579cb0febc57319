#include "train_ddp.h"

#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reductions timed alone: enough repeats for a stable median. */
enum { COMM_ALONE_REPS = 5 };

static const char *const scaling_header =
    "env,model,res,mode,world_size,nodes,per_rank_batch,global_batch,step_ms,images_per_s,"
    "comm_ms,exposed_comm_ms,efficiency,backend,precision,comm_precision,bucket_mb,transport,"
    "threads_per_rank,copy_ms,last_comm_ms,backward_comm_ms\n";

/* The DDP hooks, with the test's fault: rank fault_rank dies by SIGKILL in
 * the middle of the backward of step fault_step, as `kill -9` would end it. */
static int grads_ready(void *ctx, int layer, char *err, size_t err_len)
{
    train_ddp *t = ctx;
    if (t->o->fault_rank == t->world->rank && t->o->fault_step == t->step &&
        layer <= t->fault_layer) {
        fflush(NULL);
        raise(SIGKILL);
    }
    return t->inner.grads_ready(t->inner.ctx, layer, err, err_len);
}

static int before_update(void *ctx, char *err, size_t err_len)
{
    train_ddp *t = ctx;
    return t->inner.before_update(t->inner.ctx, err, err_len);
}

/* The layer with parameters halfway through the backward. */
static int middle_layer(const network *net)
{
    int n = 0, seen = 0;
    for (int i = 0; i < net->n_layers; i++)
        n += net->layers[i].params > 0;
    for (int i = net->n_layers - 1; i >= 0; i--)
        if (net->layers[i].params > 0 && ++seen >= n / 2)
            return i;
    return 0;
}

int train_ddp_start(train_ddp *t, const train_options *o, ddp_world *w, const network *net,
                    const backend_ops *ops, backend *b, const ddp_backend_access *access,
                    step_driver *drv, char *err, size_t err_len)
{
    memset(t, 0, sizeof *t);
    t->o = o;
    t->world = w;
    t->net = net;
    t->ops = ops;
    t->b = b;
    t->fault_layer = middle_layer(net);
    /* ranks start at different times (initialisation, algorithm searches):
     * a generous limit here, the step's limit from then on */
    if (ddp_barrier(w, 10 * w->timeout_s, "waiting for every rank to start", err, err_len))
        return -1;
    bool same = false;
    if (ddp_same_weights(w, ops, b, net, &same, err, err_len))
        return -1;
    if (!same) {
        snprintf(err, err_len, "the ranks start from different weights (the same --seed on "
                               "every rank initialises them alike)");
        return -1;
    }
    ddp_options opt = {.bucket_cap_bytes = o->bucket_bytes,
                       .first_bucket_bytes = DDP_FIRST_BUCKET_BYTES, .comm = o->comm,
                       .device = o->device};
    t->d = ddp_create(w, net, ops, b, access, &opt, err, err_len);
    if (!t->d)
        return -1;
    if (w->rank == 0) {
        t->all = calloc((size_t)o->iters * (size_t)w->size, sizeof *t->all);
        if (!t->all) {
            snprintf(err, err_len, "out of memory for %d x %d step records", o->iters, w->size);
            return -1;
        }
    }
    t->inner = ddp_hooks(t->d);
    drv->grad_hooks = (step_grad_hooks){.ctx = t, .grads_ready = grads_ready,
                                        .before_update = before_update};
    return 0;
}

void train_ddp_step_begin(train_ddp *t, int it)
{
    t->step = it;
    ddp_step_begin(t->d);
}

int train_ddp_step_end(train_ddp *t, int it, double ms, float loss, long long peak_mem,
                       char *err, size_t err_len)
{
    ddp_step_stats s;
    if (ddp_step_end(t->d, &s)) {
        snprintf(err, err_len, "%s", ddp_error(t->d));
        return -1;
    }
    if (it < 0)
        return 0;
    train_rank_step mine = {.step_ms = ms, .exposed_ms = s.exposed_ms, .comm_ms = s.comm_ms,
                            .hook_ms = s.hook_ms, .wait_ms = s.wait_ms, .copy_ms = s.copy_ms, .pack_ms = s.pack_ms,
                            .hook_mpi_ms = s.hook_ms - s.pack_ms,
                            .unpack_ms = s.copy_ms - s.pack_ms,
                            .wait_mpi_ms = s.wait_ms - (s.copy_ms - s.pack_ms),
                            .peak_mem = peak_mem, .loss = loss, .rank = t->world->rank,
                            .done_in_backward = s.done_in_backward};
    train_rank_step *slot = t->all ? &t->all[(size_t)it * (size_t)t->world->size] : NULL;
    return ddp_gather(t->world, &mine, sizeof mine, slot, "gathering the step times", err,
                      err_len);
}

int train_ddp_finish(train_ddp *t, char *err, size_t err_len)
{
    if (ddp_comm_alone(t->d, COMM_ALONE_REPS, &t->comm_alone_ms) ||
        ddp_comm_alone_last(t->d, COMM_ALONE_REPS, &t->last_alone_ms)) {
        snprintf(err, err_len, "%s", ddp_error(t->d));
        return -1;
    }
    if (ddp_same_weights(t->world, t->ops, t->b, t->net, &t->same_weights, err, err_len))
        return -1;
    if (!t->same_weights) {
        snprintf(err, err_len, "the ranks' weights differ after the run: the reductions did not "
                 "give every rank the same average");
        return -1;
    }
    return 0;
}

/* How a step's field is taken over the ranks. */
typedef enum {
    OVER_RANKS_MAX,     /* the slowest: the step everybody waited for */
    OVER_RANKS_MEAN,
    /* the rank that computed longest (step - exposed the largest): its own
     * communication lengthened the step; the others' extra exposed time is
     * waiting for that rank (load imbalance), not communication */
    OVER_RANKS_CRITICAL,
} over_ranks;

static double field(const train_rank_step *s, size_t offset)
{
    return *(const double *)((const char *)s + offset);
}

/* Per step, the field over the ranks; then the median over the steps. */
static double median_over_steps(const train_ddp *t, size_t offset, over_ranks how)
{
    int iters = t->o->iters, size = t->world->size;
    double *v = malloc((size_t)iters * sizeof *v);
    if (!v)
        return 0.0;
    for (int it = 0; it < iters; it++) {
        const train_rank_step *row = &t->all[(size_t)it * size];
        double acc = 0.0, longest = -1.0;
        for (int r = 0; r < size; r++) {
            double x = field(&row[r], offset);
            double compute = row[r].step_ms - row[r].exposed_ms;
            if (how == OVER_RANKS_MAX)
                acc = x > acc ? x : acc;
            else if (how == OVER_RANKS_MEAN)
                acc += x / size;
            else if (compute > longest) {
                longest = compute;
                acc = x;
            }
        }
        v[it] = acc;
    }
    double m = ddp_median(v, iters);
    free(v);
    return m;
}

/* Median over the timed steps of one rank's field. */
static double rank_median(const train_ddp *t, int rank, size_t offset)
{
    int iters = t->o->iters, size = t->world->size;
    double *v = malloc((size_t)iters * sizeof *v);
    if (!v)
        return 0.0;
    for (int it = 0; it < iters; it++)
        v[it] = field(&t->all[(size_t)it * size + rank], offset);
    double m = ddp_median(v, iters);
    free(v);
    return m;
}

#define FIELD(f) offsetof(train_rank_step, f)

/* The least number of buckets any rank saw reduced before the update waited,
 * over the timed steps; -1 when the transport does not tell. */
static int fewest_done_in_backward(const train_ddp *t)
{
    int least = -1;
    for (size_t i = 0; i < (size_t)t->o->iters * (size_t)t->world->size; i++) {
        int k = t->all[i].done_in_backward;
        if (k >= 0 && (least < 0 || k < least))
            least = k;
    }
    return least;
}

/* The breakdown of the communication (median over the steps, the rank that
 * computed longest): the reductions' exposed share is what the step spent
 * on communication beyond copying the gradients in and out of the buckets. */
typedef struct {
    double step, exposed, copy, imbalance, alone, last;
    /* host transports: time inside the reduction calls during backward (the
     * bytes of the buckets launched then moved and summed on the computing
     * core) and in the waits before the update; NaN on a device transport */
    double in_backward, in_waits;
    double hidden, hidden_hideable;
} comm_breakdown;

/* true where the reductions run on the host (MPI), false on a device (NCCL) */
static bool host_transport(const train_ddp *t)
{
    return !strcmp(ddp_transport_name(t->d), "mpi");
}

static comm_breakdown breakdown(const train_ddp *t)
{
    bool host = host_transport(t);
    comm_breakdown b = {
        .step = median_over_steps(t, FIELD(step_ms), OVER_RANKS_MAX),
        .exposed = median_over_steps(t, FIELD(exposed_ms), OVER_RANKS_CRITICAL),
        .copy = median_over_steps(t, FIELD(copy_ms), OVER_RANKS_CRITICAL),
        .alone = t->comm_alone_ms,
        .last = t->last_alone_ms,
        .in_backward = host ? median_over_steps(t, FIELD(hook_mpi_ms), OVER_RANKS_CRITICAL) : NAN,
        .in_waits = host ? median_over_steps(t, FIELD(wait_mpi_ms), OVER_RANKS_CRITICAL) : NAN,
        .hidden = NAN,
        .hidden_hideable = NAN,
    };
    /* the medians of different ranks' steps: the mean may fall a hair below
     * the critical rank's, which is no wait at all (and no "-0.00 ms") */
    b.imbalance = fmax(0.0, median_over_steps(t, FIELD(exposed_ms), OVER_RANKS_MEAN) - b.exposed);
    double reductions = b.exposed - b.copy; /* exposed time of the reductions themselves */
    if (t->world->size > 1 && b.alone > 0) {
        b.hidden = 1.0 - reductions / b.alone;
        /* the last bucket starts after the whole backward: only the others
         * have backward left to hide in. What they cost the step: on a host
         * transport the reduction calls during backward plus whatever of the
         * final wait the last bucket alone does not explain; on a device, the
         * exposed time beyond the last bucket's */
        if (b.last >= 0 && b.alone - b.last > 0) {
            double cost = host ? b.in_backward + fmax(0, b.in_waits - b.last)
                               : fmax(0, reductions - b.last);
            b.hidden_hideable = 1.0 - cost / (b.alone - b.last);
        }
    }
    return b;
}

static void print_share(const char *what, double share)
{
    if (isnan(share))
        printf("%s: -", what);
    else
        printf("%s: %.0f%%", what, 100.0 * (share > 0 ? share : 0));
}

void train_ddp_print(const train_ddp *t, double flops_per_rank_step)
{
    const train_options *o = t->o;
    const ddp_plan *p = ddp_get_plan(t->d);
    int size = t->world->size;
    printf("ddp: %d rank(s) on %d node(s) over %s, %s gradients, ", size, t->world->nodes,
           ddp_transport_name(t->d), ddp_comm_name(o->comm));
    if (o->bucket_bytes)
        printf("buckets of %.0f MiB (the first %.0f MiB): %d", o->bucket_bytes / 1048576.0,
               DDP_FIRST_BUCKET_BYTES / 1048576.0, p->n_buckets);
    else
        printf("no buckets: one reduction after the backward");
    printf(", %.1f MB per rank and step (the last bucket %.1f MB)\n",
           p->total_elems * (double)ddp_comm_bytes(o->comm) / 1e6,
           p->buckets[p->n_buckets - 1].elems * (double)ddp_comm_bytes(o->comm) / 1e6);
    for (int r = 0; r < size; r++) {
        const train_rank_step *last = &t->all[(size_t)(o->iters - 1) * size + r];
        printf("ddp: rank %d: median step %.2f ms, exposed communication %.2f ms, last loss "
               "%.6f, peak memory %.0f MiB\n",
               r, rank_median(t, r, FIELD(step_ms)), rank_median(t, r, FIELD(exposed_ms)),
               last->loss, last->peak_mem / 1048576.0);
    }
    comm_breakdown b = breakdown(t);
    double in_flight = median_over_steps(t, FIELD(comm_ms), OVER_RANKS_CRITICAL);
    printf("ddp: step %.2f ms (the slowest rank, median) = compute %.2f + exposed communication "
           "%.2f ms (of the rank that computed longest; the others waited %.2f ms more for it); "
           "%.2f images/s over the world, %.1f GFLOP/s per rank\n",
           b.step, b.step - b.exposed, b.exposed, b.imbalance, o->batch * size / (b.step * 1e-3),
           flops_per_rank_step / (b.step * 1e-3) / 1e9);
    if (host_transport(t))
        printf("ddp: exposed = copying gradients into and out of the buckets %.2f ms + the "
               "reductions' own %.2f ms; ",
               b.copy, b.exposed - b.copy);
    else /* a device packs and unpacks on the communication stream, between the reductions */
        printf("ddp: exposed = the communication stream's packing, reductions and unpacking "
               "%.2f ms; ",
               b.exposed);
    printf("the reductions take %.2f ms alone (the last bucket %.2f ms) and were in flight "
           "%.2f ms of the step; ",
           b.alone, b.last, in_flight);
    print_share("hidden behind backward", b.hidden);
    printf(", ");
    print_share("of what had backward left to hide in (all but the last bucket)",
               b.hidden_hideable);
    int early = fewest_done_in_backward(t);
    if (early >= 0)
        printf("; buckets done before the update waited: at least %d of %d", early,
               p->n_buckets);
    printf("\n");
    /* where the reductions' host time went: inside the MPI calls of the hooks
     * the bytes of the buckets launched during backward are moved and summed
     * on the core that computes; before the update, the rest */
    printf("ddp: on the step's thread of the rank that computed longest (medians over steps): "
           "%.2f ms in the hooks during backward (packing %.2f, launching and progressing the "
           "reductions %.2f), %.2f ms before the update (waiting for the reductions %.2f, "
           "unpacking %.2f)\n",
           median_over_steps(t, FIELD(hook_ms), OVER_RANKS_CRITICAL),
           median_over_steps(t, FIELD(pack_ms), OVER_RANKS_CRITICAL),
           median_over_steps(t, FIELD(hook_mpi_ms), OVER_RANKS_CRITICAL),
           median_over_steps(t, FIELD(wait_ms), OVER_RANKS_CRITICAL),
           median_over_steps(t, FIELD(wait_mpi_ms), OVER_RANKS_CRITICAL),
           median_over_steps(t, FIELD(unpack_ms), OVER_RANKS_CRITICAL));
}

int train_ddp_scaling_row(const train_ddp *t, const char *backend_name, int threads, char *err,
                          size_t err_len)
{
    const train_options *o = t->o;
    FILE *f = fopen(o->scaling_out, "a");
    if (!f) {
        snprintf(err, err_len, "cannot open %s for appending", o->scaling_out);
        return -1;
    }
    if (ftell(f) == 0)
        fputs(scaling_header, f);
    int size = t->world->size;
    bool strong = !strcmp(o->scaling_mode, "strong");
    comm_breakdown b = breakdown(t);
    double step = b.step;
    char eff[32] = "";
    if (size == 1)
        snprintf(eff, sizeof eff, "1.0000");
    else if (o->baseline_ms > 0)
        snprintf(eff, sizeof eff, "%.4f",
                 strong ? o->baseline_ms / (size * step) : o->baseline_ms / step);
    char last[32] = "", in_backward[32] = "";
    if (!isnan(b.last))
        snprintf(last, sizeof last, "%.4f", b.last);
    if (!isnan(b.in_backward))
        snprintf(in_backward, sizeof in_backward, "%.4f", b.in_backward);
    fprintf(f, "%s,%s,%d,%s,%d,%d,%d,%d,%.4f,%.3f,%.4f,%.4f,%s,%s,%s,%s,%g,%s,%d,%.4f,%s,%s\n",
            o->env, o->model, o->res, o->scaling_mode, size, t->world->nodes, o->batch,
            o->batch * size, step, o->batch * size / (step * 1e-3), t->comm_alone_ms, b.exposed,
            eff, backend_name, precision_name(o->prec), ddp_comm_name(o->comm),
            o->bucket_bytes / 1048576.0, ddp_transport_name(t->d), threads, b.copy, last,
            in_backward);
    if (fclose(f)) {
        snprintf(err, err_len, "writing %s failed", o->scaling_out);
        return -1;
    }
    return 0;
}

void train_ddp_free(train_ddp *t)
{
    ddp_destroy(t->d);
    free(t->all);
    memset(t, 0, sizeof *t);
}
