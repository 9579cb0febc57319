/* The GPU half of bin/peaks (peaks/gpu_*.cu), behind a C interface. */
#ifndef ROOFLINE_GPU_PEAKS_H
#define ROOFLINE_GPU_PEAKS_H

#include <stdbool.h>
#include <stddef.h>

#include "peak_table.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int device;   /* CUDA device index */
    bool quick;   /* fewer trials and shapes: seconds, not minutes */
    bool verbose; /* progress on stderr */
} gpu_peaks_options;

enum { GPU_PEAKS_OK = 0, GPU_PEAKS_NO_DEVICE = 1 };

/* Appends the GPU rows to t. GPU_PEAKS_NO_DEVICE with the reason in err when
 * no CUDA device can be opened; a failing CUDA call ends the process with one
 * line naming the call (models/cuda/check.h). */
int gpu_peaks_run(const gpu_peaks_options *o, peak_table *t, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
