/* The figures of a run's report: each drawn figure with its caption (the
 * first roofline explains how to read one), in the order a reader wants
 * them. */
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

#include "../roofline_table.h"
#include "report_sections.h"

bool report_png_exists(const char *dir, const char *stem, char *rel, size_t len)
{
    char path[RUN_PATH_LEN + 256];
    snprintf(rel, len, "figures/%s.png", stem);
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* The first roofline of a kind explains how to read it; later ones say what differs. */
static void figure_caption(const plot_figure *f, bool first, char *out,
                           size_t len)
{
    char name[256];
    switch (f->kind) {
    case PLOT_ROOFLINE: {
        const roof_config *c = f->trace;
        const roof_row *step = roofline_step(c);
        report_key_name(name, sizeof name, c->model, c->res, c->batch, c->precision);
        char ridge[FMT_LEN];
        const char *source = step ? step->source : "";
        double ridge_ai = step ? step->pt.ridge_ai : NAN;
        if (!first) {
            snprintf(out, len, "Roofline of %s, read as the one above (ridge point %s FLOP/byte; "
                               "FLOPs and bytes: %s).",
                     name, fmt_num(ridge, ridge_ai), *source ? source : "unknown");
            break;
        }
        snprintf(out, len,
                 "Roofline of %s: every kernel of one traced step at its arithmetic intensity and "
                 "achieved rate, coloured by layer type, its area the kernel's share of the step's "
                 "time; the yellow square is the whole step. Horizontal lines: the measured compute "
                 "peaks its kernels ran against (peaks.csv has them all); diagonals: the measured memory bandwidths; bold: the pair the analysis "
                 "classifies against (ridge point %s FLOP/byte). FLOPs and bytes: %s.",
                 name, fmt_num(ridge, ridge_ai), *source ? source : "unknown");
        break;
    }
    case PLOT_ROOFLINE_MODELS:
        snprintf(out, len,
                 "The whole steps (squares) and layer types (circles, area by share of the step's "
                 "time; those above 5%% named) of every traced model in %s, on this machine's "
                 "roofline.",
                 f->precision);
        break;
    case PLOT_THROUGHPUT:
        snprintf(out, len,
                 "Training throughput against batch size (%s): the median images/s over every timed "
                 "step of every repeat; bars span the interquartile range; labels give the share of "
                 "the compute peak from the analytic FLOPs.",
                 f->precision);
        break;
    case PLOT_VARIABILITY:
        snprintf(out, len,
                 "Every timed step of every repeat (%s), in percent from its configuration's median "
                 "so that fast and slow models share one axis; boxes span the quartiles, whiskers "
                 "1.5 IQR; colours tell the repeats apart. The median step time is under each box, "
                 "the coefficient of variation above it.",
                 f->precision);
        break;
    case PLOT_SCALING:
        snprintf(out, len,
                 "Data-parallel scaling: throughput against the number of ranks (left; "
                 "dash-dotted: linear from the smallest world size) and parallel efficiency "
                 "(right). Filled points are measured; the scaling model's predictions are "
                 "beside them: dashed with open circles fitted to this run's allreduce curve, "
                 "dotted on the NVLink/InfiniBand links given as parameters (section Scaling).");
        break;
    case PLOT_ROOFLINE_COMPARE:
        snprintf(out, len, "The environments' roofs and traced steps on one roofline.");
        break;
    case PLOT_HIER_ROOFLINE:
    case PLOT_TIME_BREAKDOWN:
    case PLOT_COST_CHECK:
    case PLOT_RUN_TO_RUN:
        out[0] = '\0'; /* shown in the GPU sections, with their captions */
        break;
    }
}

void report_figures(report_doc *d, const run_model *run, const plot_figure_list *figs)
{
    doc_heading(d, 1, "Figures");
    /* the overview figures first, then one roofline per traced configuration;
     * the GPU figures are shown beside their tables (report_gpu_*.c) */
    static const plot_kind order[] = {PLOT_ROOFLINE_MODELS, PLOT_THROUGHPUT, PLOT_VARIABILITY,
                                      PLOT_SCALING, PLOT_ROOFLINE};
    int shown = 0, rooflines = 0, listed = 0;
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        for (int i = 0; i < figs->n; i++)
            listed += figs->items[i].kind == order[k];
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        for (int i = 0; i < figs->n; i++) {
            const plot_figure *f = &figs->items[i];
            char rel[256], caption[1024];
            if (f->kind != order[k] || !report_png_exists(run->dir, f->stem, rel, sizeof rel))
                continue;
            figure_caption(f, f->kind != PLOT_ROOFLINE || rooflines++ == 0, caption,
                           sizeof caption);
            doc_figure(d, rel, f->title, "%s", caption);
            shown++;
        }
    if (shown == 0)
        doc_para(d, "No figures: they had not been drawn when this report was written "
                    "(scripts/render.sh draws them with gnuplot, then writes the report).");
    else if (shown < listed)
        doc_note(d, "%d of the %d figures this run's data supports were not drawn "
                    "(see figures/gnuplot.log).",
                 listed - shown, listed);
}

void report_gpu_figure(report_doc *d, const run_model *run, const plot_figure_list *figs,
                       plot_kind kind, const run_trace *t, const char *caption)
{
    for (int i = 0; i < figs->n; i++) {
        const plot_figure *f = &figs->items[i];
        char rel[256];
        if (f->kind == kind && f->gpu_trace == t &&
            report_png_exists(run->dir, f->stem, rel, sizeof rel)) {
            doc_figure(d, rel, f->title, "%s", caption);
            return;
        }
    }
}
