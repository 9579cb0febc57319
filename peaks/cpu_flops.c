#include "cpu_flops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cpu_clock.h"
#include "cpu_info.h"
#include "cpu_team.h"
#include "peak_check.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#define ISA_NAME "avx512"
#define VEC_BITS 512
/* 16 chains cover latency 4 x 2 pipes with room to spare; 18 of 32 registers */
#define ACCS 16
typedef __m512 vf32;
typedef __m512d vf64;
#define F32_SET1 _mm512_set1_ps
#define F64_SET1 _mm512_set1_pd
#define F32_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define F64_FMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#define F32_SUM(v) _mm512_reduce_add_ps(v)
#define F64_SUM(v) _mm512_reduce_add_pd(v)
#define FMA_FLOPS 2
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define ISA_NAME "avx2+fma"
#define VEC_BITS 256
/* 12 chains + 2 constants fit the 16 ymm registers and cover latency 4-5 x 2 pipes */
#define ACCS 12
typedef __m256 vf32;
typedef __m256d vf64;
#define F32_SET1 _mm256_set1_ps
#define F64_SET1 _mm256_set1_pd
#define F32_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define F64_FMA(a, b, c) _mm256_fmadd_pd(a, b, c)
static float f32_sum(__m256 v)
{
    float x[8];
    _mm256_storeu_ps(x, v);
    return x[0] + x[1] + x[2] + x[3] + x[4] + x[5] + x[6] + x[7];
}
static double f64_sum(__m256d v)
{
    double x[4];
    _mm256_storeu_pd(x, v);
    return x[0] + x[1] + x[2] + x[3];
}
#define F32_SUM f32_sum
#define F64_SUM f64_sum
#define FMA_FLOPS 2
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define ISA_NAME "neon"
#define VEC_BITS 128
/* up to 4 FMA pipes of latency 4 (Neoverse V1/V2) need 16 chains; 24 + 2 of 32 */
#define ACCS 24
typedef float32x4_t vf32;
typedef float64x2_t vf64;
#define F32_SET1 vdupq_n_f32
#define F64_SET1 vdupq_n_f64
#define F32_FMA(a, b, c) vfmaq_f32(c, a, b)
#define F64_FMA(a, b, c) vfmaq_f64(c, a, b)
#define F32_SUM vaddvq_f32
#define F64_SUM vaddvq_f64
#define FMA_FLOPS 2
#else
#define ISA_NAME "scalar"
#define VEC_BITS 64
#define ACCS 16
typedef float vf32;
typedef double vf64;
#define F32_SET1(x) (x)
#define F64_SET1(x) (x)
/* ISO C mode keeps a*b+c unfused: a multiply and an add, still 2 FLOPs */
#define F32_FMA(a, b, c) ((a) * (b) + (c))
#define F64_FMA(a, b, c) ((a) * (b) + (c))
#define F32_SUM(v) (v)
#define F64_SUM(v) (v)
#define FMA_FLOPS 2
#endif

#define F32_LANES (VEC_BITS == 64 ? 1 : VEC_BITS / 32)
#define F64_LANES (VEC_BITS == 64 ? 1 : VEC_BITS / 64)

/* acc = acc * mul + add converges to add / (1 - mul) = 1 for the values the
 * caller passes, so no value ever turns denormal or infinite; mul and add come
 * from the caller, so the compiler cannot fold the chains away. */
static double fma_chains_f32(long steps, float mul, float add)
{
    vf32 m = F32_SET1(mul), a = F32_SET1(add), acc[ACCS];
    for (int k = 0; k < ACCS; k++)
        acc[k] = F32_SET1(1.0f + (float)k * 1e-3f);
    for (long i = 0; i < steps; i++)
        for (int k = 0; k < ACCS; k++)
            acc[k] = F32_FMA(acc[k], m, a);
    double sum = 0.0;
    for (int k = 0; k < ACCS; k++)
        sum += F32_SUM(acc[k]);
    return sum;
}

static double fma_chains_f64(long steps, double mul, double add)
{
    vf64 m = F64_SET1(mul), a = F64_SET1(add), acc[ACCS];
    for (int k = 0; k < ACCS; k++)
        acc[k] = F64_SET1(1.0 + (double)k * 1e-3);
    for (long i = 0; i < steps; i++)
        for (int k = 0; k < ACCS; k++)
            acc[k] = F64_FMA(acc[k], m, a);
    double sum = 0.0;
    for (int k = 0; k < ACCS; k++)
        sum += F64_SUM(acc[k]);
    return sum;
}

static double flops_per_step(cpu_precision p)
{
    return (double)ACCS * (p == CPU_FP32 ? F32_LANES : F64_LANES) * FMA_FLOPS;
}

static double run_chains(cpu_precision p, long steps)
{
    return p == CPU_FP32 ? fma_chains_f32(steps, 0.999999f, 1e-6f)
                         : fma_chains_f64(steps, 0.999999999, 1e-9);
}

int cpu_fma_lanes(cpu_precision p)
{
    return p == CPU_FP32 ? F32_LANES : F64_LANES;
}

const char *cpu_fma_isa(void)
{
    return ISA_NAME;
}

int cpu_fma_flops_per_cycle(cpu_precision p, char *why, size_t why_len)
{
    char vendor[64];
    int family;
    cpu_vendor_family(vendor, sizeof vendor, &family);
    int lanes = p == CPU_FP32 ? F32_LANES : F64_LANES;
    /* Issue width in full-width vector FMAs per cycle. Two is what server
     * cores since Haswell/Zen 2 (x86) and Neoverse N1 (Arm) sustain; the
     * exceptions we know of are listed. */
    int pipes = 2;
    const char *reason = "2 FMA pipes (assumed for this core)";
    if (VEC_BITS == 512 && strcmp(vendor, "AuthenticAMD") == 0 && family == 25) {
        pipes = 1;
        reason = "Zen 4 runs a 512-bit FMA as two 256-bit halves: 1 per cycle";
    } else if (VEC_BITS == 512 && strcmp(vendor, "AuthenticAMD") == 0 && family >= 26) {
        reason = "Zen 5: two 512-bit FMA pipes";
    } else if (VEC_BITS == 512 && strcmp(vendor, "GenuineIntel") == 0) {
        reason = "2 512-bit FMA pipes (Xeon Gold 6xxx/Platinum; some SKUs have 1)";
    } else if (VEC_BITS == 256) {
        reason = "2 256-bit FMA pipes (Haswell and later, Zen 2 and later)";
    } else if (VEC_BITS == 64) {
        reason = "scalar fallback: a multiply and an add pipe (assumed)";
        pipes = 1;
    }
    int per_cycle = lanes * FMA_FLOPS * pipes;
    snprintf(why, why_len, "%s: %d %s lanes x %d (FMA) x %d pipe(s); %s", ISA_NAME, lanes,
             p == CPU_FP32 ? "fp32" : "fp64", FMA_FLOPS, pipes, reason);
    return per_cycle;
}

typedef struct {
    cpu_precision prec;
    long steps;
    int trials;
    double *seconds;  /* per trial, written by thread 0 */
    double *clock;    /* per thread, the sum over trials */
    double *sink;     /* per thread, keeps the result alive */
} fma_job;

static void fma_worker(cpu_team_member *self)
{
    fma_job *job = self->arg;
    double sink = 0.0, ghz = 0.0;
    for (int t = 0; t < job->trials; t++) {
        pthread_barrier_wait(self->barrier);
        double t0 = cpu_now();
        sink += run_chains(job->prec, job->steps);
        pthread_barrier_wait(self->barrier);
        if (self->tid == 0)
            job->seconds[t] = cpu_now() - t0;
        /* right after the FMAs, before any frequency licence lapses */
        ghz += cpu_clock_ghz(0.005);
    }
    job->clock[self->tid] = ghz / job->trials;
    job->sink[self->tid] = sink;
}

/* Steps that take about `seconds` on one thread here. */
static long calibrate(cpu_precision p, double seconds)
{
    long steps = 1 << 10;
    volatile double sink = 0.0;
    for (;;) {
        double t0 = cpu_now();
        sink += run_chains(p, steps);
        double dt = cpu_now() - t0;
        if (dt > 0.02 || steps > (1L << 40))
            return (long)((double)steps * seconds / (dt > 0 ? dt : 1e-9)) + 1;
        steps *= 4;
    }
}

int cpu_fma_measure(cpu_precision p, int threads, double seconds, int trials,
                    cpu_fma_result *out, char *err, size_t err_len)
{
    double times[64], clocks[1024], sinks[1024];
    if (trials < 1 || trials > 64 || threads < 1 || threads > 1024) {
        snprintf(err, err_len, "fma: %d trials on %d threads is out of range", trials, threads);
        return -1;
    }
    fma_job job = {p, calibrate(p, seconds), trials, times, clocks, sinks};
    bool pinned = false;
    if (cpu_team_run(threads, fma_worker, &job, &pinned, err, err_len) != 0)
        return -1;
    double best = NAN, second = NAN, ghz = 0.0;
    double flops = flops_per_step(p) * (double)job.steps * threads;
    for (int t = 0; t < trials; t++)
        check_top2(times[t] > 0 ? flops / times[t] : 0.0, &best, &second);
    best = best > 0 ? best : 0.0;
    for (int i = 0; i < threads; i++)
        ghz += clocks[i] / threads;
    *out = (cpu_fma_result){best * 1e-9, second * 1e-9, ghz, threads, pinned};
    return 0;
}
