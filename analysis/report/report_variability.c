/* Variability per configuration: the spread of all timed steps pooled, the
 * 95% interval of their median, warm-up drift, outliers, and how far the
 * repeats' medians differ. */
#include <math.h>
#include <string.h>

#include "../variability.h"
#include "report_sections.h"

static void variability_row_cells(report_doc *d, const variability_row *r,
                                  const variability_row *rep)
{
    char a[FMT_LEN], b[FMT_LEN];
    doc_cell(d, "%s", r->model);
    doc_cell(d, "%d", r->res);
    doc_cell(d, "%d", r->batch);
    doc_cell(d, "%s", report_precision_label(a, sizeof a, r->precision, r->graph));
    doc_cell(d, "%d", r->n);
    doc_cell(d, "%s", fmt_num(a, r->median));
    doc_cell(d, "%s", fmt_share(a, r->cv));
    if (!isnan(r->ci95_lo) && !isnan(r->ci95_hi))
        doc_cell(d, "%s to %s", fmt_num(a, r->ci95_lo), fmt_num(b, r->ci95_hi));
    else
        doc_cell(d, "-");
    doc_cell(d, "%s", fmt_signed_pct(a, r->drift_pct));
    doc_cell(d, "%d", r->outliers);
    if (rep)
        doc_cell(d, "%d", rep->n);
    else
        doc_cell(d, "-");
    doc_cell(d, "%s", fmt_share(a, rep ? rep->cv : NAN));
}

void report_variability(report_doc *d, const run_model *run)
{
    doc_heading(d, 1, "Variability");
    const variability *v = &run->variability;
    if (v->n == 0) {
        doc_para(d, "No variability.csv: run bin/analyze on this folder.");
        return;
    }
    doc_para(d, "Step times in ms. \"All steps\" pools every timed iteration of every repeat; the "
                "95%% interval of the median is distribution-free (order statistics, n >= 6); "
                "drift compares the last fifth of each repeat's iterations with its first (the "
                "median over the repeats: each is a process with its own warm-up); outliers lie "
                "beyond 1.5 IQR of the quartiles. \"Repeats\" compares the medians of the "
                "separate processes: the run-to-run variation.");
    doc_table(d, "lrrlrrrlrrrr",
              (const char *const[]){"model", "res", "batch", "precision", "steps", "median",
                                    "cv", "95% CI of the median", "drift", "outliers", "repeats",
                                    "cv of repeat medians"});
    for (int i = 0; i < v->n; i++) {
        const variability_row *r = &v->rows[i];
        if (strcmp(r->scope, "iterations") != 0)
            continue;
        variability_row_cells(d, r, variability_find(v, r, "repeats"));
    }
    doc_drop_empty_table(d);
}
