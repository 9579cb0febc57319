#include "step_trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../models/clock.h"
#include "perf.h"

typedef struct {
    int layer;          /* STEP_LOSS, STEP_ALL_LAYERS or a layer */
    pass phase;
    int64_t duration_ns;
    perf_fp_counts counted;
    bool layout;            /* the operation's layout conversions, not its kernel */
    int64_t read_bytes, written_bytes;  /* a layout row's */
} trace_row;

typedef struct {
    const step_driver *d;
    trace_row *rows;
    int n, cap;
    double t0;              /* when the current operation began */
    perf_fp *perf;
    perf_fp_counts last;    /* counter values at the end of the previous row */
    int perf_failed;        /* a read failed: the step falls back to analytic */
    char *why;
    size_t why_len;
    char layout_kernel[64]; /* the backend's name of its layout conversions */
} trace_state;

/* An operation a backend folded into another one's kernel has no time of its
 * own: its work is booked on the row of the operation that does it. */
static bool fused_away(const step_driver *d, int layer, pass phase)
{
    return layer >= 0 && d->ops->fused_into && d->ops->fused_into(d->b, layer, phase) >= 0;
}

/* The layout conversions since the last call (none without the op). */
static layout_work take_layout_work(trace_state *s)
{
    layout_work w = {0};
    if (s->d->ops->take_layout_work)
        s->d->ops->take_layout_work(s->d->b, &w, s->layout_kernel, sizeof s->layout_kernel);
    return w;
}

/* Each operation runs alone: the backend is idle before and after it. */
static int op_begin(void *ctx, int layer, pass phase, char *err, size_t err_len)
{
    trace_state *s = ctx;
    if (fused_away(s->d, layer, phase))
        return 0;
    if (s->d->ops->sync(s->d->b)) {
        snprintf(err, err_len, "%s", s->d->ops->error(s->d->b));
        return -1;
    }
    (void)take_layout_work(s); /* what ran before this operation is not its own */
    s->t0 = monotonic_seconds();
    return 0;
}

static int op_end(void *ctx, int layer, pass phase, char *err, size_t err_len)
{
    trace_state *s = ctx;
    if (fused_away(s->d, layer, phase))
        return 0;
    if (s->d->ops->sync(s->d->b)) {
        snprintf(err, err_len, "%s", s->d->ops->error(s->d->b));
        return -1;
    }
    double seconds = monotonic_seconds() - s->t0;
    layout_work w = take_layout_work(s);
    if (layer < 0) /* the loss and the fused update are no layer's: their own row keeps it */
        w = (layout_work){0};
    if (s->n + (w.count > 0) >= s->cap) {
        snprintf(err, err_len, "more than %d rows in one step", s->cap);
        return -1;
    }
    int64_t total_ns = (int64_t)(seconds * 1e9 + 0.5);
    int64_t layout_ns = w.ns < total_ns ? w.ns : total_ns;
    trace_row *r = &s->rows[s->n++];
    *r = (trace_row){.layer = layer, .phase = phase, .duration_ns = total_ns - layout_ns};
    if (w.count > 0)
        s->rows[s->n++] = (trace_row){.layer = layer, .phase = phase, .duration_ns = layout_ns,
                                      .layout = true, .read_bytes = w.read_bytes,
                                      .written_bytes = w.written_bytes};
    if (!s->perf || s->perf_failed)
        return 0;
    perf_fp_counts now;
    if (perf_fp_read(s->perf, &now, s->why, s->why_len)) {
        s->perf_failed = 1;
        return 0;
    }
    r->counted = (perf_fp_counts){now.fp64 - s->last.fp64, now.fp32 - s->last.fp32,
                                  now.unsplit - s->last.unsplit};
    s->last = now;
    return 0;
}

static FILE *open_kernels_csv(const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "a");
    if (!f) {
        snprintf(err, err_len, "cannot open %s for appending: %s", path, strerror(errno));
        return NULL;
    }
    if (ftell(f) == 0)
        fprintf(f, "%s\n", KERNELS_CSV_HEADER);
    return f;
}

static int bias_grad_by(const step_driver *d, int layer)
{
    return d->ops->bias_grad_by ? d->ops->bias_grad_by(d->b, layer) : -1;
}

/* The bias adds of a conv or fc's pass: its FLOPs beyond the GEMM's 2 per MAC. */
static int64_t bias_flops(const layer_cost *lc, pass phase)
{
    return lc->flops[phase] > 0 ? lc->flops[phase] - 2 * lc->macs : 0;
}

/* One kernels.csv row; FLOPs and bytes of the analytic model unless counted.
 * A conv or fc's GEMM FLOPs (tensor cores in the tensor precisions) are apart
 * from its bias adds, which CUDA cores do, in the backward-data row of the
 * layer that sums the bias gradient where the backend moved them there. */
op_cost trace_op_cost(const step_driver *d, int layer, pass phase, int batch, precision prec)
{
    const network *net = d->net;
    op_cost c = {0, 0, 0, 0};
    if (layer == STEP_LOSS) {
        step_cost whole = cost_step(net, batch, prec, NULL);
        c.other_flops = whole.loss_flops;
        c.bytes = whole.loss_bytes;
        c.written = whole.loss_written;
        return c;
    }
    for (int i = 0; i < net->n_layers; i++) {
        bool mine = layer == STEP_ALL_LAYERS || i == layer ||
                    (d->ops->fused_into && d->ops->fused_into(d->b, i, phase) == layer);
        if (!mine)
            continue;
        layer_cost lc = cost_layer(net, i, batch, prec);
        layer_type t = net->layers[i].type;
        if (phase != PASS_UPDATE && (t == LAYER_CONV || t == LAYER_FC)) {
            int64_t bias = bias_flops(&lc, phase);
            c.gemm_flops += lc.flops[phase] - bias;
            if (phase != PASS_BWD_WEIGHTS || layer == STEP_ALL_LAYERS || bias_grad_by(d, i) < 0)
                c.other_flops += bias;
        } else {
            c.other_flops += lc.flops[phase];
        }
        c.bytes += lc.bytes[phase];
        c.written += lc.written[phase];
        if (phase == PASS_BWD_DATA && layer != STEP_ALL_LAYERS)
            for (int j = 0; j < net->n_layers; j++)
                if (bias_grad_by(d, j) == i) {
                    layer_cost summed = cost_layer(net, j, batch, prec);
                    c.other_flops += bias_flops(&summed, PASS_BWD_WEIGHTS);
                }
    }
    return c;
}

/* A layout row: no FLOPs (a reorder's arithmetic is none), the bytes the
 * backend counted. */
static void write_layout_row(FILE *f, const trace_state *s, const trace_row *r, int seq,
                             int batch, precision prec, const trace_options *opt,
                             trace_result *result)
{
    const network *net = s->d->net;
    fprintf(f, "%s,%s,%d,%d,%s,%d,%d,%s,%s,reorder,%s,%lld,0,0,0,0,%lld,%lld,,,%s\n", opt->env,
            net->model, net->res, batch, precision_name(prec), opt->repeat, seq,
            s->layout_kernel, net->layers[r->layer].name, pass_name(r->phase),
            (long long)r->duration_ns, (long long)r->read_bytes, (long long)r->written_bytes,
            result->source);
    result->rows++;
    result->layout_rows++;
    result->total_ms += r->duration_ns * 1e-6;
    result->layout_ms += r->duration_ns * 1e-6;
    result->bytes += r->read_bytes + r->written_bytes;
}

static void write_row(FILE *f, const step_driver *d, const trace_row *r, int seq, int batch,
                      precision prec, const trace_options *opt, bool counted,
                      trace_result *result)
{
    const network *net = d->net;
    op_cost oc = trace_op_cost(d, r->layer, r->phase, batch, prec);
    int64_t flops = oc.gemm_flops + oc.other_flops, bytes = oc.bytes, written = oc.written;
    /* the backend's own account of what its fused kernels move, where it has one */
    int64_t op_read, op_written;
    if (r->layer >= 0 && d->ops->op_bytes &&
        d->ops->op_bytes(d->b, r->layer, r->phase, &op_read, &op_written) == 0) {
        bytes = op_read + op_written;
        written = op_written;
    }
    const char *layer_name, *type;
    if (r->layer == STEP_LOSS) {
        layer_name = type = "loss";
    } else if (r->layer == STEP_ALL_LAYERS) {
        layer_name = "all";
        type = "sgd";
    } else {
        layer_name = net->layers[r->layer].name;
        type = r->phase == PASS_UPDATE ? "sgd" : layer_type_name(net->layers[r->layer].type);
    }
    int64_t fp64 = 0, fp32 = flops;
    if (counted) {
        /* AMD's counter does not split by precision: the CPU backend runs fp32 */
        fp64 = r->counted.fp64;
        fp32 = r->counted.fp32 + r->counted.unsplit;
    }
    char kernel[160];
    d->ops->kernel_name(d->b, r->layer, r->phase, kernel, sizeof kernel);
    fprintf(f, "%s,%s,%d,%d,%s,%d,%d,%s,%s,%s,%s,%lld,%lld,%lld,0,0,%lld,%lld,,,%s\n", opt->env,
            net->model, net->res, batch, precision_name(prec), opt->repeat, seq, kernel,
            layer_name, type, r->layer == STEP_LOSS ? "loss" : pass_name(r->phase),
            (long long)r->duration_ns, (long long)fp64, (long long)fp32,
            (long long)(bytes - written), (long long)written, result->source);
    result->rows++;
    result->total_ms += r->duration_ns * 1e-6;
    result->flops += fp64 + fp32;
    result->bytes += bytes;
}

int trace_step(step_driver *d, int batch, precision prec, const trace_options *opt,
               const char *path, trace_result *result, char *err, size_t err_len)
{
    memset(result, 0, sizeof *result);
    trace_state s = {.why = result->perf_why, .why_len = sizeof result->perf_why};
    /* forward, backward-data, backward-weights and update per layer, and the
     * loss, each maybe with a layout row */
    s.cap = 2 * (4 * d->net->n_layers + 2);
    s.rows = calloc((size_t)s.cap, sizeof *s.rows);
    if (!s.rows) {
        snprintf(err, err_len, "out of memory for %d trace rows", s.cap);
        return -1;
    }
    if (!opt->use_perf)
        snprintf(result->perf_why, sizeof result->perf_why, "counters not asked for");
    else if ((s.perf = perf_fp_open(result->perf_why, sizeof result->perf_why)) &&
             perf_fp_read(s.perf, &s.last, result->perf_why, sizeof result->perf_why))
        s.perf_failed = 1;

    s.d = d;
    d->observer = (step_observer){.ctx = &s, .op_begin = op_begin, .op_end = op_end};
    float loss;
    int rc = step_run(d, &loss);
    d->observer = (step_observer){0};
    bool counted = s.perf && !s.perf_failed;
    perf_fp_close(s.perf);
    if (rc) {
        snprintf(err, err_len, "traced step: %s", step_error(d));
        free(s.rows);
        return -1;
    }
    result->source = counted ? "perf" : "analytic";
    FILE *f = open_kernels_csv(path, err, err_len);
    if (!f) {
        free(s.rows);
        return -1;
    }
    for (int i = 0; i < s.n; i++) {
        if (s.rows[i].layout)
            write_layout_row(f, &s, &s.rows[i], i, batch, prec, opt, result);
        else
            write_row(f, d, &s.rows[i], i, batch, prec, opt, counted, result);
    }
    free(s.rows);
    if (fclose(f)) {
        snprintf(err, err_len, "writing %s failed: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
