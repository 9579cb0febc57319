/* The tables of a run's report that show a file as it is: the environment
 * (env.json), the measured peaks (peaks.csv), the results per configuration
 * (summary.csv), scaling (scaling.csv) and failed runs (configs.csv). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_env.h"
#include "report_sections.h"

/* Arrays of objects (ranks, devices) beyond this many elements are summarised. */
#define ENV_MAX_ELEMENTS 8

/* The element index of a key like "ranks[12].host", or -1. */
static int element_index(const char *key)
{
    const char *b = strchr(key, '[');
    return b ? atoi(b + 1) : -1;
}

void report_environment(report_doc *d, const report_run *run)
{
    doc_heading(d, 1, "Environment");
    char path[REPORT_PATH_LEN + 16], err[REPORT_PATH_LEN + 128];
    snprintf(path, sizeof path, "%s/env.json", run->dir);
    env_entries env;
    if (!run->has_env_json) {
        doc_para(d, "No env.json in this run folder: the machine and library versions were not "
                    "recorded (the runner writes it with bin/envinfo).");
        return;
    }
    if (report_env_read(path, &env, err, sizeof err)) {
        doc_para(d, "env.json could not be read: %s.", err);
        return;
    }
    doc_table(d, "ll", (const char *const[]){"key", "value"});
    int hidden = 0;
    for (int i = 0; i < env.n; i++) {
        if (element_index(env.items[i].key) >= ENV_MAX_ELEMENTS) {
            hidden++;
            continue;
        }
        doc_cell(d, "%s", env.items[i].key);
        doc_cell(d, "%s", env.items[i].value);
    }
    if (!env.complete)
        doc_note(d, "env.json is not well-formed JSON: the entries up to the point where it "
                    "breaks off are shown.");
    if (hidden)
        doc_note(d, "%d further entries of arrays longer than %d elements are in env.json.", hidden,
                 ENV_MAX_ELEMENTS);
    report_env_free(&env);
}

void report_peaks(report_doc *d, const report_run *run)
{
    doc_heading(d, 1, "Measured peaks");
    const csv_table *p = run->peaks;
    if (!p || csv_rows(p) == 0) {
        doc_para(d, "No peaks.csv: the roofs were not measured (bin/peaks).");
        return;
    }
    doc_para(d, "The machine's roofs as bin/peaks measured them, beside the vendor's or the "
                "architecture's figure where one exists (measured / spec).");
    doc_table(d, "llrlrrrl",
              (const char *const[]){"device", "ceiling", "measured", "unit", "spec", "measured/spec",
                                    "threads or SMs", "method"});
    for (int row = 0; row < csv_rows(p); row++) {
        char a[FMT_LEN], b[FMT_LEN], c[FMT_LEN];
        double v = report_num(p, row, "value"), spec = report_num(p, row, "spec_value");
        doc_cell(d, "%s", report_cell(p, row, "device"));
        doc_cell(d, "%s", report_cell(p, row, "ceiling"));
        doc_cell(d, "%s", fmt_num(a, v));
        doc_cell(d, "%s", report_cell(p, row, "unit"));
        doc_cell(d, "%s", fmt_num(b, spec));
        doc_cell(d, "%s", spec > 0 ? fmt_pct(c, 100 * v / spec) : "-");
        doc_cell(d, "%s", report_cell(p, row, "threads_or_sms"));
        doc_cell(d, "%s", report_cell(p, row, "method"));
    }
}

static bool any_world_above_one(const csv_table *t)
{
    for (int row = 0; t && row < csv_rows(t); row++)
        if (report_num(t, row, "world_size") > 1)
            return true;
    return false;
}

void report_results(report_doc *d, const report_run *run)
{
    doc_heading(d, 1, "Results per configuration");
    const csv_table *s = run->summary;
    if (!s || csv_rows(s) == 0) {
        doc_para(d, "No summary.csv: run bin/analyze on this folder (scripts/render.sh does).");
        return;
    }
    doc_para(d, "Medians over every timed step of every repeat. Achieved GFLOP/s = the model's "
                "analytic FLOPs per step / the median step time; %% of peak and MFU are that "
                "against the compute ceiling of the precision; memory-bound time is the share of "
                "the traced step spent in kernels left of the ridge point.");
    bool ranks = any_world_above_one(s);
    static const char *const header[] = {"model", "res", "batch", "precision", "ranks",
                                         "images/s", "IQR", "step ms", "GFLOP/s (analytic)",
                                         "ceiling", "% of peak", "MFU", "memory-bound time",
                                         "status"};
    const char *const *h = header;
    doc_table(d, ranks ? "lrrlrrrrrlrrrl" : "lrrlrrrrlrrrl",
              ranks ? h
                    : (const char *const[]){h[0], h[1], h[2], h[3], h[5], h[6], h[7], h[8], h[9],
                                            h[10], h[11], h[12], h[13]});
    for (int row = 0; row < csv_rows(s); row++) {
        char a[FMT_LEN], b[FMT_LEN], c[FMT_LEN];
        doc_cell(d, "%s", report_cell(s, row, "model"));
        doc_cell(d, "%s", report_cell(s, row, "res"));
        doc_cell(d, "%s", report_cell(s, row, "batch"));
        doc_cell(d, "%s", report_cell(s, row, "precision"));
        if (ranks)
            doc_cell(d, "%s", report_cell(s, row, "world_size"));
        doc_cell(d, "%s", fmt_num(a, report_num(s, row, "images_per_s_median")));
        double q1 = report_num(s, row, "images_per_s_q1"), q3 = report_num(s, row, "images_per_s_q3");
        if (isnan(q1) || isnan(q3))
            doc_cell(d, "-");
        else
            doc_cell(d, "%s to %s", fmt_num(b, q1), fmt_num(c, q3));
        doc_cell(d, "%s", fmt_num(a, report_num(s, row, "step_ms_median")));
        doc_cell(d, "%s", fmt_num(a, 1000 * report_num(s, row, "achieved_tflops")));
        doc_cell(d, "%s", report_cell(s, row, "peak_ceiling"));
        doc_cell(d, "%s", fmt_pct(a, report_num(s, row, "pct_of_peak")));
        doc_cell(d, "%s", fmt_pct(a, report_num(s, row, "mfu")));
        doc_cell(d, "%s", fmt_share(a, report_num(s, row, "mem_bound_time_share")));
        const char *status = report_cell(s, row, "status");
        doc_cell(d, "%s", *status ? status : "-");
    }
}

static bool failed_run(const csv_table *t, int row, const void *unused)
{
    (void)unused;
    return strcmp(report_cell(t, row, "status"), "ok") != 0;
}

void report_failures(report_doc *d, const report_run *run)
{
    const csv_table *c = run->configs;
    int n = 0;
    for (int row = 0; c && row < csv_rows(c); row++)
        n += failed_run(c, row, NULL);
    doc_heading(d, 1, "Failed and skipped runs");
    if (!c) {
        doc_para(d, "No configs.csv: which runs were attempted is not recorded here.");
        return;
    }
    if (n == 0) {
        doc_para(d, "All %d runs of the matrix completed.", csv_rows(c));
        return;
    }
    doc_para(d, "%d of the %d runs did not complete; the matrix went on. Their logs are named "
                "relative to the run folder.",
             n, csv_rows(c));
    doc_table(d, "llrrlrll",
              (const char *const[]){"config", "model", "res", "batch", "precision", "repeat",
                                    "status", "log"});
    static const char *const cols[] = {"config", "model", "res", "batch",
                                       "precision", "repeat", "status", "log"};
    for (int row = 0; row < csv_rows(c); row++)
        if (failed_run(c, row, NULL))
            for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
                doc_cell(d, "%s", report_cell(c, row, cols[k]));
}

void report_scaling(report_doc *d, const report_run *run)
{
    const csv_table *s = run->scaling;
    if (!s || csv_rows(s) == 0)
        return;
    doc_heading(d, 1, "Scaling");
    doc_para(d, "Data-parallel training as scaling.csv records it, one row per measurement.");
    doc_table(d, "lrlrrrrrrrrr",
              (const char *const[]){"model", "res", "mode", "ranks", "nodes", "batch per rank",
                                    "global batch", "step ms", "images/s", "comm ms",
                                    "exposed comm ms", "efficiency"});
    static const char *const cols[] = {"model", "res", "mode", "world_size", "nodes",
                                       "per_rank_batch", "global_batch"};
    static const char *const nums[] = {"step_ms", "images_per_s", "comm_ms", "exposed_comm_ms",
                                       "efficiency"};
    for (int row = 0; row < csv_rows(s); row++) {
        for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
            doc_cell(d, "%s", report_cell(s, row, cols[k]));
        for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
            char a[FMT_LEN];
            doc_cell(d, "%s", fmt_num(a, report_num(s, row, nums[k])));
        }
    }
}

void report_sources(report_doc *d, const report_run *run)
{
    doc_heading(d, 1, "Sources of the numbers");
    report_strings sources;
    if (report_strings_distinct(run->roofline, "source", &sources)) {
        d->failed = true;
        return;
    }
    doc_list(d);
    doc_item(d, "Step times and images/s: steps.csv (every timed iteration; warm-up steps are "
                "never written). Medians, quartiles and intervals: summary.csv, variability.csv.");
    doc_item(d, "Roofs: peaks.csv (bin/peaks microbenchmarks); spec values from peaks/specs.csv or "
                "the architecture.");
    for (int i = 0; i < sources.n; i++) {
        const char *s = sources.items[i];
        if (strcmp(s, "analytic") == 0)
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
    doc_item(d, "GFLOP/s in the results table use the analytic FLOPs of the whole model "
                "(bin/complexity), as MFU is defined.");
    report_strings_free(&sources);
}
