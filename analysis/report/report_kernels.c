/* Per traced configuration: where the step's time goes, by layer type and by
 * the ten costliest kernels, each with its roofline position and bound
 * (roofline.csv). */
#include <stdlib.h>
#include <string.h>

#include "plot_figures.h"
#include "report_sections.h"

#define TOP_KERNELS 10

typedef struct {
    const report_config *config;
    const char *level;
} level_of_config;

static bool is_level_of(const csv_table *t, int row, const void *arg)
{
    const level_of_config *w = arg;
    return strcmp(report_cell(t, row, "level"), w->level) == 0 && report_row_is(t, row, w->config);
}

/* The roofline columns every row of both tables shows. */
static void roofline_cells(report_doc *d, const csv_table *rl, int row)
{
    char a[FMT_LEN];
    doc_cell(d, "%s", fmt_ms_of_ns(a, report_num(rl, row, "duration_ns")));
    doc_cell(d, "%s", fmt_share(a, report_num(rl, row, "time_share")));
    doc_cell(d, "%s", fmt_num(a, report_num(rl, row, "ai_dram")));
    doc_cell(d, "%s", fmt_num(a, report_num(rl, row, "achieved_gflops")));
    doc_cell(d, "%s", fmt_pct(a, report_num(rl, row, "pct_of_attainable")));
    const char *bound = report_cell(rl, row, "bound");
    doc_cell(d, "%s", *bound ? bound : "-");
}

static void config_tables(report_doc *d, const csv_table *rl, const report_config *c, int step)
{
    char name[256], a[FMT_LEN], b[FMT_LEN], g[FMT_LEN];
    report_config_name(c, name, sizeof name);
    doc_heading(d, 2, "%s", name);
    doc_para(d, "%s kernels in one traced step of %s ms; the whole step at %s FLOP/byte and %s "
                "is %s-bound. FLOPs and bytes: %s.",
             report_cell(rl, step, "count"), fmt_ms_of_ns(a, report_num(rl, step, "duration_ns")),
             fmt_num(b, report_num(rl, step, "ai_dram")),
             fmt_gflops(g, report_num(rl, step, "achieved_gflops")), report_cell(rl, step, "bound"),
             report_cell(rl, step, "source"));

    level_of_config types = {c, "layer_type"}, kernels = {c, "kernel"};
    int n;
    int *rows = report_rows_by(rl, "time_share", REPORT_DESCENDING, is_level_of, &types, &n);
    if (!rows) {
        d->failed = true;
        return;
    }
    doc_table(d, "lrrrrrrl",
              (const char *const[]){"layer type", "kernels", "time ms", "share", "FLOP/byte",
                                    "GFLOP/s", "% of attainable", "bound"});
    for (int i = 0; i < n; i++) {
        doc_cell(d, "%s", report_cell(rl, rows[i], "name"));
        doc_cell(d, "%s", report_cell(rl, rows[i], "count"));
        roofline_cells(d, rl, rows[i]);
    }
    free(rows);

    rows = report_rows_by(rl, "duration_ns", REPORT_DESCENDING, is_level_of, &kernels, &n);
    if (!rows) {
        d->failed = true;
        return;
    }
    doc_para(d, "The %d costliest kernels:", n < TOP_KERNELS ? n : TOP_KERNELS);
    doc_table(d, "rllllrrrrrl",
              (const char *const[]){"#", "kernel", "layer", "type", "phase", "time ms", "share",
                                    "FLOP/byte", "GFLOP/s", "% of attainable", "bound"});
    for (int i = 0; i < n && i < TOP_KERNELS; i++) {
        doc_cell(d, "%d", i + 1);
        doc_cell(d, "%s", report_cell(rl, rows[i], "name"));
        doc_cell(d, "%s", report_cell(rl, rows[i], "layer"));
        doc_cell(d, "%s", report_cell(rl, rows[i], "layer_type"));
        doc_cell(d, "%s", report_cell(rl, rows[i], "phase"));
        roofline_cells(d, rl, rows[i]);
    }
    free(rows);
}

void report_kernels(report_doc *d, const report_run *run)
{
    doc_heading(d, 1, "Where the time goes");
    const csv_table *rl = run->roofline;
    report_configs traced;
    if (report_configs_distinct(rl, plot_is_step_row, &traced)) {
        d->failed = true;
        return;
    }
    if (traced.n == 0)
        doc_para(d, "No traced step in roofline.csv: the trace pass (bin/train --trace) did not "
                    "run or bin/analyze has not been run.");
    else
        doc_para(d, "Per traced configuration: the layer types and the costliest kernels, each "
                    "with its arithmetic intensity against %s traffic, achieved rate, share of its "
                    "attainable rate min(intensity x bandwidth, peak) and bound.",
                 report_memory_name(run));
    for (int i = 0; i < traced.n; i++)
        config_tables(d, rl, &traced.items[i], report_find(rl, &traced.items[i], "level", "step"));
    report_configs_free(&traced);
}
