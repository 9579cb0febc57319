/* The findings of the GPU sections: per GPU trace, what limits its kernels
 * on the hierarchical roofline, and where the counters and the cost model
 * disagree by more than COST_CHECK_FACTOR. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cost_check.h"
#include "../hier_roofline.h"
#include "../trace_gpu.h"
#include "report_sections.h"

/* Layers named in a finding, furthest from agreement first. */
#define FINDING_LAYERS 3

static void roofline_finding(report_doc *d, const run_trace *t, const roofs *rf,
                             const char *mem)
{
    hier_config c;
    if (hier_config_build(t, rf, &c)) {
        d->failed = true;
        return;
    }
    double share[HIER_COMPUTE + 1] = {0}, tensor_share = 0, tensor_flops = 0, tensor_ns = 0;
    for (int i = 0; i < c.n; i++) {
        const hier_point *p = &c.kernels[i];
        double s = isnan(p->time_share) ? 0 : p->time_share;
        if (p->limit >= 0)
            share[p->limit] += s;
        if (p->tensor) {
            tensor_share += s;
            tensor_flops += p->flops > 0 ? p->flops : 0;
            tensor_ns += p->duration_ns > 0 ? p->duration_ns : 0;
        }
    }
    char name[160], text[1024], a[FMT_LEN], b[FMT_LEN];
    size_t used = 0;
    report_key_short(name, sizeof name, t->model, t->res, t->batch, t->precision);
    fmt_append(text, sizeof text, &used, "%s on the GPU (FLOPs and bytes: %s): of the kernel "
               "time, ", name, c.step.source);
    int named = 0;
    for (int l = 0; l <= HIER_COMPUTE; l++)
        if (share[l] > 0)
            fmt_append(text, sizeof text, &used, "%s%s is in kernels limited by %s",
                       named++ ? ", " : "", fmt_share(a, share[l]), hier_level_name(l, mem));
    if (!named)
        fmt_append(text, sizeof text, &used, "none is in a kernel with a known limit");
    if (tensor_share > 0)
        fmt_append(text, sizeof text, &used, "; tensor-core kernels take %s of it at %s",
                   fmt_share(a, tensor_share), fmt_gflops(b, tensor_flops / tensor_ns));
    fmt_append(text, sizeof text, &used, ". The whole step is limited by %s at %s of its "
               "attainable rate.",
               c.step.limit < 0 ? "an unknown roof" : hier_level_name(c.step.limit, mem),
               fmt_pct(a, c.step.pct_of_attainable));
    doc_item(d, "%s", text);
    hier_config_free(&c);
}

static bool outside(double ratio)
{
    return isfinite(ratio) && (ratio > COST_CHECK_FACTOR || ratio < 1 / COST_CHECK_FACTOR);
}

/* "conv1 fwd FLOPs 2.67x", "loss bytes 3.00x" or both ratios. */
static void name_entry(char *text, size_t len, size_t *used, const cost_check *c,
                       cost_check_entry e)
{
    const cost_check_row *r = &c->layers[e.layer];
    const cost_counts *k = cost_check_scope(r, e.scope);
    char a[FMT_LEN];
    fmt_append(text, len, used, "%s%s%s", r->name, e.scope < COST_PASSES ? " " : "",
               e.scope < COST_PASSES ? cost_check_pass_name(e.scope) : "");
    if (outside(k->flops_ratio))
        fmt_append(text, len, used, " FLOPs %sx", fmt_num(a, k->flops_ratio));
    if (outside(k->bytes_ratio))
        fmt_append(text, len, used, " bytes %sx", fmt_num(a, k->bytes_ratio));
}

static void cost_finding(report_doc *d, const run_trace *t)
{
    cost_check c;
    if (cost_check_build(t, &c)) {
        d->failed = true;
        return;
    }
    /* nothing counted (the trace's FLOPs and bytes are the cost model's own):
     * "GPU: counters against the cost model" says why, and there is no
     * disagreement to report */
    if (c.why[0]) {
        cost_check_free(&c);
        return;
    }
    int n = 0;
    cost_check_entry *e = cost_check_outside_list(&c, COST_CHECK_FACTOR, &n);
    if (!e) {
        d->failed = true;
    } else if (n > 0 || cost_counts_outside(&c.step.all, COST_CHECK_FACTOR)) {
        char name[160], text[1536], a[FMT_LEN], b[FMT_LEN];
        size_t used = 0;
        report_key_short(name, sizeof name, t->model, t->res, t->batch, t->precision);
        fmt_append(text, sizeof text, &used,
                   "%s: the counters and the cost model disagree by more than %gx in %d layer "
                   "pass%s",
                   name, COST_CHECK_FACTOR, n, n == 1 ? "" : "es");
        for (int i = 0; i < n && i < FINDING_LAYERS; i++) {
            fmt_append(text, sizeof text, &used, "%s", i ? ", " : " (");
            name_entry(text, sizeof text, &used, &c, e[i]);
        }
        fmt_append(text, sizeof text, &used, "%s; the whole step counts %sx the analytic FLOPs "
                   "and %sx the minimal DRAM bytes. A convolution algorithm (Winograd, FFT, "
                   "padded channels) or a fusion explains most; see \"GPU: counters against the "
                   "cost model\".",
                   n > FINDING_LAYERS ? ", ...)" : n > 0 ? ")" : "",
                   fmt_num(a, c.step.all.flops_ratio), fmt_num(b, c.step.all.bytes_ratio));
        doc_item(d, "%s", text);
    }
    free(e);
    cost_check_free(&c);
}

void report_gpu_findings(report_doc *d, const run_model *run)
{
    if (!run_has_gpu_trace(run))
        return;
    roofs rf;
    roofs_init(&rf, run->roofs, run->n_roofs);
    const char *mem = report_memory_name(run);
    for (int k = 0; k < run->n_traces; k++) {
        const run_trace *t = &run->traces[k];
        if (!trace_is_gpu(run, t))
            continue;
        roofline_finding(d, t, &rf, mem);
        cost_finding(d, t);
    }
}
