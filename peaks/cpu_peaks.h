/* The CPU half of bin/peaks: runs every CPU microbenchmark and turns the
 * results into peaks.csv rows. */
#ifndef ROOFLINE_CPU_PEAKS_H
#define ROOFLINE_CPU_PEAKS_H

#include <stdbool.h>
#include <stddef.h>

#include "peak_table.h"

typedef struct {
    int threads; /* the "all cores" runs */
    bool quick;  /* shorter trials, fewer sweep points: the whole CPU part in seconds */
    bool verbose; /* progress and the sweep curve on stderr */
} cpu_peaks_options;

/* Appends the CPU rows to t. Returns 0, or -1 with the reason in err (rows
 * measured before the failure stay in t). */
int cpu_peaks_run(const cpu_peaks_options *o, peak_table *t, char *err, size_t err_len);

#endif
