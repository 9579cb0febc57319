/* The roofs of a run (from peaks.csv) and the roofline arithmetic of one
 * point; the rules are those of analysis/README.md, "Roofs used". */
#ifndef ROOFLINE_ROOFLINE_H
#define ROOFLINE_ROOFLINE_H

#include <stddef.h>

#include "csv.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { ROOF_CEILING_LEN = 32 };

typedef struct {
    const csv_table *peaks;  /* borrowed; NULL when the run has no peaks.csv */
    int col_ceiling, col_value, col_unit;
    double dram_gbs;         /* best dram_* / hbm_* row; NaN when none */
    char dram_ceiling[ROOF_CEILING_LEN];
    double l2_gbs;           /* best l2 / l2_* row; NaN when none */
    char l2_ceiling[ROOF_CEILING_LEN];
} roofs;

/* Picks the memory roofs of peaks.csv (path for messages). Rows whose ceiling
 * ends in "_1core" are one core's figure, not the machine's, and never a roof.
 * peaks = NULL gives roofs that are all missing. Returns 0, or -1 with err
 * naming the file when a column (ceiling, value, unit) is missing. */
int roofs_init(roofs *r, const csv_table *peaks, const char *path, char *err, size_t err_len);

/* The best measured value of compute ceiling `name` (unit GFLOP/s), or NaN. */
double roofs_peak(const roofs *r, const char *name);

/* The compute ceiling a kernel ran against (README): flops_tensor > 0 names
 * "<precision>_tensor"; otherwise the largest of the fp64/fp32/fp16 counts
 * names fp64_fma/fp32_fma/fp16_fma. "" when the kernel counted no FLOPs
 * (all zero or empty: NaN). Written into buf[ROOF_CEILING_LEN]. */
const char *roof_kernel_ceiling(const char *precision, double fp64, double fp32, double fp16,
                                double tensor, char *buf);

/* The compute roof of a whole model trained at `precision` (summary.csv):
 * fp32 -> fp32_fma; tf32, bf16, fp8 -> <p>_tensor; fp16 -> fp16_tensor, or
 * fp16_fma where the device has no tensor figure. "" for anything else. */
const char *roof_precision_ceiling(const roofs *r, const char *precision, char *buf);

typedef enum { BOUND_UNKNOWN, BOUND_MEMORY, BOUND_COMPUTE } roof_bound;
const char *roof_bound_name(roof_bound b); /* unknown, memory, compute */

/* One roofline point: fill the inputs (NaN = not measured), then
 * roof_point_eval fills the rest. */
typedef struct {
    double flops, dram_bytes, l2_bytes, duration_ns;
    double peak_gflops, dram_gbs, l2_gbs;
    double ai_dram, ai_l2;        /* FLOP/byte */
    double achieved_gflops;       /* flops / duration_ns (1 FLOP/ns = 1 GFLOP/s) */
    double ridge_ai;              /* peak_gflops / dram_gbs */
    double attainable_gflops;     /* min(ai_dram x dram_gbs, peak_gflops) */
    double pct_of_attainable;     /* 100 achieved / attainable */
    roof_bound bound;             /* ai_dram below the ridge: memory, else compute */
} roof_point;

/* A point with zero FLOPs and some DRAM bytes sits at AI 0, left of any
 * ridge: memory bound with attainable 0 and no percentage, whatever the
 * compute roof. Anything else missing an input leaves the dependent outputs
 * NaN and the bound unknown. */
void roof_point_eval(roof_point *p);

#ifdef __cplusplus
}
#endif

#endif
