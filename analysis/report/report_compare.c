/* The comparison of several run folders (bin/report --compare): which
 * environment, its roofs side by side, each model's best throughput and
 * share of peak per environment, and the combined roofline. */
#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "plot_roofs.h"
#include "report_build.h"
#include "report_env.h"
#include "report_sections.h"

/* The row of the best images/s of a model in a precision (ok, one rank), or -1. */
static int best_row(const csv_table *s, const char *model, const char *precision)
{
    int best = -1;
    for (int row = 0; s && row < csv_rows(s); row++) {
        double w = report_num(s, row, "world_size");
        double ips = report_num(s, row, "images_per_s_median");
        if (strcmp(report_cell(s, row, "model"), model) != 0 ||
            strcmp(report_cell(s, row, "precision"), precision) != 0 ||
            strcmp(report_cell(s, row, "status"), "ok") != 0 || isnan(ips) || w > 1)
            continue;
        if (best < 0 || ips > report_num(s, best, "images_per_s_median"))
            best = row;
    }
    return best;
}

static void environments_table(report_doc *d, const report_run *runs, int n)
{
    doc_table(d, "llllrr",
              (const char *const[]){"environment", "run folder", "date (UTC)", "device",
                                    "fp32 FMA GFLOP/s", "DRAM/HBM GB/s"});
    for (int r = 0; r < n; r++) {
        char path[REPORT_PATH_LEN + 16], err[256], a[FMT_LEN], b[FMT_LEN];
        snprintf(path, sizeof path, "%s/env.json", runs[r].dir);
        env_entries env = {0};
        const char *date = NULL;
        if (runs[r].has_env_json && report_env_read(path, &env, err, sizeof err) == 0)
            date = report_env_get(&env, "date_utc");
        plot_roofs roofs;
        plot_roofs_from_peaks(runs[r].peaks, &roofs);
        const plot_roof *fp32 = plot_roofs_compute(&roofs, "fp32_fma");
        const plot_roof *mem = plot_roofs_main_memory(&roofs);
        /* the last device row names the accelerator when there is one */
        const csv_table *p = runs[r].peaks;
        doc_cell(d, "%s", runs[r].env);
        doc_cell(d, "%s", runs[r].dir);
        doc_cell(d, "%s", date ? date : "-");
        doc_cell(d, "%s", p && csv_rows(p) ? report_cell(p, csv_rows(p) - 1, "device") : "-");
        doc_cell(d, "%s", fmt_num(a, fp32 ? fp32->value : NAN));
        doc_cell(d, "%s", fmt_num(b, mem ? mem->value : NAN));
        report_env_free(&env);
    }
}

static void peaks_table(report_doc *d, const report_run *runs, int n)
{
    char align[32] = "ll";
    const char *header[32] = {"ceiling", "unit"};
    for (int r = 0; r < n; r++) {
        align[2 + r] = 'r';
        header[2 + r] = runs[r].env;
    }
    align[2 + n] = '\0';
    doc_table(d, align, header);
    /* every ceiling any run measured, in the order first met */
    for (int r = 0; r < n; r++) {
        const csv_table *p = runs[r].peaks;
        for (int row = 0; p && row < csv_rows(p); row++) {
            const char *ceiling = report_cell(p, row, "ceiling");
            bool seen = false;
            for (int q = 0; q < r && !seen; q++)
                for (int k = 0; runs[q].peaks && k < csv_rows(runs[q].peaks) && !seen; k++)
                    seen = strcmp(report_cell(runs[q].peaks, k, "ceiling"), ceiling) == 0;
            for (int k = 0; k < row && !seen; k++)
                seen = strcmp(report_cell(p, k, "ceiling"), ceiling) == 0;
            if (seen)
                continue;
            doc_cell(d, "%s", ceiling);
            doc_cell(d, "%s", report_cell(p, row, "unit"));
            for (int q = 0; q < n; q++) {
                double best = NAN;
                for (int k = 0; runs[q].peaks && k < csv_rows(runs[q].peaks); k++)
                    if (strcmp(report_cell(runs[q].peaks, k, "ceiling"), ceiling) == 0)
                        best = fmax(isnan(best) ? -INFINITY : best,
                                    report_num(runs[q].peaks, k, "value"));
                char a[FMT_LEN];
                doc_cell(d, "%s", fmt_num(a, best));
            }
        }
    }
}

typedef struct {
    const char *model, *precision;
} model_precision;

/* The distinct (model, precision) pairs of all summaries, in order first met. */
static int model_pairs(const report_run *runs, int n, model_precision *out, int max)
{
    int k = 0;
    for (int r = 0; r < n; r++) {
        const csv_table *s = runs[r].summary;
        for (int row = 0; s && row < csv_rows(s); row++) {
            const char *m = report_cell(s, row, "model"), *p = report_cell(s, row, "precision");
            bool seen = false;
            for (int i = 0; i < k && !seen; i++)
                seen = strcmp(out[i].model, m) == 0 && strcmp(out[i].precision, p) == 0;
            if (!seen && k < max)
                out[k++] = (model_precision){m, p};
        }
    }
    return k;
}

static void throughput_table(report_doc *d, const report_run *runs, int n,
                             const model_precision *pairs, int n_pairs)
{
    char align[32] = "ll";
    const char *header[32] = {"model", "precision"};
    char names[2 * 14][96];
    for (int r = 0; r < n; r++) {
        snprintf(names[2 * r], sizeof names[0], "%s images/s (batch)", runs[r].env);
        snprintf(names[2 * r + 1], sizeof names[0], "%s %% of peak", runs[r].env);
        header[2 + 2 * r] = names[2 * r];
        header[3 + 2 * r] = names[2 * r + 1];
        align[2 + 2 * r] = align[3 + 2 * r] = 'r';
    }
    align[2 + 2 * n] = '\0';
    doc_table(d, align, header);
    for (int i = 0; i < n_pairs; i++) {
        doc_cell(d, "%s", pairs[i].model);
        doc_cell(d, "%s", pairs[i].precision);
        for (int r = 0; r < n; r++) {
            int row = best_row(runs[r].summary, pairs[i].model, pairs[i].precision);
            char a[FMT_LEN];
            if (row < 0) {
                doc_cell(d, "-");
                doc_cell(d, "-");
                continue;
            }
            doc_cell(d, "%s (%s)", fmt_num(a, report_num(runs[r].summary, row, "images_per_s_median")),
                     report_cell(runs[r].summary, row, "batch"));
            doc_cell(d, "%s", fmt_pct(a, report_num(runs[r].summary, row, "pct_of_peak")));
        }
    }
}

/* Per model and precision measured in two or more runs: the fastest against the slowest. */
static void compare_findings(report_doc *d, const report_run *runs, int n,
                             const model_precision *pairs, int n_pairs)
{
    doc_list(d);
    for (int i = 0; i < n_pairs; i++) {
        int fast = -1, slow = -1, fast_row = -1, slow_row = -1;
        for (int r = 0; r < n; r++) {
            int row = best_row(runs[r].summary, pairs[i].model, pairs[i].precision);
            if (row < 0)
                continue;
            double ips = report_num(runs[r].summary, row, "images_per_s_median");
            if (fast < 0 || ips > report_num(runs[fast].summary, fast_row, "images_per_s_median"))
                fast = r, fast_row = row;
            if (slow < 0 || ips < report_num(runs[slow].summary, slow_row, "images_per_s_median"))
                slow = r, slow_row = row;
        }
        if (fast < 0 || fast == slow)
            continue;
        double f = report_num(runs[fast].summary, fast_row, "images_per_s_median");
        double s = report_num(runs[slow].summary, slow_row, "images_per_s_median");
        char a[FMT_LEN], b[FMT_LEN], c[FMT_LEN], e[FMT_LEN], g[FMT_LEN];
        doc_item(d, "%s %s: %s is %sx %s (%s against %s images/s at their best batch sizes, %s "
                    "and %s); %s of peak against %s.",
                 pairs[i].model, pairs[i].precision, runs[fast].env, fmt_num(a, f / s),
                 runs[slow].env, fmt_num(b, f), fmt_num(c, s),
                 report_cell(runs[fast].summary, fast_row, "batch"),
                 report_cell(runs[slow].summary, slow_row, "batch"),
                 fmt_pct(e, report_num(runs[fast].summary, fast_row, "pct_of_peak")),
                 fmt_pct(g, report_num(runs[slow].summary, slow_row, "pct_of_peak")));
    }
    if (d->n > 0 && d->blocks[d->n - 1].kind == DOC_LIST && d->blocks[d->n - 1].n_cells == 0)
        doc_item(d, "No model was measured in more than one of these runs.");
}

void report_build_compare(report_doc *d, const report_run *runs, int n, const char *out_dir)
{
    model_precision pairs[256];
    int n_pairs = model_pairs(runs, n, pairs, 256);
    doc_para(d, "%d run folders side by side. Every number comes from their CSV files; each "
                "environment's own report has the detail.",
             n);
    doc_heading(d, 1, "Findings");
    compare_findings(d, runs, n, pairs, n_pairs);
    doc_heading(d, 1, "Environments");
    environments_table(d, runs, n);
    doc_heading(d, 1, "Measured peaks");
    doc_para(d, "The best measured value of each ceiling (peaks.csv); a dash where a run did not "
                "measure it.");
    peaks_table(d, runs, n);
    doc_heading(d, 1, "Throughput");
    doc_para(d, "Per model and precision, each environment's best configuration (highest median "
                "images/s of one rank) and its share of the compute peak (analytic FLOPs).");
    throughput_table(d, runs, n, pairs, n_pairs);
    doc_heading(d, 1, "Combined roofline");
    char png[REPORT_PATH_LEN + 64];
    snprintf(png, sizeof png, "%s/figures/roofline_compare.png", out_dir);
    struct stat st;
    if (stat(png, &st) == 0 && st.st_size > 0)
        doc_figure(d, "figures/roofline_compare.png", "combined roofline",
                   "Each environment's roof (the compute ceilings its traced steps ran against "
                   "and its DRAM or HBM bandwidth) and its traced steps, in its colour; the "
                   "point's shape names the model.");
    else
        doc_para(d, "Not drawn (scripts/compare.sh draws it with gnuplot).");
}
