/* The timing pass on CUPTI's Activity API (cupti_trace.cu): every kernel's
 * mangled name, start, end, grid and block, and the external correlation id
 * (gpu_ops.h) that was pushed when the CUDA API call launching it was made.
 * Enabled kinds: CONCURRENT_KERNEL (durations without serialising kernels),
 * RUNTIME and DRIVER (correlation ids exist only for API records; both, since
 * cuDNN launches some kernels through the driver API directly) and
 * EXTERNAL_CORRELATION. Only one trace runs at a time in a process.
 * Available where the library was built with CUPTI (HAVE_CUPTI). */
#ifndef ROOFLINE_CUPTI_TRACE_H
#define ROOFLINE_CUPTI_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Starts recording on the current device (`device` must be current: the
 * backend's). Returns 0, a CUptiResult (> 0) or -1, with one line in err. */
int cupti_trace_start(int device, char *err, size_t err_len);

/* Everything the calling thread launches until the pop carries `op`. */
int cupti_trace_push(uint64_t op, char *err, size_t err_len);
int cupti_trace_pop(char *err, size_t err_len);

/* Waits for the device and forgets every record so far (warm-up steps). */
int cupti_trace_discard(char *err, size_t err_len);

/* Waits for the device, collects the kernels (in no particular order) into
 * *out, stops recording. Always stops, even when it fails. */
int cupti_trace_stop(gpu_kernel_list *out, char *err, size_t err_len);

/* A kernel's readable name: the C++ demangling of a mangled name, else a copy;
 * malloc'd (NULL out of memory). */
char *cupti_demangle(const char *name);

#ifdef __cplusplus
}
#endif

#endif
