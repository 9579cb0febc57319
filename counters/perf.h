/* Floating-point operations retired by this process's threads, from the
 * CPU's performance counters through perf_event_open(2): Intel's
 * FP_ARITH_INST_RETIRED (one event per vector width and precision, weighted
 * by lanes; an FMA counts twice) or AMD's PMCx003 retired SSE/AVX FLOPs (FMA
 * counted as two, no split by precision). Virtual machines usually expose no
 * PMU: opening then fails with the reason, and callers fall back to the
 * analytic cost model. */
#ifndef ROOFLINE_PERF_H
#define ROOFLINE_PERF_H

#include <stddef.h>
#include <stdint.h>

typedef struct perf_fp perf_fp;

typedef struct {
    int64_t fp64, fp32;  /* Intel: by precision */
    int64_t unsplit;     /* AMD: every FLOP, whatever its precision */
} perf_fp_counts;

/* Opens the counters for every thread the process has now (start the thread
 * pool first: threads created later are not counted). NULL with one line of
 * reason in `why` when the PMU, the CPU or the kernel's paranoia level does
 * not allow it. */
perf_fp *perf_fp_open(char *why, size_t why_len);

/* Counts since perf_fp_open, summed over the threads and scaled where the
 * kernel had to multiplex the counters. Returns 0, or -1 with why. */
int perf_fp_read(perf_fp *p, perf_fp_counts *out, char *why, size_t why_len);

/* Which events are counted, for the log (e.g. "Intel FP_ARITH_INST_RETIRED"). */
const char *perf_fp_events(const perf_fp *p);

void perf_fp_close(perf_fp *p);

#endif
