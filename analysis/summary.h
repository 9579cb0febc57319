/* summary.csv's rows (analysis/README.md): one per configuration, from the
 * run's steps (throughput), attempts (the runner's status), the cost model
 * (analytic FLOPs), the roofs (compute peak) and the roofline (memory-bound
 * time share). */
#ifndef ROOFLINE_SUMMARY_H
#define ROOFLINE_SUMMARY_H

#include <stddef.h>

#include "roofs.h"
#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every configuration of m->steps, then each attempted configuration of
 * m->attempts that has no step rows, with its status and empty numbers.
 * rl and r may be NULL. Returns 0, or -1 out of memory (err says so). */
int summary_build(const run_model *m, const roofline *rl, const roofs *r, summary *out,
                  char *err, size_t err_len);
void summary_free(summary *s);

/* Analytic FLOPs of one training step from the cost model (GFLOP), or NaN for
 * a model, resolution or precision it cannot build. */
double summary_analytic_gflop(const char *model, int res, int batch, const char *prec_name);

#ifdef __cplusplus
}
#endif

#endif
