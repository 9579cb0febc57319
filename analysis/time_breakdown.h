/* Where a traced step's kernel time goes, by layer type and by phase (fwd,
 * bwd_data, bwd_weights, update, loss, comm, then any other phase met), per
 * traced step: the report's "profile breakdown" of a GPU trace. Shares are of
 * the summed kernel time, which on a GPU is its busy time: idle gaps between
 * kernels belong to no kernel. */
#ifndef ROOFLINE_TIME_BREAKDOWN_H
#define ROOFLINE_TIME_BREAKDOWN_H

#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Types or phases beyond this many are summed into the last one, "other". */
enum { BREAKDOWN_MAX = 16 };

typedef struct {
    const char *env, *model, *precision;
    int res, batch;
    const char *types[BREAKDOWN_MAX];  /* costliest first (ties: first met) */
    int n_types;
    const char *phases[BREAKDOWN_MAX]; /* the order above, only those with kernels */
    int n_phases;
    double ns[BREAKDOWN_MAX][BREAKDOWN_MAX]; /* [type][phase], per traced step */
    double type_ns[BREAKDOWN_MAX], phase_ns[BREAKDOWN_MAX];
    double total_ns;                   /* every kernel of the step */
    double kernels;                    /* kernel launches per traced step */
} time_breakdown;

/* The breakdown of trace t (strings borrowed from it). Rows without a
 * duration count as launches only. */
void time_breakdown_of(const run_trace *t, time_breakdown *out);

/* The share of the step's kernel time in (type, phase); -1 for either sums
 * over it (time_breakdown_share(b, -1, -1) is 1 when any time was traced).
 * NaN when no time was. */
double time_breakdown_share(const time_breakdown *b, int type, int phase);

#ifdef __cplusplus
}
#endif

#endif
