/* The figures of a run folder: which exist depends on the data (a roofline
 * per traced configuration, a comparison of the models per precision with two
 * or more traced configurations, throughput and variability per precision,
 * scaling when scaling.csv has rows; per GPU trace its hierarchical roofline,
 * its time by phase and layer type and its counters against the cost model).
 * bin/plotdata writes their data files, scripts/render.sh draws them,
 * bin/report embeds them; all three take the list from here. */
#ifndef ROOFLINE_PLOT_FIGURES_H
#define ROOFLINE_PLOT_FIGURES_H

#include <stdbool.h>
#include <stdio.h>

#include "../run.h"

typedef enum {
    PLOT_ROOFLINE,        /* one traced configuration, every kernel */
    PLOT_ROOFLINE_MODELS, /* steps and layer types of every traced model */
    PLOT_THROUGHPUT,      /* images/s against batch size */
    PLOT_VARIABILITY,     /* box plots of step times per configuration */
    PLOT_SCALING,         /* images/s and efficiency against ranks */
    PLOT_ROOFLINE_COMPARE, /* several run folders: ceilings and steps */
    PLOT_HIER_ROOFLINE,   /* a GPU trace: every kernel at its HBM, L2 and L1 intensity */
    PLOT_TIME_BREAKDOWN,  /* a GPU trace: kernel time by phase and layer type */
    PLOT_COST_CHECK,      /* a GPU trace: counted / analytic FLOPs and bytes per layer */
    PLOT_RUN_TO_RUN       /* several runs of one environment: medians and own ranges */
} plot_kind;

typedef struct {
    plot_kind kind;
    char stem[160];           /* file name without extension: figures/<stem>.png */
    char title[256];          /* drawn above the plot */
    const roof_config *trace; /* PLOT_ROOFLINE: borrowed from the run */
    const run_trace *gpu_trace; /* the GPU figures: borrowed from the run */
    char precision[16];       /* the per-precision figures */
} plot_figure;

typedef struct {
    plot_figure *items;
    int n, cap;
} plot_figure_list;

/* Appends the figures the run's data supports. -1 out of memory. */
int plot_figures_of_run(const run_model *run, plot_figure_list *out);
void plot_figure_list_free(plot_figure_list *l);

/* The gnuplot script (in scripts/gnuplot/) that draws a kind. */
const char *plot_script(plot_kind kind);

/* A traced configuration whose step has a place on log axes (a positive
 * intensity and rate), and that step; NULL when it has none. */
const roof_row *plot_drawable_step(const roof_config *c);
bool plot_drawable(const roof_row *r);

/* Writes one line of figures/figures.tsv, which scripts/render.sh reads:
 * the script, the stem (data in figures/data/<stem>.*, the figure in
 * figures/<stem>.png and .svg) and the title, separated by tabs. */
void plot_manifest_line(FILE *f, const plot_figure *fig);

#endif
