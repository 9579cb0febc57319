/* The report's time breakdown of each GPU trace (analysis/time_breakdown.h):
 * a table of the step's kernel time by layer type (rows) and phase
 * (columns), in percent, its sums, and the stacked-bar figure. */
#include <math.h>
#include <string.h>

#include "../time_breakdown.h"
#include "../trace_gpu.h"
#include "report_sections.h"

/* The median timed step of the trace's configuration (any world size), NaN
 * when summary.csv has none. */
static double median_step_ms(const run_model *run, const run_trace *t)
{
    const summary_row *s = report_traced_summary(run, t->model, t->res, t->batch, t->precision, true);
    return s ? s->step_ms_median : NAN;
}

static void share_table(report_doc *d, const time_breakdown *b)
{
    /* layer type, the phases, the type's total */
    char align[BREAKDOWN_MAX + 3] = "l";
    const char *header[BREAKDOWN_MAX + 2] = {"layer type"};
    for (int p = 0; p < b->n_phases; p++) {
        strcat(align, "r");
        header[p + 1] = b->phases[p];
    }
    strcat(align, "r");
    header[b->n_phases + 1] = "all phases";
    doc_table(d, align, header);
    char a[FMT_LEN];
    /* the types costliest first, then the phases' totals; the type's total last */
    for (int row = 0; row <= b->n_types; row++) {
        int type = row < b->n_types ? row : -1;
        doc_cell(d, "%s", type < 0 ? "all types" : b->types[type]);
        for (int col = 0; col <= b->n_phases; col++) {
            int phase = col < b->n_phases ? col : -1;
            double share = time_breakdown_share(b, type, phase);
            /* an empty cell reads better than 0% where a type has no such phase */
            bool inner = type >= 0 && phase >= 0;
            doc_cell(d, "%s", inner && !(share > 0) ? "" : fmt_share(a, share));
        }
    }
}

static void config_section(report_doc *d, const run_model *run, const plot_figure_list *figs,
                           const run_trace *t)
{
    time_breakdown b;
    time_breakdown_of(t, &b);
    char name[256], n[FMT_LEN], ms[FMT_LEN], med[FMT_LEN], busy[FMT_LEN];
    report_key_name(name, sizeof name, t->model, t->res, t->batch, t->precision);
    doc_heading(d, 2, "%s", name);
    double step_ms = median_step_ms(run, t);
    if (isnan(step_ms))
        doc_para(d, "%s kernel launches, %s ms of kernel time per traced step.",
                 fmt_count(n, b.kernels), fmt_ms_of_ns(ms, b.total_ns));
    else
        doc_para(d, "%s kernel launches, %s ms of kernel time per traced step; the median timed "
                    "step takes %s ms, so kernels fill %s of it (gaps between kernels and "
                    "overlapping kernels make the difference).",
                 fmt_count(n, b.kernels), fmt_ms_of_ns(ms, b.total_ns), fmt_num(med, step_ms),
                 fmt_pct(busy, 100 * b.total_ns / 1e6 / step_ms));
    share_table(d, &b);
    char caption[768];
    snprintf(caption, sizeof caption,
             "Kernel time of one traced step of %s by phase, in the order a step runs them, each "
             "bar stacked by layer type; in percent of the step's kernel time, the bar's total "
             "above it.",
             name);
    report_gpu_figure(d, run, figs, PLOT_TIME_BREAKDOWN, t, caption);
}

void report_gpu_breakdown(report_doc *d, const run_model *run, const plot_figure_list *figs)
{
    if (!run_has_gpu_trace(run))
        return;
    doc_heading(d, 1, "GPU: step time by layer type and phase");
    doc_para(d, "The share of a traced GPU step's kernel time (the sum of its kernels' durations) "
                "in each layer type and phase: fwd, bwd_data, bwd_weights, update, loss, comm. "
                "A phase a type does not have is empty.");
    for (int k = 0; k < run->n_traces; k++)
        if (trace_is_gpu(run, &run->traces[k]))
            config_section(d, run, figs, &run->traces[k]);
}
