/* GPU memory bandwidth at each level: HBM (STREAM-style copy and triad over
 * arrays far beyond L2), L2 (reads of a working set inside it, L1 bypassed),
 * L1 and shared memory (reads of a few KiB per block), and PCIe (pinned host
 * memory, both directions). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_bench.h"

enum { BLOCK = 256, LOCAL_FLOAT4 = 512 /* 8 KiB per block: L1 and smem tests */ };

/* ---- HBM ------------------------------------------------------------------
 * Each block walks tiles of BLOCK x UNROLL float4s (16-byte loads and
 * stores, LDG.E.128 / STG.E.128): a warp's accesses are contiguous, every
 * thread has UNROLL independent loads in flight before its first store, and
 * a tile is one contiguous stretch of DRAM. STREAMING uses ld/st.global.cs
 * (evict-first): data touched once should not push anything else out of L2.
 * The grid is either persistent (a multiple of the resident blocks, looping
 * over tiles) or one tile per block; which wins depends on the chip, so the
 * host tries them all and keeps the best. */
enum hbm_kind { HBM_COPY, HBM_TRIAD, HBM_READ, HBM_WRITE };

template <bool STREAMING> __device__ inline float4 load(const float4 *p)
{
    return STREAMING ? __ldcs(p) : *p;
}

template <bool STREAMING> __device__ inline void store(float4 *p, float4 v)
{
    if (STREAMING)
        __stcs(p, v);
    else
        *p = v;
}

__device__ inline float4 triad4(float4 b, float4 c, float s)
{
    return make_float4(b.x + s * c.x, b.y + s * c.y, b.z + s * c.z, b.w + s * c.w);
}

__device__ inline void accumulate(float4 *acc, float4 v)
{
    acc->x += v.x;
    acc->y += v.y;
    acc->z += v.z;
    acc->w += v.w;
}

/* The sums only exist so the loads are not dead; `never` is a value the sum
 * cannot take, so the store never happens but the compiler cannot know. */
__device__ inline void keep(float4 acc, float never, float *sink)
{
    float s = acc.x + acc.y + acc.z + acc.w;
    if (s == never)
        *sink = s;
}

/* copy: dst = src; triad: dst = src + s * src2; read: sums of src; write:
 * dst = s. n is in float4s; the tiles that do not fit whole are done one
 * element per thread at the end. */
template <int KIND, int UNROLL, bool STREAMING>
__global__ void __launch_bounds__(BLOCK) hbm_kernel(float4 *__restrict__ dst,
                                                    const float4 *__restrict__ src,
                                                    const float4 *__restrict__ src2, float s,
                                                    size_t n, float never, float *sink)
{
    const size_t tile = (size_t)BLOCK * UNROLL, tiles = n / tile;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    const float4 fill = make_float4(s, s, s, s);
    for (size_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        size_t base = t * tile + threadIdx.x;
        float4 v[UNROLL], w[UNROLL];
        if (KIND != HBM_WRITE) {
#pragma unroll
            for (int k = 0; k < UNROLL; k++)
                v[k] = load<STREAMING>(src + base + (size_t)k * BLOCK);
        }
        if (KIND == HBM_TRIAD) {
#pragma unroll
            for (int k = 0; k < UNROLL; k++)
                w[k] = load<STREAMING>(src2 + base + (size_t)k * BLOCK);
        }
#pragma unroll
        for (int k = 0; k < UNROLL; k++) {
            float4 *out = dst + base + (size_t)k * BLOCK;
            if (KIND == HBM_COPY)
                store<STREAMING>(out, v[k]);
            else if (KIND == HBM_TRIAD)
                store<STREAMING>(out, triad4(v[k], w[k], s));
            else if (KIND == HBM_WRITE)
                store<STREAMING>(out, fill);
            else
                accumulate(&acc, v[k]);
        }
    }
    for (size_t i = tiles * tile + blockIdx.x * (size_t)BLOCK + threadIdx.x; i < n;
         i += (size_t)gridDim.x * BLOCK) {
        if (KIND == HBM_COPY)
            dst[i] = src[i];
        else if (KIND == HBM_TRIAD)
            dst[i] = triad4(src[i], src2[i], s);
        else if (KIND == HBM_WRITE)
            dst[i] = fill;
        else
            accumulate(&acc, src[i]);
    }
    if (KIND == HBM_READ)
        keep(acc, never, sink);
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

/* Each HBM array: 2 GiB (the size of the PyTorch figures beside it), at
 * least 16x L2, at most a quarter of free memory over the three arrays; a
 * whole number of the largest tiles. */
static size_t hbm_array_bytes(const gpu_context &c)
{
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    size_t want = (size_t)2 << 30;
    if (want < 16 * (size_t)c.prop.l2CacheSize)
        want = 16 * (size_t)c.prop.l2CacheSize;
    if (want > free_b / 4)
        want = free_b / 4;
    const size_t tile = (size_t)BLOCK * 8 * sizeof(float4);
    return want / tile * tile;
}

typedef void (*hbm_launch_fn)(int grid, float4 *dst, const float4 *src, const float4 *src2,
                              size_t n, float *sink);

template <int KIND, int UNROLL, bool STREAMING>
static void launch_hbm(int grid, float4 *dst, const float4 *src, const float4 *src2, size_t n,
                       float *sink)
{
    hbm_kernel<KIND, UNROLL, STREAMING><<<grid, BLOCK>>>(dst, src, src2, 3.0f, n, -1.0f, sink);
    CUDA_CHECK(cudaGetLastError());
}

struct hbm_entry {
    int kind, unroll;
    bool streaming;
    const void *kernel; /* for the occupancy query */
    hbm_launch_fn launch;
};

#define HBM_ENTRY(K, U, S) {K, U, S, (const void *)hbm_kernel<K, U, S>, launch_hbm<K, U, S>}
#define HBM_ENTRIES(K)                                                                           \
    HBM_ENTRY(K, 2, false), HBM_ENTRY(K, 2, true), HBM_ENTRY(K, 4, false),                       \
        HBM_ENTRY(K, 4, true), HBM_ENTRY(K, 8, false), HBM_ENTRY(K, 8, true)
static const hbm_entry hbm_entries[] = {HBM_ENTRIES(HBM_COPY), HBM_ENTRIES(HBM_TRIAD),
                                        HBM_ENTRIES(HBM_READ), HBM_ENTRIES(HBM_WRITE)};

static const int hbm_arrays[] = {2, 3, 1, 1}; /* STREAM counting */

struct hbm_best {
    double gbs, second;
    const hbm_entry *entry; /* NULL: cudaMemcpyAsync */
    int grid;
    const char *grid_kind;
};

/* Every variant of one kind (quick: unroll 4 and 8, one grid of each
 * shape), the best kept. */
static hbm_best hbm_own_kernels(const gpu_context &c, int kind, float4 *dst, const float4 *src,
                                const float4 *src2, size_t n, float *sink, int reps, int trials,
                                int *tried)
{
    hbm_best best = {0.0, NAN, NULL, 0, ""};
    double moved = (double)hbm_arrays[kind] * (double)n * sizeof(float4);
    for (const hbm_entry &e : hbm_entries) {
        if (e.kind != kind || (c.quick && e.unroll == 2))
            continue;
        int per_sm = 0;
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, e.kernel, BLOCK, 0));
        per_sm = per_sm > 0 ? per_sm : 1;
        size_t tiles = n / ((size_t)BLOCK * e.unroll);
        /* persistent grids (1 and 4 waves) and one tile per block */
        const struct {
            long long blocks;
            const char *name;
        } grids[] = {{(long long)c.sms * per_sm, "persistent, 1 wave"},
                     {(long long)c.sms * per_sm * 4, "persistent, 4 waves"},
                     {(long long)(tiles > 0 ? tiles : 1), "one tile per block"}};
        for (int g = 0; g < 3; g++) {
            if (c.quick && g == 1)
                continue;
            int grid = (int)(grids[g].blocks < INT_MAX ? grids[g].blocks : INT_MAX);
            gpu_timing t = gpu_time([&] { e.launch(grid, dst, src, src2, n, sink); }, reps, trials);
            double second;
            double gbs = gpu_rate(t, moved, &second);
            (*tried)++;
            if (gbs > best.gbs)
                best = hbm_best{gbs, second, &e, grid, grids[g].name};
        }
    }
    return best;
}

static gpu_result hbm(const gpu_context &c, int kind)
{
    gpu_result r = gpu_result_empty();
    size_t bytes = hbm_array_bytes(c), n = bytes / sizeof(float4);
    float4 *a, *b, *d;
    float *sink;
    CUDA_CHECK(cudaMalloc(&a, bytes));
    CUDA_CHECK(cudaMalloc(&b, bytes));
    CUDA_CHECK(cudaMalloc(&d, bytes));
    CUDA_CHECK(cudaMalloc(&sink, sizeof(float)));
    gpu_fill(c, (float *)a, 4 * n, 0.f, 1.f);
    gpu_fill(c, (float *)b, 4 * n, 0.f, 1.f);
    gpu_fill(c, (float *)d, 4 * n, 0.f, 1.f);
    CUDA_CHECK(cudaDeviceSynchronize());
    int reps = (c.quick ? 3 : 10) * c.effort, trials = (c.quick ? 2 : 5) + c.effort - 1;
    int tried = 0;
    gpu_clock_watch w = gpu_clock_watch_start(c);
    hbm_best best = hbm_own_kernels(c, kind, a, b, d, n, sink, reps, trials, &tried);
    r.own = best.gbs;
    if (kind == HBM_COPY) {
        /* the driver's own copy, timed the same way: what hbm_copy must reach */
        gpu_timing t = gpu_time(
            [&] { CUDA_CHECK(cudaMemcpyAsync(a, b, bytes, cudaMemcpyDeviceToDevice, 0)); }, reps,
            trials);
        double second;
        r.reference = gpu_rate(t, 2.0 * (double)bytes, &second);
        if (r.reference > best.gbs)
            best = hbm_best{r.reference, second, NULL, 0, ""};
    }
    gpu_clock_watch_stop(w, &r);
    r.value = best.gbs;
    r.second = best.second;
    char how[160], memcpy_note[128] = "";
    if (best.entry)
        snprintf(how, sizeof how, "own float4 kernel, unroll %d, %s hints, %s (grid %d x %d)",
                 best.entry->unroll, best.entry->streaming ? "streaming (ld/st.global.cs)" : "default",
                 best.grid_kind, best.grid, BLOCK);
    else
        snprintf(how, sizeof how, "cudaMemcpyAsync device-to-device (own kernels: %.0f GB/s)",
                 r.own);
    if (kind == HBM_COPY && best.entry)
        snprintf(memcpy_note, sizeof memcpy_note, "; cudaMemcpyAsync D2D of the same arrays: %.0f GB/s",
                 r.reference);
    snprintf(r.detail, sizeof r.detail,
             "STREAM counting: %d array(s) x %.0f MiB (%.0fx L2), bytes read + bytes written, no "
             "write-allocate read (L2 writes whole 32-byte sectors); best of %d variants: %s%s; "
             "best of %d x %d",
             hbm_arrays[kind], bytes / 1048576.0, (double)bytes / c.prop.l2CacheSize, tried, how,
             memcpy_note, trials, reps);
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(d));
    CUDA_CHECK(cudaFree(sink));
    return r;
}

static gpu_result l2(const gpu_context &c)
{
    gpu_result r = gpu_result_empty();
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
    int blocks = resident_blocks(c), reps = (c.quick ? 3 : 10) * c.effort;
    int trials = (c.quick ? 2 : 5) + c.effort - 1;
    gpu_clock_watch w = gpu_clock_watch_start(c);
    gpu_timing t = gpu_time(
        [&] {
            l2_read_kernel<<<blocks, BLOCK>>>(p, n, passes, -1.0f, sink);
            CUDA_CHECK(cudaGetLastError());
        },
        reps, trials);
    gpu_clock_watch_stop(w, &r);
    r.value = gpu_rate(t, (double)bytes * passes, &r.second);
    snprintf(r.detail, sizeof r.detail,
             "reads (ld.global.cg) of %.1f MiB = L2/4; %d passes per launch; best of %d x %d",
             bytes / 1048576.0, passes, trials, reps);
    CUDA_CHECK(cudaFree(p));
    CUDA_CHECK(cudaFree(sink));
    return r;
}

static gpu_result local_read(const gpu_context &c, bool shared)
{
    gpu_result r = gpu_result_empty();
    int blocks = resident_blocks(c), passes = c.quick ? 2048 : 8192;
    int reps = (c.quick ? 3 : 10) * c.effort, trials = (c.quick ? 2 : 5) + c.effort - 1;
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
    gpu_timing t = gpu_time(
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
    r.value = gpu_rate(t, loaded, &r.second);
    snprintf(r.detail, sizeof r.detail, "%s reads of 8 KiB per block; %d blocks of %d; %d passes; best of %d x %d",
             shared ? "shared-memory" : "L1 (ld.global.ca)", blocks, BLOCK, passes, trials, reps);
    if (p)
        CUDA_CHECK(cudaFree(p));
    CUDA_CHECK(cudaFree(sink));
    return r;
}

static gpu_result pcie(const gpu_context &c, bool to_device)
{
    gpu_result r = gpu_result_empty();
    size_t bytes = (size_t)(c.quick ? 64 : 256) << 20;
    void *host, *dev;
    CUDA_CHECK(cudaMallocHost(&host, bytes));
    CUDA_CHECK(cudaMalloc(&dev, bytes));
    memset(host, 1, bytes); /* every page mapped before timing */
    CUDA_CHECK(cudaMemset(dev, 0, bytes));
    CUDA_CHECK(cudaDeviceSynchronize());
    int reps = (c.quick ? 3 : 10) * c.effort, trials = (c.quick ? 2 : 5) + c.effort - 1;
    gpu_clock_watch w = gpu_clock_watch_start(c);
    gpu_timing t = gpu_time(
        [&] {
            if (to_device)
                CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, 0));
            else
                CUDA_CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, 0));
        },
        reps, trials);
    gpu_clock_watch_stop(w, &r);
    r.value = gpu_rate(t, (double)bytes, &r.second);
    snprintf(r.detail, sizeof r.detail, "cudaMemcpyAsync of %zu MiB; pinned host memory; best of %d x %d",
             bytes >> 20, trials, reps);
    CUDA_CHECK(cudaFreeHost(host));
    CUDA_CHECK(cudaFree(dev));
    return r;
}

gpu_result gpu_mem_bandwidth(const gpu_context &c, gpu_mem_test test)
{
    switch (test) {
    case GPU_MEM_HBM_COPY: return hbm(c, HBM_COPY);
    case GPU_MEM_HBM_TRIAD: return hbm(c, HBM_TRIAD);
    case GPU_MEM_HBM_READ: return hbm(c, HBM_READ);
    case GPU_MEM_HBM_WRITE: return hbm(c, HBM_WRITE);
    case GPU_MEM_L2: return l2(c);
    case GPU_MEM_L1: return local_read(c, false);
    case GPU_MEM_SMEM: return local_read(c, true);
    case GPU_MEM_PCIE_H2D: return pcie(c, true);
    default: return pcie(c, false);
    }
}
