/* The tables of a run's report that show a part of the run as it is: the
 * environment (env.json), the measured peaks, the results per configuration
 * and failed runs (scaling: report_scaling.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../trace_gpu.h"
#include "report_sections.h"

/* Arrays of objects (ranks, devices) beyond this many elements are summarised. */
#define ENV_MAX_ELEMENTS 8

/* The element index of a key like "ranks[12].host", or -1. */
static int element_index(const char *key)
{
    const char *b = strchr(key, '[');
    return b ? atoi(b + 1) : -1;
}

void report_environment(report_doc *d, const run_model *run)
{
    doc_heading(d, 1, "Environment");
    const run_env *env = &run->env;
    if (!env->present) {
        doc_para(d, "No env.json in this run folder: the machine and library versions were not "
                    "recorded (the runner writes it with bin/envinfo).");
        return;
    }
    if (env->error[0]) {
        doc_para(d, "env.json could not be read: %s.", env->error);
        return;
    }
    doc_table(d, "ll", (const char *const[]){"key", "value"});
    int hidden = 0;
    for (int i = 0; i < env->n; i++) {
        if (element_index(env->items[i].key) >= ENV_MAX_ELEMENTS) {
            hidden++;
            continue;
        }
        doc_cell(d, "%s", env->items[i].key);
        doc_cell(d, "%s", env->items[i].value);
    }
    if (!env->complete)
        doc_note(d, "env.json is not well-formed JSON: the entries up to the point where it "
                    "breaks off are shown.");
    if (hidden)
        doc_note(d, "%d further entries of arrays longer than %d elements are in env.json.", hidden,
                 ENV_MAX_ELEMENTS);
}

void report_peaks(report_doc *d, const run_model *run)
{
    doc_heading(d, 1, "Measured peaks");
    if (run->n_roofs == 0) {
        doc_para(d, "No peaks.csv: the roofs were not measured (bin/peaks).");
        return;
    }
    doc_para(d, "The machine's roofs as bin/peaks measured them, beside the vendor's or the "
                "architecture's figure where one exists (measured / spec).");
    /* a figure that failed bin/peaks' checks says so in its own row; the
     * column is there only when one did */
    bool suspects = false;
    for (int i = 0; i < run->n_roofs; i++)
        suspects = suspects || run->roofs[i].suspect;
    doc_table(d, suspects ? "llrlrrrll" : "llrlrrrl",
              (const char *const[]){"device", "ceiling", "measured", "unit", "spec", "measured/spec",
                                    "threads or SMs", "method", "notes"});
    for (int i = 0; i < run->n_roofs; i++) {
        const run_roof *r = &run->roofs[i];
        char a[FMT_LEN], b[FMT_LEN], c[FMT_LEN];
        doc_cell(d, "%s", r->device);
        doc_cell(d, "%s", r->ceiling);
        doc_cell(d, "%s", fmt_num(a, r->value));
        doc_cell(d, "%s", r->unit);
        doc_cell(d, "%s", fmt_num(b, r->spec_value));
        doc_cell(d, "%s", r->spec_value > 0 ? fmt_pct(c, 100 * r->value / r->spec_value) : "-");
        doc_cell(d, "%s", r->threads_or_sms);
        doc_cell(d, "%s", r->method);
        if (suspects)
            doc_cell(d, "%s", r->suspect ? r->suspect : "");
    }
}

#define GIB (1024.0 * 1024.0 * 1024.0)

/* A count as its cell: empty when absent. */
static void count_cell(report_doc *d, int v)
{
    if (v >= 0)
        doc_cell(d, "%d", v);
    else
        doc_cell(d, "%s", "");
}

static void result_row(report_doc *d, const summary_row *s, bool ranks)
{
    char a[FMT_LEN], b[FMT_LEN], c[FMT_LEN];
    doc_cell(d, "%s", s->model);
    doc_cell(d, "%d", s->res);
    doc_cell(d, "%d", s->batch);
    doc_cell(d, "%s", report_precision_label(a, sizeof a, s->precision, s->graph));
    if (ranks)
        count_cell(d, s->world_size);
    doc_cell(d, "%s", fmt_num(a, s->ips_median));
    if (isnan(s->ips_q1) || isnan(s->ips_q3))
        doc_cell(d, "-");
    else
        doc_cell(d, "%s to %s", fmt_num(b, s->ips_q1), fmt_num(c, s->ips_q3));
    doc_cell(d, "%s", fmt_num(a, s->step_ms_median));
    doc_cell(d, "%s", fmt_num(a, 1000 * s->achieved_tflops));
    doc_cell(d, "%s", s->ceiling);
    doc_cell(d, "%s", fmt_pct(a, s->pct_of_peak));
    doc_cell(d, "%s", fmt_pct(a, s->mfu));
    doc_cell(d, "%s", fmt_share(a, s->mem_bound_share));
    doc_cell(d, "%s", fmt_pct(a, s->pct_of_roofs));
    doc_cell(d, "%s", fmt_num(a, s->peak_mem_bytes / GIB));
    doc_cell(d, "%s", *s->status ? s->status : "-");
}

void report_results(report_doc *d, const run_model *run)
{
    doc_heading(d, 1, "Results per configuration");
    const summary *s = &run->summary;
    if (s->n == 0) {
        doc_para(d, "No summary.csv: run bin/analyze on this folder (scripts/render.sh does).");
        return;
    }
    doc_para(d, "Medians over every timed step of every repeat. Achieved GFLOP/s = the model's "
                "analytic FLOPs per step / the median step time; %% of peak and MFU are that "
                "against the compute ceiling of the precision; memory-bound time is the share of "
                "the traced step spent in kernels left of the ridge point; %% of roofs is the "
                "time the traced step's kernels would take at their roofs, each at max(FLOPs / "
                "peak, bytes / bandwidth), against the median step: how close the step runs to "
                "what this machine allows for its work, memory-bound kernels included; peak "
                "memory is the "
                "most any of the configuration's processes held (CPU: resident set; GPU: device "
                "memory the backend holds).");
    bool ranks = false, graph = false;
    for (int i = 0; i < s->n; i++) {
        ranks = ranks || s->rows[i].world_size > 1;
        graph = graph || s->rows[i].graph;
    }
    if (graph)
        doc_para(d, "A precision marked graph replays the step from one captured CUDA graph "
                    "(bin/train --graph) instead of launching it layer by layer; its "
                    "memory-bound time is its eager twin's traced step (the same kernels).");
    static const char *const header[] = {"model", "res", "batch", "precision", "ranks",
                                         "images/s", "IQR", "step ms", "GFLOP/s (analytic)",
                                         "ceiling", "% of peak", "MFU", "memory-bound time",
                                         "% of roofs", "peak memory GiB", "status"};
    const char *const *h = header;
    doc_table(d, ranks ? "lrrlrrrrrlrrrrrl" : "lrrlrrrrlrrrrrl",
              ranks ? h
                    : (const char *const[]){h[0], h[1], h[2], h[3], h[5], h[6], h[7], h[8], h[9],
                                            h[10], h[11], h[12], h[13], h[14], h[15]});
    for (int i = 0; i < s->n; i++)
        result_row(d, &s->rows[i], ranks);
}

void report_failures(report_doc *d, const run_model *run)
{
    int n = 0, skipped = 0;
    for (int i = 0; i < run->n_attempts; i++) {
        n += strcmp(run->attempts[i].status, "ok") != 0;
        skipped += run->attempts[i].skipped_here;
    }
    doc_heading(d, 1, "Failed and skipped runs");
    if (!(run->present & RUN_CONFIGS)) {
        doc_para(d, "No configs.csv: which runs were attempted is not recorded here.");
        return;
    }
    if (n == 0) {
        doc_para(d, "All %d runs of the matrix completed.", run->n_attempts);
        return;
    }
    if (skipped == 0)
        doc_para(d, "%d of the %d runs did not complete; the matrix went on. Their logs are "
                    "named relative to the run folder.",
                 n, run->n_attempts);
    else
        doc_para(d, "%d of the %d runs did not complete: %d failed, and %d %s skipped here "
                    "(\"skipped here\": this machine cannot run %s, a precision its GPU lacks or "
                    "a batch larger than its memory holds; not a failure). The matrix went on. "
                    "Logs are named relative to the run folder.",
                 n, run->n_attempts, n - skipped, skipped, skipped == 1 ? "was" : "were",
                 skipped == 1 ? "it" : "them");
    doc_table(d, "llrrlrll",
              (const char *const[]){"config", "model", "res", "batch", "precision", "repeat",
                                    "status", "log"});
    for (int i = 0; i < run->n_attempts; i++) {
        const run_attempt *a = &run->attempts[i];
        if (strcmp(a->status, "ok") == 0)
            continue;
        doc_cell(d, "%s", a->config);
        doc_cell(d, "%s", a->model);
        doc_cell(d, "%d", a->res);
        doc_cell(d, "%d", a->batch);
        char label[FMT_LEN];
        doc_cell(d, "%s", report_precision_label(label, sizeof label, a->precision, a->graph));
        doc_cell(d, "%s", a->repeat);
        doc_cell(d, "%s", a->status);
        doc_cell(d, "%s", a->log);
    }
}

static void source_item(report_doc *d, const char *s, bool gpu)
{
    if (strcmp(s, "analytic") == 0 && gpu)
        doc_item(d, "Kernel FLOPs marked analytic come from the cost model (models/cost.c), "
                    "their DRAM bytes from what the CUDA backend's kernels move by design "
                    "(models/cuda/cuda_traffic.h: each tensor once a kernel, its fusions "
                    "included, the libraries' workspaces not counted), an operation's spread "
                    "over its kernels by duration; not counted: their roofline points show "
                    "where the kernels would sit with no reuse between kernels and full reuse "
                    "within one.");
    else if (strcmp(s, "analytic") == 0)
        doc_item(d, "Kernel FLOPs and bytes marked analytic come from the cost model "
                    "(models/cost.c): the minimal traffic of each layer and pass, not "
                    "counted; their roofline points show where the kernels would sit with "
                    "ideal caching.");
    else if (strcmp(s, "cupti") == 0)
        doc_item(d, "Kernel FLOPs and bytes marked cupti were counted by CUPTI's range "
                    "profiler in a separate replay pass; durations come from a pass with no "
                    "counters.");
    else if (strcmp(s, "perf") == 0)
        doc_item(d, "Kernel FLOPs and bytes marked perf were counted by CPU performance "
                    "counters (perf_event_open).");
    else if (*s)
        doc_item(d, "Kernel FLOPs and bytes marked %s: see kernels.csv.", s);
}

void report_sources(report_doc *d, const run_model *run)
{
    doc_heading(d, 1, "Sources of the numbers");
    doc_list(d);
    doc_item(d, "Step times and images/s: steps.csv (every timed iteration; warm-up steps are "
                "never written). Medians, quartiles and intervals: summary.csv, variability.csv.");
    if (run->n_reference > 0)
        doc_item(d, "PyTorch's step times and images/s: reference.csv (scripts/pytorch_ref.py, run "
                    "by the runner after the matrix; steps.csv's format, backend pytorch).");
    doc_item(d, "Roofs: peaks.csv (bin/peaks microbenchmarks); spec values from peaks/specs.csv or "
                "the architecture.");
    /* each source once, in the order the roofline rows name them */
    enum { MAX_SOURCES = 16 };
    const char *seen[MAX_SOURCES];
    int n_seen = 0;
    for (int k = 0; k < run->roofline.n; k++)
        for (int i = 0; i < run->roofline.configs[k].n; i++) {
            const char *s = run->roofline.configs[k].rows[i].source;
            bool known = false;
            for (int j = 0; j < n_seen && !known; j++)
                known = strcmp(seen[j], s) == 0;
            if (known || n_seen == MAX_SOURCES)
                continue;
            seen[n_seen++] = s;
            source_item(d, s, run_has_gpu_trace(run));
        }
    doc_item(d, "GFLOP/s in the results table use the analytic FLOPs of the whole model "
                "(bin/complexity), as MFU is defined.");
}
