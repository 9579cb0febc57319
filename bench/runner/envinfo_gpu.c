#include "envinfo_gpu.h"

#include <stdio.h>
#include <string.h>

#include "../../peaks/cuda_driver_dl.h"
#include "../../peaks/nvml_dl.h"

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>

int envinfo_gpu_count(char *why, size_t why_len)
{
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess) {
        char what[256];
        cuda_no_device_why(rc == cudaErrorInsufficientDriver, cudaGetErrorString(rc),
                           CUDART_VERSION, what, sizeof what);
        snprintf(why, why_len, "cudaGetDeviceCount: %.200s", what);
        return -1;
    }
    return count;
}

int envinfo_gpu_device(int index, gpu_device_info *d, char *why, size_t why_len)
{
    memset(d, 0, sizeof *d);
    struct cudaDeviceProp prop;
    cudaError_t rc = cudaGetDeviceProperties(&prop, index);
    if (rc != cudaSuccess) {
        snprintf(why, why_len, "cudaGetDeviceProperties(%d): %s", index, cudaGetErrorString(rc));
        return -1;
    }
    snprintf(d->name, sizeof d->name, "%s", prop.name);
    d->sms = prop.multiProcessorCount;
    d->cc_major = prop.major;
    d->cc_minor = prop.minor;
    d->memory_gib = (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0);
    if (cudaDeviceGetPCIBusId(d->bus_id, (int)sizeof d->bus_id, index) != cudaSuccess)
        d->bus_id[0] = '\0';
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, index) == cudaSuccess)
        d->max_sm_mhz = khz / 1000;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, index) == cudaSuccess)
        d->max_mem_mhz = khz / 1000;
    return 0;
}
#else
int envinfo_gpu_count(char *why, size_t why_len)
{
    snprintf(why, why_len, "built without the CUDA toolkit");
    return -1;
}

int envinfo_gpu_device(int index, gpu_device_info *d, char *why, size_t why_len)
{
    (void)index;
    memset(d, 0, sizeof *d);
    snprintf(why, why_len, "built without the CUDA toolkit");
    return -1;
}
#endif

int envinfo_gpu_first_name(char *name, size_t len, char *why, size_t why_len)
{
    int count = envinfo_gpu_count(why, why_len);
    if (count == 0)
        snprintf(why, why_len, "no CUDA device");
    if (count <= 0)
        return -1;
    gpu_device_info d;
    if (envinfo_gpu_device(0, &d, why, why_len))
        return -1;
    snprintf(name, len, "%s", d.name);
    return 0;
}

/* The kernel driver's version from /proc/driver/nvidia/version
 * ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  ..."). */
static int nvidia_driver_version(char *out, size_t len)
{
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f)
        return -1;
    char line[512], version[64];
    int rc = -1;
    if (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "Kernel Module");
        if (p && sscanf(p + strlen("Kernel Module"), "%63s", version) == 1) {
            snprintf(out, len, "%s", version);
            rc = 0;
        }
    }
    fclose(f);
    return rc;
}

static void write_device(json_writer *w, int index)
{
    gpu_device_info d;
    char why[256];
    json_object_begin(w, NULL);
    json_int(w, "index", index);
    if (envinfo_gpu_device(index, &d, why, sizeof why)) {
        json_string(w, "reason", why);
        json_object_end(w);
        return;
    }
    json_string(w, "name", d.name);
    json_string(w, "pci_bus_id", d.bus_id);
    json_int(w, "sms", d.sms);
    json_stringf(w, "compute_capability", "%d.%d", d.cc_major, d.cc_minor);
    json_number(w, "memory_gib", d.memory_gib);
    json_int(w, "max_sm_mhz", d.max_sm_mhz);
    json_int(w, "max_mem_mhz", d.max_mem_mhz);
    nvml_gpu *nvml = nvml_open(d.bus_id, why, sizeof why);
    unsigned sm = 0, mem = 0;
    json_object_begin(w, "clocks_now");
    if (nvml && nvml_clocks_mhz(nvml, &sm, &mem) == 0) {
        json_int(w, "sm_mhz", sm);
        json_int(w, "mem_mhz", mem);
        json_string(w, "source", "nvml");
    } else {
        json_string(w, "reason", nvml ? "NVML did not report the clocks" : why);
    }
    json_object_end(w);
    nvml_close(nvml);
    json_object_end(w);
}

void envinfo_write_gpus(json_writer *w)
{
    char why[256] = "", driver[128];
    int count = envinfo_gpu_count(why, sizeof why);
    json_object_begin(w, "gpu");
    json_int(w, "count", count > 0 ? count : 0);
    if (count <= 0)
        json_string(w, "reason", count == 0 ? "no CUDA device" : why);
    json_string(w, "nvidia_driver",
                nvidia_driver_version(driver, sizeof driver) == 0
                    ? driver
                    : "not found (no /proc/driver/nvidia/version)");
    json_array_begin(w, "devices");
    for (int i = 0; i < count; i++)
        write_device(w, i);
    json_array_end(w);
    json_object_end(w);
}
