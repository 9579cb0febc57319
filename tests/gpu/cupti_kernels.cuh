/* Shared by the CUPTI GPU tests (tests/gpu/cupti_*.cu): kernels whose FLOPs
 * and bytes are known exactly, and a wrapper that runs some work under the
 * suite's metric pass (counters/cupti_metrics.h). CUDA C++ only. */
#ifndef ROOFLINE_CUPTI_KERNELS_CUH
#define ROOFLINE_CUPTI_KERNELS_CUH

#include "../../counters/cupti_config.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

#include "../../models/cuda/check.h"
#include "gpu_test.h"

/* The suite's C headers (models/ has no extern "C" of its own). */
extern "C" {
#include "../../counters/gpu_fallback.h"
#include "../../counters/gpu_kernels.h"
#include "../../counters/gpu_metrics.h"
#include "../../counters/gpu_ops.h"
#ifdef HAVE_CUPTI
#include "../../counters/cupti_metrics.h"
#include "../../counters/cupti_trace.h"
#endif
}

/* One FFMA: fmaf on a GPU; on the host emulator (tests/emu/host) a call
 * that its stand-in for CUPTI's metric pass counts as one. */
#ifdef ROOFLINE_HOST_EMULATOR
#define FFMA(a, b, c) emu_host::counted_fmaf(a, b, c)
#else
#define FFMA(a, b, c) fmaf(a, b, c)
#endif

/* Exactly n FFMA per thread: inline PTX, so the compiler neither folds nor
 * fuses them. The int-to-float conversion and the store are no FP add, mul
 * or fma, so the kernel's fp32 FLOPs are 2 n threads and nothing else. */
__global__ void ffma_loop(float *out, int n, float a, float b)
{
    float x = (float)threadIdx.x;
    for (int i = 0; i < n; i++) {
#ifdef __CUDA_ARCH__
        asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b));
#else
        x = FFMA(x, a, b);
#endif
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x;
}

/* STREAM's triad a = b + s c: reads 8 bytes and writes 4 per element, one
 * FFMA (2 FLOPs) per element. */
__global__ void triad(float *a, const float *b, const float *c, float s, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        a[i] = FFMA(s, c[i], b[i]);
}

__global__ void fill(float *p, size_t n, float v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = v;
}

static inline double rel_diff(double a, double b)
{
    double m = fmax(fabs(a), fabs(b));
    return m > 0 ? fabs(a - b) / m : 0.0;
}

#ifdef HAVE_CUPTI
/* Runs work() under one metric pass (precision prec, options mo). Returns 1
 * with the launches and counts in *out; 0 with a SKIP line where this machine
 * refuses the counters (the fallback's one-line cause); -1 with a FAIL line on
 * an error. */
template <typename F>
static int profile(gpu_tally *tally, const char *what, precision prec, gpu_metric_options mo,
                   int max_ranges, F work, gpu_metric_pass *out, gpu_metric_plan *plan,
                   gpu_metric_info *info)
{
    char err[400] = "", line[600];
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    cupti_metrics *m = NULL;
    int rc = cupti_metrics_open(device, prec, &mo, max_ranges, &m, info, err, sizeof err);
    if (rc == 0) {
        *plan = *cupti_metrics_plan(m);
        rc = cupti_metrics_start(m, err, sizeof err);
        if (rc == 0) {
            work(m);
            rc = cupti_metrics_stop(m, out, err, sizeof err);
        }
        cupti_metrics_close(m);
    }
    if (rc == 0)
        return 1;
    gpu_cause cause = rc > 0 ? gpu_cause_of_cupti(rc) : GPU_CAUSE_NONE;
    if (cause != GPU_CAUSE_NONE) {
        gpu_cause_line(cause, err, line, sizeof line);
        printf("SKIP: %s: counters unavailable: %s\n", what, line);
        return 0;
    }
    snprintf(line, sizeof line, "%s: metric pass failed: %s", what, err);
    gpu_expect(tally, false, line);
    return -1;
}

/* The metric pass's launch k, demangled, for messages. */
static inline void launch_name(const gpu_metric_pass *p, int k, char *buf, size_t len)
{
    char *readable = cupti_demangle(p->launch[k].name);
    snprintf(buf, len, "%.100s", readable ? readable : p->launch[k].name);
    free(readable);
}
#endif

#endif
