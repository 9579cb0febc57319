/* The computations of the analysis stage over a loaded run: its roofline,
 * summary and variability from its inputs (bin/analyze; the rules of
 * analysis/README.md). */
#ifndef ROOFLINE_ANALYZE_H
#define ROOFLINE_ANALYZE_H

#include <stddef.h>

#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills m->roofline (when the run has kernels and peaks), m->summary and
 * m->variability from m's steps, attempts, traces and roofs, replacing what
 * was there. Returns 0, or -1 out of memory (err says so). */
int run_analyze(run_model *m, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
