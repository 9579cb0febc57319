/* Which traces of a run are a GPU's (kernels.csv rows written by
 * counters/gpu_trace): the GPU sections of the report and their figures
 * (hierarchical roofline, time by layer type and phase, counters against the
 * cost model) are made for those alone, so that a CPU run's report and
 * figures stay as they are. */
#ifndef ROOFLINE_TRACE_GPU_H
#define ROOFLINE_TRACE_GPU_H

#include <stdbool.h>

#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether any row of t was counted by CUPTI (source "cupti"). */
bool trace_has_counters(const run_trace *t);

/* A GPU trace: a row counted by CUPTI, a row with L2 or L1 bytes (only the
 * GPU's counters measure those), or a configuration whose steps.csv rows
 * name the cuda backend (the trace fell back to analytic FLOPs and bytes). */
bool trace_is_gpu(const run_model *run, const run_trace *t);

/* Whether the run has at least one GPU trace. */
bool run_has_gpu_trace(const run_model *run);

/* The number of distinct `repeat` values among t's rows (at least 1): every
 * sum over a trace is divided by it, to be per traced step. */
int trace_repeats(const run_trace *t);

#ifdef __cplusplus
}
#endif

#endif
