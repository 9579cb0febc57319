#include "cpu_team.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../models/clock.h"

/* Workers wait at this gate until all of them exist: if one cannot be
 * created, the others leave without entering a barrier that would never fill. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t opened;
    int state; /* 0 closed, 1 run, -1 go home */
} start_gate;

typedef struct {
    cpu_team_member member;
    cpu_team_fn fn;
    start_gate *gate;
    int cpu;           /* -1: leave the thread where the scheduler puts it */
    bool pinned;
} worker;

static void *worker_main(void *p)
{
    worker *w = p;
    if (w->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(w->cpu, &set);
        w->pinned = pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
    }
    pthread_mutex_lock(&w->gate->lock);
    while (w->gate->state == 0)
        pthread_cond_wait(&w->gate->opened, &w->gate->lock);
    int state = w->gate->state;
    pthread_mutex_unlock(&w->gate->lock);
    if (state > 0)
        w->fn(&w->member);
    return NULL;
}

static void gate_open(start_gate *g, int state)
{
    pthread_mutex_lock(&g->lock);
    g->state = state;
    pthread_cond_broadcast(&g->opened);
    pthread_mutex_unlock(&g->lock);
}

int cpu_usable_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    int n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
}

int cpu_team_run(int threads, cpu_team_fn fn, void *arg, bool *pinned, char *err, size_t err_len)
{
    cpu_set_t set;
    int cpus[CPU_SETSIZE], n_cpus = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                cpus[n_cpus++] = c;

    worker *workers = calloc((size_t)threads, sizeof *workers);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    pthread_barrier_t barrier;
    if (!workers || !ids) {
        free(workers);
        free(ids);
        snprintf(err, err_len, "out of memory for %d threads", threads);
        return -1;
    }
    int rc = pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    if (rc != 0) {
        free(workers);
        free(ids);
        snprintf(err, err_len, "pthread_barrier_init: %s", strerror(rc));
        return -1;
    }
    /* Two threads on one CPU would halve each other's numbers: pin only when
     * every thread gets a CPU of its own. */
    bool can_pin = n_cpus >= threads;
    start_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    int started = 0;
    for (; started < threads; started++) {
        worker *w = &workers[started];
        w->member = (cpu_team_member){started, threads, &barrier, arg};
        w->fn = fn;
        w->gate = &gate;
        w->cpu = can_pin ? cpus[started] : -1;
        rc = pthread_create(&ids[started], NULL, worker_main, w);
        if (rc != 0)
            break;
    }
    gate_open(&gate, started == threads ? 1 : -1);
    bool all_pinned = can_pin;
    for (int i = 0; i < started; i++) {
        pthread_join(ids[i], NULL);
        all_pinned = all_pinned && workers[i].pinned;
    }
    pthread_barrier_destroy(&barrier);
    free(workers);
    free(ids);
    if (started < threads) {
        snprintf(err, err_len, "cannot start thread %d of %d: %s", started + 1, threads,
                 strerror(rc));
        return -1;
    }
    if (pinned)
        *pinned = all_pinned;
    return 0;
}

/* (package, core) of a CPU from sysfs; the CPU number itself where unknown. */
static long core_key(int cpu)
{
    char path[128], line[32];
    long package = 0, core = -1;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fgets(line, sizeof line, f))
            package = strtol(line, NULL, 10);
        fclose(f);
    }
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
    f = fopen(path, "r");
    if (f) {
        if (fgets(line, sizeof line, f))
            core = strtol(line, NULL, 10);
        fclose(f);
    }
    return core < 0 ? -1 - cpu : package * 1000000L + core;
}

int cpu_team_cores(int threads)
{
    cpu_set_t set;
    if (threads < 1 || sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    long keys[CPU_SETSIZE];
    int n = 0, cores = 0;
    for (int c = 0; c < CPU_SETSIZE && n < threads; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        long key = core_key(c);
        bool seen = false;
        for (int i = 0; i < n && !seen; i++)
            seen = keys[i] == key;
        keys[n++] = key;
        cores += !seen;
    }
    return cores > 0 ? cores : 1;
}

double cpu_now(void)
{
    return monotonic_seconds();
}

void *cpu_alloc_big(size_t bytes)
{
    const size_t huge = 2u << 20;
    size_t rounded = (bytes + huge - 1) / huge * huge;
    void *p = NULL;
    if (posix_memalign(&p, huge, rounded ? rounded : huge) != 0)
        return NULL;
    /* fewer TLB misses in the DRAM-sized sweeps; harmless where THP is off */
    madvise(p, rounded, MADV_HUGEPAGE);
    return p;
}
