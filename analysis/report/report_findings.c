/* The findings at the top of a run's report: plain sentences computed from
 * the run model (where the traced time goes and how close it runs to its
 * roof, which models use the machine best, how stable the timings are, what
 * failed). Thresholds that turn a number into a word are named below. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../roofline_table.h"
#include "../roofs.h"
#include "report_sections.h"

/* Coefficients of variation below STABLE_CV read "stable", above
 * REPORT_NOISY_CV (report_sections.h) "noisy". */
#define STABLE_CV 0.02
/* Warm-up drift worth a sentence, in percent. */
#define DRIFT_PCT 5.0
/* A measured peak below this share of its spec is worth a sentence. */
#define LOW_SPEC_PCT 80.0
/* Throughput that changes by more than this over the batch sizes "depends on batch". */
#define BATCH_EFFECT_PCT 10.0
/* A step this far above its attainable rate means the roof was measured low. */
#define ABOVE_ROOF_PCT 105.0
/* A traced step this many times its configuration's median timed step ran
 * differently from the steps the tables report. */
#define TRACE_SLOW_RATIO 1.5
/* The (layer type, phase) groups named as holding the time above the roofs. */
#define ABOVE_ROOF_GROUPS 3

static const char *stability(double cv)
{
    return cv < STABLE_CV ? "stable" : cv <= REPORT_NOISY_CV ? "moderate" : "noisy";
}

/* The share of the traced step in memory-bound kernels: the summary's,
 * else the sum over the kernel rows. */
static double memory_bound_share(const run_model *run, const roof_config *c)
{
    const summary_row *s =
        report_traced_summary(run, c->model, c->res, c->batch, c->precision, false);
    if (s && !isnan(s->mem_bound_share))
        return s->mem_bound_share;
    double sum = 0;
    bool any = false;
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->rows[i].level, "kernel") == 0) {
            any = true;
            if (c->rows[i].pt.bound == BOUND_MEMORY && !isnan(c->rows[i].time_share))
                sum += c->rows[i].time_share;
        }
    return any ? sum : NAN;
}

static bool is_type_row(int i, const void *arg)
{
    return strcmp(((const roof_config *)arg)->rows[i].level, "layer_type") == 0;
}

static double row_share(int i, const void *arg)
{
    return ((const roof_config *)arg)->rows[i].time_share;
}

/* What a layer type that is no layer of the network stands for, or "". */
static const char *type_gloss(const char *type)
{
    return strcmp(type, "reorder") == 0 ? "oneDNN's layout conversions around the convolutions: "
                                        : "";
}

/* How long the traced step's kernels would take at their roofs, and which
 * (layer type, phase) groups spend the most time above them: the
 * milliseconds there are to win, and where. False out of memory. */
static bool above_roofs_text(char *text, size_t len, size_t *used, const roof_config *c,
                             const roof_row *step)
{
    if (!step || isnan(step->roof_ns))
        return true;
    roof_phase_sum *g;
    int n = roofline_by_phase(c, &g);
    if (n < 0)
        return false;
    char a[FMT_LEN], b[FMT_LEN], p[FMT_LEN];
    double unroofed = 0;
    for (int i = 0; i < n; i++)
        unroofed += g[i].unroofed_ns;
    fmt_append(text, len, used, " At their roofs the step's kernels would take %s of its %s ms (%s)",
               fmt_ms_of_ns(a, step->roof_ns), fmt_ms_of_ns(b, step->pt.duration_ns),
               fmt_share(p, step->roof_ns / step->pt.duration_ns));
    if (unroofed > 0)
        fmt_append(text, len, used, ", leaving out %s ms of kernels with no roof",
                   fmt_ms_of_ns(a, unroofed));
    if (!(step->above_roof_ns > 0)) {
        fmt_append(text, len, used, "; none ran slower than its roof.");
    } else {
        fmt_append(text, len, used, "; of the %s ms they spend above them, the most is in ",
                   fmt_ms_of_ns(a, step->above_roof_ns));
        /* sorted: the groups that spent time above their roofs come first */
        int named = 0;
        while (named < n && named < ABOVE_ROOF_GROUPS && g[named].above_roof_ns > 0)
            named++;
        for (int i = 0; i < named; i++)
            fmt_append(text, len, used, "%s%s%s%s (%s ms)",
                       i == 0 ? "" : i + 1 == named ? " and " : ", ", g[i].layer_type,
                       /* the loss's phase is its name: "loss", not "loss loss" */
                       strcmp(g[i].phase, g[i].layer_type) == 0 ? "" : " ",
                       strcmp(g[i].phase, g[i].layer_type) == 0 ? "" : g[i].phase,
                       fmt_ms_of_ns(a, g[i].above_roof_ns));
        fmt_append(text, len, used, ".");
    }
    free(g);
    return true;
}

static void traced_finding(report_doc *d, const run_model *run, const roof_config *c)
{
    int n;
    int *types = report_order_desc(c->n, is_type_row, row_share, c, &n);
    if (!types) {
        d->failed = true;
        return;
    }
    char name[160], a[FMT_LEN], b[FMT_LEN], g[FMT_LEN], p[FMT_LEN], ai[FMT_LEN];
    report_key_short(name, sizeof name, c->model, c->res, c->batch, c->precision);
    const roof_row *step = roofline_step(c);
    char text[2048];
    size_t used = 0;
    const char *source = step ? step->source : "";
    fmt_append(text, sizeof text, &used, "%s%s%s%s: %s of the traced step time is in memory-bound "
               "kernels", name, *source ? " (" : "", source, *source ? " FLOPs and bytes)" : "",
               fmt_share(a, memory_bound_share(run, c)));
    const roof_row *mem = NULL;
    for (int i = 0; i < n && !mem; i++)
        if (c->rows[types[i]].pt.bound == BOUND_MEMORY)
            mem = &c->rows[types[i]];
    if (mem)
        fmt_append(text, sizeof text, &used,
                   "; the largest of them, %s (%s%s of the time), reaches %s of the %s roof",
                   mem->name, type_gloss(mem->name), fmt_share(a, mem->time_share),
                   fmt_pct(b, mem->pt.pct_of_attainable),
                   report_memory_name(run));
    if (n > 0 && c->rows[types[0]].pt.bound == BOUND_UNKNOWN) {
        /* communication is timed only, or the run has no roofs: no place on a roofline */
        const roof_row *top = &c->rows[types[0]];
        bool flops = top->pt.flops > 0, bytes = top->pt.dram_bytes > 0;
        fmt_append(text, sizeof text, &used,
                   ". The costliest layer type is %s: %s of the time, %s", top->name,
                   fmt_share(a, top->time_share),
                   !flops && !bytes ? "with neither FLOPs nor bytes counted, so no place on the "
                                      "roofline"
                   : !bytes ? "with FLOPs but no bytes counted, so no place on the roofline"
                   : !flops ? "with bytes but no FLOPs counted, so no place on the roofline"
                            : "with no roofs to hold it against (peaks.csv has none for it)");
    } else if (n > 0) {
        const roof_row *top = &c->rows[types[0]];
        fmt_append(text, sizeof text, &used,
                   ". The costliest layer type is %s: %s%s of the time at %s of its attainable "
                   "(%s-bound)",
                   top->name, mem == top ? "" : type_gloss(top->name),
                   fmt_share(a, top->time_share), fmt_pct(b, top->pt.pct_of_attainable),
                   roof_bound_name(top->pt.bound));
    }
    if (step)
        fmt_append(text, sizeof text, &used,
                   ". The whole step: %s at %s FLOP/byte, %s of its attainable.",
                   fmt_gflops(g, step->pt.achieved_gflops), fmt_num(ai, step->pt.ai_dram),
                   fmt_pct(p, step->pt.pct_of_attainable));
    else
        fmt_append(text, sizeof text, &used, ".");
    if (!above_roofs_text(text, sizeof text, &used, c, step))
        d->failed = true;
    doc_item(d, "%s", text);
    free(types);
}

double report_trace_ratio(const run_model *run, const roof_config *c, bool *graph)
{
    const roof_row *step = roofline_step(c);
    const summary_row *s =
        report_traced_summary(run, c->model, c->res, c->batch, c->precision, true);
    if (graph)
        *graph = s && s->graph;
    if (!step || !s || !(step->pt.duration_ns > 0) || !(s->step_ms_median > 0))
        return NAN;
    return step->pt.duration_ns / 1e6 / s->step_ms_median;
}

const roof_config *report_slowest_trace(const run_model *run, double *ratio)
{
    const roof_config *worst = NULL;
    *ratio = NAN;
    for (int k = 0; k < run->roofline.n; k++) {
        double r = report_trace_ratio(run, &run->roofline.configs[k], NULL);
        if (r > TRACE_SLOW_RATIO && (!worst || r > *ratio))
            worst = &run->roofline.configs[k], *ratio = r;
    }
    return worst;
}

/* Traced steps far slower than the timed ones: their points sit low. */
static void slow_trace_finding(report_doc *d, const run_model *run)
{
    char list[1024] = "", name[160], a[FMT_LEN];
    size_t used = 0;
    int n = 0;
    for (int k = 0; k < run->roofline.n; k++) {
        const roof_config *c = &run->roofline.configs[k];
        bool graph;
        double r = report_trace_ratio(run, c, &graph);
        if (!(r > TRACE_SLOW_RATIO))
            continue;
        char p[FMT_LEN];
        report_key_short(name, sizeof name, c->model, c->res, c->batch,
                         report_precision_label(p, sizeof p, c->precision, graph));
        /* the trace pass's part, as scripts/bench.sh names it: a graph
         * configuration's own only where it has no eager twin */
        fmt_append(list, sizeof list, &used, "%s%s %sx (parts/%s_r%d_b%d_%s%s.kernels.csv)",
                   n++ ? ", " : "", name, fmt_num(a, r), c->model, c->res, c->batch,
                   c->precision, graph ? "_graph" : "");
    }
    if (n > 0)
        doc_item(d, "Traced step%s far slower than %s configuration's median timed step: %s. "
                    "%s roofline points and time shares come from a step that ran differently "
                    "from the steps of the tables (the trace pass's own overhead, or other work "
                    "on the machine while it ran): read them as a lower bound, or run the trace "
                    "pass again: delete its part and resume the run with RUN=.",
                 n == 1 ? "" : "s", n == 1 ? "its" : "their", list, n == 1 ? "Its" : "Their");
}

/* Steps faster than their roof: the roof, not the step, is wrong. */
static void above_roof_finding(report_doc *d, const roofline *rl)
{
    int above = 0, steps = 0;
    const roof_config *worst_c = NULL;
    const roof_row *worst = NULL;
    for (int k = 0; k < rl->n; k++) {
        const roof_row *step = roofline_step(&rl->configs[k]);
        if (!step)
            continue;
        steps++;
        if (step->pt.pct_of_attainable > ABOVE_ROOF_PCT) {
            above++;
            if (!worst || step->pt.pct_of_attainable > worst->pt.pct_of_attainable)
                worst = step, worst_c = &rl->configs[k];
        }
    }
    if (!above)
        return;
    char name[160], a[FMT_LEN], b[FMT_LEN];
    report_key_short(name, sizeof name, worst_c->model, worst_c->res, worst_c->batch,
                     worst_c->precision);
    doc_item(d, "%d of %d traced steps run above their attainable rate (up to %s, %s): the %s roof "
                "of %s is lower than what the kernels reached, so it was probably measured "
                "while other work shared the machine; measure it again with bin/peaks on an idle "
                "machine before reading the percentages of attainable.",
             above, steps, fmt_pct(a, worst->pt.pct_of_attainable), name, worst->ceiling,
             fmt_gflops(b, worst->pt.peak_gflops));
}

/* A precision's configurations of one kind: eager, or graph where the
 * precision ran no eager step (else graph_finding sets graph beside eager). */
typedef struct {
    const summary *s;
    const char *precision;
    bool graph;
} precision_arg;

static bool ok_in_precision(const summary_row *s, const precision_arg *p)
{
    return s->graph == p->graph && strcmp(s->precision, p->precision) == 0 &&
           strcmp(s->status, "ok") == 0 && !isnan(s->ips_median);
}

static bool keep_ok(int i, const void *arg)
{
    const precision_arg *p = arg;
    return ok_in_precision(&p->s->rows[i], p);
}

static double pct_of_peak(int i, const void *arg)
{
    return ((const precision_arg *)arg)->s->rows[i].pct_of_peak;
}

/* Best and worst share of the peak among a precision's configurations. */
static void peak_share_finding(report_doc *d, const precision_arg *arg)
{
    const summary *s = arg->s;
    char precision[FMT_LEN];
    report_precision_label(precision, sizeof precision, arg->precision, arg->graph);
    int n;
    int *rows = report_order_desc(s->n, keep_ok, pct_of_peak, arg, &n);
    if (!rows) {
        d->failed = true;
        return;
    }
    if (n > 0 && !isnan(s->rows[rows[0]].pct_of_peak)) {
        char a[FMT_LEN], b[FMT_LEN], c[FMT_LEN], e[FMT_LEN];
        const summary_row *hi = &s->rows[rows[0]], *lo = hi;
        for (int i = 0; i < n; i++)
            if (!isnan(s->rows[rows[i]].pct_of_peak))
                lo = &s->rows[rows[i]];
        if (hi == lo)
            doc_item(d, "%s: %s at batch %d reaches %s of the %s peak (%s images/s, analytic FLOPs).",
                     precision, hi->model, hi->batch, fmt_pct(a, hi->pct_of_peak), hi->ceiling,
                     fmt_num(b, hi->ips_median));
        else
            doc_item(d, "%s: the best use of the %s peak is %s at batch %d, %s (%s images/s); the "
                        "least, %s at batch %d, %s (%s images/s). Analytic FLOPs.",
                     precision, hi->ceiling, hi->model, hi->batch, fmt_pct(a, hi->pct_of_peak),
                     fmt_num(b, hi->ips_median), lo->model, lo->batch, fmt_pct(c, lo->pct_of_peak),
                     fmt_num(e, lo->ips_median));
    }
    free(rows);
}

/* Per model with several batch sizes: images/s at the smallest and largest. */
static void batch_finding(report_doc *d, const precision_arg *arg)
{
    const summary *s = arg->s;
    char precision[FMT_LEN];
    report_precision_label(precision, sizeof precision, arg->precision, arg->graph);
    char text[2048] = "";
    size_t used = 0;
    double largest = 0;
    for (int m = 0; m < s->n; m++) {
        const char *model = s->rows[m].model;
        bool first = true; /* each model once, where it is first met */
        for (int j = 0; j < m && first; j++)
            first = strcmp(s->rows[j].model, model) != 0;
        if (!first)
            continue;
        const summary_row *lo = NULL, *hi = NULL;
        for (int i = 0; i < s->n; i++) {
            const summary_row *r = &s->rows[i];
            if (!ok_in_precision(r, arg) || strcmp(r->model, model) != 0)
                continue;
            if (!lo || r->batch < lo->batch)
                lo = r;
            if (!hi || r->batch > hi->batch)
                hi = r;
        }
        if (!lo || lo == hi || lo->batch == hi->batch)
            continue;
        double change = 100 * (hi->ips_median / lo->ips_median - 1);
        largest = fmax(largest, fabs(change));
        char a[FMT_LEN];
        fmt_append(text, sizeof text, &used, "%s%s %s from batch %d to %d", used ? ", " : "",
                   model, fmt_signed_pct(a, change), lo->batch, hi->batch);
    }
    if (used)
        doc_item(d, "%s: throughput %s batch size (images/s: %s).", precision,
                 largest > BATCH_EFFECT_PCT ? "depends on" : "changes little with", text);
}

/* Per configuration run both ways: what replaying a captured CUDA graph
 * gains over launching the step layer by layer. */
static void graph_finding(report_doc *d, const summary *s)
{
    char text[2048] = "";
    size_t used = 0;
    int n = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < s->n; i++) {
        const summary_row *g = &s->rows[i];
        if (!g->graph || strcmp(g->status, "ok") != 0 || !(g->ips_median > 0))
            continue;
        for (int j = 0; j < s->n; j++) {
            const summary_row *e = &s->rows[j];
            if (e->graph || strcmp(e->status, "ok") != 0 || !(e->ips_median > 0) ||
                e->res != g->res || e->batch != g->batch || e->world_size != g->world_size ||
                strcmp(e->model, g->model) != 0 || strcmp(e->precision, g->precision) != 0)
                continue;
            char name[160], a[FMT_LEN];
            double ratio = g->ips_median / e->ips_median;
            report_key_short(name, sizeof name, g->model, g->res, g->batch, g->precision);
            snprintf(a, sizeof a, "%.2fx", ratio);
            fmt_append(text, sizeof text, &used, "%s%s %s", used ? ", " : "", name, a);
            lo = fmin(lo, ratio);
            hi = fmax(hi, ratio);
            n++;
        }
    }
    if (n > 0)
        doc_item(d, "CUDA graph against eager launches (images/s, median over the repeats): "
                    "%s. %s",
                 text,
                 hi < 1.02 && lo > 0.98
                     ? "Within 2% everywhere: launch overhead is not what limits these steps."
                 : hi <= 0.98
                     ? "The graph is slower everywhere: its replay costs more than the launches "
                       "it saves (the eager step's gaps between kernels are small)."
                     : "Where the graph gains, the host's launches (or the gaps between kernels) "
                       "cost that share of the eager step.");
}

static void variability_findings(report_doc *d, const variability *v)
{
    const variability_row *lo = NULL, *hi = NULL, *rep_hi = NULL;
    int outliers = 0, steps = 0, with_cv = 0;
    char drifts[1024] = "";
    size_t used = 0;
    for (int i = 0; i < v->n; i++) {
        const variability_row *r = &v->rows[i];
        if (strcmp(r->scope, "repeats") == 0 && !isnan(r->cv) && (!rep_hi || r->cv > rep_hi->cv))
            rep_hi = r;
        if (strcmp(r->scope, "iterations") != 0)
            continue;
        outliers += r->outliers;
        steps += r->n;
        with_cv += !isnan(r->cv);
        if (!isnan(r->cv) && (!lo || r->cv < lo->cv))
            lo = r;
        if (!isnan(r->cv) && (!hi || r->cv > hi->cv))
            hi = r;
        if (fabs(r->drift_pct) >= DRIFT_PCT) {
            char name[160], a[FMT_LEN];
            report_key_short(name, sizeof name, r->model, r->res, r->batch,
                             report_precision_label(a, sizeof a, r->precision, r->graph));
            fmt_append(drifts, sizeof drifts, &used, "%s%s %s", used ? ", " : "", name,
                       fmt_signed_pct(a, r->drift_pct));
        }
    }
    char a[FMT_LEN], b[FMT_LEN], nl[160], nh[160];
    if (rep_hi) {
        report_key_short(nh, sizeof nh, rep_hi->model, rep_hi->res, rep_hi->batch,
                         report_precision_label(a, sizeof a, rep_hi->precision, rep_hi->graph));
        doc_item(d, "Run to run: the repeats' medians differ by a cv of at most %s (%s): %s%s.",
                 fmt_share(a, rep_hi->cv), nh, stability(rep_hi->cv),
                 rep_hi->cv > REPORT_NOISY_CV ? "; compare configurations by their medians over several repeats"
                                       : "");
    }
    if (lo) {
        report_key_short(nl, sizeof nl, lo->model, lo->res, lo->batch,
                         report_precision_label(a, sizeof a, lo->precision, lo->graph));
        report_key_short(nh, sizeof nh, hi->model, hi->res, hi->batch,
                         report_precision_label(a, sizeof a, hi->precision, hi->graph));
        char range[512];
        fmt_share(a, lo->cv);
        fmt_share(b, hi->cv);
        if (with_cv == 1) /* one configuration */
            snprintf(range, sizeof range, "%s (%s)", b, nh);
        else if (strcmp(a, b) == 0) /* all alike as printed */
            snprintf(range, sizeof range, "%s in every configuration", b);
        else
            snprintf(range, sizeof range, "from %s (%s) to %s (%s)", a, nl, b, nh);
        doc_item(d, "Step to step: cv of all timed steps %s: %s; %d of %d steps are outliers "
                    "beyond 1.5 IQR.",
                 range, stability(hi->cv), outliers, steps);
    }
    if (used)
        doc_item(d, "Warm-up drift of %.0f%% or more between the first and last fifth of a "
                    "repeat's steps (the median over the repeats): %s; more warm-up steps, or a "
                    "look at clocks and temperatures, would tell why.",
                 DRIFT_PCT, drifts);
}

/* Other work on the machine as the run began lowers what it measured. */
static void load_finding(report_doc *d, const run_model *run)
{
    const run_start_load *l = &run->start_load;
    if (!(l->busy_cpus >= RUN_BUSY_CPUS_NOTABLE))
        return;
    doc_item(d, "Other work kept %.1f of %d CPUs busy as the run began (env.json: load): the "
                "roofs and step times here are lower and noisier than this machine's own (a "
                "thread that loses its core holds up the others); measure again on an idle "
                "machine before comparing.",
             l->busy_cpus, l->cpus);
}

/* The ceilings bin/peaks could not make pass its own checks, by name. */
static void suspect_finding(report_doc *d, const run_model *run)
{
    char list[1024] = "";
    size_t used = 0;
    int n = 0;
    for (int i = 0; i < run->n_roofs; i++)
        if (run->roofs[i].suspect)
            fmt_append(list, sizeof list, &used, "%s%s", n++ ? ", " : "", run->roofs[i].ceiling);
    if (n > 0)
        doc_item(d, "Suspect ceiling%s: %s: %s failed bin/peaks' consistency checks even when "
                    "measured again (the notes in \"Measured peaks\" say which check), so a "
                    "roof or a percentage of peak taken from %s may be wrong; measure again on a "
                    "quiet machine (remove peaks.csv from the run folder and resume it with RUN=).",
                 n == 1 ? "" : "s", list, n == 1 ? "it" : "they", n == 1 ? "it" : "them");
}

static void peaks_finding(report_doc *d, const run_model *run)
{
    if (!(run->present & RUN_PEAKS))
        return;
    roof_lines roofs;
    roof_lines_of(run->roofs, run->n_roofs, &roofs);
    const roof_line *mem = roof_lines_main_memory(&roofs);
    /* the compute ceiling the traced steps used, else fp32_fma */
    const roof_row *step = NULL;
    for (int k = 0; k < run->roofline.n && !step; k++)
        step = roofline_step(&run->roofline.configs[k]);
    const char *ceiling = step ? step->ceiling : "fp32_fma";
    const run_roof *best = NULL;
    for (int i = 0; i < run->n_roofs; i++)
        if (strcmp(run->roofs[i].ceiling, ceiling) == 0 &&
            (!best || run->roofs[i].value > best->value))
            best = &run->roofs[i];
    char a[FMT_LEN], b[FMT_LEN], c[FMT_LEN], e[FMT_LEN];
    char text[1024];
    size_t used = 0;
    if (best) {
        fmt_append(text, sizeof text, &used, "Roofs: %s %s", ceiling, fmt_gflops(a, best->value));
        if (best->spec_value > 0)
            fmt_append(text, sizeof text, &used, " (%s of the spec %s)",
                       fmt_pct(b, 100 * best->value / best->spec_value),
                       fmt_gflops(c, best->spec_value));
    } else {
        fmt_append(text, sizeof text, &used, "Roofs: no %s row in peaks.csv", ceiling);
    }
    if (mem)
        fmt_append(text, sizeof text, &used, ", %s %s", mem->label, fmt_gbs(a, mem->value));
    if (step)
        fmt_append(text, sizeof text, &used,
                   "; ridge point %s FLOP/byte: kernels of lower intensity are memory-bound.",
                   fmt_num(e, step->pt.ridge_ai));
    else
        fmt_append(text, sizeof text, &used, ".");
    doc_item(d, "%s", text);
    suspect_finding(d, run);
    /* measured peaks far below their spec: one sentence for them all */
    char low[2048] = "";
    size_t low_used = 0;
    int n_low = 0;
    for (int i = 0; i < run->n_roofs; i++) {
        const run_roof *r = &run->roofs[i];
        if (r->spec_value > 0 && 100 * r->value / r->spec_value < LOW_SPEC_PCT)
            fmt_append(low, sizeof low, &low_used, "%s%s %s (%s of %s)",
                       n_low++ ? ", " : "", r->ceiling, fmt_value_unit(a, r->value, r->unit),
                       fmt_pct(b, 100 * r->value / r->spec_value),
                       fmt_value_unit(c, r->spec_value, r->unit));
    }
    if (n_low)
        doc_item(d, "Measured below %.0f%% of the spec: %s. The roofs above use the measured "
                    "value%s.",
                 LOW_SPEC_PCT, low, n_low > 1 ? "s" : "");
}

static bool failed(const run_attempt *a)
{
    return strcmp(a->status, "ok") != 0 && !a->skipped_here;
}

static bool same_config(const run_attempt *a, const run_attempt *b)
{
    return a->res == b->res && a->batch == b->batch && a->graph == b->graph &&
           strcmp(a->model, b->model) == 0 && strcmp(a->precision, b->precision) == 0;
}

static void failure_finding(report_doc *d, const run_model *run)
{
    int runs = 0, configs = 0;
    char list[1024] = "", name[160];
    size_t used = 0;
    for (int i = 0; i < run->n_attempts; i++) {
        const run_attempt *a = &run->attempts[i];
        if (!failed(a))
            continue;
        runs++;
        bool first = true; /* its first failed run: the status to quote */
        for (int j = 0; j < i && first; j++)
            first = !(failed(&run->attempts[j]) && same_config(&run->attempts[j], a));
        if (!first)
            continue;
        char label[FMT_LEN];
        report_key_short(name, sizeof name, a->model, a->res, a->batch,
                         report_precision_label(label, sizeof label, a->precision, a->graph));
        fmt_append(list, sizeof list, &used, "%s%s (%s)", configs ? ", " : "", name, a->status);
        configs++;
    }
    if (runs > 0)
        doc_item(d, "%d of %d runs did not complete, %d configuration%s: %s; see \"Failed and "
                    "skipped runs\".",
                 runs, run->n_attempts, configs, configs == 1 ? "" : "s", list);
}

/* The configurations this machine cannot run (a precision the GPU lacks, a
 * batch its memory cannot hold), by name: their reasons are in the table. */
static void skipped_finding(report_doc *d, const run_model *run)
{
    int configs = 0;
    char list[1024] = "", name[160];
    size_t used = 0;
    for (int i = 0; i < run->n_attempts; i++) {
        const run_attempt *a = &run->attempts[i];
        if (!a->skipped_here || a->trace)
            continue;
        bool first = true;
        for (int j = 0; j < i && first; j++)
            first = !(run->attempts[j].skipped_here && same_config(&run->attempts[j], a));
        if (!first)
            continue;
        char label[FMT_LEN];
        report_key_short(name, sizeof name, a->model, a->res, a->batch,
                         report_precision_label(label, sizeof label, a->precision, a->graph));
        fmt_append(list, sizeof list, &used, "%s%s", configs ? ", " : "", name);
        configs++;
    }
    if (configs > 0)
        doc_item(d, "%d configuration%s of the matrix %s skipped here, not failed: this machine "
                    "cannot run %s (a precision the GPU lacks, or a batch larger than its "
                    "memory holds; the reason of each under \"Failed and skipped runs\"): %s.",
                 configs, configs == 1 ? "" : "s", configs == 1 ? "was" : "were",
                 configs == 1 ? "it" : "them", list);
}

void report_findings(report_doc *d, const run_model *run)
{
    doc_heading(d, 1, "Findings");
    doc_list(d);
    load_finding(d, run);
    peaks_finding(d, run);
    for (int k = 0; k < run->roofline.n; k++)
        if (roofline_step(&run->roofline.configs[k]))
            traced_finding(d, run, &run->roofline.configs[k]);
    report_gpu_findings(d, run);
    slow_trace_finding(d, run);
    above_roof_finding(d, &run->roofline);
    const summary *s = &run->summary;
    for (int i = 0; i < s->n; i++) {
        const char *p = s->rows[i].precision;
        bool first = true;
        for (int j = 0; j < i && first; j++)
            first = strcmp(s->rows[j].precision, p) != 0;
        if (!first)
            continue;
        precision_arg arg = {s, p, true};
        for (int j = 0; j < s->n && arg.graph; j++)
            arg.graph = s->rows[j].graph || strcmp(s->rows[j].precision, p) != 0;
        peak_share_finding(d, &arg);
        batch_finding(d, &arg);
    }
    report_reference_finding(d, run);
    graph_finding(d, s);
    variability_findings(d, &run->variability);
    failure_finding(d, run);
    skipped_finding(d, run);
    if (d->n > 0 && d->blocks[d->n - 1].kind == DOC_LIST && d->blocks[d->n - 1].n_cells == 0)
        doc_item(d, "Nothing to report yet: the run folder has no analysed data (run "
                    "scripts/render.sh on it).");
}
