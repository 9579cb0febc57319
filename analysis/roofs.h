/* The roofs of a run (its run_roof rows, from peaks.csv) as the analysis and
 * the figures use them: the DRAM/HBM and L2 bandwidths a kernel is
 * classified against, the compute peak of a ceiling or a precision, and the
 * ceilings a roofline figure draws (analysis/README.md, "Roofs used"). */
#ifndef ROOFLINE_ROOFS_H
#define ROOFLINE_ROOFS_H

#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const run_roof *rows; /* borrowed */
    int n;
    double dram_gbs;      /* best sustained DRAM or HBM row (copy, triad, read); NaN when none */
    double l2_gbs;        /* best L2 row; NaN when none */
    double l1_gbs;        /* best L1 row; NaN when none (the GPU's hierarchical roofline) */
} roofs;

/* The roofs of rows[0..n-1] (n = 0: every roof missing). A one-core row is
 * never a roof; memory rows must be in GB/s, compute rows in GFLOP/s. */
void roofs_init(roofs *r, const run_roof *rows, int n);

/* The best measured value of compute ceiling `name` (GFLOP/s), or NaN. */
double roofs_peak(const roofs *r, const char *name);

/* The compute roof of a whole model trained at `precision` (summary.csv):
 * fp32 -> fp32_fma; tf32, bf16, fp8 -> <p>_tensor; fp16 -> fp16_tensor, or
 * fp16_fma where the device has no tensor figure. "" for anything else.
 * Written into buf[ROOF_CEILING_LEN]. */
const char *roofs_precision_ceiling(const roofs *r, const char *precision, char *buf);

/* ---- the ceilings a figure draws ----------------------------------------- */

enum { ROOF_MAX_LINES = 16 };

typedef struct {
    char ceiling[48]; /* peaks.csv name for compute (fp32_fma), the level for memory (dram, l2) */
    char label[48];   /* for the reader: "fp32 FMA", "DRAM", "L2" */
    double value;     /* GFLOP/s or GB/s */
    mem_level level;  /* MEM_NONE for compute */
} roof_line;

/* One line per measured compute peak of the whole device and one per memory
 * level (its best row), slowest level first; PCIe and communication are not
 * levels and one-core rows are left out. */
typedef struct {
    roof_line compute[ROOF_MAX_LINES];
    int n_compute;
    roof_line memory[ROOF_MAX_LINES];
    int n_memory;
} roof_lines;

void roof_lines_of(const run_roof *rows, int n, roof_lines *out);
/* The compute line named `ceiling`, or NULL. */
const roof_line *roof_lines_compute(const roof_lines *l, const char *ceiling);
/* The DRAM or HBM line (the first met, slowest first), or NULL. */
const roof_line *roof_lines_main_memory(const roof_lines *l);
/* The largest compute ceiling and memory bandwidth (0 when there are none). */
double roof_lines_top_compute(const roof_lines *l);
double roof_lines_top_memory(const roof_lines *l);

/* "HBM" when the run's main memory level is HBM, else "DRAM". */
const char *roofs_memory_name(const run_roof *rows, int n);

#ifdef __cplusplus
}
#endif

#endif
