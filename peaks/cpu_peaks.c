#include "cpu_peaks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_checks.h"
#include "cpu_flops.h"
#include "cpu_info.h"
#include "cpu_mem.h"
#include "cpu_team.h"
#include "peak_check.h"

typedef struct {
    double fma_seconds;
    int fma_trials, stream_trials, sweep_trials;
    double sweep_step;
    size_t sweep_bytes_per_trial;
    double check_budget_s; /* time the consistency checks may spend measuring again */
} cpu_budget;

static const cpu_budget quick_budget = {0.1, 3, 5, 3, 2.0, 64u << 20, 6.0};
static const cpu_budget full_budget = {1.0, 5, 20, 5, 1.41421356, 1u << 30, 60.0};

static const char *const prec_names[2] = {"fp32", "fp64"};

/* Everything the CPU part measured, the best trial of each kept. */
typedef struct {
    const cpu_peaks_options *o;
    const cpu_budget *b;
    cpu_caches caches;
    int cores;                  /* physical cores under the all-core team */
    int per_cycle[2];           /* flop/cycle/core by precision */
    char per_cycle_why[2][192];
    cpu_fma_result fma[2][2];   /* [precision][0: one core, 1: all] */
    int fma_trials[2][2];
    stream_result stream[2];    /* [0: all threads, 1: one thread] */
    int stream_trials[2];
    sweep_result sweep;
    size_t level_lo[CPU_CACHE_LEVELS + 2], level_hi[CPU_CACHE_LEVELS + 2]; /* per thread */
    int level_trials[CPU_CACHE_LEVELS + 2];
    check_set checks;
    cpu_check_index ix;
} cpu_state;

typedef struct {
    char device[PEAK_TEXT];
    peak_table *t;
    char *err;
    size_t err_len;
} row_sink;

static int add(row_sink *s, const char *ceiling, double value, const char *unit,
               const char *method, double spec, int threads, const char *notes)
{
    peak_row r = peak_row_make(s->device, ceiling, value, unit, method, spec, threads, notes);
    if (peak_table_add(s->t, &r) != 0) {
        snprintf(s->err, s->err_len, "out of memory for the peaks table");
        return -1;
    }
    return 0;
}

static int all_threads(const cpu_state *st)
{
    return st->o->threads;
}

static bool has_all_core_runs(const cpu_state *st)
{
    return st->o->threads > 1;
}

static void format_bytes(char *out, size_t len, size_t bytes)
{
    if (bytes >= (1u << 20))
        snprintf(out, len, "%.4g MiB", (double)bytes / 1048576.0);
    else
        snprintf(out, len, "%.4g KiB", (double)bytes / 1024.0);
}

/* ---- measuring (first time and again) ------------------------------------- */

static int measure_fma(cpu_state *st, int prec, int all, int round, double seconds_left,
                       char *err, size_t err_len)
{
    const cpu_budget *b = st->b;
    int trials = b->fma_trials + 2 * round;
    double seconds = b->fma_seconds * (1 + round);
    /* stay inside what the checks have left (calibration adds a little) */
    if (round > 0 && trials * seconds > seconds_left)
        seconds = seconds_left / trials > 0.02 ? seconds_left / trials : 0.02;
    int threads = all ? all_threads(st) : 1;
    if (st->o->verbose)
        fprintf(stderr, "peaks: cpu %s fma on %d thread(s)%s\n", prec_names[prec], threads,
                round > 0 ? " again (consistency check)" : "");
    cpu_fma_result r;
    if (cpu_fma_measure(prec == 0 ? CPU_FP32 : CPU_FP64, threads, seconds, trials, &r, err,
                        err_len) != 0)
        return -1;
    st->fma_trials[prec][all] += trials;
    if (round == 0 || r.gflops > st->fma[prec][all].gflops)
        st->fma[prec][all] = r;
    if (round > 0)
        check_offer(&st->checks, st->ix.fma[prec][all], r.gflops, r.second);
    return 0;
}

static size_t stream_elems(const cpu_state *st)
{
    return 4 * cpu_caches_llc(&st->caches) / sizeof(double);
}

static int measure_stream(cpu_state *st, int one, int round, char *err, size_t err_len)
{
    int threads = one ? 1 : all_threads(st);
    int trials = st->b->stream_trials * (1 + round);
    trials = trials > 63 ? 63 : trials;
    size_t elems = stream_elems(st);
    if (st->o->verbose)
        fprintf(stderr, "peaks: cpu stream on %d thread(s), arrays of %.0f MiB%s\n", threads,
                (double)elems * sizeof(double) / 1048576.0,
                round > 0 ? " again (consistency check)" : "");
    stream_result r;
    if (cpu_stream_measure(elems, threads, trials, &r, err, err_len) != 0)
        return -1;
    st->stream_trials[one] += trials;
    if (round == 0) {
        st->stream[one] = r;
        return 0;
    }
    for (int k = 0; k < STREAM_KERNELS; k++) {
        if (r.gbs[k] > st->stream[one].gbs[k])
            st->stream[one].gbs[k] = r.gbs[k];
        check_offer(&st->checks, st->ix.stream[one][k], r.gbs[k], r.second[k]);
    }
    return 0;
}

static size_t sweep_max_per_thread(const cpu_state *st)
{
    return 4 * cpu_caches_llc(&st->caches) / (size_t)all_threads(st);
}

static int measure_sweep(cpu_state *st, char *err, size_t err_len)
{
    size_t max_per_thread = sweep_max_per_thread(st);
    if (st->o->verbose)
        fprintf(stderr, "peaks: cpu read sweep 16 KiB..%.0f MiB per thread on %d thread(s)\n",
                (double)max_per_thread / 1048576.0, all_threads(st));
    return cpu_sweep_measure(16u << 10, max_per_thread, st->b->sweep_step,
                             st->b->sweep_bytes_per_trial, all_threads(st), st->b->sweep_trials,
                             &st->sweep, err, err_len);
}

/* One level's range of the sweep again, with more trials. */
static int measure_level(cpu_state *st, int level, int round, char *err, size_t err_len)
{
    size_t lo = st->level_lo[level], hi = st->level_hi[level];
    size_t max_per_thread = sweep_max_per_thread(st);
    lo = lo < (16u << 10) ? 16u << 10 : lo;
    hi = hi > max_per_thread ? max_per_thread : hi;
    if (hi < lo)
        hi = lo;
    int trials = st->b->sweep_trials + 2 * round;
    if (st->o->verbose) {
        char from[24], to[24];
        format_bytes(from, sizeof from, lo);
        format_bytes(to, sizeof to, hi);
        fprintf(stderr, "peaks: cpu read sweep %s..%s per thread again (consistency check)\n",
                from, to);
    }
    sweep_result *r = malloc(sizeof *r);
    if (!r) {
        snprintf(err, err_len, "out of memory for the sweep");
        return -1;
    }
    int rc = cpu_sweep_measure(lo, hi, st->b->sweep_step, st->b->sweep_bytes_per_trial,
                               all_threads(st), trials, r, err, err_len);
    if (rc == 0) {
        st->level_trials[level] += trials;
        /* the best point of the new range stands for the level */
        double best = 0.0, second = NAN;
        for (int p = 0; p < r->n; p++)
            if (r->gbs[p] > best) {
                best = r->gbs[p];
                second = r->second[p];
            }
        check_offer(&st->checks, st->ix.level[level], best, second);
    }
    free(r);
    return rc;
}

static int measure_again(void *ctx, int group, int round, double seconds_left, check_set *s,
                         char *err, size_t err_len)
{
    (void)s;
    cpu_state *st = ctx;
    if (group < CPU_G_STREAM_ALL)
        return measure_fma(st, (group - CPU_G_FMA) / 2, (group - CPU_G_FMA) % 2, round, seconds_left,
                           err, err_len);
    if (group == CPU_G_STREAM_ALL || group == CPU_G_STREAM_ONE)
        return measure_stream(st, group == CPU_G_STREAM_ONE, round, err, err_len);
    return measure_level(st, group - CPU_G_LEVEL + 1, round, err, err_len);
}

static double now(void *ctx)
{
    (void)ctx;
    return cpu_now();
}

/* ---- the checks ------------------------------------------------------------ */

static int level_count(const cpu_state *st)
{
    return st->caches.levels + 1; /* the caches, then DRAM */
}

static cpu_figure fig(double best, double second)
{
    return (cpu_figure){best, second};
}

/* What was measured, as the checks see it; each level's range is kept for
 * measuring it again. */
static void build_checks(cpu_state *st)
{
    cpu_figures f;
    memset(&f, 0, sizeof f);
    f.threads = all_threads(st);
    f.cores = st->cores;
    f.lanes_ratio = (double)st->per_cycle[0] / st->per_cycle[1];
    for (int p = 0; p < 2; p++)
        for (int all = 0; all < (has_all_core_runs(st) ? 2 : 1); all++)
            f.fma[p][all] = fig(st->fma[p][all].gflops, st->fma[p][all].second);
    for (int one = 0; one < (has_all_core_runs(st) ? 2 : 1); one++)
        for (int k = 0; k < STREAM_KERNELS; k++)
            f.stream[one][k] = fig(st->stream[one].gbs[k], st->stream[one].second[k]);
    f.levels = st->caches.levels;
    for (int level = 1; level <= level_count(st); level++) {
        size_t lo, hi;
        double gbs = sweep_level_ceiling(&st->sweep, &st->caches, level, &lo, &hi);
        int point = sweep_level_point(&st->sweep, &st->caches, level);
        st->level_lo[level] = lo;
        st->level_hi[level] = hi;
        f.level[level] = fig(gbs, point >= 0 ? st->sweep.second[point] : NAN);
    }
    cpu_checks_build(&f, &st->checks, &st->ix);
}

/* ---- rows ---------------------------------------------------------------- */

/* notes = what the measurement says, then what the checks say */
static void with_check(char *notes, size_t len, const check_set *c, int figure)
{
    if (figure < 0)
        return;
    char note[CHECK_WHY + 64];
    check_note(&c->fig[figure], note, sizeof note);
    size_t used = strlen(notes);
    if (note[0] && used + 2 < len)
        snprintf(notes + used, len - used, "; %s", note);
}

static double figure(const cpu_state *st, int idx, double fallback)
{
    return idx >= 0 ? st->checks.fig[idx].best : fallback;
}

static int fma_rows(row_sink *s, const cpu_state *st)
{
    for (int p = 0; p < 2; p++)
        for (int all = 0; all < (has_all_core_runs(st) ? 2 : 1); all++) {
            const cpu_fma_result *r = &st->fma[p][all];
            int threads = all ? all_threads(st) : 1;
            int idx = st->ix.fma[p][all];
            if (idx < 0)
                continue;
            char method[PEAK_TEXT], notes[PEAK_NOTES];
            snprintf(method, sizeof method,
                     "%s FMA chains; spec = %d flop/cycle x %d core(s) x measured GHz",
                     cpu_fma_isa(), st->per_cycle[p], all ? st->cores : 1);
            snprintf(notes, sizeof notes, "best of %d x %.2f+ s; clock %.3f GHz measured; %s; %s",
                     st->fma_trials[p][all], st->b->fma_seconds, r->clock_ghz,
                     r->pinned ? "pinned" : "not pinned", st->per_cycle_why[p]);
            with_check(notes, sizeof notes, &st->checks, idx);
            double spec = st->per_cycle[p] * (double)(all ? st->cores : 1) * r->clock_ghz;
            if (add(s, st->checks.fig[idx].name, figure(st, idx, r->gflops), "GFLOP/s", method,
                    spec, threads, notes) != 0)
                return -1;
        }
    return 0;
}

static int clock_rows(row_sink *s, const cpu_state *st)
{
    const char *method = "dependent integer add chain (1 add/cycle) between FMA trials";
    const cpu_fma_result *one = &st->fma[0][0];
    const cpu_fma_result *all = has_all_core_runs(st) ? &st->fma[0][1] : one;
    char notes[PEAK_NOTES];
    snprintf(notes, sizeof notes, "one core busy with fp32 FMAs (the best trial's run)");
    if (has_all_core_runs(st) &&
        add(s, "clock_ghz_1core", one->clock_ghz, "GHz", method, NAN, 1, notes) != 0)
        return -1;
    snprintf(notes, sizeof notes, "mean over %d threads busy with fp32 FMAs (the best trial's run)",
             all_threads(st));
    return add(s, "clock_ghz", all->clock_ghz, "GHz", method, NAN, all_threads(st), notes);
}

static int stream_rows(row_sink *s, const cpu_state *st)
{
    /* all threads first, then the 1-thread triad STREAM's single-thread runs quote */
    for (int one = 0; one < (has_all_core_runs(st) ? 2 : 1); one++)
        for (int k = 0; k < STREAM_KERNELS; k++) {
            int idx = st->ix.stream[one][k];
            if (idx < 0)
                continue;
            const stream_result *r = &st->stream[one];
            char notes[PEAK_NOTES];
            snprintf(notes, sizeof notes,
                     "STREAM byte counting: %d arrays x %.0f MiB per pass (4x LLC each); "
                     "write-allocate traffic not counted; best of %d; %s",
                     stream_kernel_arrays((stream_kernel)k), (double)r->array_bytes / 1048576.0,
                     st->stream_trials[one], r->pinned ? "pinned" : "not pinned");
            with_check(notes, sizeof notes, &st->checks, idx);
            if (add(s, st->checks.fig[idx].name, figure(st, idx, r->gbs[k]), "GB/s",
                    "STREAM-style kernel (fp64; own code)", NAN, one ? 1 : all_threads(st),
                    notes) != 0)
                return -1;
        }
    return 0;
}

static void print_sweep(const cpu_state *st)
{
    for (int p = 0; p < st->sweep.n; p++) {
        char size[32];
        format_bytes(size, sizeof size, st->sweep.bytes_per_thread[p]);
        fprintf(stderr, "  %12s/thread %9.1f GB/s\n", size, st->sweep.gbs[p]);
    }
}

static int sweep_rows(row_sink *s, const cpu_state *st)
{
    const cpu_caches *caches = &st->caches;
    size_t llc = cpu_caches_llc(caches);
    for (int level = 1; level <= level_count(st); level++) {
        bool dram = level > caches->levels;
        int idx = st->ix.level[level];
        if (idx < 0) {
            fprintf(stderr, "peaks: no sweep point inside %s's range; row left out\n",
                    dram ? "dram_read" : "a cache level");
            continue;
        }
        size_t lo = st->level_lo[level], hi = st->level_hi[level];
        char notes[PEAK_NOTES], from[24], to[24], size[24];
        format_bytes(from, sizeof from, lo);
        format_bytes(size, sizeof size, dram ? llc : caches->bytes[level]);
        int trials = st->b->sweep_trials + st->level_trials[level];
        if (dram) {
            snprintf(notes, sizeof notes,
                     "plateau of the read sweep from %s per thread (>= 4x LLC %s in total); "
                     "best of %d; %s",
                     from, size, trials, st->sweep.pinned ? "pinned" : "not pinned");
        } else {
            format_bytes(to, sizeof to, hi);
            char range[64];
            if (lo > 0)
                snprintf(range, sizeof range, "%s..%s", from, to);
            else
                snprintf(range, sizeof range, "up to %s", to);
            snprintf(notes, sizeof notes,
                     "plateau of the read sweep over %s per thread (L%d %s; shared by %d "
                     "CPU(s); %s); best of %d; %s",
                     range, level, size, caches->shared_by[level], caches->source, trials,
                     st->sweep.pinned ? "pinned" : "not pinned");
        }
        with_check(notes, sizeof notes, &st->checks, idx);
        if (add(s, st->checks.fig[idx].name, st->checks.fig[idx].best, "GB/s",
                "read sweep (vector sum): plateau of the level", NAN, all_threads(st),
                notes) != 0)
            return -1;
    }
    return 0;
}

int cpu_peaks_run(const cpu_peaks_options *o, peak_table *t, char *err, size_t err_len)
{
    cpu_state *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, err_len, "out of memory for the CPU peaks");
        return -1;
    }
    st->o = o;
    st->b = o->quick ? &quick_budget : &full_budget;
    cpu_caches_read(&st->caches);
    st->cores = cpu_team_cores(o->threads);
    for (int p = 0; p < 2; p++)
        st->per_cycle[p] = cpu_fma_flops_per_cycle(p == 0 ? CPU_FP32 : CPU_FP64,
                                                   st->per_cycle_why[p],
                                                   sizeof st->per_cycle_why[p]);
    int rc = -1;
    for (int p = 0; p < 2; p++)
        for (int all = 0; all < (has_all_core_runs(st) ? 2 : 1); all++)
            if (measure_fma(st, p, all, 0, 0.0, err, err_len) != 0)
                goto done;
    for (int one = 0; one < (has_all_core_runs(st) ? 2 : 1); one++)
        if (measure_stream(st, one, 0, err, err_len) != 0)
            goto done;
    if (measure_sweep(st, err, err_len) != 0)
        goto done;
    if (o->verbose)
        print_sweep(st);

    build_checks(st);
    check_plan plan = {measure_again, now, st, st->b->check_budget_s, 8};
    int suspects = check_run(&st->checks, &plan, err, err_len);
    if (suspects < 0)
        goto done;
    for (int i = 0; i < st->checks.n_fig; i++)
        if (st->checks.fig[i].suspect)
            fprintf(stderr, "peaks: %s is suspect: %s\n", st->checks.fig[i].name,
                    st->checks.fig[i].why);

    row_sink s = {.t = t, .err = err, .err_len = err_len};
    cpu_model_name(s.device, sizeof s.device);
    if (fma_rows(&s, st) != 0 || clock_rows(&s, st) != 0 || stream_rows(&s, st) != 0 ||
        sweep_rows(&s, st) != 0)
        goto done;
    rc = 0;
done:
    free(st);
    return rc;
}
