#include "cpu_peaks.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cpu_flops.h"
#include "cpu_info.h"
#include "cpu_mem.h"
#include "cpu_team.h"

typedef struct {
    double fma_seconds;
    int fma_trials, stream_trials, sweep_trials;
    double sweep_step;
    size_t sweep_bytes_per_trial;
} cpu_budget;

static const cpu_budget quick_budget = {0.1, 3, 5, 3, 2.0, 64u << 20};
static const cpu_budget full_budget = {1.0, 5, 20, 5, 1.41421356, 1u << 30};

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

static int fma_rows(row_sink *s, const cpu_peaks_options *o, const cpu_budget *b,
                    cpu_fma_result *clock_1, cpu_fma_result *clock_all)
{
    static const struct {
        cpu_precision prec;
        const char *name;
    } precs[] = {{CPU_FP32, "fp32"}, {CPU_FP64, "fp64"}};
    for (size_t i = 0; i < sizeof precs / sizeof precs[0]; i++) {
        char why[192];
        int per_cycle = cpu_fma_flops_per_cycle(precs[i].prec, why, sizeof why);
        int counts[2] = {1, o->threads};
        for (int c = 0; c < (o->threads > 1 ? 2 : 1); c++) {
            int threads = counts[c];
            if (o->verbose)
                fprintf(stderr, "peaks: cpu %s fma on %d thread(s)\n", precs[i].name, threads);
            cpu_fma_result r;
            if (cpu_fma_measure(precs[i].prec, threads, b->fma_seconds, b->fma_trials, &r,
                                s->err, s->err_len) != 0)
                return -1;
            if (precs[i].prec == CPU_FP32) {
                if (threads == 1)
                    *clock_1 = r;
                if (threads == o->threads)
                    *clock_all = r;
            }
            char ceiling[32], method[PEAK_TEXT], notes[PEAK_NOTES];
            snprintf(ceiling, sizeof ceiling, "%s_fma%s", precs[i].name,
                     c == 0 && o->threads > 1 ? "_1core" : "");
            snprintf(method, sizeof method,
                     "%s FMA chains; spec = %d flop/cycle x %d core(s) x measured GHz",
                     cpu_fma_isa(), per_cycle, threads);
            snprintf(notes, sizeof notes, "best of %d x %.2f s; clock %.3f GHz measured; %s; %s",
                     b->fma_trials, b->fma_seconds, r.clock_ghz,
                     r.pinned ? "pinned" : "not pinned", why);
            double spec = per_cycle * (double)threads * r.clock_ghz;
            if (add(s, ceiling, r.gflops, "GFLOP/s", method, spec, threads, notes) != 0)
                return -1;
            /* a single-thread machine has no separate 1-core row: the one row is both */
            if (o->threads == 1 && c == 0)
                *clock_all = r;
        }
    }
    return 0;
}

static int clock_rows(row_sink *s, const cpu_peaks_options *o, const cpu_fma_result *one,
                      const cpu_fma_result *all)
{
    char notes[PEAK_NOTES];
    const char *method = "dependent integer add chain (1 add/cycle) between FMA trials";
    snprintf(notes, sizeof notes, "one core busy with fp32 FMAs");
    if (o->threads > 1 &&
        add(s, "clock_ghz_1core", one->clock_ghz, "GHz", method, NAN, 1, notes) != 0)
        return -1;
    snprintf(notes, sizeof notes, "mean over %d cores busy with fp32 FMAs", o->threads);
    return add(s, "clock_ghz", all->clock_ghz, "GHz", method, NAN, o->threads, notes);
}

static int stream_rows(row_sink *s, const cpu_peaks_options *o, const cpu_budget *b,
                       const cpu_caches *caches)
{
    size_t llc = cpu_caches_llc(caches);
    size_t elems = 4 * llc / sizeof(double);
    int counts[2] = {o->threads, 1};
    for (int c = 0; c < (o->threads > 1 ? 2 : 1); c++) {
        int threads = counts[c];
        if (o->verbose)
            fprintf(stderr, "peaks: cpu stream on %d thread(s), arrays of %.0f MiB\n", threads,
                    (double)elems * sizeof(double) / 1048576.0);
        stream_result r;
        if (cpu_stream_measure(elems, threads, b->stream_trials, &r, s->err, s->err_len) != 0)
            return -1;
        for (int k = 0; k < STREAM_KERNELS; k++) {
            /* one thread: triad only, the figure STREAM's single-thread runs quote */
            if (c == 1 && k != STREAM_TRIAD)
                continue;
            char ceiling[32], notes[PEAK_NOTES];
            snprintf(ceiling, sizeof ceiling, "dram_%s%s", stream_kernel_name((stream_kernel)k),
                     c == 1 ? "_1core" : "");
            snprintf(notes, sizeof notes,
                     "STREAM byte counting: %d arrays x %.0f MiB per pass (4x LLC each); "
                     "write-allocate traffic not counted; best of %d; %s",
                     stream_kernel_arrays((stream_kernel)k), (double)r.array_bytes / 1048576.0,
                     r.trials, r.pinned ? "pinned" : "not pinned");
            if (add(s, ceiling, r.gbs[k], "GB/s", "STREAM-style kernel (fp64; own code)", NAN,
                    threads, notes) != 0)
                return -1;
        }
    }
    return 0;
}

static void format_bytes(char *out, size_t len, size_t bytes)
{
    if (bytes >= (1u << 20))
        snprintf(out, len, "%.4g MiB", (double)bytes / 1048576.0);
    else
        snprintf(out, len, "%.4g KiB", (double)bytes / 1024.0);
}

static int sweep_rows(row_sink *s, const cpu_peaks_options *o, const cpu_budget *b,
                      const cpu_caches *caches)
{
    size_t llc = cpu_caches_llc(caches);
    size_t max_per_thread = 4 * llc / (size_t)o->threads;
    if (o->verbose)
        fprintf(stderr, "peaks: cpu read sweep 16 KiB..%.0f MiB per thread on %d thread(s)\n",
                (double)max_per_thread / 1048576.0, o->threads);
    sweep_result r;
    if (cpu_sweep_measure(16u << 10, max_per_thread, b->sweep_step, b->sweep_bytes_per_trial,
                          o->threads, b->sweep_trials, &r, s->err, s->err_len) != 0)
        return -1;
    if (o->verbose) {
        for (int p = 0; p < r.n; p++) {
            char size[32];
            format_bytes(size, sizeof size, r.bytes_per_thread[p]);
            fprintf(stderr, "  %12s/thread %9.1f GB/s\n", size, r.gbs[p]);
        }
    }
    for (int level = 1; level <= caches->levels + 1; level++) {
        size_t lo, hi;
        double gbs = sweep_level_ceiling(&r, caches, level, &lo, &hi);
        char ceiling[32], notes[PEAK_NOTES], from[24], to[24], size[24];
        bool dram = level > caches->levels;
        if (dram)
            snprintf(ceiling, sizeof ceiling, "dram_read");
        else
            snprintf(ceiling, sizeof ceiling, "l%d", level);
        if (gbs <= 0) {
            fprintf(stderr, "peaks: no sweep point inside %s's range; row left out\n", ceiling);
            continue;
        }
        format_bytes(from, sizeof from, lo);
        format_bytes(size, sizeof size, dram ? llc : caches->bytes[level]);
        if (dram)
            snprintf(notes, sizeof notes,
                     "plateau of the read sweep from %s per thread (>= 4x LLC %s in total); "
                     "best of %d; %s",
                     from, size, b->sweep_trials, r.pinned ? "pinned" : "not pinned");
        else {
            format_bytes(to, sizeof to, hi);
            char range[64];
            if (lo > 0)
                snprintf(range, sizeof range, "%s..%s", from, to);
            else
                snprintf(range, sizeof range, "up to %s", to);
            snprintf(notes, sizeof notes,
                     "plateau of the read sweep over %s per thread (L%d %s; shared by %d "
                     "CPU(s); %s); best of %d; %s",
                     range, level, size, caches->shared_by[level], caches->source,
                     b->sweep_trials, r.pinned ? "pinned" : "not pinned");
        }
        if (add(s, ceiling, gbs, "GB/s", "read sweep (vector sum): plateau of the level", NAN,
                o->threads, notes) != 0)
            return -1;
    }
    return 0;
}

int cpu_peaks_run(const cpu_peaks_options *o, peak_table *t, char *err, size_t err_len)
{
    row_sink s = {.t = t, .err = err, .err_len = err_len};
    cpu_model_name(s.device, sizeof s.device);
    const cpu_budget *b = o->quick ? &quick_budget : &full_budget;
    cpu_caches caches;
    cpu_caches_read(&caches);
    cpu_fma_result one = {0}, all = {0};
    if (fma_rows(&s, o, b, &one, &all) != 0 || clock_rows(&s, o, &one, &all) != 0 ||
        stream_rows(&s, o, b, &caches) != 0 || sweep_rows(&s, o, b, &caches) != 0)
        return -1;
    return 0;
}
