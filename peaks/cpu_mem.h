/* Memory bandwidth of the CPU: STREAM-style kernels over arrays far larger
 * than the last-level cache, and a read sweep over working sets from L1 to
 * DRAM whose plateaus are the bandwidth ceilings of each level. */
#ifndef ROOFLINE_CPU_MEM_H
#define ROOFLINE_CPU_MEM_H

#include <stdbool.h>
#include <stddef.h>

#include "cpu_info.h"

typedef enum { STREAM_COPY, STREAM_SCALE, STREAM_ADD, STREAM_TRIAD, STREAM_KERNELS } stream_kernel;

typedef struct {
    double gbs[STREAM_KERNELS]; /* best trial, STREAM's byte counting */
    double second[STREAM_KERNELS]; /* runner-up trial (NAN with one trial) */
    size_t array_bytes;         /* each of the three arrays */
    int threads, trials;
    bool pinned;
} stream_result;

/* "copy", "scale", "add", "triad". */
const char *stream_kernel_name(stream_kernel k);

/* Arrays a kernel touches, as STREAM counts them: 2 for copy and scale, 3 for
 * add and triad (the write-allocate read of the stored array is not counted). */
int stream_kernel_arrays(stream_kernel k);

/* Three arrays of `elems` doubles, first touched by the threads that use
 * them; one untimed pass, then `trials` timed ones. */
int cpu_stream_measure(size_t elems, int threads, int trials, stream_result *out, char *err,
                       size_t err_len);

enum { SWEEP_MAX_POINTS = 128 };

typedef struct {
    size_t bytes_per_thread[SWEEP_MAX_POINTS];
    double gbs[SWEEP_MAX_POINTS]; /* all threads together, best trial */
    double second[SWEEP_MAX_POINTS]; /* runner-up trial (NAN with one trial) */
    int n, threads;
    bool pinned;
} sweep_result;

/* Read bandwidth for per-thread working sets from min_bytes to max_bytes,
 * each `step` times the last; every trial reads at least `bytes_per_trial`
 * per thread. */
int cpu_sweep_measure(size_t min_bytes, size_t max_bytes, double step, size_t bytes_per_trial,
                      int threads, int trials, sweep_result *out, char *err, size_t err_len);

/* The plateau of one level: the best point whose per-thread working set lies
 * well inside the level (at most half of its share per thread, at least twice
 * the level above), or for level == caches->levels + 1 (DRAM) whose total is
 * at least 4x the last level. Returns the bandwidth, 0 when no point lies in
 * the range; lo/hi get the range used, in bytes per thread. */
double sweep_level_ceiling(const sweep_result *s, const cpu_caches *caches, int level,
                           size_t *lo, size_t *hi);

/* The point sweep_level_ceiling picked (its index in s), or -1. */
int sweep_level_point(const sweep_result *s, const cpu_caches *caches, int level);

#endif
