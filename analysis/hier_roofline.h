/* The hierarchical roofline of a GPU trace (analysis/README.md, "Roofs
 * used"): every kernel, grouped by (kernel, layer, phase) as in roofline.csv
 * and per traced step, at three arithmetic intensities (its FLOPs over its
 * HBM/DRAM, L2 and L1 bytes) with one achieved rate (its FLOPs over its
 * time), against the bandwidth roof of each level and the compute roof of the
 * kernel's precision and unit (tensor core or CUDA core); and the whole step,
 * every kernel summed per level. */
#ifndef ROOFLINE_HIER_ROOFLINE_H
#define ROOFLINE_HIER_ROOFLINE_H

#include <stdbool.h>
#include <stddef.h>

#include "roofs.h"
#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The memory levels, slowest first; HIER_COMPUTE names the compute roof
 * where a point's limit is not a level. */
typedef enum { HIER_HBM, HIER_L2, HIER_L1, HIER_LEVELS, HIER_COMPUTE = HIER_LEVELS } hier_level;

/* "L2", "L1", and for HIER_HBM `main_memory` (the run's: "HBM" or "DRAM");
 * "compute" for HIER_COMPUTE, "unknown" for anything else. */
const char *hier_level_name(int level, const char *main_memory);

typedef struct {
    double bytes;      /* per traced step; NaN: not measured */
    double ai;         /* FLOP/byte; NaN without bytes (or with 0 bytes) */
    double roof_gbs;   /* the level's bandwidth roof; NaN when peaks.csv has none */
    double attainable; /* min(ai x roof_gbs, peak) GFLOP/s; NaN when unknown */
} hier_level_point;

typedef struct {
    const char *kernel, *layer, *layer_type, *phase, *source; /* borrowed from the trace */
    double count;           /* launches per traced step */
    double duration_ns;     /* per traced step */
    double flops;           /* every precision and unit together, per traced step */
    double achieved_gflops; /* flops / duration_ns */
    double time_share;      /* of the summed kernel time of the step */
    char ceiling[ROOF_CEILING_LEN]; /* roof_kernel_ceiling; "" without FLOPs */
    bool tensor;            /* the ceiling is a tensor-core one (<p>_tensor) */
    double peak_gflops;     /* of the ceiling; NaN when peaks.csv lacks it */
    hier_level_point level[HIER_LEVELS];
    int limit;              /* the hier_level whose roof is lowest at the point's
                               intensity, HIER_COMPUTE when the compute roof is,
                               -1 when unknown */
    double attainable;      /* the lowest roof over the levels and the peak */
    double pct_of_attainable;
} hier_point;

typedef struct {
    const char *env, *model, *precision;
    int res, batch;
    int repeats;            /* distinct `repeat` values traced */
    hier_point *kernels;    /* in order of first appearance */
    int n;
    hier_point step;        /* every kernel summed; its ceiling the one most FLOPs ran under */
    double roof_gbs[HIER_LEVELS];
} hier_config;

/* Fills p's outputs from its flops, duration_ns, level[].bytes, ceiling and
 * the roofs: intensities, achieved rate, tensor, peak, the level roofs, the
 * attainable rate and the limit. A point without FLOPs but with bytes sits at
 * intensity 0: limited by its slowest measured level, attainable 0. */
void hier_point_eval(hier_point *p, const roofs *r);

/* The points of trace t against roofs r (strings borrowed from t). Returns 0,
 * or -1 out of memory. */
int hier_config_build(const run_trace *t, const roofs *r, hier_config *out);
void hier_config_free(hier_config *c);

/* Whether a point of this level has a place on log axes. */
bool hier_drawable(const hier_point *p, int level);

#ifdef __cplusplus
}
#endif

#endif
