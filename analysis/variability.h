/* variability.csv: the spread of step times per configuration, over the
 * iterations of each repeat, over all iterations pooled and over the repeats'
 * medians (analysis/README.md). */
#ifndef ROOFLINE_VARIABILITY_H
#define ROOFLINE_VARIABILITY_H

#include <stddef.h>

#include "steps.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VARIABILITY_CSV_HEADER                                                               \
    "env,model,res,batch,precision,scope,n,mean,median,stddev,cv,min,max,ci95_lo,ci95_hi,"   \
    "drift_pct,outliers"

/* Writes variability.csv atomically; steps = NULL writes the header alone.
 * Returns 0, or -1 with the reason in err. */
int variability_write(const step_table *steps, const char *path, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
