/* The metric pass on CUPTI's Range Profiler and Profiler Host API
 * (cupti_metrics.cu, the one C++ file that includes cupti_profiler_host.h):
 * auto range (one range per kernel launch) with kernel replay (CUPTI reruns
 * each kernel once per pass, restoring the memory it touches), the counters
 * of gpu_metrics.h chosen for the running chip, and a driver-API callback that
 * records every launch's kernel name and the operation current at the launch.
 * Available where the library was built with CUPTI (HAVE_CUPTI).
 *
 * Every int function returns 0, a CUptiResult (> 0) from the failing CUPTI
 * call, or -1 for any other failure, with one line in err. */
#ifndef ROOFLINE_CUPTI_METRICS_H
#define ROOFLINE_CUPTI_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "../models/precision.h"
#include "gpu_kernels.h"
#include "gpu_metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cupti_metrics cupti_metrics;

/* Checks that the current device (`device`, the backend's) can be profiled,
 * builds the plan and the configuration and enables the range profiler on the
 * current context for up to max_ranges kernels. A refusal of the machine
 * (permissions, vGPU, MIG, another profiler...) returns the CUptiResult that
 * gpu_fallback.h turns into its one-line cause. */
int cupti_metrics_open(int device, precision prec, const gpu_metric_options *mo, int max_ranges,
                       cupti_metrics **out, gpu_metric_info *info, char *err, size_t err_len);

/* Profiles every kernel launched from here to the stop. */
int cupti_metrics_start(cupti_metrics *m, char *err, size_t err_len);

/* The operation whose launches follow (gpu_op_id; 0: none). */
void cupti_metrics_set_op(cupti_metrics *m, uint64_t op);

/* Stops, decodes and evaluates: the launches in call order and the counts of
 * every range into *out (which the caller frees with gpu_metric_pass_free). */
int cupti_metrics_stop(cupti_metrics *m, gpu_metric_pass *out, char *err, size_t err_len);

/* Disables the range profiler and frees everything; NULL is allowed. */
void cupti_metrics_close(cupti_metrics *m);

const gpu_metric_plan *cupti_metrics_plan(const cupti_metrics *m);

/* The plan and its replay passes for a chip by name ("GH100", "GA100", ...)
 * without a GPU: the profiler host works offline from the chip's tables. */
int cupti_metrics_plan_offline(const char *chip, precision prec, const gpu_metric_options *mo,
                               gpu_metric_plan *plan, int *passes, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
