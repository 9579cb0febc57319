/* Why the CUDA runtime found no GPU, in words a user can act on. The runtime
 * says "CUDA driver version is insufficient for CUDA runtime version" both
 * where the driver is too old and where there is no NVIDIA driver at all (a
 * CPU machine, a container started without the GPU); the driver library,
 * loaded with dlopen, tells the two apart. */
#ifndef ROOFLINE_CUDA_DRIVER_DL_H
#define ROOFLINE_CUDA_DRIVER_DL_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Into why: for the runtime's "insufficient driver" error (insufficient_driver
 * true), "no NVIDIA driver on this machine: libcuda.so.1 not found" or "the NVIDIA driver
 * supports CUDA X.Y, older than this build's runtime R.S: update the driver";
 * for any other error, the runtime's own message. runtime_version is
 * CUDART_VERSION (1000 x major + 10 x minor). */
void cuda_no_device_why(bool insufficient_driver, const char *runtime_message,
                        int runtime_version, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
