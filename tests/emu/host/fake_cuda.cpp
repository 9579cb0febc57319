/* The CUDA runtime calls of the CUDA backend, on the host: device memory is
 * host memory (filled with 0xff bytes, NaN in every float type, so that a
 * read of what nobody wrote shows, up to 64 MiB), streams run their work at once and in
 * order, events read the host clock (or a timeline of each stream behind it:
 * FAKE_CUDA_KERNEL_MS, below), and stream capture records the work into a
 * graph that a launch replays. One device, reported as
 * FAKE_SM_COUNT SMs of compute capability 9.0.
 * Capture keeps the rules a GPU enforces on the capturing thread (global and
 * thread-local modes): a call that may synchronise (allocation, free,
 * cudaMemcpy, cudaMemset, any synchronize or query) fails with
 * cudaErrorStreamCaptureUnsupported, and work for the legacy default stream
 * is cudaErrorStreamCaptureImplicit; either invalidates the capture, whose
 * end then fails with cudaErrorStreamCaptureInvalidated.
 * FAKE_CUDA_DEFER=all or =N (below) runs each stream's work, or the N-th
 * stream's, as late as the program lets it instead of at once, so that a
 * missing wait between streams, or between a stream and the host, changes
 * what the program computes. */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <sys/mman.h>

#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include "footprint.h"
#include "host_launch.h"

struct CUstream_st {
    std::vector<std::function<void()>> *capture = nullptr;
    bool capture_invalidated = false;
    uint32_t id = 0; /* as CUPTI numbers streams */
    /* when the work queued on it so far will have run (FAKE_CUDA_KERNEL_MS),
     * infinity once a reduction on it hangs (emu_host::stream_hangs) */
    std::atomic<double> free_at_ms{0.0};
    bool blocking = true; /* not cudaStreamNonBlocking: ordered with the legacy stream */
    /* FAKE_CUDA_DEFER: the work queued and not yet run, how much was ever
     * queued, and how much has run (shared with the events recorded on it,
     * which may outlive the stream) */
    std::deque<std::function<void()>> pending;
    uint64_t queued = 0;
    std::shared_ptr<std::atomic<uint64_t>> ran = std::make_shared<std::atomic<uint64_t>>(0);
    bool draining = false;
    int ordinal = 0; /* 1 for the first stream the process creates */
    std::thread::id owner; /* the thread that queued its latest work */
};
struct CUevent_st {
    std::atomic<double> at_ms{0.0}; /* read by a watchdog thread too */
    /* FAKE_CUDA_DEFER: done once `ran` reaches `position` (the stream's
     * count when the event was recorded); no `ran`: done */
    CUstream_st *stream = nullptr;
    std::shared_ptr<std::atomic<uint64_t>> ran;
    uint64_t position = 0;
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

uint64_t now_ns()
{
    using clock = std::chrono::steady_clock;
    return (uint64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
               clock::now().time_since_epoch())
        .count();
}

/* FAKE_CUDA_KERNEL_MS=N: a GPU that runs behind the host, as a real one
 * does once the host has queued ahead of it. Every piece of work queued
 * (kernel, library call, copy, memset) takes N ms of its stream's timeline;
 * streams run side by side (as many at once as there are), a stream waiting
 * on an event goes on no sooner than the event's work has run, and the
 * legacy default stream and the blocking streams wait for each other (a
 * cudaStreamNonBlocking stream waits for neither). An event
 * is done when the work queued before it on its stream is, a query says so,
 * and the waits (event, stream and device synchronize, cudaMemcpy,
 * cudaMemset) sleep until then. The work itself still runs on the host at
 * once; unset, every timeline is the host clock. */
double kernel_ms()
{
    static const double ms = [] {
        const char *text = getenv("FAKE_CUDA_KERNEL_MS");
        double v = text ? atof(text) : 0.0;
        return v > 0.0 && v < 1e4 ? v : 0.0;
    }();
    return ms;
}

CUstream_st &legacy_stream()
{
    static CUstream_st legacy;
    return legacy;
}

/* the streams made and not yet destroyed, for the device's timeline, and
 * when the work of those destroyed will have run (a GPU finishes it) */
struct stream_list {
    std::mutex lock;
    std::vector<CUstream_st *> all;
    double retired_at_ms = 0.0, retired_blocking_at_ms = 0.0;
};
stream_list &streams()
{
    static stream_list l;
    return l;
}

/* when the work queued so far on the legacy stream and every stream (or
 * every blocking one) will have run */
double streams_done_at(bool blocking_only)
{
    double t = std::max(now_ms(), legacy_stream().free_at_ms.load());
    stream_list &l = streams();
    std::lock_guard<std::mutex> hold(l.lock);
    t = std::max(t, blocking_only ? l.retired_blocking_at_ms : l.retired_at_ms);
    for (CUstream_st *s : l.all)
        if (!blocking_only || s->blocking)
            t = std::max(t, s->free_at_ms.load());
    return t;
}

double device_done_at()
{
    return streams_done_at(false);
}

CUstream_st *timeline_of(cudaStream_t stream)
{
    return stream ? stream : &legacy_stream();
}

/* when the work queued so far on `stream` will have run (the legacy
 * stream's waits for the blocking streams') */
double stream_done_at(cudaStream_t stream)
{
    if (!stream || stream == &legacy_stream())
        return streams_done_at(true);
    return std::max(now_ms(), stream->free_at_ms.load());
}

/* The stream whose queued work runs on this thread now: queue() sets it, and
 * a graph's replay runs the captured work on the stream that launched it. */
thread_local CUstream_st *running = nullptr;

void runs_on(CUstream_st *s, const std::function<void()> &f)
{
    CUstream_st *outer = running;
    if (!outer)
        running = s;
    f();
    running = outer;
}

/* FAKE_CUDA_DEFER: a GPU that runs a stream's work as late as the program
 * allows, in the order that suits the program least. "all" defers every
 * stream; N (1, 2, ...) the N-th stream the process creates alone, the others
 * running their work at once, so that a stream reading another's output
 * without waiting for it runs before that output is written (N the
 * producer) or after the next one is (N the consumer); 0, unset or anything
 * else defers nothing. Work queued on a deferred stream waits there until
 * something needs it: a host wait on the stream or on an event recorded
 * after it; the device's (synchronize; cudaFree, which synchronizes); a copy
 * to pageable host memory, which returns when done; work on the legacy
 * stream, which waits for the blocking streams; a stream waiting on an event,
 * which runs the event's stream up to the event first. A query from the
 * thread that queued the work runs it (a GPU gets on with its work while the
 * host polls); one from another thread (a watchdog) says what has run and
 * runs nothing. Copies from pageable host memory take the bytes when called,
 * as the driver stages them. So a program that reads a result without
 * waiting for its stream, or a stream that reads another's output without an
 * event between them, computes something else than with the work run at
 * once, and the tests that run both ways see it. */
int deferred_ordinal()
{
    static const int ordinal = [] {
        const char *text = getenv("FAKE_CUDA_DEFER");
        if (!text)
            return 0;
        if (strcmp(text, "all") == 0)
            return -1;
        int n = atoi(text);
        return n > 0 ? n : 0;
    }();
    return ordinal;
}

bool deferring() { return deferred_ordinal() != 0; }

bool defers(const CUstream_st *s)
{
    return s && (deferred_ordinal() == -1 || deferred_ordinal() == s->ordinal);
}

/* held while work is queued or run: the draining thread may run MPI inside
 * (fake_nccl.cpp), so the watchdog's queries never take it */
std::recursive_mutex &defer_lock()
{
    static std::recursive_mutex m;
    return m;
}

/* guards the events' (ran, position) against the watchdog's reads */
std::mutex &event_lock()
{
    static std::mutex m;
    return m;
}

/* runs s's queued work until `upto` pieces of it have run */
void drain(CUstream_st *s, uint64_t upto)
{
    std::lock_guard<std::recursive_mutex> hold(defer_lock());
    if (s->ran->load() >= upto)
        return;
    if (s->draining) { /* a wait on work queued after the waiting work: no GPU ends it */
        fprintf(stderr, "fake cuda: stream %u waits on its own later work\n", s->id);
        abort();
    }
    s->draining = true;
    CUstream_st *outer = running;
    while (s->ran->load() < upto && !s->pending.empty()) {
        std::function<void()> f = std::move(s->pending.front());
        s->pending.pop_front();
        running = s;
        f();
        s->ran->fetch_add(1);
    }
    running = outer;
    s->draining = false;
}

void drain_all(CUstream_st *s)
{
    std::lock_guard<std::recursive_mutex> hold(defer_lock());
    drain(s, s->queued);
}

/* every stream's queued work (or every blocking stream's) */
void drain_streams(bool blocking_only)
{
    std::lock_guard<std::recursive_mutex> hold(defer_lock());
    std::vector<CUstream_st *> all;
    {
        stream_list &l = streams();
        std::lock_guard<std::mutex> hold_list(l.lock);
        all = l.all;
    }
    for (CUstream_st *s : all)
        if (!blocking_only || s->blocking)
            drain_all(s);
}

/* where a deferred stream's work stands against a point of it: an event's
 * record, or all its work */
struct stream_point {
    CUstream_st *stream = nullptr;
    std::shared_ptr<std::atomic<uint64_t>> ran; /* null: nothing deferred, done */
    uint64_t position = 0;
    bool done() const { return !ran || ran->load() >= position; }
};

/* the latest record of `event`, as a wait or a query at this moment names it */
stream_point record_of(cudaEvent_t event)
{
    std::lock_guard<std::mutex> hold(event_lock());
    return {event->stream, event->ran, event->position};
}

/* runs what `at` waits for: its stream up to the point */
void drain_to(const stream_point &at)
{
    if (!at.done())
        drain(at.stream, at.position);
}

/* A query of `at`: the querying thread's own queued work runs up to it,
 * another thread's is left alone; whether it is done. */
bool done_when_queried(const stream_point &at)
{
    if (at.done())
        return true;
    std::unique_lock<std::recursive_mutex> hold(defer_lock(), std::try_to_lock);
    if (!hold.owns_lock())
        return false; /* another thread is running work */
    if (at.done())
        return true; /* its stream may be gone: destroyed streams are drained first */
    if (at.stream->owner == std::this_thread::get_id())
        drain(at.stream, at.position);
    return at.done();
}

void running_stream_works()
{
    if (kernel_ms() <= 0.0)
        return;
    CUstream_st *s = running ? running : &legacy_stream();
    double start = stream_done_at(s);
    if (s != &legacy_stream() && s->blocking)
        start = std::max(start, legacy_stream().free_at_ms.load());
    s->free_at_ms.store(start + kernel_ms());
}

cudaError_t wait_for_device(double until_ms)
{
    while (now_ms() < until_ms)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    return cudaSuccess;
}

std::atomic<const emu_host::kernel_observer *> &observer()
{
    static std::atomic<const emu_host::kernel_observer *> o{nullptr};
    return o;
}

/* CUPTI numbers the legacy default stream 7 and the streams of a context
 * from there on */
uint32_t next_stream_id()
{
    static std::atomic<uint32_t> next{13};
    return next++;
}

/* FAKE_CUDA_DEVICES=N (1 to 8, default 1): as many devices, all the same
 * host memory, so that one rank per device can run on one machine */
/* the device this process chose; every device is the same host memory */
int current_device;

int device_count()
{
    const char *text = getenv("FAKE_CUDA_DEVICES");
    int n = text ? atoi(text) : 1;
    return n >= 1 && n <= 8 ? n : 1;
}

/* FAKE_CUDA_MEMORY_MB=N: the device holds N MiB (default 16 GiB), so that
 * running out of device memory can be tested */
size_t device_bytes_now()
{
    const char *text = getenv("FAKE_CUDA_MEMORY_MB");
    long mb = text ? atol(text) : 0;
    return mb > 0 ? (size_t)mb << 20 : device_bytes;
}

/* FAKE_CUDA_CC=MN: the device's compute capability M.N (default 9.0), so that
 * a GPU without a precision can be tested */
int device_cc()
{
    const char *text = getenv("FAKE_CUDA_CC");
    int cc = text ? atoi(text) : 90;
    return cc >= 10 && cc <= 129 ? cc : 90;
}

cudaError_t take(void **p, size_t bytes)
{
    size_t rounded = (bytes + 255) / 256 * 256;
    if (allocated().in_use + bytes > device_bytes_now())
        return *p = nullptr, cudaErrorMemoryAllocation;
    if (emu_host::footprint_on()) {
        /* pages of its own, which the meter closes around each kernel */
        *p = emu_host::footprint_map(bytes);
        if (!*p)
            return cudaErrorMemoryAllocation;
        if (bytes <= poison_limit)
            memset(*p, 0xff, bytes);
    } else if (bytes > poison_limit) {
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
    if (emu_host::footprint_on())
        emu_host::footprint_unmap(p, it->second);
    else if (it->second > poison_limit)
        munmap(p, (it->second + 255) / 256 * 256);
    else
        free(p);
    allocated().in_use -= it->second;
    allocated().sizes.erase(it);
    return cudaSuccess;
}

bool emulated_memory(const void *p)
{
    const std::map<void *, size_t> &sizes = allocated().sizes;
    auto after = sizes.upper_bound(const_cast<void *>(p));
    if (after == sizes.begin())
        return false;
    auto at = std::prev(after);
    return (const char *)p < (const char *)at->first + std::max<size_t>(at->second, 1);
}

struct error_text {
    cudaError_t code;
    const char *name, *text;
};
const error_text *text_of(cudaError_t error)
{
    static const error_text known[] = {
        {cudaSuccess, "cudaSuccess", "no error"},
        {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
        {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
        {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
        {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
         "operation not permitted when stream is capturing"},
        {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit",
         "operation would make the legacy stream depend on a capturing blocking stream"},
        {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
         "operation failed due to a previous error during capture"},
        {cudaErrorIllegalState, "cudaErrorIllegalState",
         "the operation cannot be performed in the present state"},
    };
    static const error_text unknown = {cudaErrorUnknown, "cudaErrorUnknown",
                                       "unknown error (host emulator)"};
    for (const error_text &e : known)
        if (e.code == error)
            return &e;
    return &unknown;
}

/* the streams this thread is capturing (a GPU's thread-local view) */
thread_local std::vector<cudaStream_t> capturing_here;

/* A call that a capture on this thread forbids: the capture is invalidated
 * and the call fails with why (cudaSuccess where nothing is captured). */
cudaError_t refused_while_capturing(cudaError_t why)
{
    if (capturing_here.empty())
        return cudaSuccess;
    for (cudaStream_t s : capturing_here)
        s->capture_invalidated = true;
    return why;
}

/* stream no longer captured by this thread */
void stop_capturing(cudaStream_t stream)
{
    capturing_here.erase(std::remove(capturing_here.begin(), capturing_here.end(), stream),
                         capturing_here.end());
}

cudaError_t refused_while_capturing()
{
    return refused_while_capturing(cudaErrorStreamCaptureUnsupported);
}

/* the error a launch left for cudaGetLastError, as a GPU keeps it */
thread_local cudaError_t launch_error = cudaSuccess;

/* f queued on stream, or the error that refuses it; work (not an event's
 * record) takes its time on the device timeline */
cudaError_t queue(cudaStream_t stream, std::function<void()> f, bool work = true)
{
    if (!stream) {
        cudaError_t refused = refused_while_capturing(cudaErrorStreamCaptureImplicit);
        if (refused != cudaSuccess)
            return refused; /* none of it runs: the capture is lost, its end says so */
    }
    if (work && kernel_ms() > 0.0)
        f = [run = std::move(f)]() {
            run();
            running_stream_works();
        };
    if (stream && stream->capture) {
        stream->capture->push_back(std::move(f));
    } else if (defers(stream)) {
        std::lock_guard<std::recursive_mutex> hold(defer_lock());
        stream->pending.push_back(std::move(f));
        stream->queued++;
        stream->owner = std::this_thread::get_id();
    } else {
        if (deferring()) /* the legacy stream waits for the blocking streams */
            drain_streams(true);
        runs_on(timeline_of(stream), f);
    }
    return cudaSuccess;
}

} // namespace

void emu_host::stream_hangs()
{
    (running ? running : &legacy_stream())->free_at_ms.store(INFINITY);
}

void emu_host::run_on(cudaStream_t stream, std::function<void()> f)
{
    cudaError_t e = queue(stream, std::move(f));
    if (e != cudaSuccess)
        launch_error = e;
}

/* counted_fmaf's calls on this thread: a kernel's fibers run on the thread
 * that runs the kernel */
static thread_local uint64_t fmas_counted;

float emu_host::counted_fmaf(float a, float b, float c)
{
    fmas_counted++;
    return fmaf(a, b, c);
}

void emu_host::observe_kernels(const kernel_observer *o) { observer().store(o); }

void emu_host::run_kernel(cudaStream_t stream, const char *name, dim3 grid, dim3 block,
                          std::function<void()> f, const kernel_work &work)
{
    const kernel_observer *o = observer().load();
    if (!o) {
        run_on(stream, std::move(f));
        return;
    }
    uint32_t correlation = o->launched(name);
    uint32_t stream_id = stream ? stream->id : 7;
    run_on(stream, [=]() {
        uint64_t fmas_before = fmas_counted;
        kernel_work done = work;
        bool metered = emu_host::footprint_on();
        if (metered)
            emu_host::footprint_begin(allocated().sizes);
        uint64_t start = now_ns();
        f();
        /* a GPU kernel takes at least a microsecond; a record of 0 ns reads as untimed */
        uint64_t end = std::max(now_ns(), start + 1000);
        if (metered) /* what the kernel touched, not what a stand-in says it moves */
            emu_host::footprint_end(&done.bytes_read, &done.bytes_written);
        done.ffma += (double)(fmas_counted - fmas_before);
        /* the observer of the launch: records stop when tracing stops */
        if (const kernel_observer *now = observer().load())
            now->ran(correlation, name, grid, block, stream_id, start, end, done);
    });
}

extern "C" {

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    if (cudaError_t refused = refused_while_capturing())
        return *p = nullptr, refused;
    return take(p, bytes);
}
cudaError_t cudaFree(void *p)
{
    if (cudaError_t refused = refused_while_capturing())
        return refused;
    if (deferring()) /* cudaFree synchronizes the device */
        drain_streams(false);
    return give_back(p);
}
cudaError_t cudaMallocHost(void **p, size_t bytes) { return cudaMalloc(p, bytes); }
cudaError_t cudaFreeHost(void *p) { return cudaFree(p); }

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind,
                            cudaStream_t stream)
{
    if (defers(stream) && !stream->capture) {
        if (!emulated_memory(src)) { /* pageable: the driver stages it before returning */
            auto staged = std::make_shared<std::vector<uint8_t>>((const uint8_t *)src,
                                                                 (const uint8_t *)src + bytes);
            return queue(stream, [=]() { memmove(dst, staged->data(), bytes); });
        }
        if (!emulated_memory(dst)) { /* to pageable memory: returns once copied */
            cudaError_t e = queue(stream, [=]() { memmove(dst, src, bytes); });
            if (e == cudaSuccess)
                drain_all(stream);
            return e;
        }
    }
    return queue(stream, [=]() { memmove(dst, src, bytes); });
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind)
{
    if (cudaError_t refused = refused_while_capturing())
        return refused;
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, nullptr);
    return e == cudaSuccess ? wait_for_device(stream_done_at(nullptr)) : e;
}
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t stream)
{
    return queue(stream, [=]() { memset(p, value, bytes); });
}
cudaError_t cudaMemset(void *p, int value, size_t bytes)
{
    if (cudaError_t refused = refused_while_capturing())
        return refused;
    cudaError_t e = cudaMemsetAsync(p, value, bytes, nullptr);
    return e == cudaSuccess ? wait_for_device(stream_done_at(nullptr)) : e;
}
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    *total = device_bytes_now();
    *free_bytes = *total - std::min(*total, allocated().in_use);
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = device_count();
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device)
{
    if (device < 0 || device >= device_count())
        return cudaErrorInvalidDevice;
    current_device = device;
    return cudaSuccess;
}
cudaError_t cudaGetDevice(int *device)
{
    *device = current_device;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (device < 0 || device >= device_count())
        return cudaErrorInvalidDevice;
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "host emulator (tests/emu)");
    prop->major = device_cc() / 10;
    prop->minor = device_cc() % 10;
    prop->multiProcessorCount = FAKE_SM_COUNT;
    prop->totalGlobalMem = device_bytes_now();
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->sharedMemPerBlock = 48 << 10;
    prop->l2CacheSize = 50 << 20;
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void)
{
    cudaError_t e = refused_while_capturing();
    if (e == cudaSuccess && deferring())
        drain_streams(false);
    return e == cudaSuccess ? wait_for_device(device_done_at()) : e;
}
/* a launch the emulator refuses ends the program (cuda_emu.h): the one error
 * kept is a launch that a capture refused */
cudaError_t cudaGetLastError(void)
{
    cudaError_t e = launch_error;
    launch_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError(void) { return launch_error; }
/* the runtime's own names and words for the errors the stand-ins return */
const char *cudaGetErrorString(cudaError_t error) { return text_of(error)->text; }
const char *cudaGetErrorName(cudaError_t error) { return text_of(error)->name; }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags)
{
    *stream = new CUstream_st;
    (*stream)->id = next_stream_id();
    (*stream)->blocking = !(flags & cudaStreamNonBlocking);
    static std::atomic<int> created{0};
    (*stream)->ordinal = ++created;
    stream_list &l = streams();
    std::lock_guard<std::mutex> hold(l.lock);
    l.all.push_back(*stream);
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *stream, unsigned int flags, int)
{
    return cudaStreamCreateWithFlags(stream, flags);
}
/* as on an H100: 0 the lowest priority, -5 the highest */
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    if (least)
        *least = 0;
    if (greatest)
        *greatest = -5;
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *stream) { return cudaStreamCreateWithFlags(stream, 0); }
cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    if (stream) {
        if (deferring() && !stream->capture) /* a GPU finishes the work of a stream destroyed */
            drain_all(stream);
        delete stream->capture;
        stop_capturing(stream);
        stream_list &l = streams();
        std::lock_guard<std::mutex> hold(l.lock);
        l.all.erase(std::remove(l.all.begin(), l.all.end(), stream), l.all.end());
        double pending = stream->free_at_ms.load();
        l.retired_at_ms = std::max(l.retired_at_ms, pending);
        if (stream->blocking)
            l.retired_blocking_at_ms = std::max(l.retired_blocking_at_ms, pending);
    }
    delete stream;
    return cudaSuccess;
}
static cudaError_t stream_may_wait(cudaStream_t stream)
{
    if (stream && stream->capture)
        return stream->capture_invalidated = true, cudaErrorStreamCaptureUnsupported;
    return refused_while_capturing();
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    cudaError_t e = stream_may_wait(stream);
    if (e == cudaSuccess && deferring()) {
        if (stream && stream != &legacy_stream())
            drain_all(stream);
        else
            drain_streams(true);
    }
    return e == cudaSuccess ? wait_for_device(stream_done_at(stream)) : e;
}
/* deferred work still queued once queried (done_when_queried) */
static bool stream_pending(cudaStream_t stream)
{
    if (!deferring() || !stream)
        return false;
    std::unique_lock<std::recursive_mutex> hold(defer_lock(), std::try_to_lock);
    if (!hold.owns_lock())
        return true; /* another thread is running work */
    return !done_when_queried({stream, stream->ran, stream->queued});
}
cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    cudaError_t e = stream_may_wait(stream);
    if (e != cudaSuccess)
        return e;
    /* the stream's end first: it reads the clock too, never before this */
    double done_at = stream_done_at(stream);
    return stream_pending(stream) || now_ms() < done_at ? cudaErrorNotReady : cudaSuccess;
}
/* the stream's later work starts when the event's has run */
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int)
{
    if (!stream) {
        if (deferring())
            drain_to(record_of(event));
        CUstream_st &legacy = legacy_stream();
        legacy.free_at_ms.store(std::max(legacy.free_at_ms.load(), event->at_ms.load()));
        return cudaSuccess;
    }
    /* the record the wait names is the latest one at the time of the call */
    stream_point after = deferring() ? record_of(event) : stream_point();
    return queue(stream, [=]() {
        drain_to(after);
        /* running: this stream, or at a replay the graph's launching stream */
        double after = event->at_ms.load();
        if (after > running->free_at_ms.load())
            running->free_at_ms.store(after);
    }, false);
}

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
    std::unique_lock<std::recursive_mutex> hold(defer_lock(), std::defer_lock);
    if (deferring())
        hold.lock(); /* queued and numbered at once */
    cudaError_t e = queue(stream, [=]() { event->at_ms = stream_done_at(running); }, false);
    if (e == cudaSuccess && deferring() && !(stream && stream->capture)) {
        std::lock_guard<std::mutex> hold_event(event_lock());
        bool queued = defers(stream); /* elsewhere the record has run already */
        event->stream = queued ? stream : nullptr;
        event->ran = queued ? stream->ran : nullptr;
        event->position = queued ? stream->queued : 0;
    }
    return e;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    cudaError_t e = refused_while_capturing();
    if (e == cudaSuccess && deferring())
        drain_to(record_of(event));
    return e == cudaSuccess ? wait_for_device(event->at_ms) : e;
}
/* FAKE_CUDA_EVENTS_PENDING=1: no event is ever reported done, as a GPU
 * shows a collective whose peer died */
cudaError_t cudaEventQuery(cudaEvent_t event)
{
    cudaError_t e = refused_while_capturing();
    if (e == cudaSuccess && (getenv("FAKE_CUDA_EVENTS_PENDING") || now_ms() < event->at_ms ||
                             (deferring() && !done_when_queried(record_of(event)))))
        return cudaErrorNotReady;
    return e;
}
/* as a GPU: an event whose work has not run has no time yet */
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (deferring() && (!record_of(start).done() || !record_of(end).done()))
        return cudaErrorNotReady;
    *ms = (float)(end->at_ms - start->at_ms);
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    if (!stream || stream->capture)
        return cudaErrorIllegalState;
    stream->capture = new std::vector<std::function<void()>>;
    stream->capture_invalidated = false;
    /* relaxed mode forbids nothing */
    if (mode != cudaStreamCaptureModeRelaxed)
        capturing_here.push_back(stream);
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
    if (!stream || !stream->capture)
        return cudaErrorIllegalState;
    stop_capturing(stream);
    bool invalidated = stream->capture_invalidated;
    *graph = invalidated ? nullptr : new CUgraph_st{std::move(*stream->capture)};
    delete stream->capture;
    stream->capture = nullptr;
    return invalidated ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long)
{
    *exec = new CUgraphExec_st{graph->work};
    return cudaSuccess;
}
cudaError_t cudaGraphUpload(cudaGraphExec_t exec, cudaStream_t stream)
{
    return exec && stream ? cudaSuccess : cudaErrorInvalidValue;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
    /* captured work already takes its device time when it runs */
    for (const std::function<void()> &work : exec->work)
        if (cudaError_t e = queue(stream, work, false))
            return e;
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

/* The driver's cuCtxGetCurrent, which CUPTI's profiler needs (the context
 * to enable it on): one context, the device's; every other entry point is
 * not found. */
static CUresult CUDAAPI current_context(CUcontext *ctx)
{
    static int the_context;
    *ctx = reinterpret_cast<CUcontext>(&the_context);
    return CUDA_SUCCESS;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int,
                                             unsigned long long,
                                             cudaDriverEntryPointQueryResult *found)
{
    bool known = symbol && strcmp(symbol, "cuCtxGetCurrent") == 0;
    *fn = known ? reinterpret_cast<void *>(current_context) : nullptr;
    if (found)
        *found = known ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess;
}

/* FAKE_CUDA_SAY_PROFILER=1: each call says so on stderr (which step
 * ROOFLINE_PROFILE_STEP brackets is tested through them) */
static cudaError_t say_profiler(const char *call)
{
    if (getenv("FAKE_CUDA_SAY_PROFILER"))
        fprintf(stderr, "fake cuda: %s\n", call);
    return cudaSuccess;
}
cudaError_t cudaProfilerStart(void) { return say_profiler("cudaProfilerStart"); }
cudaError_t cudaProfilerStop(void) { return say_profiler("cudaProfilerStop"); }

} // extern "C"
