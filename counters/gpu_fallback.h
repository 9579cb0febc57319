/* Why the GPU counters cannot be read on this machine, and what to do: the
 * causes after which a traced step goes on with timing and the analytic model
 * (source "analytic") instead of failing, each with its one-line message.
 * Anything not listed here is a real error and stops the trace. */
#ifndef ROOFLINE_GPU_FALLBACK_H
#define ROOFLINE_GPU_FALLBACK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GPU_CAUSE_NONE,             /* not a reason to fall back */
    GPU_CAUSE_PERMISSION,       /* ERR_NVGPUCTRPERM */
    GPU_CAUSE_BUSY,             /* counters held by another client (DCGM) */
    GPU_CAUSE_OTHER_PROFILER,   /* Nsight, cuda-gdb, sanitizer: one CUPTI subscriber */
    GPU_CAUSE_VGPU,
    GPU_CAUSE_MIG,
    GPU_CAUSE_CONFIDENTIAL,
    GPU_CAUSE_CMP,
    GPU_CAUSE_SLI,
    GPU_CAUSE_WSL,
    GPU_CAUSE_UNSUPPORTED_GPU,
    GPU_CAUSE_NO_LIBRARIES,     /* CUPTI cannot initialise: an old driver, or no libnvperf_* */
    GPU_CAUSE_NO_CUPTI,         /* built without CUPTI */
    GPU_CAUSE_NO_DEVICE,
    GPU_CAUSE_COUNT
} gpu_cause;

/* The CUptiResult values this file knows (cupti_result.h of CUDA 13.0;
 * cupti_metrics.cu checks at compile time that they still agree). */
enum {
    GPU_CUPTI_NOT_INITIALIZED = 15,
    GPU_CUPTI_HARDWARE_BUSY = 26,
    GPU_CUPTI_NOT_SUPPORTED = 27,
    GPU_CUPTI_VIRTUALIZED_DEVICE_NOT_SUPPORTED = 33,
    GPU_CUPTI_INSUFFICIENT_PRIVILEGES = 35,
    GPU_CUPTI_OLD_PROFILER_API_INITIALIZED = 36,
    GPU_CUPTI_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39,
    GPU_CUPTI_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES = 40,
    GPU_CUPTI_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED = 41,
    GPU_CUPTI_CMP_DEVICE_NOT_SUPPORTED = 42,
    GPU_CUPTI_MIG_DEVICE_NOT_SUPPORTED = 43,
    GPU_CUPTI_SLI_DEVICE_NOT_SUPPORTED = 44,
    GPU_CUPTI_WSL_DEVICE_NOT_SUPPORTED = 45,
    GPU_CUPTI_INVALID_CHIP_NAME = 46,
};

/* CUpti_Profiler_Support_Level values (cupti_profiler_target.h). */
enum {
    GPU_SUPPORT_UNKNOWN = 0,
    GPU_SUPPORT_UNSUPPORTED = 1,
    GPU_SUPPORT_DISABLED = 2,
    GPU_SUPPORT_SUPPORTED = 3,
};

/* The cause behind a CUptiResult, or GPU_CAUSE_NONE. */
gpu_cause gpu_cause_of_cupti(int code);

/* The cause behind cuptiProfilerDeviceSupported's verdict (its per-feature
 * support levels), or GPU_CAUSE_NONE when everything is supported. */
gpu_cause gpu_cause_of_support(int architecture, int sli, int vgpu, int confidential, int cmp,
                               int wsl);

/* A CUptiResult value that gpu_cause_of_cupti maps back to `cause`, for a
 * refusal that comes as a verdict rather than an error (DeviceSupported). */
int gpu_cause_cupti_code(gpu_cause cause);

/* One line: what happened and how to fix it, then `detail` (CUPTI's own
 * words) in parentheses when not empty. */
void gpu_cause_line(gpu_cause cause, const char *detail, char *out, size_t len);

#ifdef __cplusplus
}
#endif

#endif
