#include "cpu_mem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu_team.h"
#include "peak_check.h"

/* GCC turns a copy loop into a call to memcpy, whose large-size path uses
 * non-temporal stores: that would no longer be STREAM's copy. */
#if defined(__GNUC__) && !defined(__clang__)
#define PLAIN_LOOPS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define PLAIN_LOOPS
#endif

static const char *const kernel_names[STREAM_KERNELS] = {"copy", "scale", "add", "triad"};

const char *stream_kernel_name(stream_kernel k)
{
    return k < STREAM_KERNELS ? kernel_names[k] : "?";
}

int stream_kernel_arrays(stream_kernel k)
{
    return k == STREAM_COPY || k == STREAM_SCALE ? 2 : 3;
}

PLAIN_LOOPS static void run_kernel(stream_kernel k, double *restrict a, double *restrict b,
                                   double *restrict c, size_t n, double s)
{
    switch (k) {
    case STREAM_COPY:
        for (size_t i = 0; i < n; i++)
            c[i] = a[i];
        break;
    case STREAM_SCALE:
        for (size_t i = 0; i < n; i++)
            b[i] = s * c[i];
        break;
    case STREAM_ADD:
        for (size_t i = 0; i < n; i++)
            c[i] = a[i] + b[i];
        break;
    case STREAM_TRIAD:
        for (size_t i = 0; i < n; i++)
            a[i] = b[i] + s * c[i];
        break;
    default:
        break;
    }
}

typedef struct {
    double *a, *b, *c;
    size_t elems;
    int trials;
    double seconds[64][STREAM_KERNELS]; /* written by thread 0; trial 0 untimed */
} stream_job;

/* Whole cache lines per thread, so no line is written by two threads. */
static void thread_range(size_t n, int tid, int threads, size_t *begin, size_t *end)
{
    size_t lines = n / 8, per = lines / (size_t)threads, extra = lines % (size_t)threads;
    size_t t = (size_t)tid;
    *begin = 8 * (t * per + (t < extra ? t : extra));
    *end = *begin + 8 * (per + (t < extra ? 1 : 0));
    if (tid == threads - 1)
        *end = n;
}

static void stream_worker(cpu_team_member *self)
{
    stream_job *job = self->arg;
    size_t lo, hi;
    thread_range(job->elems, self->tid, self->threads, &lo, &hi);
    /* first touch by the thread that will use the pages puts them in its
     * NUMA node */
    for (size_t i = lo; i < hi; i++) {
        job->a[i] = 1.0;
        job->b[i] = 2.0;
        job->c[i] = 0.0;
    }
    const double scalar = 3.0;
    for (int t = 0; t <= job->trials; t++)
        for (int k = 0; k < STREAM_KERNELS; k++) {
            pthread_barrier_wait(self->barrier);
            double t0 = cpu_now();
            run_kernel((stream_kernel)k, job->a + lo, job->b + lo, job->c + lo, hi - lo, scalar);
            pthread_barrier_wait(self->barrier);
            if (self->tid == 0)
                job->seconds[t][k] = cpu_now() - t0;
        }
}

int cpu_stream_measure(size_t elems, int threads, int trials, stream_result *out, char *err,
                       size_t err_len)
{
    if (trials < 1 || trials > 63 || elems < 8 * (size_t)threads) {
        snprintf(err, err_len, "stream: %zu elements on %d threads, %d trials is out of range",
                 elems, threads, trials);
        return -1;
    }
    size_t bytes = elems * sizeof(double);
    stream_job *job = calloc(1, sizeof *job);
    double *a = cpu_alloc_big(bytes), *b = cpu_alloc_big(bytes), *c = cpu_alloc_big(bytes);
    int rc = -1;
    if (!job || !a || !b || !c) {
        snprintf(err, err_len, "stream: cannot allocate 3 arrays of %.1f MiB",
                 (double)bytes / 1048576.0);
        goto done;
    }
    *job = (stream_job){.a = a, .b = b, .c = c, .elems = elems, .trials = trials};
    bool pinned = false;
    if (cpu_team_run(threads, stream_worker, job, &pinned, err, err_len) != 0)
        goto done;
    *out = (stream_result){.array_bytes = bytes, .threads = threads, .trials = trials,
                           .pinned = pinned};
    for (int k = 0; k < STREAM_KERNELS; k++) {
        double moved = (double)stream_kernel_arrays((stream_kernel)k) * (double)bytes;
        double best = NAN, second = NAN;
        for (int t = 1; t <= trials; t++)
            if (job->seconds[t][k] > 0)
                check_top2(moved / job->seconds[t][k] * 1e-9, &best, &second);
        out->gbs[k] = best > 0 ? best : 0.0;
        out->second[k] = second;
    }
    rc = 0;
done:
    free(a);
    free(b);
    free(c);
    free(job);
    return rc;
}

/* ---- working-set sweep ---------------------------------------------------- */

#if defined(__AVX512F__)
#define SWEEP_VEC 64
#elif defined(__AVX__)
#define SWEEP_VEC 32
#else
#define SWEEP_VEC 16
#endif
/* GCC's vector extension: element-wise adds need no reassociation, so the
 * eight accumulators are vectorised without -ffast-math. */
typedef double vdouble __attribute__((vector_size(SWEEP_VEC)));
enum { SWEEP_ACCS = 8, SWEEP_BLOCK = SWEEP_ACCS * SWEEP_VEC };

/* `passes` reads of the buffer with the accumulators kept in registers
 * throughout, so a 16 KiB working set pays no per-pass reduction. */
static double read_passes(const vdouble *p, size_t blocks, size_t passes)
{
    vdouble acc[SWEEP_ACCS] = {0};
    for (size_t r = 0; r < passes; r++) {
        /* p becomes an unknown address each pass: without this the compiler
         * reads the buffer once and adds the same sums `passes` times */
        __asm__ volatile("" : "+r"(p));
        for (size_t i = 0; i < blocks; i++)
            for (int k = 0; k < SWEEP_ACCS; k++)
                acc[k] += p[i * SWEEP_ACCS + k];
    }
    vdouble sum = acc[0];
    for (int k = 1; k < SWEEP_ACCS; k++)
        sum += acc[k];
    double s = 0.0;
    for (size_t j = 0; j < SWEEP_VEC / sizeof(double); j++)
        s += sum[j];
    return s;
}

typedef struct {
    sweep_result *res;
    size_t bytes_per_trial;
    int trials;
    double seconds[SWEEP_MAX_POINTS]; /* best per point, thread 0 */
    double runner_up[SWEEP_MAX_POINTS]; /* second best per point, thread 0 */
    double sink[1024];
    int failed; /* threads that could not allocate */
} sweep_job;

static void sweep_worker(cpu_team_member *self)
{
    sweep_job *job = self->arg;
    const sweep_result *res = job->res;
    size_t max_bytes = res->bytes_per_thread[res->n - 1];
    vdouble *buf = cpu_alloc_big(max_bytes);
    if (buf) {
        double *d = (double *)buf;
        for (size_t i = 0; i < max_bytes / sizeof(double); i++)
            d[i] = 1.0 / (double)(i + 1);
    } else {
        __atomic_add_fetch(&job->failed, 1, __ATOMIC_RELAXED);
    }
    pthread_barrier_wait(self->barrier);
    /* every thread sees the same count, so all take the same path through the
     * barriers below */
    int failed = __atomic_load_n(&job->failed, __ATOMIC_RELAXED);
    double sink = 0.0;
    for (int p = 0; p < res->n && !failed; p++) {
        size_t blocks = res->bytes_per_thread[p] / SWEEP_BLOCK;
        size_t passes = job->bytes_per_trial / res->bytes_per_thread[p];
        passes = passes ? passes : 1;
        double best = 1e300, next = 1e300;
        /* one untimed pass brings the working set into its level */
        sink += read_passes(buf, blocks, 1);
        for (int t = 0; t < job->trials; t++) {
            pthread_barrier_wait(self->barrier);
            double t0 = cpu_now();
            sink += read_passes(buf, blocks, passes);
            pthread_barrier_wait(self->barrier);
            double dt = cpu_now() - t0;
            if (dt < best) {
                next = best;
                best = dt;
            } else if (dt < next) {
                next = dt;
            }
        }
        if (self->tid == 0) {
            job->seconds[p] = best / (double)passes;
            job->runner_up[p] = next < 1e300 ? next / (double)passes : NAN;
        }
    }
    job->sink[self->tid] = sink;
    free(buf);
}

int cpu_sweep_measure(size_t min_bytes, size_t max_bytes, double step, size_t bytes_per_trial,
                      int threads, int trials, sweep_result *out, char *err, size_t err_len)
{
    if (step <= 1.0 || min_bytes < SWEEP_BLOCK || max_bytes < min_bytes || threads > 1024 ||
        trials < 1) {
        snprintf(err, err_len, "sweep: bad range %zu..%zu step %.2f", min_bytes, max_bytes, step);
        return -1;
    }
    sweep_job *job = calloc(1, sizeof *job);
    if (!job) {
        snprintf(err, err_len, "sweep: out of memory");
        return -1;
    }
    *out = (sweep_result){.threads = threads};
    size_t last = max_bytes / SWEEP_BLOCK * SWEEP_BLOCK;
    for (double b = (double)min_bytes; out->n < SWEEP_MAX_POINTS; b *= step) {
        /* nearest whole block, so that min x step^k lands on the power of two
         * it approximates rather than one block below it */
        size_t bytes = (size_t)(b / SWEEP_BLOCK + 0.5) * SWEEP_BLOCK;
        bytes = bytes > last ? last : bytes;
        if (out->n == 0 || bytes > out->bytes_per_thread[out->n - 1])
            out->bytes_per_thread[out->n++] = bytes;
        if (bytes == last)
            break;
    }
    job->res = out;
    job->bytes_per_trial = bytes_per_trial;
    job->trials = trials;
    int rc = cpu_team_run(threads, sweep_worker, job, &out->pinned, err, err_len);
    if (rc == 0 && job->failed) {
        snprintf(err, err_len, "sweep: cannot allocate %.1f MiB per thread",
                 (double)out->bytes_per_thread[out->n - 1] / 1048576.0);
        rc = -1;
    }
    for (int p = 0; rc == 0 && p < out->n; p++) {
        double bytes = (double)out->bytes_per_thread[p] * threads;
        out->gbs[p] = job->seconds[p] > 0 ? bytes / job->seconds[p] * 1e-9 : 0.0;
        out->second[p] = job->runner_up[p] > 0 ? bytes / job->runner_up[p] * 1e-9 : NAN;
    }
    free(job);
    return rc;
}

double sweep_level_ceiling(const sweep_result *s, const cpu_caches *caches, int level,
                           size_t *lo, size_t *hi)
{
    size_t threads = (size_t)s->threads;
    /* a shared level gives each of our threads a share of it */
    size_t share[CPU_CACHE_LEVELS + 2] = {0};
    for (int l = 1; l <= caches->levels; l++) {
        size_t sharers = (size_t)(caches->shared_by[l] > 1 ? caches->shared_by[l] : 1);
        sharers = sharers < threads ? sharers : threads;
        share[l] = caches->bytes[l] / sharers;
    }
    if (level <= caches->levels) {
        *lo = level > 1 ? 2 * share[level - 1] : 0;
        *hi = share[level] / 2;
    } else {
        size_t llc = cpu_caches_llc(caches);
        *lo = 4 * llc / threads / SWEEP_BLOCK * SWEEP_BLOCK;
        *hi = (size_t)-1;
    }
    double best = 0.0;
    for (int p = 0; p < s->n; p++)
        if (s->bytes_per_thread[p] >= *lo && s->bytes_per_thread[p] <= *hi && s->gbs[p] > best)
            best = s->gbs[p];
    return best;
}

int sweep_level_point(const sweep_result *s, const cpu_caches *caches, int level)
{
    size_t lo, hi;
    double best = sweep_level_ceiling(s, caches, level, &lo, &hi);
    for (int p = 0; best > 0 && p < s->n; p++)
        if (s->bytes_per_thread[p] >= lo && s->bytes_per_thread[p] <= hi && s->gbs[p] == best)
            return p;
    return -1;
}
