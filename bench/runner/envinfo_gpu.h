/* Which GPUs this machine has, asked from the CUDA runtime (when the suite is
 * built with the toolkit): used by bin/envinfo for env.json and by bin/matrix
 * to pick the run-matrix row `local` stands for. Never fails hard: where no
 * device answers, the reason is what the runtime said. */
#ifndef ROOFLINE_ENVINFO_GPU_H
#define ROOFLINE_ENVINFO_GPU_H

#include <stddef.h>

#include "envinfo_json.h"

typedef struct {
    char name[256];
    char bus_id[32];   /* "0000:3b:00.0" */
    int sms, cc_major, cc_minor;
    double memory_gib;
    int max_sm_mhz, max_mem_mhz; /* the device's own maxima; 0 when unknown */
} gpu_device_info;

/* CUDA devices present, or -1 with the reason in why: the runtime's error
 * ("cudaGetDeviceCount: no NVIDIA driver on this machine: ...", as
 * cuda_no_device_why words it) or "built without the CUDA toolkit". 0
 * devices is not an error. */
int envinfo_gpu_count(char *why, size_t why_len);

/* Properties of device `index`; -1 with the reason in why. */
int envinfo_gpu_device(int index, gpu_device_info *d, char *why, size_t why_len);

/* The name of device 0 into name; -1 with the reason when there is none. */
int envinfo_gpu_first_name(char *name, size_t len, char *why, size_t why_len);

/* The "gpu" member of env.json: count, reason when none, and per device its
 * identity, the NVIDIA driver and the clocks NVML reports. */
void envinfo_write_gpus(json_writer *w);

#endif
