/* Run to run across run folders of one environment (make compare of several
 * runs of one ENV): the configurations two or more of them measured, each
 * run's median step and its own range, and whether they differ beyond it.
 * Read by the comparison's report section (report_run_to_run.c) and figure
 * (plot_run_to_run.c). */
#ifndef ROOFLINE_RUN_TO_RUN_H
#define ROOFLINE_RUN_TO_RUN_H

#include <stdbool.h>

#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { RUN_TO_RUN_MAX_RUNS = 14 };

/* One configuration (one rank, eager or graph) that several runs whose
 * environments share a name measured. Step times in ms. */
typedef struct {
    const variability_row *key;          /* the first run's pooled row: env, model, ... */
    int runs[RUN_TO_RUN_MAX_RUNS];       /* indexes into the runs given */
    double median[RUN_TO_RUN_MAX_RUNS];  /* of all its timed steps */
    /* its own range: the 95% interval of that median (under 6 steps, median
     * +- 2 stddev / sqrt(n)), widened to the medians of its repeats
     * (process-to-process noise) */
    double lo[RUN_TO_RUN_MAX_RUNS], hi[RUN_TO_RUN_MAX_RUNS];
    int n;
    int fastest, slowest; /* indexes into runs[]; of runs alike, different ones */
} run_to_run;

/* The configurations measured in two or more of the n runs (at most
 * RUN_TO_RUN_MAX_RUNS) whose variability.csv name the same environment, in
 * order first met; *out is NULL when there are none. -1 out of memory. */
int run_to_run_build(const run_model *runs, int n, run_to_run **out, int *n_out);

/* Whether the runs' own ranges share a point: their medians differ by no
 * more than each run's own noise. */
bool run_to_run_within_noise(const run_to_run *c);
/* The slowest run's median over the fastest's, minus 1. */
double run_to_run_spread(const run_to_run *c);

#ifdef __cplusplus
}
#endif

#endif
