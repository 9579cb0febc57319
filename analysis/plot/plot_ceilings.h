/* The ceilings of the roofline figures (plot_roofline.c, plot_models.c) as
 * gnuplot variables, and the roofs of a run a figure draws. */
#ifndef ROOFLINE_PLOT_CEILINGS_H
#define ROOFLINE_PLOT_CEILINGS_H

#include <stdio.h>

#include "../roofs.h"
#include "../run.h"

/* The ceilings as gnuplot variables, rates in yunit (yscale x GFLOP/s):
 * yunit, ncomp, comp_label_i, comp_y_i, comp_from_i (the intensity where the
 * horizontal starts), comp_main_i; nmem, mem_name_i, mem_label_i,
 * mem_slope_i (yunit per FLOP/byte), mem_to_i (the intensity where the
 * diagonal ends), mem_main_i; main_y. Compute ceilings within 4% of each
 * other are drawn once with both names, and both values where they differ
 * (fp16 and bf16 tensor peaks are often equal); levels within 35% share one label (the slower's mem_label is
 * empty). The ceiling named main_compute and the DRAM/HBM level are flagged
 * main (drawn bold). */
void plot_write_ceilings(FILE *f, const roof_lines *roofs, const char *main_compute,
                         double main_gflops, double yscale, const char *yunit);

/* The roofs a roofline figure of these traced configurations draws: every
 * memory level of the run (with the first step's DRAM bandwidth when
 * peaks.csv lacks one) and the compute ceilings their kernels and steps ran
 * against (a bf16 step's tensor-core and CUDA-core ceilings, not fp64's or
 * fp8's), or every compute ceiling when no row names one. */
void plot_run_roofs(const run_model *run, const roof_config *const *configs, int n,
                    roof_lines *out);

#endif
