/* A team of worker threads, one per CPU of this process's affinity mask,
 * pinned where sched_setaffinity allows, that meet at a barrier: the shape
 * every CPU microbenchmark here needs (all threads start a timed region
 * together, thread 0 reads the clock). */
#ifndef ROOFLINE_CPU_TEAM_H
#define ROOFLINE_CPU_TEAM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    int tid, threads;
    pthread_barrier_t *barrier;
    void *arg;
} cpu_team_member;

typedef void (*cpu_team_fn)(cpu_team_member *self);

/* Runs fn on `threads` threads and joins them. *pinned says whether every
 * thread got its own CPU. Returns 0, or -1 with the reason in err. */
int cpu_team_run(int threads, cpu_team_fn fn, void *arg, bool *pinned, char *err, size_t err_len);

/* CPUs this process may run on (its affinity mask), at least 1. */
int cpu_usable_count(void);

/* Physical cores under the CPUs a team of `threads` runs on (the first
 * `threads` CPUs of the affinity mask, as cpu_team_run pins them): SMT
 * siblings share a core and its FMA pipes. From sysfs topology; each CPU
 * counts as a core where that is missing. At least 1. */
int cpu_team_cores(int threads);

/* Monotonic seconds. */
double cpu_now(void);

/* Page-aligned (2 MiB where possible, so transparent huge pages can back it)
 * memory that is not touched here: the owner thread's first touch decides
 * where it lives. NULL when out of memory. */
void *cpu_alloc_big(size_t bytes);

#endif
