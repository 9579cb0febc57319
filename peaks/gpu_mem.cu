/* GPU memory bandwidth at each level: HBM (STREAM-style copy and triad over
 * arrays far beyond L2), L2 (reads of a working set inside it, L1 bypassed),
 * L1 and shared memory (reads of a few KiB per block), and PCIe (pinned host
 * memory, both directions). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_bench.h"

enum { BLOCK = 256, UNROLL = 4, LOCAL_FLOAT4 = 512 /* 8 KiB per block: L1 and smem tests */ };

/* Several independent 16-byte loads per thread before any store: enough
 * bytes in flight per SM to cover HBM latency. */
__global__ void __launch_bounds__(BLOCK) copy_kernel(const float4 *__restrict__ a,
                                                     float4 *__restrict__ c, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
        float4 v[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; k++)
            v[k] = a[i + k * stride];
#pragma unroll
        for (int k = 0; k < UNROLL; k++)
            c[i + k * stride] = v[k];
    }
    for (; i < n; i += stride)
        c[i] = a[i];
}

__device__ inline float4 triad4(float4 b, float4 c, float s)
{
    return make_float4(b.x + s * c.x, b.y + s * c.y, b.z + s * c.z, b.w + s * c.w);
}

__global__ void __launch_bounds__(BLOCK) triad_kernel(float4 *__restrict__ a,
                                                      const float4 *__restrict__ b,
                                                      const float4 *__restrict__ c, float s,
                                                      size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
        float4 vb[UNROLL], vc[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; k++) {
            vb[k] = b[i + k * stride];
            vc[k] = c[i + k * stride];
        }
#pragma unroll
        for (int k = 0; k < UNROLL; k++)
            a[i + k * stride] = triad4(vb[k], vc[k], s);
    }
    for (; i < n; i += stride)
        a[i] = triad4(b[i], c[i], s);
}

/* The sums only exist so the loads are not dead; `never` is a value the sum
 * cannot take, so the store never happens but the compiler cannot know. */
__device__ inline void keep(float4 acc, float never, float *sink)
{
    float s = acc.x + acc.y + acc.z + acc.w;
    if (s == never)
        *sink = s;
}

__device__ inline void accumulate(float4 *acc, float4 v)
{
    acc->x += v.x;
    acc->y += v.y;
    acc->z += v.z;
    acc->w += v.w;
}

/* Each pass starts `pass * 4096` elements further on, so no two passes load
 * the same addresses in the same thread and none can be folded into another;
 * ld.global.cg caches in L2 only, so every load is an L2 hit, not an L1 one. */
__global__ void __launch_bounds__(BLOCK) l2_read_kernel(const float4 *__restrict__ p, size_t n,
                                                        int passes, float never, float *sink)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int r = 0; r < passes; r++) {
        size_t offset = ((size_t)r * 4096) % n;
#pragma unroll 4
        for (size_t j = tid; j < n; j += stride) {
            size_t i = j + offset;
            i = i >= n ? i - n : i;
            accumulate(&acc, __ldcg(p + i));
        }
    }
    keep(acc, never, sink);
}

/* Each block reads its own 8 KiB: a warp reads 32 consecutive float4s (four
 * 128-byte wavefronts), the window slides a warp's width each pass. */
__global__ void __launch_bounds__(BLOCK) l1_read_kernel(const float4 *__restrict__ p, int passes,
                                                        float never, float *sink)
{
    const float4 *mine = p + (size_t)blockIdx.x * LOCAL_FLOAT4;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int r = 0; r < passes; r++) {
        int base = (int)threadIdx.x + r * 32;
#pragma unroll
        for (int k = 0; k < LOCAL_FLOAT4 / BLOCK; k++)
            accumulate(&acc, __ldca(mine + ((base + k * BLOCK) & (LOCAL_FLOAT4 - 1))));
    }
    keep(acc, never, sink);
}

__global__ void __launch_bounds__(BLOCK) smem_read_kernel(int passes, float never, float *sink)
{
    __shared__ float4 buf[LOCAL_FLOAT4];
    for (int i = threadIdx.x; i < LOCAL_FLOAT4; i += blockDim.x)
        buf[i] = make_float4((float)i, 1.0f, 2.0f, 3.0f);
    __syncthreads();
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int r = 0; r < passes; r++) {
        int base = (int)threadIdx.x + r * 32;
#pragma unroll
        for (int k = 0; k < LOCAL_FLOAT4 / BLOCK; k++)
            accumulate(&acc, buf[(base + k * BLOCK) & (LOCAL_FLOAT4 - 1)]);
    }
    keep(acc, never, sink);
}

static int resident_blocks(const gpu_context &c)
{
    return c.sms * (c.prop.maxThreadsPerMultiProcessor / BLOCK);
}

/* Each HBM array: 1 GiB, at least 16x L2, at most a quarter of free memory
 * over the three arrays. */
static size_t hbm_array_bytes(const gpu_context &c)
{
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    size_t want = (size_t)1 << 30;
    if (want < 16 * (size_t)c.prop.l2CacheSize)
        want = 16 * (size_t)c.prop.l2CacheSize;
    if (want > free_b / 4)
        want = free_b / 4;
    return want / (16 * (size_t)BLOCK) * (16 * (size_t)BLOCK);
}

static gpu_result hbm(const gpu_context &c, bool triad)
{
    gpu_result r = {};
    size_t bytes = hbm_array_bytes(c), n = bytes / sizeof(float4);
    float4 *a, *b, *d;
    CUDA_CHECK(cudaMalloc(&a, bytes));
    CUDA_CHECK(cudaMalloc(&b, bytes));
    CUDA_CHECK(cudaMalloc(&d, bytes));
    gpu_fill(c, (float *)a, 4 * n, 0.f, 1.f);
    gpu_fill(c, (float *)b, 4 * n, 0.f, 1.f);
    gpu_fill(c, (float *)d, 4 * n, 0.f, 1.f);
    CUDA_CHECK(cudaDeviceSynchronize());
    int blocks = resident_blocks(c), reps = c.quick ? 5 : 20, trials = c.quick ? 2 : 5;
    gpu_clock_watch w = gpu_clock_watch_start(c);
    float ms = gpu_best_ms(
        [&] {
            if (triad)
                triad_kernel<<<blocks, BLOCK>>>(a, b, d, 3.0f, n);
            else
                copy_kernel<<<blocks, BLOCK>>>(a, d, n);
            CUDA_CHECK(cudaGetLastError());
        },
        reps, trials);
    gpu_clock_watch_stop(w, &r);
    double moved = (triad ? 3.0 : 2.0) * (double)bytes;
    r.value = ms > 0 ? moved / (ms * 1e-3) * 1e-9 : 0.0;
    snprintf(r.detail, sizeof r.detail,
             "STREAM counting: %d arrays x %.0f MiB (%.0fx L2); float4 loads; best of %d x %d",
             triad ? 3 : 2, bytes / 1048576.0, (double)bytes / c.prop.l2CacheSize, trials, reps);
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(d));
    return r;
}

static gpu_result l2(const gpu_context &c)
{
    gpu_result r = {};
    /* a quarter of L2: inside it even where L2 is two partitions (A100, H100) */
    size_t bytes = (size_t)c.prop.l2CacheSize / 4 / 4096 * 4096, n = bytes / sizeof(float4);
    float4 *p;
    float *sink;
    CUDA_CHECK(cudaMalloc(&p, bytes));
    CUDA_CHECK(cudaMalloc(&sink, sizeof(float)));
    gpu_fill(c, (float *)p, 4 * n, 0.f, 1.f);
    CUDA_CHECK(cudaDeviceSynchronize());
    int passes = (int)(((size_t)2 << 30) / bytes); /* about 2 GiB per launch */
    passes = passes > 0 ? passes : 1;
    int blocks = resident_blocks(c), reps = c.quick ? 3 : 10, trials = c.quick ? 2 : 5;
    gpu_clock_watch w = gpu_clock_watch_start(c);
    float ms = gpu_best_ms(
        [&] {
            l2_read_kernel<<<blocks, BLOCK>>>(p, n, passes, -1.0f, sink);
            CUDA_CHECK(cudaGetLastError());
        },
        reps, trials);
    gpu_clock_watch_stop(w, &r);
    r.value = ms > 0 ? (double)bytes * passes / (ms * 1e-3) * 1e-9 : 0.0;
    snprintf(r.detail, sizeof r.detail,
             "reads (ld.global.cg) of %.1f MiB = L2/4; %d passes per launch; best of %d x %d",
             bytes / 1048576.0, passes, trials, reps);
    CUDA_CHECK(cudaFree(p));
    CUDA_CHECK(cudaFree(sink));
    return r;
}

static gpu_result local_read(const gpu_context &c, bool shared)
{
    gpu_result r = {};
    int blocks = resident_blocks(c), passes = c.quick ? 2048 : 8192;
    int reps = c.quick ? 3 : 10, trials = c.quick ? 2 : 5;
    size_t bytes = (size_t)blocks * LOCAL_FLOAT4 * sizeof(float4);
    float4 *p = NULL;
    float *sink;
    CUDA_CHECK(cudaMalloc(&sink, sizeof(float)));
    if (!shared) {
        CUDA_CHECK(cudaMalloc(&p, bytes));
        gpu_fill(c, (float *)p, bytes / sizeof(float), 0.f, 1.f);
        /* as much L1 as the SM can give: the kernel uses no shared memory */
        CUDA_CHECK(cudaFuncSetAttribute(l1_read_kernel,
                                        cudaFuncAttributePreferredSharedMemoryCarveout, 0));
        CUDA_CHECK(cudaDeviceSynchronize());
    }
    gpu_clock_watch w = gpu_clock_watch_start(c);
    float ms = gpu_best_ms(
        [&] {
            if (shared)
                smem_read_kernel<<<blocks, BLOCK>>>(passes, -1.0f, sink);
            else
                l1_read_kernel<<<blocks, BLOCK>>>(p, passes, -1.0f, sink);
            CUDA_CHECK(cudaGetLastError());
        },
        reps, trials);
    gpu_clock_watch_stop(w, &r);
    double loaded = (double)blocks * BLOCK * passes * (LOCAL_FLOAT4 / BLOCK) * sizeof(float4);
    r.value = ms > 0 ? loaded / (ms * 1e-3) * 1e-9 : 0.0;
    snprintf(r.detail, sizeof r.detail, "%s reads of 8 KiB per block; %d blocks of %d; %d passes; best of %d x %d",
             shared ? "shared-memory" : "L1 (ld.global.ca)", blocks, BLOCK, passes, trials, reps);
    if (p)
        CUDA_CHECK(cudaFree(p));
    CUDA_CHECK(cudaFree(sink));
    return r;
}

static gpu_result pcie(const gpu_context &c, bool to_device)
{
    gpu_result r = {};
    size_t bytes = (size_t)(c.quick ? 64 : 256) << 20;
    void *host, *dev;
    CUDA_CHECK(cudaMallocHost(&host, bytes));
    CUDA_CHECK(cudaMalloc(&dev, bytes));
    memset(host, 1, bytes); /* every page mapped before timing */
    CUDA_CHECK(cudaMemset(dev, 0, bytes));
    CUDA_CHECK(cudaDeviceSynchronize());
    int reps = c.quick ? 3 : 10, trials = c.quick ? 2 : 5;
    gpu_clock_watch w = gpu_clock_watch_start(c);
    float ms = gpu_best_ms(
        [&] {
            if (to_device)
                CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, 0));
            else
                CUDA_CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, 0));
        },
        reps, trials);
    gpu_clock_watch_stop(w, &r);
    r.value = ms > 0 ? (double)bytes / (ms * 1e-3) * 1e-9 : 0.0;
    snprintf(r.detail, sizeof r.detail, "cudaMemcpyAsync of %zu MiB; pinned host memory; best of %d x %d",
             bytes >> 20, trials, reps);
    CUDA_CHECK(cudaFreeHost(host));
    CUDA_CHECK(cudaFree(dev));
    return r;
}

gpu_result gpu_mem_bandwidth(const gpu_context &c, gpu_mem_test test)
{
    switch (test) {
    case GPU_MEM_HBM_COPY: return hbm(c, false);
    case GPU_MEM_HBM_TRIAD: return hbm(c, true);
    case GPU_MEM_L2: return l2(c);
    case GPU_MEM_L1: return local_read(c, false);
    case GPU_MEM_SMEM: return local_read(c, true);
    case GPU_MEM_PCIE_H2D: return pcie(c, true);
    default: return pcie(c, false);
    }
}
