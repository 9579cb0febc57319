/* variability.csv's rows: the spread of step times per configuration, over
 * the iterations of each repeat, over all iterations pooled and over the
 * repeats' medians (analysis/README.md). */
#ifndef ROOFLINE_VARIABILITY_H
#define ROOFLINE_VARIABILITY_H

#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per configuration with steps: "repeat=K" rows, then "iterations", then
 * "repeats". Returns 0, or -1 out of memory. */
int variability_build(const run_steps *steps, int n_steps, variability *out);
void variability_free(variability *v);

/* The row of scope of config's configuration (model, res, batch, precision,
 * graph), or NULL. */
const variability_row *variability_find(const variability *v, const variability_row *config,
                                        const char *scope);

#ifdef __cplusplus
}
#endif

#endif
