/* The CUDA runtime calls of the CUDA backend, on the host: device memory is
 * host memory (filled with 0xff bytes, NaN in every float type, so that a
 * read of what nobody wrote shows, up to 64 MiB), streams run their work at once and in
 * order, events read the host clock, and stream capture records the work
 * into a graph that a launch replays. One device, reported as
 * FAKE_SM_COUNT SMs of compute capability 9.0. */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include <sys/mman.h>

#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include "host_launch.h"

struct CUstream_st {
    std::vector<std::function<void()>> *capture = nullptr;
};
struct CUevent_st {
    double at_ms = 0.0;
};
struct CUgraph_st {
    std::vector<std::function<void()>> work;
};
struct CUgraphExec_st {
    std::vector<std::function<void()>> work;
};

namespace {

enum { FAKE_SM_COUNT = 4 };
const size_t device_bytes = (size_t)16 << 30, poison_limit = (size_t)64 << 20;

struct allocations {
    std::map<void *, size_t> sizes;
    size_t in_use = 0;
};
allocations &allocated()
{
    static allocations a;
    return a;
}

double now_ms()
{
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double, std::milli>(clock::now().time_since_epoch()).count();
}

cudaError_t take(void **p, size_t bytes)
{
    size_t rounded = (bytes + 255) / 256 * 256;
    if (bytes > poison_limit) {
        /* the cuDNN workspace (1 GiB at plan time), which the fakes never
         * touch: pages mapped lazily, and no AddressSanitizer shadow to
         * write for it at every backend's creation */
        *p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (*p == MAP_FAILED)
            return *p = nullptr, cudaErrorMemoryAllocation;
    } else {
        *p = aligned_alloc(256, rounded ? rounded : 256);
        if (!*p)
            return cudaErrorMemoryAllocation;
        memset(*p, 0xff, rounded ? rounded : 256);
    }
    allocated().sizes[*p] = bytes;
    allocated().in_use += bytes;
    return cudaSuccess;
}

cudaError_t give_back(void *p)
{
    if (!p)
        return cudaSuccess;
    auto it = allocated().sizes.find(p);
    if (it == allocated().sizes.end())
        return cudaErrorInvalidValue;
    if (it->second > poison_limit)
        munmap(p, (it->second + 255) / 256 * 256);
    else
        free(p);
    allocated().in_use -= it->second;
    allocated().sizes.erase(it);
    return cudaSuccess;
}

} // namespace

void emu_host::run_on(cudaStream_t stream, std::function<void()> f)
{
    if (stream && stream->capture)
        stream->capture->push_back(std::move(f));
    else
        f();
}

extern "C" {

cudaError_t cudaMalloc(void **p, size_t bytes) { return take(p, bytes); }
cudaError_t cudaFree(void *p) { return give_back(p); }
cudaError_t cudaMallocHost(void **p, size_t bytes) { return take(p, bytes); }
cudaError_t cudaFreeHost(void *p) { return give_back(p); }

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind,
                            cudaStream_t stream)
{
    emu_host::run_on(stream, [=]() { memmove(dst, src, bytes); });
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    return cudaMemcpyAsync(dst, src, bytes, kind, nullptr);
}
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t stream)
{
    emu_host::run_on(stream, [=]() { memset(p, value, bytes); });
    return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int value, size_t bytes)
{
    return cudaMemsetAsync(p, value, bytes, nullptr);
}
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    *total = device_bytes;
    *free_bytes = device_bytes - allocated().in_use;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = 1;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (device != 0)
        return cudaErrorInvalidDevice;
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "host emulator (tests/emu)");
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = FAKE_SM_COUNT;
    prop->totalGlobalMem = device_bytes;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->sharedMemPerBlock = 48 << 10;
    prop->l2CacheSize = 50 << 20;
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
/* a launch the emulator refuses ends the program (cuda_emu.h), so none is pending */
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t error)
{
    static char text[64];
    snprintf(text, sizeof text, "CUDA error %d (host emulator)", (int)error);
    return text;
}
const char *cudaGetErrorName(cudaError_t error) { return cudaGetErrorString(error); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int)
{
    *stream = new CUstream_st;
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *stream) { return cudaStreamCreateWithFlags(stream, 0); }
cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    if (stream)
        delete stream->capture;
    delete stream;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    return stream && stream->capture ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    *event = new CUevent_st;
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int)
{
    return cudaEventCreate(event);
}
cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    delete event;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    emu_host::run_on(stream, [=]() { event->at_ms = now_ms(); });
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    *ms = (float)(end->at_ms - start->at_ms);
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode)
{
    if (!stream || stream->capture)
        return cudaErrorIllegalState;
    stream->capture = new std::vector<std::function<void()>>;
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
    if (!stream || !stream->capture)
        return cudaErrorIllegalState;
    *graph = new CUgraph_st{std::move(*stream->capture)};
    delete stream->capture;
    stream->capture = nullptr;
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long)
{
    *exec = new CUgraphExec_st{graph->work};
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
    for (const std::function<void()> &work : exec->work)
        emu_host::run_on(stream, work);
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    delete graph;
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    delete exec;
    return cudaSuccess;
}

cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
cudaError_t cudaProfilerStop(void) { return cudaSuccess; }

} // extern "C"
