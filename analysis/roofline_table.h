/* The roofline points of a run: its traces (kernels.csv) grouped per
 * configuration into points per kernel, per layer type and per whole step
 * (analysis/README.md), against the run's roofs. */
#ifndef ROOFLINE_ROOFLINE_TABLE_H
#define ROOFLINE_ROOFLINE_TABLE_H

#include <stddef.h>

#include "roofs.h"
#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One roof_config per trace; within one, kernel rows with the same kernel,
 * layer and phase make one point. Strings are borrowed from the traces.
 * Returns 0, or -1 out of memory (err says so). */
int roofline_build(const run_trace *traces, int n_traces, const roofs *r, roofline *out,
                   char *err, size_t err_len);
void roofline_free(roofline *rl);

/* The configuration with this key, or NULL. */
const roof_config *roofline_find(const roofline *rl, const char *env, const char *model,
                                 int res, int batch, const char *precision);
/* The step row of a configuration (its last row), or NULL when it has none. */
const roof_row *roofline_step(const roof_config *c);

/* A configuration's kernels summed per layer type and phase: where the time
 * above the roofs is (roof_row's roof_ns and above_roof_ns, summed alike). */
typedef struct {
    const char *layer_type, *phase; /* borrowed from the kernel rows */
    double duration_ns;             /* all its kernels */
    double unroofed_ns;             /* its kernels without a roof (roof_ns NaN) */
    double roof_ns, above_roof_ns;  /* over the others; NaN where none has a roof */
} roof_phase_sum;

/* One roof_phase_sum per (layer type, phase) of c's kernel rows, the most
 * time above the roofs first (ties and NaN: in order of first appearance).
 * *out is malloc'd (free it); returns how many, or -1 out of memory. */
int roofline_by_phase(const roof_config *c, roof_phase_sum **out);

#ifdef __cplusplus
}
#endif

#endif
