/* The timing pass: CUPTI's Activity API around one training step. Kernel
 * records carry the correlation id of the API call that launched them; the
 * external correlation records map those ids to the operation id pushed by the
 * step's observer. Nothing here synchronises before the end of the step. */
#include "cupti_config.h"

#ifdef HAVE_CUPTI

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <mutex>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <cupti.h>

#include "cupti_check.h"
#include "cupti_trace.h"

namespace {

/* 4 MiB buffers (CUPTI's guide suggests 1-10 MB); a resnet50 step of about
 * 900 kernels with their runtime and driver records fills well under one. */
constexpr size_t BUFFER_BYTES = 4u << 20;

struct external_id {
    uint32_t correlation;
    uint64_t op;
};

struct trace_context {
    std::mutex lock; /* the completion callback may run on a CUPTI thread */
    gpu_kernel_list kernels = {};
    std::vector<external_id> external;
    size_t dropped = 0;
    /* kernels whose start and end are both 0: CUPTI could not time them
     * (cupti_activity.h: "for lack of device memory"); a row would read 0 ns */
    size_t untimed = 0;
    /* cuptiActivityGetNextRecord failed before the end of a buffer: the rest
     * of that buffer, kernels included, is lost */
    CUptiResult unreadable = CUPTI_SUCCESS;
    bool out_of_memory = false;
    /* held for the whole pass, taking no callbacks: CUPTI allows one client,
     * and subscribing is how another (Nsight, compute-sanitizer, cuda-gdb)
     * is found before its buffers are taken over */
    CUpti_SubscriberHandle subscriber = nullptr;
};

/* CUPTI's buffer callbacks take no user pointer, so the running trace is
 * reachable only through this one pointer: set by cupti_trace_start, cleared
 * by cupti_trace_stop after the last flush. Buffers completed while it is
 * null (none should be) are freed unread. The count of callbacks under way
 * lets the stop wait for one that read the pointer just before it was cleared
 * (it counts itself before reading it) before the context is freed. */
std::atomic<trace_context *> running{nullptr};
std::atomic<int> callbacks_under_way{0};

void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    /* malloc aligns to 16 bytes on the platforms CUDA supports: CUPTI needs 8 */
    *buffer = static_cast<uint8_t *>(malloc(BUFFER_BYTES));
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;
}

void keep_record(trace_context *t, const CUpti_Activity *record)
{
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        auto *k = reinterpret_cast<const CUpti_ActivityKernel10 *>(record);
        gpu_kernel g = {};
        g.name = const_cast<char *>(k->name ? k->name : "");
        g.start_ns = k->start;
        g.end_ns = k->end;
        g.correlation = k->correlationId;
        g.stream = k->streamId;
        g.grid[0] = k->gridX, g.grid[1] = k->gridY, g.grid[2] = k->gridZ;
        g.block[0] = k->blockX, g.block[1] = k->blockY, g.block[2] = k->blockZ;
        t->untimed += k->start == 0 && k->end == 0;
        if (gpu_kernel_list_add(&t->kernels, &g))
            t->out_of_memory = true;
    } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        auto *e = reinterpret_cast<const CUpti_ActivityExternalCorrelation *>(record);
        if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
            t->external.push_back({e->correlationId, e->externalId});
    }
    /* RUNTIME and DRIVER records are enabled only for their correlation ids */
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer, size_t size,
                               size_t valid)
{
    (void)size;
    callbacks_under_way++;
    trace_context *t = running.load();
    if (t) {
        std::lock_guard<std::mutex> guard(t->lock);
        CUpti_Activity *record = nullptr;
        CUptiResult r = CUPTI_SUCCESS;
        try {
            while ((r = cuptiActivityGetNextRecord(buffer, valid, &record)) == CUPTI_SUCCESS)
                keep_record(t, record);
        } catch (const std::bad_alloc &) {
            t->out_of_memory = true;
        }
        /* MAX_LIMIT_REACHED is the end of the buffer; anything else
         * (INVALID_KIND: an incomplete or invalid record) loses the rest */
        if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_MAX_LIMIT_REACHED &&
            t->unreadable == CUPTI_SUCCESS)
            t->unreadable = r;
        size_t dropped = 0;
        if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS)
            t->dropped += dropped;
    }
    callbacks_under_way--;
    free(buffer);
}

const CUpti_ActivityKind kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
};
constexpr int N_KINDS = sizeof kinds / sizeof kinds[0];

int enable_kinds(int *enabled, char *err, size_t err_len)
{
    for (*enabled = 0; *enabled < N_KINDS; ++*enabled)
        CUPTI_CHECK(cuptiActivityEnable(kinds[*enabled]));
    return 0;
}

/* Turns the kinds off again; the first failure's code, but all are tried. */
int disable_kinds(int enabled, char *err, size_t err_len)
{
    int rc = 0;
    for (int i = 0; i < enabled; i++) {
        CUptiResult r = cuptiActivityDisable(kinds[i]);
        if (r != CUPTI_SUCCESS && rc == 0)
            rc = cupti_failed(r, "cuptiActivityDisable", __FILE__, __LINE__, err, err_len);
    }
    return rc;
}

int check_device(int device, char *err, size_t err_len)
{
    int count = 0;
    CUDA_OR_RETURN(cudaGetDeviceCount(&count));
    int current = -1;
    CUDA_OR_RETURN(cudaGetDevice(&current));
    if (current != device) {
        snprintf(err, err_len, "device %d is current, the trace was asked for device %d",
                 current, device);
        return -1;
    }
    /* the context must exist before the kinds are enabled on it */
    CUDA_OR_RETURN(cudaFree(nullptr));
    return 0;
}

/* the subscriber's callback: no domain is enabled, so it is never called */
void CUPTIAPI no_callbacks(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *) {}

} // namespace

extern "C" int cupti_trace_start(int device, char *err, size_t err_len)
{
    if (running.load()) {
        snprintf(err, err_len, "a CUPTI trace is already running in this process");
        return -1;
    }
    if (int rc = check_device(device, err, err_len))
        return rc;
    trace_context *t = new (std::nothrow) trace_context;
    if (!t) {
        snprintf(err, err_len, "out of memory for the trace context");
        return -1;
    }
    CUptiResult r = cuptiSubscribe(&t->subscriber, no_callbacks, nullptr);
    if (r != CUPTI_SUCCESS) {
        delete t;
        return cupti_failed(r, "cuptiSubscribe", __FILE__, __LINE__, err, err_len);
    }
    running.store(t);
    r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    int rc = r == CUPTI_SUCCESS ? 0
                                : cupti_failed(r, "cuptiActivityRegisterCallbacks", __FILE__,
                                               __LINE__, err, err_len);
    int enabled = 0;
    if (rc == 0)
        rc = enable_kinds(&enabled, err, err_len);
    if (rc != 0) {
        char ignored[200];
        disable_kinds(enabled, ignored, sizeof ignored);
        running.store(nullptr);
        while (callbacks_under_way.load() != 0)
            std::this_thread::yield();
        cuptiUnsubscribe(t->subscriber);
        gpu_kernel_list_free(&t->kernels);
        delete t;
    }
    return rc;
}

extern "C" int cupti_trace_push(uint64_t op, char *err, size_t err_len)
{
    CUPTI_CHECK(
        cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, op));
    return 0;
}

extern "C" int cupti_trace_pop(char *err, size_t err_len)
{
    uint64_t last = 0;
    CUPTI_CHECK(
        cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last));
    return 0;
}

extern "C" int cupti_trace_discard(char *err, size_t err_len)
{
    trace_context *t = running.load();
    if (!t) {
        snprintf(err, err_len, "no CUPTI trace is running");
        return -1;
    }
    CUDA_OR_RETURN(cudaDeviceSynchronize());
    CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    std::lock_guard<std::mutex> guard(t->lock);
    gpu_kernel_list_free(&t->kernels);
    t->external.clear();
    size_t dropped = 0;
    cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped); /* resets the count */
    t->dropped = 0;
    t->untimed = 0;
    t->unreadable = CUPTI_SUCCESS;
    t->out_of_memory = false;
    return 0;
}

extern "C" int cupti_trace_stop(gpu_kernel_list *out, char *err, size_t err_len)
{
    trace_context *t = running.load();
    if (!t) {
        snprintf(err, err_len, "no CUPTI trace is running");
        return -1;
    }
    int rc = 0;
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess)
        rc = cuda_failed(e, "cudaDeviceSynchronize()", __FILE__, __LINE__, err, err_len);
    /* every kernel has ended: a forced flush delivers all buffers, none
     * holding an incomplete record */
    CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != CUPTI_SUCCESS && rc == 0)
        rc = cupti_failed(r, "cuptiActivityFlushAll", __FILE__, __LINE__, err, err_len);
    char disable_err[300];
    int disabled = disable_kinds(N_KINDS, disable_err, sizeof disable_err);
    if (disabled && rc == 0) {
        rc = disabled;
        snprintf(err, err_len, "%s", disable_err);
    }
    /* whatever completed between the flush and the disabling */
    r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != CUPTI_SUCCESS && rc == 0)
        rc = cupti_failed(r, "cuptiActivityFlushAll", __FILE__, __LINE__, err, err_len);
    running.store(nullptr);
    while (callbacks_under_way.load() != 0)
        std::this_thread::yield();
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS)
        t->dropped += dropped;
    r = cuptiUnsubscribe(t->subscriber);
    if (r != CUPTI_SUCCESS && rc == 0)
        rc = cupti_failed(r, "cuptiUnsubscribe", __FILE__, __LINE__, err, err_len);

    if (rc == 0 && t->out_of_memory) {
        snprintf(err, err_len, "out of memory while collecting the activity records");
        rc = -1;
    }
    if (rc == 0 && t->unreadable != CUPTI_SUCCESS)
        rc = cupti_failed(t->unreadable, "cuptiActivityGetNextRecord (rest of a buffer lost)",
                          __FILE__, __LINE__, err, err_len);
    if (rc == 0 && t->untimed) {
        snprintf(err, err_len,
                 "CUPTI could not time %zu of %d kernels (start = end = 0: no device memory "
                 "for their timestamps)",
                 t->untimed, t->kernels.n);
        rc = -1;
    }
    if (rc == 0) {
        std::sort(t->external.begin(), t->external.end(),
                  [](const external_id &a, const external_id &b) {
                      return a.correlation < b.correlation;
                  });
        for (int i = 0; i < t->kernels.n; i++) {
            gpu_kernel *k = &t->kernels.v[i];
            auto it = std::lower_bound(
                t->external.begin(), t->external.end(), k->correlation,
                [](const external_id &a, uint32_t c) { return a.correlation < c; });
            if (it != t->external.end() && it->correlation == k->correlation)
                k->op = it->op;
        }
        t->kernels.dropped = t->dropped;
        *out = t->kernels;
    } else {
        gpu_kernel_list_free(&t->kernels);
    }
    delete t;
    return rc;
}

extern "C" char *cupti_demangle(const char *name)
{
    /* only Itanium-mangled names: __cxa_demangle also takes a bare type
     * encoding, so an extern "C" kernel named "f" or "Dh" would read "float"
     * or "half" */
    if (strncmp(name, "_Z", 2) != 0)
        return strdup(name);
    int status = -1;
    char *readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status == 0 && readable)
        return readable; /* malloc'd by the demangler */
    free(readable);
    return strdup(name);
}

#endif /* HAVE_CUPTI */
