/* Per traced configuration: where the step's time goes, by layer type and by
 * the ten costliest kernels, each with its roofline position and bound. */
#include <stdlib.h>
#include <string.h>

#include "../roofline_table.h"
#include "report_sections.h"

#define TOP_KERNELS 10

typedef struct {
    const roof_config *c;
    const char *level;
} level_of_config;

static bool is_level(int i, const void *arg)
{
    const level_of_config *w = arg;
    return strcmp(w->c->rows[i].level, w->level) == 0;
}

static double share_key(int i, const void *arg)
{
    return ((const level_of_config *)arg)->c->rows[i].time_share;
}

static double duration_key(int i, const void *arg)
{
    return ((const level_of_config *)arg)->c->rows[i].pt.duration_ns;
}

/* The roofline columns every row of both tables shows. */
static void roofline_cells(report_doc *d, const roof_row *r)
{
    char a[FMT_LEN];
    doc_cell(d, "%s", fmt_ms_of_ns(a, r->pt.duration_ns));
    doc_cell(d, "%s", fmt_share(a, r->time_share));
    doc_cell(d, "%s", fmt_num(a, r->pt.ai_dram));
    doc_cell(d, "%s", fmt_num(a, r->pt.achieved_gflops));
    doc_cell(d, "%s", fmt_pct(a, r->pt.pct_of_attainable));
    doc_cell(d, "%s", roof_bound_name(r->pt.bound));
}

static void config_tables(report_doc *d, const roof_config *c, const roof_row *step)
{
    char name[256], a[FMT_LEN], b[FMT_LEN], g[FMT_LEN], count[FMT_LEN];
    report_key_name(name, sizeof name, c->model, c->res, c->batch, c->precision);
    doc_heading(d, 2, "%s", name);
    doc_para(d, "%s kernels in one traced step of %s ms; the whole step at %s FLOP/byte and %s "
                "is %s-bound. FLOPs and bytes: %s.",
             fmt_count(count, step->count), fmt_ms_of_ns(a, step->pt.duration_ns),
             fmt_num(b, step->pt.ai_dram), fmt_gflops(g, step->pt.achieved_gflops),
             roof_bound_name(step->pt.bound), step->source);

    level_of_config types = {c, "layer_type"}, kernels = {c, "kernel"};
    int n;
    int *rows = report_order_desc(c->n, is_level, share_key, &types, &n);
    if (!rows) {
        d->failed = true;
        return;
    }
    doc_table(d, "lrrrrrrl",
              (const char *const[]){"layer type", "kernels", "time ms", "share", "FLOP/byte",
                                    "GFLOP/s", "% of attainable", "bound"});
    for (int i = 0; i < n; i++) {
        const roof_row *r = &c->rows[rows[i]];
        doc_cell(d, "%s", r->name);
        doc_cell(d, "%s", fmt_count(count, r->count));
        roofline_cells(d, r);
    }
    free(rows);

    rows = report_order_desc(c->n, is_level, duration_key, &kernels, &n);
    if (!rows) {
        d->failed = true;
        return;
    }
    doc_para(d, "The %d costliest kernels:", n < TOP_KERNELS ? n : TOP_KERNELS);
    doc_table(d, "rllllrrrrrl",
              (const char *const[]){"#", "kernel", "layer", "type", "phase", "time ms", "share",
                                    "FLOP/byte", "GFLOP/s", "% of attainable", "bound"});
    for (int i = 0; i < n && i < TOP_KERNELS; i++) {
        const roof_row *r = &c->rows[rows[i]];
        doc_cell(d, "%d", i + 1);
        doc_cell(d, "%s", r->name);
        doc_cell(d, "%s", r->layer);
        doc_cell(d, "%s", r->layer_type);
        doc_cell(d, "%s", r->phase);
        roofline_cells(d, r);
    }
    free(rows);
}

void report_kernels(report_doc *d, const run_model *run)
{
    doc_heading(d, 1, "Where the time goes");
    int traced = 0;
    for (int k = 0; k < run->roofline.n; k++)
        traced += roofline_step(&run->roofline.configs[k]) != NULL;
    if (traced == 0)
        doc_para(d, "No traced step in roofline.csv: the trace pass (bin/train --trace) did not "
                    "run or bin/analyze has not been run.");
    else
        doc_para(d, "Per traced configuration: the layer types and the costliest kernels, each "
                    "with its arithmetic intensity against %s traffic, achieved rate, share of its "
                    "attainable rate min(intensity x bandwidth, peak) and bound.",
                 report_memory_name(run));
    for (int k = 0; k < run->roofline.n; k++) {
        const roof_row *step = roofline_step(&run->roofline.configs[k]);
        if (step)
            config_tables(d, &run->roofline.configs[k], step);
    }
}
