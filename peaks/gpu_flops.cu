/* CUDA-core FMA peaks, ERT-style (LBNL's Empirical Roofline Toolkit): every
 * thread loads an element, runs FMA chains on it, stores the result; a sweep
 * over FMAs per element walks from memory-bound to compute-bound, and the
 * plateau at the high end is the ceiling. */
#include <math.h>
#include <stdio.h>

#include "gpu_bench.h"

/* Four independent chains per element: with them a few warps per scheduler
 * already hide the FMA latency, so the plateau does not hang on occupancy. */
enum { CHAINS = 4, BLOCK = 256, ELEMS_PER_THREAD = 16 };

template <typename T> struct fma_ops;
template <> struct fma_ops<double> {
    static constexpr int lanes = 1;
    __device__ static double fma(double a, double b, double c) { return ::fma(a, b, c); }
    __device__ static double add(double a, double b) { return a + b; }
};
template <> struct fma_ops<float> {
    static constexpr int lanes = 1;
    __device__ static float fma(float a, float b, float c) { return fmaf(a, b, c); }
    __device__ static float add(float a, float b) { return a + b; }
};
template <> struct fma_ops<__half2> {
    static constexpr int lanes = 2;
    __device__ static __half2 fma(__half2 a, __half2 b, __half2 c) { return __hfma2(a, b, c); }
    __device__ static __half2 add(__half2 a, __half2 b) { return __hadd2(a, b); }
};

/* b = b * mul + a converges to 2a for mul = 0.5, so no chain overflows or
 * turns denormal whatever FMAS is; the chains start apart so the compiler
 * cannot merge them. */
template <typename T, int FMAS>
__global__ void __launch_bounds__(BLOCK) ert_fma(const T *__restrict__ in, T *__restrict__ out,
                                                 size_t n, T mul)
{
    using ops = fma_ops<T>;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        T a = in[i];
        T b[CHAINS];
        b[0] = a;
#pragma unroll
        for (int c = 1; c < CHAINS; c++)
            b[c] = ops::add(b[c - 1], mul);
#pragma unroll
        for (int k = 0; k < FMAS; k++)
#pragma unroll
            for (int c = 0; c < CHAINS; c++)
                b[c] = ops::fma(b[c], mul, a);
        T sum = b[0];
#pragma unroll
        for (int c = 1; c < CHAINS; c++)
            sum = ops::add(sum, b[c]);
        out[i] = sum;
    }
}

/* FLOPs per element: 2 per FMA, 1 per add, times the lanes of T. */
template <typename T> static double flops_per_element(int fmas)
{
    return fma_ops<T>::lanes * (2.0 * CHAINS * fmas + 2.0 * (CHAINS - 1));
}

template <typename T, int FMAS>
static double run_point(const gpu_context &c, const T *in, T *out, size_t n, T mul, int reps,
                        int trials)
{
    int blocks = c.sms * (c.prop.maxThreadsPerMultiProcessor / BLOCK);
    float ms = gpu_best_ms(
        [&] {
            ert_fma<T, FMAS><<<blocks, BLOCK>>>(in, out, n, mul);
            CUDA_CHECK(cudaGetLastError());
        },
        reps, trials);
    return ms > 0 ? flops_per_element<T>(FMAS) * (double)n / (ms * 1e-3) * 1e-9 : 0.0;
}

static const int sweep_fmas[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};

template <typename T>
static double run_fmas(const gpu_context &c, int fmas, const T *in, T *out, size_t n, T mul,
                       int reps, int trials)
{
    switch (fmas) {
    case 1: return run_point<T, 1>(c, in, out, n, mul, reps, trials);
    case 2: return run_point<T, 2>(c, in, out, n, mul, reps, trials);
    case 4: return run_point<T, 4>(c, in, out, n, mul, reps, trials);
    case 8: return run_point<T, 8>(c, in, out, n, mul, reps, trials);
    case 16: return run_point<T, 16>(c, in, out, n, mul, reps, trials);
    case 32: return run_point<T, 32>(c, in, out, n, mul, reps, trials);
    case 64: return run_point<T, 64>(c, in, out, n, mul, reps, trials);
    case 128: return run_point<T, 128>(c, in, out, n, mul, reps, trials);
    default: return run_point<T, 256>(c, in, out, n, mul, reps, trials);
    }
}

template <typename T> static gpu_result sweep(const gpu_context &c, T mul, const char *type_name)
{
    gpu_result r = {};
    size_t n = (size_t)c.sms * c.prop.maxThreadsPerMultiProcessor * ELEMS_PER_THREAD;
    T *in, *out;
    CUDA_CHECK(cudaMalloc(&in, n * sizeof(T)));
    CUDA_CHECK(cudaMalloc(&out, n * sizeof(T)));
    gpu_fill(c, in, n, 0.5f, 1.0f);
    CUDA_CHECK(cudaDeviceSynchronize());
    int reps = c.quick ? 5 : 20, trials = c.quick ? 2 : 5;
    gpu_clock_watch w = gpu_clock_watch_start(c);
    int best_fmas = 0;
    for (int fmas : sweep_fmas) {
        double gflops = run_fmas<T>(c, fmas, in, out, n, mul, reps, trials);
        if (gflops > r.value) {
            r.value = gflops;
            best_fmas = fmas;
        }
    }
    gpu_clock_watch_stop(w, &r);
    snprintf(r.detail, sizeof r.detail,
             "ERT-style sweep %.0f..%.0f flop/element (%s; %d chains); plateau at %.0f; best of %d x %d launches",
             flops_per_element<T>(sweep_fmas[0]), flops_per_element<T>(256), type_name, CHAINS,
             flops_per_element<T>(best_fmas), trials, reps);
    CUDA_CHECK(cudaFree(in));
    CUDA_CHECK(cudaFree(out));
    return r;
}

gpu_result gpu_fma_peak(const gpu_context &c, gpu_fma_type type)
{
    switch (type) {
    case GPU_FMA_FP64: return sweep<double>(c, 0.5, "fp64");
    case GPU_FMA_FP32: return sweep<float>(c, 0.5f, "fp32");
    default: return sweep<__half2>(c, __float2half2_rn(0.5f), "half2");
    }
}
