/* The findings at the top of a run's report: plain sentences computed from
 * the CSV files (where the traced time goes and how close it runs to its
 * roof, which models use the machine best, how stable the timings are, what
 * failed). Thresholds that turn a number into a word are named below. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot_figures.h"
#include "plot_roofs.h"
#include "report_sections.h"

/* Coefficients of variation below STABLE_CV read "stable", above NOISY_CV "noisy". */
#define STABLE_CV 0.02
#define NOISY_CV 0.05
/* Warm-up drift worth a sentence, in percent. */
#define DRIFT_PCT 5.0
/* A measured peak below this share of its spec is worth a sentence. */
#define LOW_SPEC_PCT 80.0
/* Throughput that changes by more than this over the batch sizes "depends on batch". */
#define BATCH_EFFECT_PCT 10.0
/* A step this far above its attainable rate means the roof was measured low. */
#define ABOVE_ROOF_PCT 105.0

static const char *stability(double cv)
{
    return cv < STABLE_CV ? "stable" : cv <= NOISY_CV ? "moderate" : "noisy";
}

typedef struct {
    const report_config *config;
} config_arg;

static bool type_row_of(const csv_table *t, int row, const void *arg)
{
    return strcmp(report_cell(t, row, "level"), "layer_type") == 0 &&
           report_row_is(t, row, ((const config_arg *)arg)->config);
}

/* The share of the traced step in memory-bound kernels: summary.csv's column,
 * else the sum over the kernel rows. */
static double memory_bound_share(const report_run *run, const report_config *c)
{
    double share = report_num(run->summary, report_find(run->summary, c, NULL, NULL),
                              "mem_bound_time_share");
    if (!isnan(share))
        return share;
    const csv_table *rl = run->roofline;
    double sum = 0;
    bool any = false;
    for (int row = 0; rl && row < csv_rows(rl); row++)
        if (strcmp(report_cell(rl, row, "level"), "kernel") == 0 && report_row_is(rl, row, c)) {
            any = true;
            if (strcmp(report_cell(rl, row, "bound"), "memory") == 0) {
                double s = report_num(rl, row, "time_share");
                sum += isnan(s) ? 0 : s;
            }
        }
    return any ? sum : NAN;
}

static void traced_finding(report_doc *d, const report_run *run, const report_config *c)
{
    const csv_table *rl = run->roofline;
    config_arg arg = {c};
    int n;
    int *types = report_rows_by(rl, "time_share", REPORT_DESCENDING, type_row_of, &arg, &n);
    if (!types) {
        d->failed = true;
        return;
    }
    char name[160], a[FMT_LEN], b[FMT_LEN], g[FMT_LEN], p[FMT_LEN], ai[FMT_LEN];
    report_config_short(c, name, sizeof name);
    int step = report_find(rl, c, "level", "step");
    char text[1536];
    size_t used = 0;
    const char *source = report_cell(rl, step, "source");
    fmt_append(text, sizeof text, &used, "%s%s%s%s: %s of the traced step time is in memory-bound "
               "kernels", name, *source ? " (" : "", source, *source ? " FLOPs and bytes)" : "",
               fmt_share(a, memory_bound_share(run, c)));
    int mem = -1;
    for (int i = 0; i < n && mem < 0; i++)
        if (strcmp(report_cell(rl, types[i], "bound"), "memory") == 0)
            mem = types[i];
    if (mem >= 0)
        fmt_append(text, sizeof text, &used,
                   "; the largest of them, %s (%s of the time), reaches %s of the %s roof",
                   report_cell(rl, mem, "name"), fmt_share(a, report_num(rl, mem, "time_share")),
                   fmt_pct(b, report_num(rl, mem, "pct_of_attainable")), report_memory_name(run));
    if (n > 0)
        fmt_append(text, sizeof text, &used,
                   ". The costliest layer type is %s: %s of the time at %s of its attainable "
                   "(%s-bound)",
                   report_cell(rl, types[0], "name"),
                   fmt_share(a, report_num(rl, types[0], "time_share")),
                   fmt_pct(b, report_num(rl, types[0], "pct_of_attainable")),
                   report_cell(rl, types[0], "bound"));
    if (step >= 0)
        fmt_append(text, sizeof text, &used,
                   ". The whole step: %s at %s FLOP/byte, %s of its attainable.",
                   fmt_gflops(g, report_num(rl, step, "achieved_gflops")),
                   fmt_num(ai, report_num(rl, step, "ai_dram")),
                   fmt_pct(p, report_num(rl, step, "pct_of_attainable")));
    else
        fmt_append(text, sizeof text, &used, ".");
    doc_item(d, "%s", text);
    free(types);
}

/* Steps faster than their roof: the roof, not the step, is wrong. */
static void above_roof_finding(report_doc *d, const csv_table *rl)
{
    int above = 0, steps = 0, worst = -1;
    for (int row = 0; rl && row < csv_rows(rl); row++) {
        if (!plot_is_step_row(rl, row))
            continue;
        steps++;
        double pct = report_num(rl, row, "pct_of_attainable");
        if (pct > ABOVE_ROOF_PCT) {
            above++;
            if (worst < 0 || pct > report_num(rl, worst, "pct_of_attainable"))
                worst = row;
        }
    }
    if (!above)
        return;
    char name[160], a[FMT_LEN], b[FMT_LEN];
    report_config c = report_config_of(rl, worst);
    report_config_short(&c, name, sizeof name);
    doc_item(d, "%d of %d traced steps run above their attainable rate (up to %s, %s): the %s roof "
                "of %s is lower than what the kernels reached, so it was probably measured "
                "while other work shared the machine; measure it again with bin/peaks on an idle "
                "machine before reading the percentages of attainable.",
             above, steps, fmt_pct(a, report_num(rl, worst, "pct_of_attainable")), name,
             report_cell(rl, worst, "peak_ceiling"), fmt_gflops(b, report_num(rl, worst, "peak_gflops")));
}

static bool ok_in_precision(const csv_table *t, int row, const void *precision)
{
    return strcmp(report_cell(t, row, "precision"), precision) == 0 &&
           strcmp(report_cell(t, row, "status"), "ok") == 0 &&
           !isnan(report_num(t, row, "images_per_s_median"));
}

/* Best and worst share of the peak among a precision's configurations. */
static void peak_share_finding(report_doc *d, const csv_table *s, const char *precision)
{
    int n;
    int *rows = report_rows_by(s, "pct_of_peak", REPORT_DESCENDING, ok_in_precision, precision, &n);
    if (!rows) {
        d->failed = true;
        return;
    }
    if (n > 0 && !isnan(report_num(s, rows[0], "pct_of_peak"))) {
        char a[FMT_LEN], b[FMT_LEN], c[FMT_LEN], e[FMT_LEN];
        int hi = rows[0], lo = rows[0];
        for (int i = 0; i < n; i++)
            if (!isnan(report_num(s, rows[i], "pct_of_peak")))
                lo = rows[i];
        report_config ch = report_config_of(s, hi), cl = report_config_of(s, lo);
        if (hi == lo)
            doc_item(d, "%s: %s at batch %d reaches %s of the %s peak (%s images/s, analytic FLOPs).",
                     precision, ch.model, ch.batch, fmt_pct(a, report_num(s, hi, "pct_of_peak")),
                     report_cell(s, hi, "peak_ceiling"),
                     fmt_num(b, report_num(s, hi, "images_per_s_median")));
        else
            doc_item(d, "%s: the best use of the %s peak is %s at batch %d, %s (%s images/s); the "
                        "least, %s at batch %d, %s (%s images/s). Analytic FLOPs.",
                     precision, report_cell(s, hi, "peak_ceiling"), ch.model, ch.batch,
                     fmt_pct(a, report_num(s, hi, "pct_of_peak")),
                     fmt_num(b, report_num(s, hi, "images_per_s_median")), cl.model, cl.batch,
                     fmt_pct(c, report_num(s, lo, "pct_of_peak")),
                     fmt_num(e, report_num(s, lo, "images_per_s_median")));
    }
    free(rows);
}

/* Per model with several batch sizes: images/s at the smallest and largest. */
static void batch_finding(report_doc *d, const csv_table *s, const char *precision)
{
    report_strings models;
    if (report_strings_distinct(s, "model", &models)) {
        d->failed = true;
        return;
    }
    char text[2048] = "";
    size_t used = 0;
    double largest = 0;
    for (int m = 0; m < models.n; m++) {
        int lo = -1, hi = -1;
        for (int row = 0; row < csv_rows(s); row++) {
            if (!ok_in_precision(s, row, precision) ||
                strcmp(report_cell(s, row, "model"), models.items[m]) != 0)
                continue;
            double b = report_num(s, row, "batch");
            if (lo < 0 || b < report_num(s, lo, "batch"))
                lo = row;
            if (hi < 0 || b > report_num(s, hi, "batch"))
                hi = row;
        }
        if (lo < 0 || lo == hi || report_num(s, lo, "batch") == report_num(s, hi, "batch"))
            continue;
        double change = 100 * (report_num(s, hi, "images_per_s_median") /
                                   report_num(s, lo, "images_per_s_median") -
                               1);
        largest = fmax(largest, fabs(change));
        char a[FMT_LEN];
        fmt_append(text, sizeof text, &used, "%s%s %s from batch %s to %s", used ? ", " : "",
                   models.items[m], fmt_signed_pct(a, change), report_cell(s, lo, "batch"),
                   report_cell(s, hi, "batch"));
    }
    if (used)
        doc_item(d, "%s: throughput %s batch size (images/s: %s).", precision,
                 largest > BATCH_EFFECT_PCT ? "depends on" : "changes little with", text);
    report_strings_free(&models);
}

static void variability_findings(report_doc *d, const csv_table *v)
{
    int lo = -1, hi = -1, rep_hi = -1, outliers = 0, steps = 0;
    char drifts[1024] = "";
    size_t used = 0;
    for (int row = 0; v && row < csv_rows(v); row++) {
        const char *scope = report_cell(v, row, "scope");
        double cv = report_num(v, row, "cv");
        if (strcmp(scope, "repeats") == 0 && !isnan(cv) &&
            (rep_hi < 0 || cv > report_num(v, rep_hi, "cv")))
            rep_hi = row;
        if (strcmp(scope, "iterations") != 0)
            continue;
        double o = report_num(v, row, "outliers"), n = report_num(v, row, "n");
        outliers += isnan(o) ? 0 : (int)o;
        steps += isnan(n) ? 0 : (int)n;
        if (!isnan(cv) && (lo < 0 || cv < report_num(v, lo, "cv")))
            lo = row;
        if (!isnan(cv) && (hi < 0 || cv > report_num(v, hi, "cv")))
            hi = row;
        double drift = report_num(v, row, "drift_pct");
        if (fabs(drift) >= DRIFT_PCT) {
            char name[160], a[FMT_LEN];
            report_config c = report_config_of(v, row);
            report_config_short(&c, name, sizeof name);
            fmt_append(drifts, sizeof drifts, &used, "%s%s %s", used ? ", " : "", name,
                       fmt_signed_pct(a, drift));
        }
    }
    char a[FMT_LEN], b[FMT_LEN], nl[160], nh[160];
    if (rep_hi >= 0) {
        double cv = report_num(v, rep_hi, "cv");
        report_config c = report_config_of(v, rep_hi);
        report_config_short(&c, nh, sizeof nh);
        doc_item(d, "Run to run: the repeats' medians differ by a cv of at most %s (%s): %s%s.",
                 fmt_share(a, cv), nh, stability(cv),
                 cv > NOISY_CV ? "; compare configurations by their medians over several repeats"
                               : "");
    }
    if (lo >= 0) {
        report_config cl = report_config_of(v, lo), ch = report_config_of(v, hi);
        report_config_short(&cl, nl, sizeof nl);
        report_config_short(&ch, nh, sizeof nh);
        double cv = report_num(v, hi, "cv");
        doc_item(d, "Step to step: cv of all timed steps from %s (%s) to %s (%s): %s; %d of %d "
                    "steps are outliers beyond 1.5 IQR.",
                 fmt_share(a, report_num(v, lo, "cv")), nl, fmt_share(b, cv), nh, stability(cv),
                 outliers, steps);
    }
    if (used)
        doc_item(d, "Warm-up drift of %.0f%% or more between the first and last fifth of the "
                    "steps: %s; more warm-up steps, or a look at clocks and temperatures, would "
                    "tell why.",
                 DRIFT_PCT, drifts);
}

static void peaks_finding(report_doc *d, const report_run *run)
{
    const csv_table *p = run->peaks;
    if (!p)
        return;
    plot_roofs roofs;
    plot_roofs_from_peaks(p, &roofs);
    const plot_roof *mem = plot_roofs_main_memory(&roofs);
    /* the compute ceiling the traced steps used, else fp32_fma */
    int step = -1;
    for (int row = 0; run->roofline && row < csv_rows(run->roofline) && step < 0; row++)
        if (plot_is_step_row(run->roofline, row))
            step = row;
    const char *ceiling = step >= 0 ? report_cell(run->roofline, step, "peak_ceiling") : "fp32_fma";
    int crow = -1;
    for (int row = 0; row < csv_rows(p); row++)
        if (strcmp(report_cell(p, row, "ceiling"), ceiling) == 0 &&
            (crow < 0 || report_num(p, row, "value") > report_num(p, crow, "value")))
            crow = row;
    char a[FMT_LEN], b[FMT_LEN], c[FMT_LEN], e[FMT_LEN];
    char text[1024];
    size_t used = 0;
    if (crow >= 0) {
        double v = report_num(p, crow, "value"), spec = report_num(p, crow, "spec_value");
        fmt_append(text, sizeof text, &used, "Roofs: %s %s", ceiling, fmt_gflops(a, v));
        if (spec > 0)
            fmt_append(text, sizeof text, &used, " (%s of the spec %s)", fmt_pct(b, 100 * v / spec),
                       fmt_gflops(c, spec));
    } else {
        fmt_append(text, sizeof text, &used, "Roofs: no %s row in peaks.csv", ceiling);
    }
    if (mem)
        fmt_append(text, sizeof text, &used, ", %s %s", mem->label, fmt_gbs(a, mem->value));
    if (step >= 0)
        fmt_append(text, sizeof text, &used,
                   "; ridge point %s FLOP/byte: kernels of lower intensity are memory-bound.",
                   fmt_num(e, report_num(run->roofline, step, "ridge_ai")));
    else
        fmt_append(text, sizeof text, &used, ".");
    doc_item(d, "%s", text);
    /* measured peaks far below their spec */
    for (int row = 0; row < csv_rows(p); row++) {
        double v = report_num(p, row, "value"), spec = report_num(p, row, "spec_value");
        if (spec > 0 && 100 * v / spec < LOW_SPEC_PCT)
            doc_item(d, "%s measured %s, %s of its spec %s: the roofs above use the measured "
                        "value.",
                     report_cell(p, row, "ceiling"), fmt_value_unit(a, v, report_cell(p, row, "unit")),
                     fmt_pct(b, 100 * v / spec), fmt_value_unit(c, spec, report_cell(p, row, "unit")));
    }
}

static bool run_failed(const csv_table *t, int row)
{
    return strcmp(report_cell(t, row, "status"), "ok") != 0;
}

static void failure_finding(report_doc *d, const csv_table *c)
{
    report_configs failed;
    if (report_configs_distinct(c, run_failed, &failed)) {
        d->failed = true;
        return;
    }
    int runs = 0;
    for (int row = 0; c && row < csv_rows(c); row++)
        runs += run_failed(c, row);
    if (runs > 0) {
        char list[1024] = "", name[160];
        size_t used = 0;
        for (int i = 0; i < failed.n; i++) {
            int row = 0; /* its first failed run: the status to quote */
            while (!(report_row_is(c, row, &failed.items[i]) && run_failed(c, row)))
                row++;
            report_config_short(&failed.items[i], name, sizeof name);
            fmt_append(list, sizeof list, &used, "%s%s (%s)", i ? ", " : "", name,
                       report_cell(c, row, "status"));
        }
        doc_item(d, "%d of %d runs did not complete, %d configuration%s: %s; see \"Failed and "
                    "skipped runs\".",
                 runs, csv_rows(c), failed.n, failed.n == 1 ? "" : "s", list);
    }
    report_configs_free(&failed);
}

void report_findings(report_doc *d, const report_run *run)
{
    doc_heading(d, 1, "Findings");
    doc_list(d);
    peaks_finding(d, run);
    report_configs traced;
    if (report_configs_distinct(run->roofline, plot_is_step_row, &traced)) {
        d->failed = true;
        return;
    }
    for (int i = 0; i < traced.n; i++)
        traced_finding(d, run, &traced.items[i]);
    report_configs_free(&traced);
    above_roof_finding(d, run->roofline);
    report_strings precisions;
    if (report_strings_distinct(run->summary, "precision", &precisions)) {
        d->failed = true;
        return;
    }
    for (int i = 0; i < precisions.n; i++) {
        peak_share_finding(d, run->summary, precisions.items[i]);
        batch_finding(d, run->summary, precisions.items[i]);
    }
    report_strings_free(&precisions);
    variability_findings(d, run->variability);
    failure_finding(d, run->configs);
    if (d->n > 0 && d->blocks[d->n - 1].kind == DOC_LIST && d->blocks[d->n - 1].n_cells == 0)
        doc_item(d, "Nothing to report yet: the run folder has no analysed data (run "
                    "scripts/render.sh on it).");
}
