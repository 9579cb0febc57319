/* The ceilings a roofline figure draws, from peaks.csv: one per measured
 * compute peak of the whole device (GFLOP/s rows; the single-core rows are
 * left out: the runs use every core) and one per memory level (the best of
 * the dram_* or hbm_* rows, then l3, l2, l1, smem). PCIe and communication
 * bandwidths are not memory levels and are left out. */
#ifndef ROOFLINE_PLOT_ROOFS_H
#define ROOFLINE_PLOT_ROOFS_H

#include <stdbool.h>

#include "csv.h"

enum { PLOT_MAX_ROOFS = 16 };

typedef struct {
    char ceiling[48]; /* peaks.csv name: fp32_fma, dram (the level), l2 */
    char label[48];   /* for the reader: "fp32 FMA", "DRAM", "L2" */
    double value;     /* GFLOP/s or GB/s */
} plot_roof;

typedef struct {
    plot_roof compute[PLOT_MAX_ROOFS];
    int n_compute;
    plot_roof memory[PLOT_MAX_ROOFS]; /* slowest first */
    int n_memory;
} plot_roofs;

/* Reads the ceilings of peaks (may be NULL: no ceilings). */
void plot_roofs_from_peaks(const csv_table *peaks, plot_roofs *out);

/* The compute ceiling named `ceiling` (NULL if absent). */
const plot_roof *plot_roofs_compute(const plot_roofs *r, const char *ceiling);
/* The DRAM or HBM level, the one the analysis classifies against (NULL if absent). */
const plot_roof *plot_roofs_main_memory(const plot_roofs *r);
/* The largest compute ceiling and memory bandwidth (0 when there are none). */
double plot_roofs_top_compute(const plot_roofs *r);
double plot_roofs_top_memory(const plot_roofs *r);

#endif
