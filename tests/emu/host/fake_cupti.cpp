/* CUPTI on the host emulator, for bin/train's trace pass: the Activity API
 * sees every emulated kernel (the backend's own, and the stand-ins' cuDNN,
 * cuBLASLt and NCCL calls) as CUPTI would: a CONCURRENT_KERNEL record with
 * name, start, end, grid, block and the correlation id taken at launch, and
 * an EXTERNAL_CORRELATION record binding that id to the operation pushed at
 * launch time. Buffers come from the client's callbacks and go back through
 * its completion callback at a flush, read with cuptiActivityGetNextRecord.
 * The metric pass's calls (the profiler, the driver's launch callbacks) are
 * fake_cupti_profiler.cpp's; the one observer of emulated kernels here
 * serves both. */
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <cupti.h>

#include "fake_cupti.h"
#include "host_launch.h"

namespace {

struct activity_state {
    std::mutex lock;
    std::set<CUpti_ActivityKind> enabled;
    CUpti_BuffersCallbackRequestFunc requested = nullptr;
    CUpti_BuffersCallbackCompleteFunc completed = nullptr;
    /* records not yet delivered, each padded to 8 bytes */
    std::vector<uint8_t> pending;
    std::set<std::string> names; /* the kernel names records point into */
    std::vector<uint64_t> external[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];
    uint32_t correlation = 0;
};

activity_state &state()
{
    static activity_state s;
    return s;
}

size_t padded(size_t bytes) { return (bytes + 7) / 8 * 8; }

size_t record_bytes(CUpti_ActivityKind kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        return padded(sizeof(CUpti_ActivityKernel10));
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        return padded(sizeof(CUpti_ActivityExternalCorrelation));
    default:
        return 0;
    }
}

template <typename R> void keep(activity_state &s, const R &record)
{
    const uint8_t *bytes = reinterpret_cast<const uint8_t *>(&record);
    s.pending.insert(s.pending.end(), bytes, bytes + sizeof record);
    s.pending.resize(s.pending.size() + padded(sizeof record) - sizeof record, 0);
}

uint32_t activity_launched()
{
    activity_state &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    uint32_t id = ++s.correlation;
    if (!s.enabled.count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION))
        return id;
    for (int kind = 0; kind < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; kind++) {
        if (s.external[kind].empty())
            continue;
        CUpti_ActivityExternalCorrelation r = {};
        r.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
        r.externalKind = (CUpti_ExternalCorrelationKind)kind;
        r.externalId = s.external[kind].back();
        r.correlationId = id;
        keep(s, r);
    }
    return id;
}

void activity_ran(uint32_t correlation, const char *name, dim3 grid, dim3 block,
                  uint32_t stream_id, uint64_t start_ns, uint64_t end_ns)
{
    activity_state &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    if (!s.enabled.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))
        return;
    CUpti_ActivityKernel10 r = {};
    r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    r.name = s.names.insert(name).first->c_str();
    r.start = start_ns;
    r.end = end_ns;
    r.correlationId = correlation;
    r.streamId = stream_id;
    r.contextId = 1;
    r.gridX = (int32_t)grid.x, r.gridY = (int32_t)grid.y, r.gridZ = (int32_t)grid.z;
    r.blockX = (int32_t)block.x, r.blockY = (int32_t)block.y, r.blockZ = (int32_t)block.z;
    keep(s, r);
}

uint32_t kernel_launched(const char *name)
{
    uint32_t id = activity_launched();
    fake_cupti::profiler_launched(name);
    return id;
}

void kernel_ran(uint32_t correlation, const char *name, dim3 grid, dim3 block,
                uint32_t stream_id, uint64_t start_ns, uint64_t end_ns,
                const emu_host::kernel_work &work)
{
    activity_ran(correlation, name, grid, block, stream_id, start_ns, end_ns);
    fake_cupti::profiler_ran(work);
}

const emu_host::kernel_observer observer = {kernel_launched, kernel_ran};

} // namespace

void fake_cupti::watch_kernels()
{
    /* the decision and the store as one step: two threads changing what is
     * watched must not leave the older decision in place */
    static std::mutex watch_lock;
    std::lock_guard<std::mutex> watching(watch_lock);
    bool tracing;
    {
        std::lock_guard<std::mutex> guard(state().lock);
        tracing = !state().enabled.empty();
    }
    emu_host::observe_kernels(tracing || profiler_watches() ? &observer : nullptr);
}

extern "C" {

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
    static const struct {
        CUptiResult code;
        const char *name;
    } known[] = {
        {CUPTI_SUCCESS, "CUPTI_SUCCESS"},
        {CUPTI_ERROR_INVALID_PARAMETER, "CUPTI_ERROR_INVALID_PARAMETER"},
        {CUPTI_ERROR_INVALID_OPERATION, "CUPTI_ERROR_INVALID_OPERATION"},
        {CUPTI_ERROR_INVALID_METRIC_NAME, "CUPTI_ERROR_INVALID_METRIC_NAME"},
        {CUPTI_ERROR_INVALID_DEVICE, "CUPTI_ERROR_INVALID_DEVICE"},
        {CUPTI_ERROR_INVALID_CONTEXT, "CUPTI_ERROR_INVALID_CONTEXT"},
        {CUPTI_ERROR_MAX_LIMIT_REACHED, "CUPTI_ERROR_MAX_LIMIT_REACHED"},
        {CUPTI_ERROR_NOT_INITIALIZED, "CUPTI_ERROR_NOT_INITIALIZED"},
        {CUPTI_ERROR_HARDWARE_BUSY, "CUPTI_ERROR_HARDWARE_BUSY"},
        {CUPTI_ERROR_NOT_SUPPORTED, "CUPTI_ERROR_NOT_SUPPORTED"},
        {CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"},
        {CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
         "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"},
        {CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED, "CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED"},
        {CUPTI_ERROR_INVALID_CHIP_NAME, "CUPTI_ERROR_INVALID_CHIP_NAME"},
    };
    for (const auto &k : known)
        if (k.code == result) {
            *str = k.name;
            return CUPTI_SUCCESS;
        }
    *str = "CUPTI_ERROR_UNKNOWN";
    return CUPTI_ERROR_INVALID_PARAMETER;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                    CUpti_BuffersCallbackCompleteFunc completed)
{
    if (!requested || !completed)
        return CUPTI_ERROR_INVALID_PARAMETER;
    std::lock_guard<std::mutex> guard(state().lock);
    state().requested = requested;
    state().completed = completed;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
    {
        std::lock_guard<std::mutex> guard(state().lock);
        state().enabled.insert(kind);
    }
    fake_cupti::watch_kernels();
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
    {
        std::lock_guard<std::mutex> guard(state().lock);
        state().enabled.erase(kind);
    }
    fake_cupti::watch_kernels();
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                            uint64_t id)
{
    if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
        kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    std::lock_guard<std::mutex> guard(state().lock);
    state().external[kind].push_back(id);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                           uint64_t *last)
{
    if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
        kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    std::lock_guard<std::mutex> guard(state().lock);
    std::vector<uint64_t> &stack = state().external[kind];
    if (stack.empty())
        return CUPTI_ERROR_QUEUE_EMPTY;
    if (last)
        *last = stack.back();
    stack.pop_back();
    return CUPTI_SUCCESS;
}

/* Every pending record goes out, in as many of the client's buffers as it
 * takes; the completion callback runs on the calling thread, without the
 * lock (it reads records through cuptiActivityGetNextRecord). */
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t)
{
    activity_state &s = state();
    std::vector<uint8_t> records;
    CUpti_BuffersCallbackRequestFunc requested;
    CUpti_BuffersCallbackCompleteFunc completed;
    {
        std::lock_guard<std::mutex> guard(s.lock);
        records.swap(s.pending);
        requested = s.requested;
        completed = s.completed;
    }
    if (records.empty())
        return CUPTI_SUCCESS;
    if (!requested)
        return CUPTI_ERROR_INVALID_OPERATION;
    size_t at = 0;
    while (at < records.size()) {
        uint8_t *buffer = nullptr;
        size_t size = 0, max_records = 0;
        requested(&buffer, &size, &max_records);
        if (!buffer || size == 0)
            return CUPTI_ERROR_OUT_OF_MEMORY; /* CUPTI drops them; none are lost here silently */
        size_t valid = 0, n = 0;
        while (at + valid < records.size() && (max_records == 0 || n < max_records)) {
            auto *r = reinterpret_cast<const CUpti_Activity *>(records.data() + at + valid);
            size_t bytes = record_bytes(r->kind);
            if (valid + bytes > size)
                break;
            valid += bytes, n++;
        }
        if (valid == 0)
            return CUPTI_ERROR_INVALID_PARAMETER; /* a buffer smaller than one record */
        memcpy(buffer, records.data() + at, valid);
        at += valid;
        completed(nullptr, 0, buffer, size, valid);
    }
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
                                                CUpti_Activity **record)
{
    size_t at = 0;
    if (*record) {
        at = (size_t)(reinterpret_cast<uint8_t *>(*record) - buffer);
        at += record_bytes((*record)->kind);
    }
    if (at >= valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    auto *next = reinterpret_cast<CUpti_Activity *>(buffer + at);
    if (record_bytes(next->kind) == 0)
        return CUPTI_ERROR_INVALID_KIND;
    *record = next;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t *dropped)
{
    *dropped = 0;
    return CUPTI_SUCCESS;
}

} // extern "C"
