#include "gpu_trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../models/clock.h"
#include "gpu_fallback.h"
#include "gpu_join.h"
#include "gpu_ops.h"
#include "gpu_rows.h"
#include "step_trace.h"

/* Slack in the counter data image beyond the kernels the timing pass saw:
 * a metric pass that launches a few more still reports how many (a count
 * mismatch), not only that ranges were dropped. */
enum { RANGE_SLACK = 64 };

/* ---- the observers of the two passes -------------------------------------- */

typedef struct {
    const gpu_passes *p;
    step_grad_hooks inner;      /* the driver's own hooks, run under phase comm */
} observer_state;

static int timing_begin(void *ctx, int layer, pass phase, char *err, size_t err_len)
{
    observer_state *s = ctx;
    return s->p->push(s->p->ctx, gpu_op_id(layer, gpu_phase_of(layer, phase)), err, err_len)
               ? -1
               : 0;
}

static int timing_end(void *ctx, int layer, pass phase, char *err, size_t err_len)
{
    (void)layer;
    (void)phase;
    observer_state *s = ctx;
    return s->p->pop(s->p->ctx, err, err_len) ? -1 : 0;
}

/* Whatever a gradient hook launches (NCCL's all-reduce on its own stream) is
 * communication, booked on the layer whose gradients it carries. */
static int comm_grads_ready(void *ctx, int layer, char *err, size_t err_len)
{
    observer_state *s = ctx;
    if (s->p->push(s->p->ctx, gpu_op_id(layer, GPU_PHASE_COMM), err, err_len))
        return -1;
    int rc = s->inner.grads_ready(s->inner.ctx, layer, err, err_len);
    char pop_err[200];
    if (s->p->pop(s->p->ctx, pop_err, sizeof pop_err) && rc == 0) {
        snprintf(err, err_len, "%s", pop_err);
        return -1;
    }
    return rc;
}

static int comm_before_update(void *ctx, char *err, size_t err_len)
{
    observer_state *s = ctx;
    if (s->p->push(s->p->ctx, gpu_op_id(STEP_ALL_LAYERS, GPU_PHASE_COMM), err, err_len))
        return -1;
    int rc = s->inner.before_update(s->inner.ctx, err, err_len);
    char pop_err[200];
    if (s->p->pop(s->p->ctx, pop_err, sizeof pop_err) && rc == 0) {
        snprintf(err, err_len, "%s", pop_err);
        return -1;
    }
    return rc;
}

/* The metric pass only needs to know which operation is launching: the
 * launch callbacks run on the launching thread, in the middle of it. */
static int metric_begin(void *ctx, int layer, pass phase, char *err, size_t err_len)
{
    (void)err;
    (void)err_len;
    observer_state *s = ctx;
    s->p->metrics_op(s->p->ctx, gpu_op_id(layer, gpu_phase_of(layer, phase)));
    return 0;
}

static int metric_end(void *ctx, int layer, pass phase, char *err, size_t err_len)
{
    (void)layer;
    (void)phase;
    (void)err;
    (void)err_len;
    observer_state *s = ctx;
    s->p->metrics_op(s->p->ctx, 0);
    return 0;
}

/* ---- the passes ------------------------------------------------------------ */

/* Runs one step with the timing observer; the kernels in launch order. */
static int timing_pass(const gpu_passes *p, step_driver *d, int warmup,
                       gpu_kernel_list *kernels, gpu_trace_result *result, char *err,
                       size_t err_len)
{
    observer_state s = {.p = p, .inner = d->grad_hooks};
    step_grad_hooks saved = d->grad_hooks;
    d->observer = (step_observer){.ctx = &s, .op_begin = timing_begin, .op_end = timing_end};
    d->grad_hooks = (step_grad_hooks){
        .ctx = &s,
        .grads_ready = saved.grads_ready ? comm_grads_ready : NULL,
        .before_update = saved.before_update ? comm_before_update : NULL,
    };
    float loss;
    int rc = 0, discarded = 0;
    char discard_err[300] = "";
    for (int w = 0; w < warmup && rc == 0; w++)
        rc = step_run(d, &loss);
    if (rc == 0 && warmup > 0)
        discarded = p->timing_discard(p->ctx, discard_err, sizeof discard_err);
    if (rc == 0 && discarded == 0) {
        double t0 = monotonic_seconds();
        rc = step_run(d, &loss);
        result->step_ms = (monotonic_seconds() - t0) * 1e3;
    }
    d->observer = (step_observer){0};
    d->grad_hooks = saved;

    char stop_err[300] = "";
    int stop_rc = p->timing_stop(p->ctx, kernels, stop_err, sizeof stop_err);
    if (rc) {
        snprintf(err, err_len, "traced step: %s", step_error(d));
        return -1;
    }
    if (discarded) {
        snprintf(err, err_len, "timing pass: %s", discard_err);
        return -1;
    }
    if (stop_rc) {
        snprintf(err, err_len, "timing pass: %s", stop_err);
        return -1;
    }
    if (kernels->dropped) {
        snprintf(err, err_len,
                 "timing pass: CUPTI dropped %zu activity records (buffers too small)",
                 kernels->dropped);
        return -1;
    }
    gpu_kernel_list_sort(kernels);
    return 0;
}

/* Runs the metric pass over a second step. 0 with *fell_back set when the
 * counters cannot be read here (result->why says why), -1 on an error. Any
 * CUPTI refusal before the step (opening or starting the pass) falls back,
 * the known ones with their cause and fix, the others (MPS refuses in a way
 * CUPTI's device check cannot see) with CUPTI's own words: nothing has been
 * measured then that would be wrong, and the timing pass's rows are kept.
 * After the step, a CUPTI error that is not a known refusal is an error:
 * the counters were taken and could not be read. */
static int metric_pass(const gpu_passes *p, step_driver *d, precision prec,
                       const gpu_trace_options *opt, int max_ranges, gpu_metric_pass *metric,
                       bool *fell_back, gpu_trace_result *result, char *err, size_t err_len)
{
    char why[300] = "";
    gpu_metric_info info = {0};
    bool before_step = true;
    int rc = p->metrics_open(p->ctx, opt->device, prec, &opt->metrics, max_ranges, &info, why,
                             sizeof why);
    if (rc == 0) {
        result->replay_passes = info.passes;
        result->metrics = info.metrics;
        snprintf(result->chip, sizeof result->chip, "%s", info.chip);
        rc = p->metrics_start(p->ctx, why, sizeof why);
        if (rc == 0) {
            before_step = false;
            observer_state s = {.p = p};
            step_grad_hooks saved = d->grad_hooks;
            d->observer =
                (step_observer){.ctx = &s, .op_begin = metric_begin, .op_end = metric_end};
            d->grad_hooks = (step_grad_hooks){0}; /* no communication is replayed */
            float loss;
            int step_rc = step_run(d, &loss);
            d->observer = (step_observer){0};
            d->grad_hooks = saved;
            p->metrics_op(p->ctx, 0);
            rc = p->metrics_stop(p->ctx, metric, why, sizeof why);
            if (step_rc) {
                p->metrics_close(p->ctx);
                snprintf(err, err_len, "metric pass step: %s", step_error(d));
                return -1;
            }
        }
        p->metrics_close(p->ctx);
    }
    if (rc == 0)
        return 0;
    gpu_cause cause = rc > 0 ? gpu_cause_of_cupti(rc) : GPU_CAUSE_NONE;
    if (cause == GPU_CAUSE_NONE && !(rc > 0 && before_step)) {
        snprintf(err, err_len, "metric pass: %s", why);
        return -1;
    }
    gpu_cause_line(cause, why, result->why, sizeof result->why);
    result->replay_passes = result->metrics = 0;
    *fell_back = true;
    return 0;
}

/* ---- rows ------------------------------------------------------------------ */

static int make_rows(const gpu_passes *p, const gpu_kernel_list *k, gpu_row **out, char *err,
                     size_t err_len)
{
    gpu_row *rows = calloc((size_t)(k->n > 0 ? k->n : 1), sizeof *rows);
    if (!rows) {
        snprintf(err, err_len, "out of memory for %d kernel rows", k->n);
        return -1;
    }
    for (int i = 0; i < k->n; i++) {
        gpu_row *r = &rows[i];
        r->seq = i;
        r->kernel = p->demangle ? p->demangle(k->v[i].name) : NULL;
        if (!r->kernel)
            r->kernel = strdup(k->v[i].name);
        if (!r->kernel) {
            gpu_rows_free(rows, i);
            snprintf(err, err_len, "out of memory for kernel names");
            return -1;
        }
        uint64_t end = k->v[i].end_ns > k->v[i].start_ns ? k->v[i].end_ns : k->v[i].start_ns;
        r->duration_ns = (int64_t)(end - k->v[i].start_ns);
        gpu_row_set_op(r, k->v[i].op, k->v[i].name);
        r->c = (gpu_counts){NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    }
    *out = rows;
    return 0;
}

static void summarise(const gpu_kernel_list *k, const gpu_row *rows, gpu_trace_result *result)
{
    uint64_t first = UINT64_MAX, last = 0;
    result->kernels = k->n;
    for (int i = 0; i < k->n; i++) {
        const gpu_kernel *x = &k->v[i];
        result->kernel_ms += (double)rows[i].duration_ns * 1e-6;
        result->comm_kernels += gpu_kernel_is_comm(x);
        result->unattributed += rows[i].layer == GPU_ROW_NO_LAYER;
        if (x->start_ns && x->start_ns < first)
            first = x->start_ns;
        if (x->end_ns > last)
            last = x->end_ns;
        const gpu_counts *c = &rows[i].c;
        double terms[] = {c->flops_fp64, c->flops_fp32, c->flops_fp16, c->flops_tensor};
        for (int t = 0; t < 4; t++)
            if (isfinite(terms[t]))
                result->flops += terms[t];
        if (isfinite(c->dram_read))
            result->dram_bytes += c->dram_read;
        if (isfinite(c->dram_write))
            result->dram_bytes += c->dram_write;
    }
    result->span_ms = last > first ? (double)(last - first) * 1e-6 : 0;
    result->rows = k->n;
}

/* Per-operation host timing when per-kernel timing is not available. */
static int host_fallback(step_driver *d, int batch, precision prec, const gpu_trace_options *opt,
                         const char *path, gpu_cause cause, const char *detail,
                         gpu_trace_result *result, char *err, size_t err_len)
{
    char line[300];
    gpu_cause_line(cause, detail, line, sizeof line);
    snprintf(result->why, sizeof result->why,
             "per-kernel timing unavailable, each operation timed on the host instead: %s", line);
    trace_options topt = {.env = opt->env, .repeat = opt->repeat, .use_perf = false};
    trace_result tr;
    if (trace_step(d, batch, prec, &topt, path, &tr, err, err_len))
        return -1;
    result->rows = result->kernels = tr.rows;
    result->kernel_ms = tr.total_ms;
    result->flops = (double)tr.flops;
    result->dram_bytes = (double)tr.bytes;
    result->source = "analytic";
    result->timing = "host";
    return 0;
}

int gpu_trace_step_with(const gpu_passes *p, step_driver *d, int batch, precision prec,
                        const gpu_trace_options *opt, const char *path, gpu_trace_result *result,
                        char *err, size_t err_len)
{
    memset(result, 0, sizeof *result);
    result->source = "analytic";
    result->timing = "cupti";
    if (d->captured) {
        snprintf(err, err_len, "a step captured as a graph cannot be traced: trace it first");
        return -1;
    }
    if (!p)
        return host_fallback(d, batch, prec, opt, path, GPU_CAUSE_NO_CUPTI, "", result, err,
                             err_len);
    char why[300] = "";
    int rc = p->timing_start(p->ctx, opt->device, why, sizeof why);
    if (rc) {
        gpu_cause cause = rc > 0 ? gpu_cause_of_cupti(rc) : GPU_CAUSE_NONE;
        return host_fallback(d, batch, prec, opt, path, cause, why, result, err, err_len);
    }

    gpu_kernel_list kernels = {0};
    gpu_metric_pass metric = {0};
    gpu_row *rows = NULL;
    int *map = NULL;
    int status = -1;
    if (timing_pass(p, d, opt->timing_warmup, &kernels, result, err, err_len) ||
        make_rows(p, &kernels, &rows, err, err_len))
        goto done;

    if (opt->counters == GPU_COUNTERS_CUPTI) {
        int replayed = 0;
        for (int i = 0; i < kernels.n; i++)
            replayed += !gpu_kernel_is_comm(&kernels.v[i]);
        bool fell_back = false;
        double t0 = monotonic_seconds();
        if (metric_pass(p, d, prec, opt, replayed + RANGE_SLACK, &metric, &fell_back, result,
                        err, err_len))
            goto done;
        result->metric_pass_s = monotonic_seconds() - t0;
        if (!fell_back) {
            map = malloc((size_t)(kernels.n > 0 ? kernels.n : 1) * sizeof *map);
            if (!map) {
                snprintf(err, err_len, "out of memory joining %d kernels", kernels.n);
                goto done;
            }
            if (gpu_join(&kernels, &metric, p->demangle, map, why, sizeof why)) {
                snprintf(err, err_len, "joining the timing and metric passes: %s", why);
                goto done;
            }
            for (int i = 0; i < kernels.n; i++)
                if (map[i] >= 0) {
                    rows[i].c = metric.counts[map[i]];
                    rows[i].counted = true;
                }
            result->source = "cupti";
            result->unnamed = metric.unnamed;
        }
    }
    int missing = gpu_rows_spread_analytic(d, batch, prec, rows, kernels.n);
    if (missing < 0) {
        snprintf(err, err_len, "out of memory spreading the analytic model over the kernels");
        goto done;
    }
    result->ops_without_kernels = missing;
    summarise(&kernels, rows, result);
    gpu_csv_labels labels = {.env = opt->env, .repeat = opt->repeat, .batch = batch, .prec = prec};
    if (gpu_rows_write(path, d->net, &labels, rows, kernels.n, err, err_len))
        goto done;
    status = 0;
done:
    free(map);
    gpu_rows_free(rows, kernels.n);
    gpu_metric_pass_free(&metric);
    gpu_kernel_list_free(&kernels);
    return status;
}
