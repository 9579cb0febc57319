/* The content of the reports, built from run models (every number in them
 * comes from the run folder's files, or is arithmetic on them):
 * report_build_run for one run (bin/report RUN_DIR), report_build_compare for
 * several side by side (bin/report --compare). */
#ifndef ROOFLINE_REPORT_BUILD_H
#define ROOFLINE_REPORT_BUILD_H

#include "../plot/plot_figures.h"
#include "../run.h"
#include "report_doc.h"

/* figs: the figures the run supports (plot_figures_of_run); those whose PNG
 * exists in run->dir/figures/ are shown. */
void report_build_run(report_doc *d, const run_model *run, const plot_figure_list *figs);

/* The most runs a comparison sets side by side: its tables have two columns a
 * run (bench/cli.h's CLI_MAX_COMPARE_RUNS, checked against this in bin/report). */
enum { REPORT_MAX_COMPARE = 14 };

/* The comparison of n runs (at most REPORT_MAX_COMPARE); the combined roofline
 * is shown when out_dir/figures/roofline_compare.png exists. */
void report_build_compare(report_doc *d, const run_model *runs, int n, const char *out_dir);

#endif
