/* Variability per configuration (variability.csv): the spread of all timed
 * steps pooled, the 95% interval of their median, warm-up drift, outliers,
 * and how far the repeats' medians differ. */
#include <math.h>
#include <string.h>

#include "report_sections.h"

static bool scope_is(const csv_table *t, int row, const char *scope)
{
    return strcmp(report_cell(t, row, "scope"), scope) == 0;
}

void report_variability(report_doc *d, const report_run *run)
{
    doc_heading(d, 1, "Variability");
    const csv_table *v = run->variability;
    if (!v || csv_rows(v) == 0) {
        doc_para(d, "No variability.csv: run bin/analyze on this folder.");
        return;
    }
    doc_para(d, "Step times in ms. \"All steps\" pools every timed iteration of every repeat; the "
                "95%% interval of the median is distribution-free (order statistics, n >= 6); "
                "drift compares the last fifth of the iterations with the first; outliers lie "
                "beyond 1.5 IQR of the quartiles. \"Repeats\" compares the medians of the "
                "separate processes: the run-to-run variation.");
    doc_table(d, "lrrlrrrlrrrr",
              (const char *const[]){"model", "res", "batch", "precision", "steps", "median",
                                    "cv", "95% CI of the median", "drift", "outliers", "repeats",
                                    "cv of repeat medians"});
    for (int row = 0; row < csv_rows(v); row++) {
        if (!scope_is(v, row, "iterations"))
            continue;
        report_config c = report_config_of(v, row);
        int rep = report_find(v, &c, "scope", "repeats");
        char a[FMT_LEN], b[FMT_LEN];
        doc_cell(d, "%s", c.model);
        doc_cell(d, "%d", c.res);
        doc_cell(d, "%d", c.batch);
        doc_cell(d, "%s", c.precision);
        doc_cell(d, "%s", report_cell(v, row, "n"));
        doc_cell(d, "%s", fmt_num(a, report_num(v, row, "median")));
        doc_cell(d, "%s", fmt_share(a, report_num(v, row, "cv")));
        double lo = report_num(v, row, "ci95_lo"), hi = report_num(v, row, "ci95_hi");
        if (!isnan(lo) && !isnan(hi))
            doc_cell(d, "%s to %s", fmt_num(a, lo), fmt_num(b, hi));
        else
            doc_cell(d, "-");
        doc_cell(d, "%s", fmt_signed_pct(a, report_num(v, row, "drift_pct")));
        doc_cell(d, "%s", report_cell(v, row, "outliers"));
        doc_cell(d, "%s", rep >= 0 ? report_cell(v, rep, "n") : "-");
        doc_cell(d, "%s", fmt_share(a, report_num(v, rep, "cv")));
    }
    doc_drop_empty_table(d);
}
