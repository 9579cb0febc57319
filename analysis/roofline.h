/* The roofline arithmetic of one point and the compute ceiling a kernel ran
 * against; the rules are those of analysis/README.md, "Roofs used". */
#ifndef ROOFLINE_ROOFLINE_H
#define ROOFLINE_ROOFLINE_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { ROOF_CEILING_LEN = 32 };

/* The compute ceiling a kernel ran against (README): flops_tensor > 0 names
 * "<precision>_tensor" ("tf32_tensor" in an fp32 step); otherwise the
 * largest of the fp64/fp32/fp16 counts names fp64_fma/fp32_fma/fp16_fma.
 * "" when the kernel counted no FLOPs (all zero or empty: NaN). Written into
 * buf[ROOF_CEILING_LEN]. */
const char *roof_kernel_ceiling(const char *precision, double fp64, double fp32, double fp16,
                                double tensor, char *buf);

typedef enum { BOUND_UNKNOWN, BOUND_MEMORY, BOUND_COMPUTE } roof_bound;
const char *roof_bound_name(roof_bound b); /* unknown, memory, compute */
/* The inverse of roof_bound_name; false for any other text. */
bool roof_bound_parse(const char *name, roof_bound *out);

/* One roofline point: fill the inputs (NaN = not measured), then
 * roof_point_eval fills the rest. */
typedef struct {
    double flops, dram_bytes, l2_bytes, duration_ns;
    double peak_gflops, dram_gbs, l2_gbs;
    double ai_dram, ai_l2;        /* FLOP/byte */
    double achieved_gflops;       /* flops / duration_ns (1 FLOP/ns = 1 GFLOP/s) */
    double ridge_ai;              /* peak_gflops / dram_gbs */
    double attainable_gflops;     /* min(ai_dram x dram_gbs, peak_gflops) */
    double pct_of_attainable;     /* 100 achieved / attainable; with no FLOPs (a copy, a
                                     layout reorder) 100 x its DRAM bytes/s / dram_gbs */
    roof_bound bound;             /* ai_dram below the ridge: memory, else compute */
} roof_point;

/* A point with zero FLOPs and some DRAM bytes sits at AI 0, left of any
 * ridge: memory bound with attainable 0 FLOP/s, whatever the compute roof,
 * its percentage that of its bytes/s against the DRAM roof. Anything else missing an input leaves the dependent outputs
 * NaN and the bound unknown. */
void roof_point_eval(roof_point *p);

/* The time, in ns, the point's work takes at its attainable rate: FLOPs over
 * min(intensity x bandwidth, peak), or, without FLOPs, its DRAM bytes over the
 * DRAM roof; it is duration_ns x pct_of_attainable / 100. NaN where the point
 * has no attainable rate (no roofs, no bytes, communication timed only). */
double roof_point_time_ns(const roof_point *p);

#ifdef __cplusplus
}
#endif

#endif
