/* Shared by the GPU microbenchmarks (peaks/gpu_*.cu) and tests/gpu/peaks_check.cu:
 * the device context, one result type, event timing and the fill kernel.
 * CUDA C++ only. */
#ifndef ROOFLINE_GPU_BENCH_H
#define ROOFLINE_GPU_BENCH_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stddef.h>

#include "../models/cuda/check.h"
#include "nvml_dl.h"

/* cuBLASLt reports cublasStatus_t, the same type as cuBLAS. */
#define CUBLASLT_CHECK(call) CUBLAS_CHECK(call)

struct gpu_context {
    int device;
    cudaDeviceProp prop;
    int sms;
    int cc;              /* 10 * major + minor */
    double max_sm_mhz;   /* the device's own maximum (cudaDevAttrClockRate) */
    double mem_theory_gbs; /* 2 x memory clock x bus width, from device attributes */
    nvml_gpu *nvml;      /* NULL when NVML is missing: clock fields stay empty */
    bool quick;
    int effort;          /* 1; 2, 3, ... when a consistency check measures again:
                            more and longer trials */
};

struct gpu_result {
    double value;              /* GFLOP/s or GB/s; 0 when not measured */
    double second;             /* the runner-up trial of the winning variant; NAN if none */
    double sm_mhz, mem_mhz;    /* NVML means during the timed part; NAN when unknown */
    char detail[400];          /* how, for the notes column; why not, when value is 0 */
    /* what some tests report besides the figure (NAN / 0 where not theirs) */
    double own;                /* hbm_copy: the best of the suite's own kernels */
    double reference;          /* hbm_copy: cudaMemcpyAsync device-to-device, same size */
    double issue_rate;         /* FMA peaks: FMA warp instructions issued per clock per SM
                                  sub-partition, from the SM cycle counter (clock64) */
    int shapes_tried;          /* GEMM: shapes run */
    int algos_offered_min;     /* GEMM: fewest algorithms the heuristic offered for a shape */
    int algos_tried_min;       /* GEMM: fewest algorithms run for a shape */
    bool all_offered_tried;    /* GEMM: every offered algorithm of every shape was run */
};

/* A result with nothing measured yet: the NAN fields NAN, the rest 0. */
gpu_result gpu_result_empty(void);

/* Opens `device` and NVML (one line on stderr when NVML is missing). */
void gpu_context_open(gpu_context *c, int device, bool quick);
void gpu_context_close(gpu_context *c);

/* Brackets the timed part of a test with an NVML clock sampler. */
struct gpu_clock_watch {
    nvml_sampler *sampler;
};
gpu_clock_watch gpu_clock_watch_start(const gpu_context &c);
void gpu_clock_watch_stop(gpu_clock_watch w, gpu_result *r);

/* Milliseconds per call: the fastest batch and the runner-up (NAN with one
 * trial). */
struct gpu_timing {
    float best_ms, second_ms;
};

/* Times `launch` (which enqueues work on stream 0 and checks its launch):
 * one untimed call, then `trials` batches of `reps` calls timed with CUDA
 * events. */
template <typename Launch> gpu_timing gpu_time(Launch launch, int reps, int trials)
{
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    launch();
    CUDA_CHECK(cudaDeviceSynchronize());
    gpu_timing t = {0.0f, NAN};
    for (int i = 0; i < trials; i++) {
        CUDA_CHECK(cudaEventRecord(start));
        for (int r = 0; r < reps; r++)
            launch();
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        ms /= (float)reps;
        if (i == 0 || ms < t.best_ms) {
            t.second_ms = i == 0 ? NAN : t.best_ms;
            t.best_ms = ms;
        } else if (!(t.second_ms <= ms)) {
            t.second_ms = ms;
        }
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return t;
}

/* A rate from a timing: amount per call / time, in units of 1e9 per second;
 * `second` gets the runner-up's rate (NAN without one). */
static inline double gpu_rate(gpu_timing t, double amount, double *second)
{
    if (second)
        *second = t.second_ms > 0 ? amount / (t.second_ms * 1e-3) * 1e-9 : NAN;
    return t.best_ms > 0 ? amount / (t.best_ms * 1e-3) * 1e-9 : 0.0;
}

/* Float to each element type the benchmarks use. */
__device__ inline void gpu_from_float(float x, double *out) { *out = x; }
__device__ inline void gpu_from_float(float x, float *out) { *out = x; }
__device__ inline void gpu_from_float(float x, __half *out) { *out = __float2half(x); }
__device__ inline void gpu_from_float(float x, __half2 *out) { *out = __float2half2_rn(x); }
__device__ inline void gpu_from_float(float x, __nv_bfloat16 *out) { *out = __float2bfloat16(x); }
__device__ inline void gpu_from_float(float x, __nv_fp8_e4m3 *out) { *out = __nv_fp8_e4m3(x); }

/* Uniform values in [lo, hi) from a hash of the index: random enough that
 * tensor cores draw their real power, reproducible, no host copy. */
template <typename T>
__global__ void gpu_fill_uniform(T *p, size_t n, float lo, float hi, unsigned seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 16;
        h *= 0x7feb352du;
        h ^= h >> 15;
        gpu_from_float(lo + (hi - lo) * (float)(h >> 8) * (1.0f / 16777216.0f), &p[i]);
    }
}

template <typename T> void gpu_fill(const gpu_context &c, T *p, size_t n, float lo, float hi)
{
    gpu_fill_uniform<T><<<c.sms * 8, 256>>>(p, n, lo, hi, 12345u);
    CUDA_CHECK(cudaGetLastError());
}

/* ---- the microbenchmarks ---------------------------------------------------- */

enum gpu_fma_type { GPU_FMA_FP64, GPU_FMA_FP32, GPU_FMA_FP16X2 };
/* CUDA-core FMA peak: independent FMA chains in registers, one wave of
 * resident blocks, the best of a few chain counts; issue_rate from the SM
 * cycle counter. */
gpu_result gpu_fma_peak(const gpu_context &c, gpu_fma_type type);

enum gpu_gemm_type { GPU_GEMM_TF32, GPU_GEMM_FP16, GPU_GEMM_BF16, GPU_GEMM_FP8 };
/* Tensor-core peak: the best cuBLASLt GEMM over square and skinny shapes and
 * every algorithm the heuristic offers (up to 16; quick: 2 shapes, 2
 * algorithms). value 0 with the reason in detail where the GPU or cuBLASLt
 * has no such GEMM. */
gpu_result gpu_gemm_peak(const gpu_context &c, gpu_gemm_type type);

enum gpu_mem_test {
    GPU_MEM_HBM_COPY,  /* STREAM counting: 2 arrays; own kernels and cudaMemcpyAsync */
    GPU_MEM_HBM_TRIAD, /* 3 arrays */
    GPU_MEM_HBM_READ,  /* 1 array, loads only */
    GPU_MEM_HBM_WRITE, /* 1 array, stores only */
    GPU_MEM_L2,        /* reads of a working set a quarter of L2, L1 bypassed */
    GPU_MEM_L1,        /* reads of 8 KiB per block through L1 */
    GPU_MEM_SMEM,      /* reads of shared memory */
    GPU_MEM_PCIE_H2D,  /* pinned host memory */
    GPU_MEM_PCIE_D2H,
};
gpu_result gpu_mem_bandwidth(const gpu_context &c, gpu_mem_test test);

#endif
