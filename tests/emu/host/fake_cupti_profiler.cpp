/* CUPTI's metric pass on the host emulator: the Range Profiler (auto range,
 * kernel replay), the Profiler Host API and the driver's launch callbacks,
 * with the call order, the parameter structs' sizes and the images that
 * counters/cupti_metrics.cu builds checked as far as the CUDA 13.0 headers
 * and notes/cupti.md §1 state them; a call out of order is refused
 * (CUPTI_ERROR_INVALID_OPERATION), so that the metric pass's sequence runs
 * here as it must run on a GPU.
 *
 * The device is a GH100 whose counters are permitted when
 * FAKE_CUPTI_PROFILER_ERROR=0; unset, cuptiProfilerInitialize refuses with
 * CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (no counter permission) and any other
 * value is the CUptiResult it returns (26 busy, 39 another profiler, 43 MIG).
 *
 * What the counters read is the work each stand-in states for its kernel
 * (host_launch.h, kernel_work): the cuDNN and cuBLASLt stand-ins' FFMAs or
 * tensor-core ops ("hmma" class: warp-level MMA, never the Hopper
 * warpgroup "hgmma" one) and their operands' bytes at every memory level,
 * plus the FFMAs of emu_host::counted_fmaf calls (the test-gpu checks' toy
 * kernels); the backend's own kernels state none and read 0. The images are
 * this stand-in's own layout, not CUPTI's.
 *
 * FAKE_CUPTI_HIDE_LAUNCH=k: the k-th kernel launched after a start makes no
 * launch callback (as a launch through a path the callback list misses),
 * while it still gets its range: the names and the ranges then disagree.
 * FAKE_CUPTI_NO_SYMBOL_NAME=1: the launch callbacks carry no symbol name.
 * FAKE_CUPTI_OTHER_TOOL=1: another tool (Nsight, compute-sanitizer) holds
 * CUPTI: cuptiSubscribe refuses every subscriber as CUPTI then does. */
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "fake_cupti.h"

struct CUpti_Profiler_Host_Object {
    std::vector<std::string> metrics; /* added to the configuration, with rollup */
};
struct CUpti_RangeProfiler_Object {
    CUcontext ctx = nullptr;
    /* the counter data layout asked for last (GetCounterDataSize) */
    std::vector<std::string> image_metrics;
    size_t image_ranges = 0;
    /* SetConfig's */
    uint8_t *image = nullptr;
    size_t image_size = 0, ranges_per_pass = 0;
    bool configured = false, started = false;
    std::vector<emu_host::kernel_work> ranges; /* run since the start, not yet decoded */
    long launches = 0;                         /* since the start */
    long hidden_launch = 0;                    /* FAKE_CUPTI_HIDE_LAUNCH, read at the start */
};

namespace {

const char CHIP[] = "GH100";
enum { NAME_BYTES = 96 };

/* GH100's base counters that the metric pass may choose from (a subset of
 * cuptiProfilerHostGetBaseMetrics's list on CUDA 13.0, tensor names kept).
 * Spelled out, not taken from counters/gpu_metrics.c: the chip's list must
 * not follow the suite's, or a misspelt counter would pass. */
const char *const base_counters[] = {
    "dram__bytes_read",
    "dram__bytes_write",
    "lts__t_bytes",
    "l1tex__t_bytes",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on",
    "sm__cycles_elapsed",
    "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32",
    "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_on",
    "sm__ops_path_tensor_op_hgmma_src_fp16",
    "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32",
    "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32",
    "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_on",
    "sm__ops_path_tensor_op_hmma_src_fp16",
    "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp16",
    "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32",
    "sm__ops_path_tensor_op_hmma_src_tf32_dst_fp32",
    "sm__ops_path_tensor_src_bf16_dst_fp32",
    "sm__ops_path_tensor_src_fp16",
    "sm__ops_path_tensor_src_fp64",
    "sm__ops_path_tensor_src_fp8",
    "sm__ops_path_tensor_src_tf32_dst_fp32",
};

struct profiler_state {
    std::mutex lock;
    bool initialized = false;
    CUpti_CallbackFunc callback = nullptr;
    void *userdata = nullptr;
    bool subscribed = false, driver_domain = false;
    bool no_symbol_name = false; /* FAKE_CUPTI_NO_SYMBOL_NAME=1, read at cuptiSubscribe */
    CUpti_RangeProfiler_Object *profiler = nullptr; /* one context, one object */
};

profiler_state &state()
{
    static profiler_state s;
    return s;
}

/* A parameter struct smaller than the header's for its type is a caller
 * built against another CUPTI: refused, as CUPTI refuses it. */
#define CHECK_PARAMS(p, type)                                                                 \
    do {                                                                                      \
        if (!(p) || (p)->structSize < type##_STRUCT_SIZE)                                     \
            return CUPTI_ERROR_INVALID_PARAMETER;                                             \
    } while (0)

/* "dram__bytes_read.sum" -> "dram__bytes_read"; "" without the .sum rollup
 * (the only one the metric pass asks for) */
std::string base_of(const std::string &metric)
{
    size_t dot = metric.rfind(".sum");
    return dot != std::string::npos && dot + 4 == metric.size() ? metric.substr(0, dot) : "";
}

/* A metric the chip collects, with its rollup, that fits an image's name slot. */
bool valid_metric(const char *name)
{
    if (!name || strlen(name) >= NAME_BYTES)
        return false;
    std::string base = base_of(name);
    for (const char *c : base_counters)
        if (base == c)
            return true;
    return false;
}

/* Does the tensor counter's source part list `type`? */
bool lists_source(const std::string &name, const char *type)
{
    size_t src = name.find("_src_");
    if (src == std::string::npos)
        return false;
    std::string rest = name.substr(src + 5);
    size_t dst = rest.find("_dst_");
    std::string sources = "_" + rest.substr(0, dst) + "_";
    return sources.find(std::string("_") + type + "_") != std::string::npos;
}

/* A counter's value for one kernel's stated work. */
double value_of(const std::string &base, const emu_host::kernel_work &w)
{
    if (base == "dram__bytes_read")
        return w.bytes_read;
    if (base == "dram__bytes_write")
        return w.bytes_written;
    if (base == "lts__t_bytes" || base == "l1tex__t_bytes")
        return w.bytes_read + w.bytes_written;
    if (base == "smsp__sass_thread_inst_executed_op_ffma_pred_on")
        return w.ffma;
    bool warp_mma = base.rfind("sm__ops_path_tensor_op_hmma_", 0) == 0 ||
                    base.rfind("sm__ops_path_tensor_src_", 0) == 0;
    if (warp_mma && w.tensor_src && lists_source(base, w.tensor_src) &&
        base.find("_sparsity_on") == std::string::npos &&
        (base.find("_dst_") == std::string::npos || base.find("_dst_fp32") != std::string::npos))
        return w.tensor_ops;
    return 0.0; /* fp64, other fp32 and fp16 instructions, hgmma, cycles */
}

/* ---- the images ------------------------------------------------------------ */

struct image_header {
    char magic[8];
    uint64_t metrics, max_ranges, ranges;
};
const char CONFIG_MAGIC[8] = "fakecfg", COUNTER_MAGIC[8] = "fakecdi";

size_t config_size(size_t metrics) { return sizeof(image_header) + metrics * NAME_BYTES; }
size_t counter_size(size_t metrics, size_t ranges)
{
    return sizeof(image_header) + metrics * NAME_BYTES + metrics * ranges * sizeof(double);
}

/* The header of an image of this kind, or null. */
const image_header *header_of(const uint8_t *image, size_t size, const char *magic)
{
    if (!image || size < sizeof(image_header))
        return nullptr;
    auto *h = reinterpret_cast<const image_header *>(image);
    return memcmp(h->magic, magic, sizeof h->magic) == 0 ? h : nullptr;
}

const char *name_at(const uint8_t *image, size_t i)
{
    return reinterpret_cast<const char *>(image + sizeof(image_header) + i * NAME_BYTES);
}

void write_names(uint8_t *image, const std::vector<std::string> &names)
{
    for (size_t i = 0; i < names.size(); i++)
        snprintf(reinterpret_cast<char *>(image + sizeof(image_header) + i * NAME_BYTES),
                 NAME_BYTES, "%s", names[i].c_str());
}

/* The index of metric `name` among the image's, or h->metrics where it has
 * no such metric. */
size_t index_of(const uint8_t *image, const image_header *h, const char *name)
{
    size_t m = 0;
    while (name && m < h->metrics && strcmp(name_at(image, m), name) != 0)
        m++;
    return name ? m : h->metrics;
}

double *values_of(uint8_t *image, const image_header *h)
{
    return reinterpret_cast<double *>(image + sizeof(image_header) + h->metrics * NAME_BYTES);
}

/* f(p) under the lock where p is the profiler object enabled, else
 * CUPTI_ERROR_INVALID_PARAMETER. */
template <typename F> CUptiResult with_profiler(CUpti_RangeProfiler_Object *p, F f)
{
    std::lock_guard<std::mutex> guard(state().lock);
    return p && p == state().profiler ? f(p) : CUPTI_ERROR_INVALID_PARAMETER;
}

} // namespace

bool fake_cupti::profiler_watches()
{
    std::lock_guard<std::mutex> guard(state().lock);
    return (state().subscribed && state().driver_domain) || state().profiler;
}

void fake_cupti::profiler_launched(const char *name)
{
    profiler_state &s = state();
    CUpti_CallbackFunc callback;
    void *userdata;
    CUcontext ctx;
    bool no_symbol_name;
    {
        std::lock_guard<std::mutex> guard(s.lock);
        CUpti_RangeProfiler_Object *p = s.profiler;
        if (p && p->started && ++p->launches == p->hidden_launch)
            return;
        if (!s.subscribed || !s.driver_domain || !s.callback)
            return;
        callback = s.callback, userdata = s.userdata, no_symbol_name = s.no_symbol_name;
        ctx = p ? p->ctx : nullptr;
    }
    CUpti_CallbackData d = {};
    d.functionName = "cuLaunchKernel";
    d.symbolName = no_symbol_name ? nullptr : name;
    d.context = ctx;
    /* the client's callback, outside the lock: it may call CUPTI. So a launch
     * on another thread may still reach it just after cuptiUnsubscribe
     * returns, which the stand-in's one client (the step's thread launching,
     * cuptiUnsubscribe after the step) never does */
    d.callbackSite = CUPTI_API_ENTER;
    callback(userdata, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d);
    d.callbackSite = CUPTI_API_EXIT;
    callback(userdata, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &d);
}

void fake_cupti::profiler_ran(const emu_host::kernel_work &work)
{
    std::lock_guard<std::mutex> guard(state().lock);
    CUpti_RangeProfiler_Object *p = state().profiler;
    if (p && p->started)
        p->ranges.push_back(work);
}

extern "C" {

/* ---- profiler and device ----------------------------------------------------- */

CUptiResult CUPTIAPI cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params *p)
{
    CHECK_PARAMS(p, CUpti_Profiler_Initialize_Params);
    const char *text = getenv("FAKE_CUPTI_PROFILER_ERROR");
    CUptiResult refusal = text ? (CUptiResult)atoi(text) : CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
    if (refusal != CUPTI_SUCCESS)
        return refusal;
    std::lock_guard<std::mutex> guard(state().lock);
    state().initialized = true;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params *p)
{
    CHECK_PARAMS(p, CUpti_Profiler_DeInitialize_Params);
    std::lock_guard<std::mutex> guard(state().lock);
    state().initialized = false;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerDeviceSupported(CUpti_Profiler_DeviceSupported_Params *p)
{
    CHECK_PARAMS(p, CUpti_Profiler_DeviceSupported_Params);
    if (p->cuDevice != 0 || p->api != CUPTI_PROFILER_RANGE_PROFILING)
        return CUPTI_ERROR_INVALID_PARAMETER;
    p->isSupported = p->architecture = p->sli = p->vGpu = p->confidentialCompute = p->cmp =
        p->wsl = CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params *p)
{
    CHECK_PARAMS(p, CUpti_Device_GetChipName_Params);
    if (p->deviceIndex != 0)
        return CUPTI_ERROR_INVALID_DEVICE;
    p->pChipName = CHIP;
    return CUPTI_SUCCESS;
}

/* sized first (a null image), then written: the context must be given */
CUptiResult CUPTIAPI
cuptiProfilerGetCounterAvailability(CUpti_Profiler_GetCounterAvailability_Params *p)
{
    CHECK_PARAMS(p, CUpti_Profiler_GetCounterAvailability_Params);
    if (!p->ctx)
        return CUPTI_ERROR_INVALID_CONTEXT;
    if (!p->pCounterAvailabilityImage) {
        p->counterAvailabilityImageSize = sizeof(image_header);
        return CUPTI_SUCCESS;
    }
    if (p->counterAvailabilityImageSize < sizeof(image_header))
        return CUPTI_ERROR_INVALID_PARAMETER;
    memcpy(p->pCounterAvailabilityImage, "fakeavl", 8);
    return CUPTI_SUCCESS;
}

/* ---- callbacks ---------------------------------------------------------------- */

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
                                    CUpti_CallbackFunc callback, void *userdata)
{
    if (!subscriber || !callback)
        return CUPTI_ERROR_INVALID_PARAMETER;
    const char *other_tool = getenv("FAKE_CUPTI_OTHER_TOOL");
    if (other_tool && strcmp(other_tool, "1") == 0)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    std::lock_guard<std::mutex> guard(state().lock);
    if (state().subscribed)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    state().subscribed = true;
    const char *unnamed = getenv("FAKE_CUPTI_NO_SYMBOL_NAME");
    state().no_symbol_name = unnamed && strcmp(unnamed, "1") == 0;
    state().callback = callback;
    state().userdata = userdata;
    *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&state());
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    {
        std::lock_guard<std::mutex> guard(state().lock);
        if (!state().subscribed || subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&state()))
            return CUPTI_ERROR_INVALID_PARAMETER;
        state().subscribed = state().driver_domain = false;
        state().callback = nullptr;
    }
    fake_cupti::watch_kernels();
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain)
{
    {
        std::lock_guard<std::mutex> guard(state().lock);
        if (!state().subscribed || subscriber != reinterpret_cast<CUpti_SubscriberHandle>(&state()))
            return CUPTI_ERROR_INVALID_PARAMETER;
        if (domain != CUPTI_CB_DOMAIN_DRIVER_API)
            return CUPTI_ERROR_NOT_SUPPORTED; /* the metric pass asks for no other */
        state().driver_domain = enable != 0;
    }
    fake_cupti::watch_kernels();
    return CUPTI_SUCCESS;
}

/* ---- the profiler host: configuration and evaluation -------------------------- */

CUptiResult CUPTIAPI cuptiProfilerHostInitialize(CUpti_Profiler_Host_Initialize_Params *p)
{
    CHECK_PARAMS(p, CUpti_Profiler_Host_Initialize_Params);
    if (p->profilerType != CUPTI_PROFILER_TYPE_RANGE_PROFILER)
        return CUPTI_ERROR_NOT_SUPPORTED;
    if (!p->pChipName || strcmp(p->pChipName, CHIP) != 0)
        return CUPTI_ERROR_INVALID_CHIP_NAME;
    if (p->pCounterAvailabilityImage &&
        memcmp(p->pCounterAvailabilityImage, "fakeavl", 8) != 0)
        return CUPTI_ERROR_INVALID_PARAMETER;
    p->pHostObject = new CUpti_Profiler_Host_Object;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params *p)
{
    CHECK_PARAMS(p, CUpti_Profiler_Host_Deinitialize_Params);
    delete p->pHostObject;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostGetBaseMetrics(CUpti_Profiler_Host_GetBaseMetrics_Params *p)
{
    CHECK_PARAMS(p, CUpti_Profiler_Host_GetBaseMetrics_Params);
    if (!p->pHostObject)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (p->metricType != CUPTI_METRIC_TYPE_COUNTER) {
        p->ppMetricNames = nullptr, p->numMetrics = 0;
        return CUPTI_SUCCESS;
    }
    p->ppMetricNames = const_cast<const char **>(base_counters);
    p->numMetrics = sizeof base_counters / sizeof base_counters[0];
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiProfilerHostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params *p)
{
    CHECK_PARAMS(p, CUpti_Profiler_Host_ConfigAddMetrics_Params);
    if (!p->pHostObject || (!p->ppMetricNames && p->numMetrics))
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < p->numMetrics; i++)
        if (!valid_metric(p->ppMetricNames[i]))
            return CUPTI_ERROR_INVALID_METRIC_NAME;
    for (size_t i = 0; i < p->numMetrics; i++)
        p->pHostObject->metrics.push_back(p->ppMetricNames[i]);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiProfilerHostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params *p)
{
    CHECK_PARAMS(p, CUpti_Profiler_Host_GetConfigImageSize_Params);
    if (!p->pHostObject)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (p->pHostObject->metrics.empty())
        return CUPTI_ERROR_INVALID_OPERATION; /* no metric added */
    p->configImageSize = config_size(p->pHostObject->metrics.size());
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params *p)
{
    CHECK_PARAMS(p, CUpti_Profiler_Host_GetConfigImage_Params);
    if (!p->pHostObject || !p->pConfigImage)
        return CUPTI_ERROR_INVALID_PARAMETER;
    const std::vector<std::string> &m = p->pHostObject->metrics;
    if (m.empty())
        return CUPTI_ERROR_INVALID_OPERATION;
    if (p->configImageSize < config_size(m.size()))
        return CUPTI_ERROR_INVALID_PARAMETER;
    image_header h = {};
    memcpy(h.magic, CONFIG_MAGIC, sizeof h.magic);
    h.metrics = m.size();
    memcpy(p->pConfigImage, &h, sizeof h);
    write_names(p->pConfigImage, m);
    return CUPTI_SUCCESS;
}

/* This stand-in's own count, not the chip's: one pass for the hardware
 * counters and one for the instrumented SASS counters. */
CUptiResult CUPTIAPI cuptiProfilerHostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params *p)
{
    CHECK_PARAMS(p, CUpti_Profiler_Host_GetNumOfPasses_Params);
    const image_header *h = header_of(p->pConfigImage, p->configImageSize, CONFIG_MAGIC);
    if (!h)
        return CUPTI_ERROR_INVALID_PARAMETER;
    bool sass = false, hardware = false;
    for (size_t i = 0; i < h->metrics; i++)
        (strstr(name_at(p->pConfigImage, i), "__sass_") ? sass : hardware) = true;
    p->numOfPasses = (size_t)sass + (size_t)hardware;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiProfilerHostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params *p)
{
    CHECK_PARAMS(p, CUpti_Profiler_Host_EvaluateToGpuValues_Params);
    const image_header *h = header_of(p->pCounterDataImage, p->counterDataImageSize,
                                      COUNTER_MAGIC);
    if (!p->pHostObject || !h || !p->pMetricValues || (!p->ppMetricNames && p->numMetrics))
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (p->rangeIndex >= h->ranges)
        return CUPTI_ERROR_INVALID_PARAMETER;
    const double *values = values_of(const_cast<uint8_t *>(p->pCounterDataImage), h);
    for (size_t i = 0; i < p->numMetrics; i++) {
        size_t m = index_of(p->pCounterDataImage, h, p->ppMetricNames[i]);
        if (m == h->metrics)
            return CUPTI_ERROR_INVALID_METRIC_NAME; /* not collected */
        p->pMetricValues[i] = values[p->rangeIndex * h->metrics + m];
    }
    return CUPTI_SUCCESS;
}

/* ---- the range profiler -------------------------------------------------------- */

CUptiResult CUPTIAPI cuptiRangeProfilerEnable(CUpti_RangeProfiler_Enable_Params *p)
{
    CHECK_PARAMS(p, CUpti_RangeProfiler_Enable_Params);
    {
        std::lock_guard<std::mutex> guard(state().lock);
        if (!state().initialized)
            return CUPTI_ERROR_NOT_INITIALIZED;
        if (!p->ctx)
            return CUPTI_ERROR_INVALID_CONTEXT;
        if (state().profiler)
            return CUPTI_ERROR_INVALID_OPERATION; /* one per context */
        state().profiler = new CUpti_RangeProfiler_Object;
        state().profiler->ctx = p->ctx;
        p->pRangeProfilerObject = state().profiler;
    }
    fake_cupti::watch_kernels();
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerDisable(CUpti_RangeProfiler_Disable_Params *p)
{
    CHECK_PARAMS(p, CUpti_RangeProfiler_Disable_Params);
    {
        std::lock_guard<std::mutex> guard(state().lock);
        if (!p->pRangeProfilerObject || p->pRangeProfilerObject != state().profiler)
            return CUPTI_ERROR_INVALID_PARAMETER;
        delete state().profiler;
        state().profiler = nullptr;
    }
    fake_cupti::watch_kernels();
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI
cuptiRangeProfilerGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params *p)
{
    CHECK_PARAMS(p, CUpti_RangeProfiler_GetCounterDataSize_Params);
    return with_profiler(p->pRangeProfilerObject, [&](CUpti_RangeProfiler_Object *rp) {
        if (!p->pMetricNames || p->numMetrics == 0 || p->maxNumOfRanges == 0 ||
            p->maxNumRangeTreeNodes < p->maxNumOfRanges)
            return CUPTI_ERROR_INVALID_PARAMETER;
        std::vector<std::string> metrics;
        for (size_t i = 0; i < p->numMetrics; i++) {
            if (!valid_metric(p->pMetricNames[i]))
                return CUPTI_ERROR_INVALID_METRIC_NAME;
            metrics.push_back(p->pMetricNames[i]);
        }
        rp->image_metrics = metrics;
        rp->image_ranges = p->maxNumOfRanges;
        p->counterDataSize = counter_size(p->numMetrics, p->maxNumOfRanges);
        return CUPTI_SUCCESS;
    });
}

/* Lays the image out for the last GetCounterDataSize, no range in it: also
 * CUPTI's way to empty an image for reuse. */
CUptiResult CUPTIAPI cuptiRangeProfilerCounterDataImageInitialize(
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params *p)
{
    CHECK_PARAMS(p, CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
    return with_profiler(p->pRangeProfilerObject, [&](CUpti_RangeProfiler_Object *rp) {
        if (rp->image_metrics.empty())
            return CUPTI_ERROR_INVALID_OPERATION; /* not sized */
        if (!p->pCounterData ||
            p->counterDataSize != counter_size(rp->image_metrics.size(), rp->image_ranges))
            return CUPTI_ERROR_INVALID_PARAMETER;
        memset(p->pCounterData, 0, p->counterDataSize);
        image_header h = {};
        memcpy(h.magic, COUNTER_MAGIC, sizeof h.magic);
        h.metrics = rp->image_metrics.size();
        h.max_ranges = rp->image_ranges;
        memcpy(p->pCounterData, &h, sizeof h);
        write_names(p->pCounterData, rp->image_metrics);
        return CUPTI_SUCCESS;
    });
}

CUptiResult CUPTIAPI cuptiRangeProfilerSetConfig(CUpti_RangeProfiler_SetConfig_Params *p)
{
    CHECK_PARAMS(p, CUpti_RangeProfiler_SetConfig_Params);
    return with_profiler(p->pRangeProfilerObject, [&](CUpti_RangeProfiler_Object *rp) {
        const image_header *config = header_of(p->pConfig, p->configSize, CONFIG_MAGIC);
        const image_header *image = header_of(p->pCounterDataImage, p->counterDataImageSize,
                                              COUNTER_MAGIC);
        if (!config || !image || p->maxRangesPerPass == 0)
            return CUPTI_ERROR_INVALID_PARAMETER;
        if (p->range != CUPTI_AutoRange || p->replayMode != CUPTI_KernelReplay)
            return CUPTI_ERROR_NOT_SUPPORTED; /* the metric pass asks for no other */
        if (p->numNestingLevels != 1 || p->minNestingLevel != 1 || p->targetNestingLevel != 1 ||
            p->passIndex != 0)
            return CUPTI_ERROR_INVALID_PARAMETER; /* auto range: one level */
        if (rp->started)
            return CUPTI_ERROR_INVALID_OPERATION;
        /* the image must hold what the configuration collects */
        for (size_t i = 0; i < config->metrics; i++)
            if (index_of(p->pCounterDataImage, image, name_at(p->pConfig, i)) == image->metrics)
                return CUPTI_ERROR_INVALID_PARAMETER;
        rp->image = p->pCounterDataImage;
        rp->image_size = p->counterDataImageSize;
        rp->ranges_per_pass = p->maxRangesPerPass;
        rp->configured = true;
        return CUPTI_SUCCESS;
    });
}

CUptiResult CUPTIAPI cuptiRangeProfilerStart(CUpti_RangeProfiler_Start_Params *p)
{
    CHECK_PARAMS(p, CUpti_RangeProfiler_Start_Params);
    return with_profiler(p->pRangeProfilerObject, [&](CUpti_RangeProfiler_Object *rp) {
        if (!rp->configured || rp->started)
            return CUPTI_ERROR_INVALID_OPERATION;
        rp->started = true;
        rp->ranges.clear();
        rp->launches = 0;
        const char *hide = getenv("FAKE_CUPTI_HIDE_LAUNCH");
        rp->hidden_launch = hide ? atol(hide) : 0;
        return CUPTI_SUCCESS;
    });
}

/* Kernel replay: every pass ran inside each launch. */
CUptiResult CUPTIAPI cuptiRangeProfilerStop(CUpti_RangeProfiler_Stop_Params *p)
{
    CHECK_PARAMS(p, CUpti_RangeProfiler_Stop_Params);
    return with_profiler(p->pRangeProfilerObject, [&](CUpti_RangeProfiler_Object *rp) {
        if (!rp->started)
            return CUPTI_ERROR_INVALID_OPERATION;
        rp->started = false;
        p->isAllPassSubmitted = 1;
        p->passIndex = 0;
        p->targetNestingLevel = 1;
        return CUPTI_SUCCESS;
    });
}

/* The ranges run since the start into the configured image, as many as it
 * holds; the rest dropped. */
CUptiResult CUPTIAPI cuptiRangeProfilerDecodeData(CUpti_RangeProfiler_DecodeData_Params *p)
{
    CHECK_PARAMS(p, CUpti_RangeProfiler_DecodeData_Params);
    return with_profiler(p->pRangeProfilerObject, [&](CUpti_RangeProfiler_Object *rp) {
        if (rp->started || !rp->configured)
            return CUPTI_ERROR_INVALID_OPERATION;
        auto *h = const_cast<image_header *>(header_of(rp->image, rp->image_size, COUNTER_MAGIC));
        if (!h)
            return CUPTI_ERROR_INVALID_PARAMETER; /* the image was freed or overwritten */
        size_t room = h->max_ranges - h->ranges;
        if (room > rp->ranges_per_pass)
            room = rp->ranges_per_pass;
        size_t kept = rp->ranges.size() < room ? rp->ranges.size() : room;
        double *values = values_of(rp->image, h);
        std::vector<std::string> bases;
        for (size_t m = 0; m < h->metrics; m++)
            bases.push_back(base_of(name_at(rp->image, m)));
        for (size_t r = 0; r < kept; r++)
            for (size_t m = 0; m < h->metrics; m++)
                values[(h->ranges + r) * h->metrics + m] = value_of(bases[m], rp->ranges[r]);
        h->ranges += kept;
        p->numOfRangeDropped = rp->ranges.size() - kept;
        rp->ranges.clear();
        return CUPTI_SUCCESS;
    });
}

CUptiResult CUPTIAPI
cuptiRangeProfilerGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params *p)
{
    CHECK_PARAMS(p, CUpti_RangeProfiler_GetCounterDataInfo_Params);
    const image_header *h = header_of(p->pCounterDataImage, p->counterDataImageSize,
                                      COUNTER_MAGIC);
    if (!h)
        return CUPTI_ERROR_INVALID_PARAMETER;
    p->numTotalRanges = h->ranges;
    return CUPTI_SUCCESS;
}

} // extern "C"
