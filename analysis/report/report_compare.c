/* The comparison of several run folders (bin/report --compare): which
 * environment, its roofs side by side, each model's best throughput and
 * share of peak per environment, and the combined roofline. */
#include <math.h>
#include <string.h>
#include <stdlib.h>

#include "../roofs.h"
#include "../run_env.h"
#include "report_build.h"
#include "report_sections.h"

typedef struct {
    const char *model, *precision;
    bool graph;
} model_precision;

/* A one-rank configuration that ran: the figures a comparison sets side by side. */
static bool comparable(const summary_row *r)
{
    return strcmp(r->status, "ok") == 0 && !isnan(r->ips_median) && r->world_size <= 1;
}

/* The best images/s of a model in a precision and graph mode (ok, one
 * rank), or NULL. */
static const summary_row *best_row(const summary *s, const model_precision *p)
{
    const summary_row *best = NULL;
    for (int i = 0; i < s->n; i++) {
        const summary_row *r = &s->rows[i];
        if (r->graph != p->graph || strcmp(r->model, p->model) != 0 ||
            strcmp(r->precision, p->precision) != 0 || !comparable(r))
            continue;
        if (!best || r->ips_median > best->ips_median)
            best = r;
    }
    return best;
}

static void environments_table(report_doc *d, const run_model *runs, int n)
{
    doc_table(d, "llllrr",
              (const char *const[]){"environment", "run folder", "date (UTC)", "device",
                                    "fp32 FMA GFLOP/s", "DRAM/HBM GB/s"});
    for (int r = 0; r < n; r++) {
        char a[FMT_LEN], b[FMT_LEN];
        const char *date = run_env_get(&runs[r].env, "date_utc");
        roof_lines roofs;
        roof_lines_of(runs[r].roofs, runs[r].n_roofs, &roofs);
        const roof_line *fp32 = roof_lines_compute(&roofs, "fp32_fma");
        const roof_line *mem = roof_lines_main_memory(&roofs);
        /* the last device row names the accelerator when there is one */
        int last = runs[r].n_roofs - 1;
        doc_cell(d, "%s", runs[r].label);
        doc_cell(d, "%s", runs[r].dir);
        doc_cell(d, "%s", date ? date : "-");
        doc_cell(d, "%s", last >= 0 ? runs[r].roofs[last].device : "-");
        doc_cell(d, "%s", fmt_num(a, fp32 ? fp32->value : NAN));
        doc_cell(d, "%s", fmt_num(b, mem ? mem->value : NAN));
    }
}

/* The row of a ceiling with the best value in a run, NULL when it did not
 * measure it. */
static const run_roof *best_roof(const run_model *run, const char *ceiling)
{
    const run_roof *best = NULL;
    for (int k = 0; k < run->n_roofs; k++)
        if (strcmp(run->roofs[k].ceiling, ceiling) == 0 &&
            (!best || isnan(best->value) || run->roofs[k].value > best->value))
            best = &run->roofs[k];
    return best;
}

static bool any_suspect(const run_model *runs, int n)
{
    for (int r = 0; r < n; r++)
        for (int k = 0; k < runs[r].n_roofs; k++)
            if (runs[r].roofs[k].suspect)
                return true;
    return false;
}

static bool ceiling_seen_before(const run_model *runs, int r, int row)
{
    const char *ceiling = runs[r].roofs[row].ceiling;
    for (int q = 0; q <= r; q++)
        for (int k = 0; k < (q < r ? runs[q].n_roofs : row); k++)
            if (strcmp(runs[q].roofs[k].ceiling, ceiling) == 0)
                return true;
    return false;
}

static void peaks_table(report_doc *d, const run_model *runs, int n)
{
    char align[32] = "ll";
    const char *header[32] = {"ceiling", "unit"};
    for (int r = 0; r < n; r++) {
        align[2 + r] = 'r';
        header[2 + r] = runs[r].label;
    }
    align[2 + n] = '\0';
    doc_table(d, align, header);
    /* every ceiling any run measured, in the order first met */
    for (int r = 0; r < n; r++)
        for (int row = 0; row < runs[r].n_roofs; row++) {
            if (ceiling_seen_before(runs, r, row))
                continue;
            doc_cell(d, "%s", runs[r].roofs[row].ceiling);
            doc_cell(d, "%s", runs[r].roofs[row].unit);
            for (int q = 0; q < n; q++) {
                char a[FMT_LEN];
                const run_roof *best = best_roof(&runs[q], runs[r].roofs[row].ceiling);
                doc_cell(d, "%s%s", fmt_num(a, best ? best->value : NAN),
                         best && best->suspect ? " (suspect)" : "");
            }
        }
}

/* The distinct (model, precision, graph) of all summaries' comparable rows, in
 * order first met (a model measured only at several ranks has no row of dashes). */
static int model_pairs(const run_model *runs, int n, model_precision *out, int max)
{
    int k = 0;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < runs[r].summary.n; i++) {
            const summary_row *s = &runs[r].summary.rows[i];
            if (!comparable(s))
                continue;
            bool seen = false;
            for (int j = 0; j < k && !seen; j++)
                seen = out[j].graph == s->graph && strcmp(out[j].model, s->model) == 0 &&
                       strcmp(out[j].precision, s->precision) == 0;
            if (!seen && k < max)
                out[k++] = (model_precision){s->model, s->precision, s->graph};
        }
    return k;
}

static void throughput_table(report_doc *d, const run_model *runs, int n,
                             const model_precision *pairs, int n_pairs)
{
    char align[32] = "ll";
    const char *header[32] = {"model", "precision"};
    char names[2 * REPORT_MAX_COMPARE][RUN_LABEL_LEN + 32];
    for (int r = 0; r < n; r++) {
        snprintf(names[2 * r], sizeof names[0], "%s images/s (batch)", runs[r].label);
        snprintf(names[2 * r + 1], sizeof names[0], "%s %% of peak", runs[r].label);
        header[2 + 2 * r] = names[2 * r];
        header[3 + 2 * r] = names[2 * r + 1];
        align[2 + 2 * r] = align[3 + 2 * r] = 'r';
    }
    align[2 + 2 * n] = '\0';
    doc_table(d, align, header);
    for (int i = 0; i < n_pairs; i++) {
        doc_cell(d, "%s", pairs[i].model);
        char a[FMT_LEN];
        doc_cell(d, "%s",
                 report_precision_label(a, sizeof a, pairs[i].precision, pairs[i].graph));
        for (int r = 0; r < n; r++) {
            const summary_row *row = best_row(&runs[r].summary, &pairs[i]);
            if (!row) {
                doc_cell(d, "-");
                doc_cell(d, "-");
                continue;
            }
            doc_cell(d, "%s (%d)", fmt_num(a, row->ips_median), row->batch);
            doc_cell(d, "%s", fmt_pct(a, row->pct_of_peak));
        }
    }
}

/* The cv of a configuration's timed steps in its run, NaN when unknown. */
static double steps_cv(const run_model *run, const summary_row *s)
{
    for (int i = 0; i < run->variability.n; i++) {
        const variability_row *v = &run->variability.rows[i];
        if (strcmp(v->scope, "iterations") == 0 && v->res == s->res && v->batch == s->batch &&
            v->graph == s->graph && strcmp(v->model, s->model) == 0 &&
            strcmp(v->precision, s->precision) == 0)
            return v->cv;
    }
    return NAN;
}

/* Why a ratio of a run's figure may not be the machine's (noisy steps, other
 * work), appended as "; ..." clauses. */
static void caveats(char *text, size_t len, size_t *used, const run_model *run,
                    const summary_row *s)
{
    char a[FMT_LEN];
    double cv = steps_cv(run, s);
    if (cv > REPORT_NOISY_CV)
        fmt_append(text, len, used, "; %s's steps are noisy (cv %s)", run->label, fmt_share(a, cv));
    if (run->start_load.busy_cpus >= RUN_BUSY_CPUS_NOTABLE)
        fmt_append(text, len, used, "; %s began with %.1f of %d CPUs busy with other work",
                   run->label, run->start_load.busy_cpus, run->start_load.cpus);
}

/* Per model and precision measured in two or more runs: the fastest against the slowest. */
static void compare_findings(report_doc *d, const run_model *runs, int n,
                             const model_precision *pairs, int n_pairs, const run_to_run *r2r,
                             int n_r2r)
{
    doc_list(d);
    for (int i = 0; i < n_pairs; i++) {
        int fast = -1, slow = -1;
        const summary_row *f = NULL, *s = NULL;
        for (int r = 0; r < n; r++) {
            const summary_row *row = best_row(&runs[r].summary, &pairs[i]);
            if (!row)
                continue;
            if (fast < 0 || row->ips_median > f->ips_median)
                fast = r, f = row;
            /* <=: of runs alike, the last is "slowest", so that they still compare (1.00x) */
            if (slow < 0 || row->ips_median <= s->ips_median)
                slow = r, s = row;
        }
        if (fast < 0 || fast == slow)
            continue;
        char a[FMT_LEN], b[FMT_LEN], c[FMT_LEN], e[FMT_LEN], g[FMT_LEN], label[FMT_LEN];
        char caveat[1024] = "";
        size_t used = 0;
        caveats(caveat, sizeof caveat, &used, &runs[fast], f);
        caveats(caveat, sizeof caveat, &used, &runs[slow], s);
        doc_item(d, "%s %s: %s is %sx %s (%s against %s images/s at their best batch sizes, %d "
                    "and %d); %s of peak against %s%s%s.",
                 pairs[i].model,
                 report_precision_label(label, sizeof label, pairs[i].precision, pairs[i].graph),
                 runs[fast].label,
                 fmt_num(a, f->ips_median / s->ips_median), runs[slow].label,
                 fmt_num(b, f->ips_median), fmt_num(c, s->ips_median), f->batch, s->batch,
                 fmt_pct(e, f->pct_of_peak), fmt_pct(g, s->pct_of_peak),
                 used ? ". The ratio is uncertain: " : "", used ? caveat + 2 : "");
    }
    if (d->n > 0 && d->blocks[d->n - 1].kind == DOC_LIST && d->blocks[d->n - 1].n_cells == 0)
        doc_item(d, "No model was measured in more than one of these runs.");
    report_run_to_run_findings(d, runs, r2r, n_r2r);
    /* the figure's points are traced steps, the tables' figures timed ones */
    for (int r = 0; r < n; r++) {
        double ratio;
        const roof_config *c = report_slowest_trace(&runs[r], &ratio);
        if (!c)
            continue;
        char name[160], a[FMT_LEN];
        report_key_short(name, sizeof name, c->model, c->res, c->batch, c->precision);
        doc_item(d, "%s: the combined roofline's points come from traced steps as slow as %sx "
                    "the timed ones (%s): they sit lower than the tables' figures; that run's "
                    "report says which.",
                 runs[r].label, fmt_num(a, ratio), name);
    }
}

void report_build_compare(report_doc *d, const run_model *runs, int n, const char *out_dir)
{
    model_precision pairs[256];
    int n_pairs = model_pairs(runs, n, pairs, 256);
    run_to_run *r2r;
    int n_r2r;
    if (run_to_run_build(runs, n, &r2r, &n_r2r))
        d->failed = true;
    doc_para(d, "%d run folders side by side. Every number comes from their CSV files; each "
                "environment's own report has the detail.",
             n);
    doc_heading(d, 1, "Findings");
    compare_findings(d, runs, n, pairs, n_pairs, r2r, n_r2r);
    doc_heading(d, 1, "Environments");
    environments_table(d, runs, n);
    doc_heading(d, 1, "Measured peaks");
    doc_para(d, "The best measured value of each ceiling (peaks.csv); a dash where a run did not "
                "measure it.%s",
             any_suspect(runs, n) ? " A value marked suspect failed bin/peaks' consistency "
                                    "checks even when measured again (that run's report says "
                                    "which): a share of peak taken from it may be wrong."
                                  : "");
    peaks_table(d, runs, n);
    doc_heading(d, 1, "Throughput");
    doc_para(d, "Per model and precision, each environment's best configuration (highest median "
                "images/s of one rank) and its share of the compute peak (analytic FLOPs).");
    if (n_pairs > 0)
        throughput_table(d, runs, n, pairs, n_pairs);
    else
        doc_para(d, "None: no configuration of one rank ran to the end in these runs (each "
                    "run's report lists its failures; scaling.csv holds those of several "
                    "ranks).");
    report_run_to_run_section(d, runs, r2r, n_r2r, out_dir);
    doc_heading(d, 1, "Combined roofline");
    char rel[64];
    if (report_png_exists(out_dir, "roofline_compare", rel, sizeof rel))
        doc_figure(d, rel, "combined roofline",
                   "Each environment's roof (the compute ceilings its traced steps ran against "
                   "and its DRAM or HBM bandwidth) and its traced steps, in its colour; the "
                   "point's shape names the model.");
    else
        doc_para(d, "Not drawn (scripts/compare.sh draws it with gnuplot).");
    free(r2r);
}
