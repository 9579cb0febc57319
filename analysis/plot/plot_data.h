/* The data files of each figure (bin/plotdata): for a figure with stem S,
 * data_prefix is "<dir>/S" and the files are S.vars (gnuplot assignments) and
 * the data blocks its script reads (scripts/gnuplot/<kind>.gp says which).
 * Each kind's writer lives in its own file (plot_roofline.c, plot_models.c,
 * plot_series.c, plot_variability.c, plot_compare.c, and for a GPU trace
 * plot_hier.c, plot_breakdown.c, plot_cost_check.c). */
#ifndef ROOFLINE_PLOT_DATA_H
#define ROOFLINE_PLOT_DATA_H

#include <stddef.h>

#include "../run.h"
#include "plot_figures.h"

/* Writes the files of one figure of `run`. -1 with err. */
int plot_write_figure(const run_model *run, const plot_figure *fig, const char *data_prefix,
                      char *err, size_t err_len);

/* The kinds, one file each. */
int plot_write_roofline(const run_model *run, const plot_figure *fig, const char *prefix,
                        char *err, size_t err_len);
int plot_write_roofline_models(const run_model *run, const plot_figure *fig,
                               const char *prefix, char *err, size_t err_len);
int plot_write_throughput(const run_model *run, const plot_figure *fig, const char *prefix,
                          char *err, size_t err_len);
int plot_write_variability(const run_model *run, const plot_figure *fig, const char *prefix,
                           char *err, size_t err_len);
int plot_write_scaling(const run_model *run, const char *prefix, char *err, size_t err_len);
/* The GPU figures of fig->gpu_trace (plot_hier.c, plot_breakdown.c,
 * plot_cost_check.c). */
int plot_write_hier_roofline(const run_model *run, const plot_figure *fig, const char *prefix,
                             char *err, size_t err_len);
int plot_write_time_breakdown(const run_model *run, const plot_figure *fig, const char *prefix,
                              char *err, size_t err_len);
int plot_write_cost_check(const run_model *run, const plot_figure *fig, const char *prefix,
                          char *err, size_t err_len);
/* Several run folders on one roofline: each one's ceilings and step points. */
int plot_write_roofline_compare(const run_model *runs, int n_runs, const char *prefix,
                                char *err, size_t err_len);
/* Several runs of one environment: per configuration two or more of them
 * measured, each run's median step and own range (analysis/run_to_run.h);
 * plot_has_run_to_run says whether there is any (true also out of memory,
 * which the writer then reports). */
bool plot_has_run_to_run(const run_model *runs, int n_runs);
int plot_write_run_to_run(const run_model *runs, int n_runs, const char *prefix, char *err,
                          size_t err_len);

#endif
