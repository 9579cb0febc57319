/* The metric pass: CUPTI's Profiler Host API builds the configuration for the
 * running chip, the Range Profiler collects it per kernel (auto range, kernel
 * replay), and a driver-API callback names each launch. The profiler host
 * header is C++ (it includes <string>), hence this file; its interface is C
 * (cupti_metrics.h). Call order, after the CUDA 13.0 headers and NVIDIA's
 * range_profiling sample: profiler initialize, device supported, chip name,
 * counter availability (needs the context), host initialize with both, config
 * image, range profiler enable, counter data image, set config; then start,
 * the workload, stop, decode, evaluate each range; disable, deinitialize. */
#include "cupti_config.h"

#ifdef HAVE_CUPTI

#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "cupti_check.h"
#include "cupti_metrics.h"
#include "gpu_fallback.h"

/* gpu_fallback.c classifies CUptiResult values by number, in plain C. */
#define SAME_VALUE(cupti, ours) static_assert((int)(cupti) == (int)(ours), #cupti " changed")
SAME_VALUE(CUPTI_ERROR_NOT_INITIALIZED, GPU_CUPTI_NOT_INITIALIZED);
SAME_VALUE(CUPTI_ERROR_HARDWARE_BUSY, GPU_CUPTI_HARDWARE_BUSY);
SAME_VALUE(CUPTI_ERROR_NOT_SUPPORTED, GPU_CUPTI_NOT_SUPPORTED);
SAME_VALUE(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED,
           GPU_CUPTI_VIRTUALIZED_DEVICE_NOT_SUPPORTED);
SAME_VALUE(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, GPU_CUPTI_INSUFFICIENT_PRIVILEGES);
SAME_VALUE(CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED, GPU_CUPTI_OLD_PROFILER_API_INITIALIZED);
SAME_VALUE(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
           GPU_CUPTI_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
SAME_VALUE(CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES,
           GPU_CUPTI_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES);
SAME_VALUE(CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED,
           GPU_CUPTI_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED);
SAME_VALUE(CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED, GPU_CUPTI_CMP_DEVICE_NOT_SUPPORTED);
SAME_VALUE(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED, GPU_CUPTI_MIG_DEVICE_NOT_SUPPORTED);
SAME_VALUE(CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED, GPU_CUPTI_SLI_DEVICE_NOT_SUPPORTED);
SAME_VALUE(CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED, GPU_CUPTI_WSL_DEVICE_NOT_SUPPORTED);
SAME_VALUE(CUPTI_ERROR_INVALID_CHIP_NAME, GPU_CUPTI_INVALID_CHIP_NAME);
SAME_VALUE(CUPTI_PROFILER_CONFIGURATION_UNKNOWN, GPU_SUPPORT_UNKNOWN);
SAME_VALUE(CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED, GPU_SUPPORT_UNSUPPORTED);
SAME_VALUE(CUPTI_PROFILER_CONFIGURATION_DISABLED, GPU_SUPPORT_DISABLED);
SAME_VALUE(CUPTI_PROFILER_CONFIGURATION_SUPPORTED, GPU_SUPPORT_SUPPORTED);
#undef SAME_VALUE

struct cupti_metrics {
    int device = 0;
    CUcontext ctx = nullptr;
    bool initialized = false;                       /* cuptiProfilerInitialize */
    CUpti_SubscriberHandle subscriber = nullptr;
    CUpti_Profiler_Host_Object *host = nullptr;
    CUpti_RangeProfiler_Object *profiler = nullptr;
    bool started = false;
    size_t max_ranges = 0;
    gpu_metric_plan plan = {};
    const char *names[GPU_METRICS_MAX] = {};
    std::vector<uint8_t> availability, config, counter_data;
    /* written by the launch callback, which runs on the launching thread
     * inside the launch: the step's own thread, between start and stop */
    bool recording = false;
    bool out_of_memory = false;
    uint64_t op = 0;
    gpu_metric_pass pass = {};
};

namespace {

/* A CUPTI parameter struct: zeroed (pPriv NULL, every option off), its size
 * set from the header's macro for that very type. */
template <typename T> T params(size_t struct_size)
{
    T p{};
    p.structSize = struct_size;
    return p;
}
#define PARAMS(type) params<type>(type##_STRUCT_SIZE)

const char *level_name(CUpti_Profiler_Support_Level level)
{
    switch (level) {
    case CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED:
        return "unsupported";
    case CUPTI_PROFILER_CONFIGURATION_DISABLED:
        return "disabled";
    case CUPTI_PROFILER_CONFIGURATION_SUPPORTED:
        return "supported";
    default:
        return "unknown";
    }
}

/* Every way a kernel is launched through the driver (the runtime's launches
 * arrive here too): the samples hook only cuLaunchKernel, but cuBLAS and
 * cuDNN also use the Ex and per-thread-stream variants, and missing one
 * would shift every later range onto the wrong kernel. */
bool is_kernel_launch(CUpti_CallbackId cbid)
{
    switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
        return true;
    default:
        return false;
    }
}

void CUPTIAPI on_driver_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void *cbdata)
{
    auto *m = static_cast<cupti_metrics *>(userdata);
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API || !m->recording)
        return;
    auto *d = static_cast<const CUpti_CallbackData *>(cbdata);
    if (d->callbackSite != CUPTI_API_ENTER)
        return;
    if (is_kernel_launch(cbid)) {
        if (gpu_metric_pass_add_launch(&m->pass, d->symbolName, m->op))
            m->out_of_memory = true;
    } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
               cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz) {
        m->pass.graph_launches++;
    } else if (d->functionName && (strncmp(d->functionName, "cuMemset", 8) == 0 ||
                                   strncmp(d->functionName, "cuMemcpy", 8) == 0)) {
        m->pass.memory_ops++;
    }
}

int host_init(const char *chip, const uint8_t *availability, CUpti_Profiler_Host_Object **host,
              char *err, size_t err_len)
{
    auto p = PARAMS(CUpti_Profiler_Host_Initialize_Params);
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip;
    p.pCounterAvailabilityImage = availability;
    CUPTI_CHECK(cuptiProfilerHostInitialize(&p));
    *host = p.pHostObject;
    return 0;
}

void host_deinit(CUpti_Profiler_Host_Object *host)
{
    auto p = PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
    p.pHostObject = host;
    cuptiProfilerHostDeinitialize(&p); /* teardown: nothing left to do on failure */
}

/* The plan from the chip's base counters, its config image and pass count. */
int host_plan(CUpti_Profiler_Host_Object *host, precision prec, const gpu_metric_options *mo,
              gpu_metric_plan *plan, const char **names, std::vector<uint8_t> &config,
              int *passes, char *err, size_t err_len)
{
    auto base = PARAMS(CUpti_Profiler_Host_GetBaseMetrics_Params);
    base.pHostObject = host;
    base.metricType = CUPTI_METRIC_TYPE_COUNTER;
    CUPTI_CHECK(cuptiProfilerHostGetBaseMetrics(&base));
    if (gpu_metric_plan_build(base.ppMetricNames, base.numMetrics, prec, mo, plan, err, err_len))
        return -1;
    for (int i = 0; i < plan->n; i++)
        names[i] = plan->name[i];

    auto add = PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
    add.pHostObject = host;
    add.ppMetricNames = names;
    add.numMetrics = (size_t)plan->n;
    CUPTI_CHECK(cuptiProfilerHostConfigAddMetrics(&add));

    auto size = PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
    size.pHostObject = host;
    CUPTI_CHECK(cuptiProfilerHostGetConfigImageSize(&size));
    config.assign(size.configImageSize, 0);

    auto image = PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
    image.pHostObject = host;
    image.configImageSize = config.size();
    image.pConfigImage = config.data();
    CUPTI_CHECK(cuptiProfilerHostGetConfigImage(&image));

    auto n = PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
    n.configImageSize = config.size();
    n.pConfigImage = config.data();
    CUPTI_CHECK(cuptiProfilerHostGetNumOfPasses(&n));
    *passes = (int)n.numOfPasses;
    return 0;
}

/* The current context through the runtime's driver entry points: the
 * programs link cudart statically and not libcuda, so cuCtxGetCurrent cannot
 * be called by name. */
int current_context(CUcontext *ctx, char *err, size_t err_len)
{
    typedef CUresult(CUDAAPI * get_current)(CUcontext *);
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    CUDA_OR_RETURN(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000,
                                                    cudaEnableDefault, &found));
    if (!fn || found != cudaDriverEntryPointSuccess) {
        snprintf(err, err_len, "the driver has no cuCtxGetCurrent entry point");
        return -1;
    }
    CUresult r = reinterpret_cast<get_current>(fn)(ctx);
    if (r != CUDA_SUCCESS || !*ctx) {
        snprintf(err, err_len, "cuCtxGetCurrent failed (%d) or no context is current", (int)r);
        return -1;
    }
    return 0;
}

/* Refusals that come as a verdict: the cause's CUptiResult, so that the
 * caller falls back with its line. */
int device_supported(int device, char *err, size_t err_len)
{
    auto p = PARAMS(CUpti_Profiler_DeviceSupported_Params);
    p.cuDevice = (CUdevice)device;
    p.api = CUPTI_PROFILER_RANGE_PROFILING;
    CUPTI_CHECK(cuptiProfilerDeviceSupported(&p));
    if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
        return 0;
    gpu_cause cause = gpu_cause_of_support(p.architecture, p.sli, p.vGpu,
                                           p.confidentialCompute, p.cmp, p.wsl);
    if (cause == GPU_CAUSE_NONE)
        cause = GPU_CAUSE_UNSUPPORTED_GPU;
    snprintf(err, err_len,
             "cuptiProfilerDeviceSupported: architecture %s, SLI %s, vGPU %s, confidential "
             "computing %s, CMP %s, WSL %s",
             level_name(p.architecture), level_name(p.sli), level_name(p.vGpu),
             level_name(p.confidentialCompute), level_name(p.cmp), level_name(p.wsl));
    return gpu_cause_cupti_code(cause);
}

int counter_availability(cupti_metrics *m, char *err, size_t err_len)
{
    auto p = PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
    p.ctx = m->ctx;
    CUPTI_CHECK(cuptiProfilerGetCounterAvailability(&p));
    m->availability.assign(p.counterAvailabilityImageSize, 0);
    p.pCounterAvailabilityImage = m->availability.data();
    CUPTI_CHECK(cuptiProfilerGetCounterAvailability(&p));
    return 0;
}

/* (Re)initialises the counter data image: CUPTI's way to empty it. */
int init_counter_data(cupti_metrics *m, char *err, size_t err_len)
{
    auto p = PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
    p.pRangeProfilerObject = m->profiler;
    p.counterDataSize = m->counter_data.size();
    p.pCounterData = m->counter_data.data();
    CUPTI_CHECK(cuptiRangeProfilerCounterDataImageInitialize(&p));
    return 0;
}

int enable_profiler(cupti_metrics *m, char *err, size_t err_len)
{
    auto enable = PARAMS(CUpti_RangeProfiler_Enable_Params);
    enable.ctx = m->ctx;
    CUPTI_CHECK(cuptiRangeProfilerEnable(&enable));
    m->profiler = enable.pRangeProfilerObject;

    auto size = PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
    size.pRangeProfilerObject = m->profiler;
    size.pMetricNames = m->names;
    size.numMetrics = (size_t)m->plan.n;
    size.maxNumOfRanges = m->max_ranges;
    size.maxNumRangeTreeNodes = (uint32_t)m->max_ranges;
    CUPTI_CHECK(cuptiRangeProfilerGetCounterDataSize(&size));
    m->counter_data.assign(size.counterDataSize, 0);
    if (int rc = init_counter_data(m, err, err_len))
        return rc;

    auto set = PARAMS(CUpti_RangeProfiler_SetConfig_Params);
    set.pRangeProfilerObject = m->profiler;
    set.configSize = m->config.size();
    set.pConfig = m->config.data();
    set.counterDataImageSize = m->counter_data.size();
    set.pCounterDataImage = m->counter_data.data();
    set.range = CUPTI_AutoRange;
    set.replayMode = CUPTI_KernelReplay;
    set.maxRangesPerPass = m->max_ranges;
    set.numNestingLevels = 1; /* auto range: must be 1 */
    set.minNestingLevel = 1;
    set.passIndex = 0;
    set.targetNestingLevel = 1;
    CUPTI_CHECK(cuptiRangeProfilerSetConfig(&set));
    return 0;
}

int open_steps(cupti_metrics *m, precision prec, const gpu_metric_options *mo,
               gpu_metric_info *info, char *err, size_t err_len)
{
    int current = -1;
    CUDA_OR_RETURN(cudaGetDevice(&current));
    if (current != m->device) {
        snprintf(err, err_len, "device %d is current, the metric pass was asked for device %d",
                 current, m->device);
        return -1;
    }
    CUDA_OR_RETURN(cudaFree(nullptr)); /* the primary context exists from here */

    /* the one subscriber of a process, before any other CUPTI call (the CUPTI
     * guide's order): under another tool it is what fails, with the code that
     * names the cause, where the profiler's calls could fail otherwise */
    CUPTI_CHECK(cuptiSubscribe(&m->subscriber, on_driver_call, m));
    CUPTI_CHECK(cuptiEnableDomain(1, m->subscriber, CUPTI_CB_DOMAIN_DRIVER_API));

    auto init = PARAMS(CUpti_Profiler_Initialize_Params);
    CUPTI_CHECK(cuptiProfilerInitialize(&init));
    m->initialized = true;
    if (int rc = device_supported(m->device, err, err_len))
        return rc;

    auto chip = PARAMS(CUpti_Device_GetChipName_Params);
    chip.deviceIndex = (size_t)m->device;
    CUPTI_CHECK(cuptiDeviceGetChipName(&chip));
    snprintf(info->chip, sizeof info->chip, "%s", chip.pChipName ? chip.pChipName : "");

    if (int rc = current_context(&m->ctx, err, err_len))
        return rc;
    if (int rc = counter_availability(m, err, err_len))
        return rc;
    if (int rc = host_init(chip.pChipName, m->availability.data(), &m->host, err, err_len))
        return rc;
    int passes = 0;
    if (int rc = host_plan(m->host, prec, mo, &m->plan, m->names, m->config, &passes, err,
                           err_len))
        return rc;
    if (int rc = enable_profiler(m, err, err_len))
        return rc;
    info->passes = passes;
    info->metrics = m->plan.n;
    return 0;
}

int evaluate(cupti_metrics *m, gpu_metric_pass *out, char *err, size_t err_len)
{
    auto info = PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
    info.pCounterDataImage = m->counter_data.data();
    info.counterDataImageSize = m->counter_data.size();
    CUPTI_CHECK(cuptiRangeProfilerGetCounterDataInfo(&info));
    size_t n = info.numTotalRanges;
    out->counts = static_cast<gpu_counts *>(calloc(n > 0 ? n : 1, sizeof *out->counts));
    if (!out->counts) {
        snprintf(err, err_len, "out of memory for %zu ranges", n);
        return -1;
    }
    double values[GPU_METRICS_MAX];
    for (size_t i = 0; i < n; i++) {
        auto e = PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
        e.pHostObject = m->host;
        e.pCounterDataImage = m->counter_data.data();
        e.counterDataImageSize = m->counter_data.size();
        e.rangeIndex = i;
        e.ppMetricNames = m->names;
        e.numMetrics = (size_t)m->plan.n;
        e.pMetricValues = values;
        CUPTI_CHECK(cuptiProfilerHostEvaluateToGpuValues(&e));
        out->counts[i] = gpu_metric_counts(&m->plan, values);
        out->n_ranges = (int)(i + 1);
    }
    return 0;
}

int stop_steps(cupti_metrics *m, gpu_metric_pass *out, char *err, size_t err_len)
{
    m->recording = false;
    cudaError_t synced = cudaDeviceSynchronize();
    auto stop = PARAMS(CUpti_RangeProfiler_Stop_Params);
    stop.pRangeProfilerObject = m->profiler;
    CUPTI_CHECK(cuptiRangeProfilerStop(&stop));
    m->started = false;
    CUDA_OR_RETURN(synced);
    if (!stop.isAllPassSubmitted) {
        /* kernel replay runs every pass inside each launch: cannot happen */
        snprintf(err, err_len, "the range profiler left passes unsubmitted (at pass %zu)",
                 stop.passIndex);
        return -1;
    }
    if (m->out_of_memory) {
        snprintf(err, err_len, "out of memory recording the launches");
        return -1;
    }
    auto decode = PARAMS(CUpti_RangeProfiler_DecodeData_Params);
    decode.pRangeProfilerObject = m->profiler;
    CUPTI_CHECK(cuptiRangeProfilerDecodeData(&decode));

    *out = m->pass;
    m->pass = {};
    out->dropped = decode.numOfRangeDropped;
    if (int rc = evaluate(m, out, err, err_len))
        return rc;
    /* empty the image, should the session be started again */
    return init_counter_data(m, err, err_len);
}

} // namespace

extern "C" int cupti_metrics_open(int device, precision prec, const gpu_metric_options *mo,
                                  int max_ranges, cupti_metrics **out, gpu_metric_info *info,
                                  char *err, size_t err_len)
{
    *out = nullptr;
    *info = gpu_metric_info{};
    if (max_ranges < 1) {
        snprintf(err, err_len, "the metric pass needs room for at least one range");
        return -1;
    }
    cupti_metrics *m = new (std::nothrow) cupti_metrics;
    if (!m) {
        snprintf(err, err_len, "out of memory for the metric pass");
        return -1;
    }
    m->device = device;
    m->max_ranges = (size_t)max_ranges;
    int rc;
    try {
        rc = open_steps(m, prec, mo, info, err, err_len);
    } catch (const std::bad_alloc &) {
        snprintf(err, err_len, "out of memory opening the metric pass");
        rc = -1;
    }
    if (rc) {
        cupti_metrics_close(m);
        return rc;
    }
    *out = m;
    return 0;
}

extern "C" int cupti_metrics_start(cupti_metrics *m, char *err, size_t err_len)
{
    gpu_metric_pass_free(&m->pass);
    m->out_of_memory = false;
    m->op = 0;
    auto start = PARAMS(CUpti_RangeProfiler_Start_Params);
    start.pRangeProfilerObject = m->profiler;
    CUPTI_CHECK(cuptiRangeProfilerStart(&start));
    m->started = true;
    m->recording = true;
    return 0;
}

extern "C" void cupti_metrics_set_op(cupti_metrics *m, uint64_t op)
{
    m->op = op;
}

extern "C" int cupti_metrics_stop(cupti_metrics *m, gpu_metric_pass *out, char *err,
                                  size_t err_len)
{
    *out = gpu_metric_pass{};
    int rc = stop_steps(m, out, err, err_len);
    if (rc)
        gpu_metric_pass_free(out);
    return rc;
}

extern "C" void cupti_metrics_close(cupti_metrics *m)
{
    if (!m)
        return;
    /* teardown: each step is tried whatever the previous one gave */
    m->recording = false;
    if (m->started) {
        auto stop = PARAMS(CUpti_RangeProfiler_Stop_Params);
        stop.pRangeProfilerObject = m->profiler;
        cuptiRangeProfilerStop(&stop);
    }
    if (m->profiler) {
        auto p = PARAMS(CUpti_RangeProfiler_Disable_Params);
        p.pRangeProfilerObject = m->profiler;
        cuptiRangeProfilerDisable(&p);
    }
    if (m->subscriber)
        cuptiUnsubscribe(m->subscriber);
    if (m->host)
        host_deinit(m->host);
    if (m->initialized) {
        auto p = PARAMS(CUpti_Profiler_DeInitialize_Params);
        cuptiProfilerDeInitialize(&p);
    }
    gpu_metric_pass_free(&m->pass);
    delete m;
}

extern "C" const gpu_metric_plan *cupti_metrics_plan(const cupti_metrics *m)
{
    return &m->plan;
}

extern "C" int cupti_metrics_plan_offline(const char *chip, precision prec,
                                          const gpu_metric_options *mo, gpu_metric_plan *plan,
                                          int *passes, char *err, size_t err_len)
{
    CUpti_Profiler_Host_Object *host = nullptr;
    int rc = host_init(chip, nullptr, &host, err, err_len);
    if (rc == 0) {
        const char *names[GPU_METRICS_MAX];
        try {
            std::vector<uint8_t> config;
            rc = host_plan(host, prec, mo, plan, names, config, passes, err, err_len);
        } catch (const std::bad_alloc &) {
            snprintf(err, err_len, "out of memory building the configuration");
            rc = -1;
        }
        host_deinit(host);
    }
    return rc;
}

#endif /* HAVE_CUPTI */
