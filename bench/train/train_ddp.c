#include "train_ddp.h"

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
    "threads_per_rank\n";

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
                            .hook_ms = s.hook_ms, .wait_ms = s.wait_ms, .peak_mem = peak_mem,
                            .loss = loss, .rank = t->world->rank};
    train_rank_step *slot = t->all ? &t->all[(size_t)it * (size_t)t->world->size] : NULL;
    return ddp_gather(t->world, &mine, sizeof mine, slot, "gathering the step times", err,
                      err_len);
}

int train_ddp_finish(train_ddp *t, char *err, size_t err_len)
{
    if (ddp_comm_alone(t->d, COMM_ALONE_REPS, &t->comm_alone_ms)) {
        snprintf(err, err_len, "%s", ddp_error(t->d));
        return -1;
    }
    if (ddp_same_weights(t->world, t->ops, t->b, t->net, &t->same_weights, err, err_len))
        return -1;
    if (!t->same_weights) {
        snprintf(err, err_len, "rank %d of %d: the ranks' weights differ after the run: the "
                 "reductions did not give every rank the same average", t->world->rank,
                 t->world->size);
        return -1;
    }
    return 0;
}

/* Per step, over the ranks: the slowest step (the one everybody waited
 * for), or the mean of a field; then the median over steps. */
static double median_over_steps(const train_ddp *t, size_t offset, bool slowest)
{
    int iters = t->o->iters, size = t->world->size;
    double *v = malloc((size_t)iters * sizeof *v);
    if (!v)
        return 0.0;
    for (int it = 0; it < iters; it++) {
        double acc = 0.0;
        for (int r = 0; r < size; r++) {
            const train_rank_step *s = &t->all[(size_t)it * size + r];
            double x = *(const double *)((const char *)s + offset);
            acc = slowest ? (x > acc ? x : acc) : acc + x / size;
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
        v[it] = *(const double *)((const char *)&t->all[(size_t)it * size + rank] + offset);
    double m = ddp_median(v, iters);
    free(v);
    return m;
}

#define FIELD(f) offsetof(train_rank_step, f)

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
    printf(", %.1f MB per rank and step\n",
           p->total_elems * (double)ddp_comm_bytes(o->comm) / 1e6);
    for (int r = 0; r < size; r++) {
        const train_rank_step *last = &t->all[(size_t)(o->iters - 1) * size + r];
        printf("ddp: rank %d: median step %.2f ms, exposed communication %.2f ms, last loss "
               "%.6f, peak memory %.0f MiB\n",
               r, rank_median(t, r, FIELD(step_ms)), rank_median(t, r, FIELD(exposed_ms)),
               last->loss, last->peak_mem / 1048576.0);
    }
    double step = median_over_steps(t, FIELD(step_ms), true);
    double exposed = median_over_steps(t, FIELD(exposed_ms), false);
    double in_flight = median_over_steps(t, FIELD(comm_ms), false);
    double hooks = median_over_steps(t, FIELD(hook_ms), false);
    double waits = median_over_steps(t, FIELD(wait_ms), false);
    double alone = t->comm_alone_ms;
    double hidden = alone > 0 ? 1.0 - exposed / alone : 0.0;
    printf("ddp: step %.2f ms (the slowest rank, median) = compute %.2f + exposed communication "
           "%.2f ms; the step's reductions take %.2f ms alone and were in flight %.2f ms of the "
           "step; hidden behind backward: %.0f%%%s; %.2f images/s over the world, %.1f GFLOP/s "
           "per rank\n",
           step, step - exposed, exposed, alone, in_flight, 100.0 * (hidden > 0 ? hidden : 0),
           hidden < 0 ? " (the packing and unpacking cost more than the reductions alone)" : "",
           o->batch * size / (step * 1e-3), flops_per_rank_step / (step * 1e-3) / 1e9);
    printf("ddp: on the step's thread (median over steps, mean over ranks): %.2f ms in the "
           "hooks during backward (packing, launching, progressing), %.2f ms before the update "
           "(the last waits, unpacking)\n", hooks, waits);
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
    double step = median_over_steps(t, FIELD(step_ms), true);
    double exposed = median_over_steps(t, FIELD(exposed_ms), false);
    char eff[32] = "";
    if (size == 1)
        snprintf(eff, sizeof eff, "1.0000");
    else if (o->baseline_ms > 0)
        snprintf(eff, sizeof eff, "%.4f",
                 strong ? o->baseline_ms / (size * step) : o->baseline_ms / step);
    fprintf(f, "%s,%s,%d,%s,%d,%d,%d,%d,%.4f,%.3f,%.4f,%.4f,%s,%s,%s,%s,%g,%s,%d\n", o->env,
            o->model, o->res, o->scaling_mode, size, t->world->nodes, o->batch, o->batch * size,
            step, o->batch * size / (step * 1e-3), t->comm_alone_ms, exposed, eff, backend_name,
            precision_name(o->prec), ddp_comm_name(o->comm), o->bucket_bytes / 1048576.0,
            ddp_transport_name(t->d), threads);
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
