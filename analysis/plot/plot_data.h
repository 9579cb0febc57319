/* The data files of each figure (bin/plotdata): for a figure with stem S,
 * data_prefix is "<dir>/S" and the files are S.vars (gnuplot assignments) and
 * the data blocks its script reads (scripts/gnuplot/<kind>.gp says which). */
#ifndef ROOFLINE_PLOT_DATA_H
#define ROOFLINE_PLOT_DATA_H

#include <stddef.h>

#include "plot_figures.h"
#include "plot_out.h"
#include "plot_roofs.h"

/* Writes the files of one figure of `run`. -1 with err. */
int plot_write_figure(const report_run *run, const plot_figure *fig, const char *data_prefix,
                      char *err, size_t err_len);

/* The kinds, one file each. */
int plot_write_roofline(const report_run *run, const plot_figure *fig, const char *prefix,
                        char *err, size_t err_len);
int plot_write_roofline_models(const report_run *run, const plot_figure *fig,
                               const char *prefix, char *err, size_t err_len);
int plot_write_throughput(const report_run *run, const plot_figure *fig, const char *prefix,
                          char *err, size_t err_len);
int plot_write_variability(const report_run *run, const plot_figure *fig, const char *prefix,
                           char *err, size_t err_len);
int plot_write_scaling(const report_run *run, const char *prefix, char *err, size_t err_len);
/* Several run folders on one roofline: each one's ceilings and step points. */
int plot_write_roofline_compare(const report_run *runs, int n_runs, const char *prefix,
                                char *err, size_t err_len);

/* Shared by the roofline writers: the ceilings as gnuplot variables, rates in
 * yunit (yscale x GFLOP/s): yunit, ncomp, comp_label_i, comp_y_i, comp_from_i
 * (the intensity where the horizontal starts), comp_main_i; nmem,
 * mem_name_i, mem_label_i, mem_slope_i (yunit per FLOP/byte), mem_to_i (the
 * intensity where the diagonal ends), mem_main_i; main_y. Compute ceilings
 * within 4% of each other are drawn once with both names (fp16 and bf16
 * tensor peaks are often equal); levels within 35% share one label (the
 * slower's mem_label is empty). The ceiling named main_compute and the
 * DRAM/HBM level are flagged main (drawn bold). */
void plot_write_ceilings(FILE *f, const plot_roofs *roofs, const char *main_compute,
                         double main_gflops, double yscale, const char *yunit);

/* The roofs of a run, with the step row's compute ceiling added from
 * roofline.csv when peaks.csv lacks it. */
void plot_run_roofs(const report_run *run, int step_row, plot_roofs *out);

#endif
