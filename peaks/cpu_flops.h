/* FMA throughput of the cores: many independent accumulators, each updated by
 * a fused multiply-add per step, in the widest vectors the build targets
 * (AVX-512, AVX2+FMA or NEON, chosen at compile time; a plain C fallback). */
#ifndef ROOFLINE_CPU_FLOPS_H
#define ROOFLINE_CPU_FLOPS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { CPU_FP32, CPU_FP64 } cpu_precision;

typedef struct {
    double gflops;    /* best trial, all threads together */
    double second;    /* the runner-up trial (NAN with one trial): noise shows as a gap */
    double clock_ghz; /* mean core clock measured between the trials, per thread */
    int threads;
    bool pinned;
} cpu_fma_result;

/* "avx512", "avx2+fma", "neon" or "scalar": the kernel this build runs. */
const char *cpu_fma_isa(void);

/* Lanes of the kernel's vectors for p (1 for the scalar fallback). */
int cpu_fma_lanes(cpu_precision p);

/* Theoretical FLOPs per cycle per core for the kernel this build runs (an FMA
 * counts 2), with how it was reckoned in `why`. */
int cpu_fma_flops_per_cycle(cpu_precision p, char *why, size_t why_len);

/* Runs `trials` timed trials of about `seconds` each on `threads` threads.
 * Returns 0, or -1 with the reason in err. */
int cpu_fma_measure(cpu_precision p, int threads, double seconds, int trials,
                    cpu_fma_result *out, char *err, size_t err_len);

#endif
