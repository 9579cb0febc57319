#include "gpu_fallback.h"

#include <stdio.h>

gpu_cause gpu_cause_of_cupti(int code)
{
    switch (code) {
    case GPU_CUPTI_INSUFFICIENT_PRIVILEGES:
        return GPU_CAUSE_PERMISSION;
    case GPU_CUPTI_HARDWARE_BUSY:
        return GPU_CAUSE_BUSY;
    case GPU_CUPTI_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case GPU_CUPTI_OLD_PROFILER_API_INITIALIZED:
        return GPU_CAUSE_OTHER_PROFILER;
    case GPU_CUPTI_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case GPU_CUPTI_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return GPU_CAUSE_VGPU;
    case GPU_CUPTI_MIG_DEVICE_NOT_SUPPORTED:
        return GPU_CAUSE_MIG;
    case GPU_CUPTI_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
        return GPU_CAUSE_CONFIDENTIAL;
    case GPU_CUPTI_CMP_DEVICE_NOT_SUPPORTED:
        return GPU_CAUSE_CMP;
    case GPU_CUPTI_SLI_DEVICE_NOT_SUPPORTED:
        return GPU_CAUSE_SLI;
    case GPU_CUPTI_WSL_DEVICE_NOT_SUPPORTED:
        return GPU_CAUSE_WSL;
    case GPU_CUPTI_INVALID_CHIP_NAME:
    case GPU_CUPTI_NOT_SUPPORTED:
        return GPU_CAUSE_UNSUPPORTED_GPU;
    case GPU_CUPTI_NOT_INITIALIZED:
        return GPU_CAUSE_NO_LIBRARIES;
    default:
        return GPU_CAUSE_NONE;
    }
}

int gpu_cause_cupti_code(gpu_cause cause)
{
    switch (cause) {
    case GPU_CAUSE_PERMISSION:
        return GPU_CUPTI_INSUFFICIENT_PRIVILEGES;
    case GPU_CAUSE_BUSY:
        return GPU_CUPTI_HARDWARE_BUSY;
    case GPU_CAUSE_OTHER_PROFILER:
        return GPU_CUPTI_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    case GPU_CAUSE_VGPU:
        return GPU_CUPTI_VIRTUALIZED_DEVICE_NOT_SUPPORTED;
    case GPU_CAUSE_MIG:
        return GPU_CUPTI_MIG_DEVICE_NOT_SUPPORTED;
    case GPU_CAUSE_CONFIDENTIAL:
        return GPU_CUPTI_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED;
    case GPU_CAUSE_CMP:
        return GPU_CUPTI_CMP_DEVICE_NOT_SUPPORTED;
    case GPU_CAUSE_SLI:
        return GPU_CUPTI_SLI_DEVICE_NOT_SUPPORTED;
    case GPU_CAUSE_WSL:
        return GPU_CUPTI_WSL_DEVICE_NOT_SUPPORTED;
    case GPU_CAUSE_UNSUPPORTED_GPU:
        return GPU_CUPTI_NOT_SUPPORTED;
    case GPU_CAUSE_NO_LIBRARIES:
        return GPU_CUPTI_NOT_INITIALIZED;
    default:
        return -1;
    }
}

gpu_cause gpu_cause_of_support(int architecture, int sli, int vgpu, int confidential, int cmp,
                               int wsl)
{
    /* the most specific first: a vGPU's architecture may read unsupported too */
    if (vgpu != GPU_SUPPORT_SUPPORTED && vgpu != GPU_SUPPORT_UNKNOWN)
        return GPU_CAUSE_VGPU;
    if (confidential == GPU_SUPPORT_UNSUPPORTED)
        return GPU_CAUSE_CONFIDENTIAL;
    if (cmp == GPU_SUPPORT_UNSUPPORTED)
        return GPU_CAUSE_CMP;
    if (sli == GPU_SUPPORT_UNSUPPORTED)
        return GPU_CAUSE_SLI;
    if (wsl == GPU_SUPPORT_UNSUPPORTED)
        return GPU_CAUSE_WSL;
    if (architecture != GPU_SUPPORT_SUPPORTED)
        return GPU_CAUSE_UNSUPPORTED_GPU;
    return GPU_CAUSE_NONE;
}

static const char *const lines[GPU_CAUSE_COUNT] = {
    [GPU_CAUSE_NONE] = "GPU counters unavailable",
    [GPU_CAUSE_PERMISSION] =
        "GPU performance counters not permitted (ERR_NVGPUCTRPERM): run as root, or have an "
        "admin put 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' in "
        "/etc/modprobe.d/ and reboot (a container also needs --cap-add SYS_ADMIN)",
    [GPU_CAUSE_BUSY] = "GPU performance counters held by another client: pause DCGM profiling "
                       "(dcgmi profile --pause) or stop the other tool, then rerun",
    [GPU_CAUSE_OTHER_PROFILER] =
        "another profiler or debugger is attached (Nsight Systems/Compute, cuda-gdb, "
        "compute-sanitizer): run without it to read the counters",
    [GPU_CAUSE_VGPU] = "vGPU without profiling: the hypervisor's admin must enable profiling "
                       "for this vGPU (vGPU plugin parameter enable_profiling=1)",
    [GPU_CAUSE_MIG] = "MIG instance: counters need the whole GPU or an isolated compute "
                      "instance; run on a GPU with MIG off (nvidia-smi -mig 0)",
    [GPU_CAUSE_CONFIDENTIAL] =
        "confidential computing is on: the counters are disabled; run on a GPU without it",
    [GPU_CAUSE_CMP] = "a CMP (mining) GPU: CUPTI does not profile it",
    [GPU_CAUSE_SLI] = "SLI is on: CUPTI does not profile SLI; turn SLI off",
    [GPU_CAUSE_WSL] = "WSL: counters need WSL 2, Windows 11 and driver 525 or newer",
    [GPU_CAUSE_UNSUPPORTED_GPU] =
        "this GPU is not supported by CUPTI's range profiler (compute capability 7.5 or newer)",
    [GPU_CAUSE_NO_LIBRARIES] =
        "CUPTI could not initialise: the driver may be older than this CUDA toolkit needs "
        "(nvidia-smi's 'CUDA Version' below the toolkit's: update the driver), or "
        "libnvperf_host.so and libnvperf_target.so do not lie beside libcupti.so (the CUDA "
        "toolkit's lib64)",
    [GPU_CAUSE_NO_CUPTI] = "built without CUPTI (no cupti.h under CUDA_HOME): rebuild with a "
                           "CUDA toolkit that has it",
    [GPU_CAUSE_NO_DEVICE] = "no CUDA device",
};

void gpu_cause_line(gpu_cause cause, const char *detail, char *out, size_t len)
{
    const char *line = (unsigned)cause < GPU_CAUSE_COUNT ? lines[cause] : lines[GPU_CAUSE_NONE];
    if (detail && detail[0])
        snprintf(out, len, "%s (%s)", line, detail);
    else
        snprintf(out, len, "%s", line);
}
