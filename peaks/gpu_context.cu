/* The device a GPU run measures, and the NVML clock sampling around each test. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_bench.h"

void gpu_context_open(gpu_context *c, int device, bool quick)
{
    memset(c, 0, sizeof *c);
    c->device = device;
    c->quick = quick;
    c->effort = 1;
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(cudaGetDeviceProperties(&c->prop, device));
    c->sms = c->prop.multiProcessorCount;
    c->cc = 10 * c->prop.major + c->prop.minor;
    /* clockRate and memoryClockRate left cudaDeviceProp in CUDA 13: ask the
     * attributes, which every version has */
    int sm_khz = 0, mem_khz = 0, bus_bits = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
    c->max_sm_mhz = sm_khz / 1000.0;
    c->mem_theory_gbs = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) * 1e-9;
    char bus_id[32], why[160];
    CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device));
    c->nvml = nvml_open(bus_id, why, sizeof why);
    if (!c->nvml)
        fprintf(stderr, "peaks: NVML unavailable (%s); GPU clock fields left empty\n", why);
}

gpu_result gpu_result_empty(void)
{
    gpu_result r;
    memset(&r, 0, sizeof r);
    r.second = r.sm_mhz = r.mem_mhz = NAN;
    r.own = r.reference = r.issue_rate = NAN;
    return r;
}

void gpu_context_close(gpu_context *c)
{
    nvml_close(c->nvml);
    c->nvml = NULL;
}

gpu_clock_watch gpu_clock_watch_start(const gpu_context &c)
{
    /* 20 ms: several samples in the shortest test, negligible CPU time */
    return gpu_clock_watch{nvml_sampler_start(c.nvml, 20)};
}

void gpu_clock_watch_stop(gpu_clock_watch w, gpu_result *r)
{
    nvml_sampler_stop(w.sampler, &r->sm_mhz, &r->mem_mhz);
}
