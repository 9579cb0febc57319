/* GPU clocks and PCIe link from NVML, loaded with dlopen at run time: the
 * suite does not link NVML, and a machine without it only loses the clock
 * fields. */
#ifndef ROOFLINE_NVML_DL_H
#define ROOFLINE_NVML_DL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nvml_gpu nvml_gpu;
typedef struct nvml_sampler nvml_sampler;

/* The device at PCI bus id `bus_id` ("0000:3b:00.0", as cudaDeviceGetPCIBusId
 * writes it); NULL with the reason in why when NVML or the device is missing. */
nvml_gpu *nvml_open(const char *bus_id, char *why, size_t why_len);
void nvml_close(nvml_gpu *g);

/* Current SM and memory clocks in MHz; -1 when NVML does not answer. */
int nvml_clocks_mhz(nvml_gpu *g, unsigned *sm, unsigned *mem);

/* Maximum PCIe generation and width of the link this device and slot allow. */
int nvml_pcie_link(nvml_gpu *g, unsigned *gen, unsigned *width);

/* A thread that reads the clocks every period_ms until stopped, the first
 * reading a period after the start (so that none is taken before the work
 * has raised the clock). g may be NULL: then there is no thread and the
 * means are NAN. */
nvml_sampler *nvml_sampler_start(nvml_gpu *g, int period_ms);

/* Stops the thread; the mean SM and memory clocks over the samples, in MHz
 * (NAN where none: no NVML, or stopped within the first period). */
void nvml_sampler_stop(nvml_sampler *s, double *sm_mhz, double *mem_mhz);

#ifdef __cplusplus
}
#endif

#endif
