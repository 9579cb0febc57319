/* Checking macros for the CUPTI wrappers (.cu files of counters/). Unlike
 * models/cuda/check.h they never exit: a training run must be able to fall
 * back to the analytic model when the counters are refused, so a failure
 * writes "file:line: call: CUPTI's text" into the caller's err buffer and
 * returns from the enclosing int function: the CUptiResult value (> 0) for a
 * CUPTI call, so that gpu_fallback.h can classify it, -1 for a CUDA call.
 * Both macros need `err` and `err_len` in scope. (CUDA_OR_RETURN, not CUDA_TRY:
 * models/cuda has a CUDA_TRY of its own that records into the backend.) */
#ifndef ROOFLINE_CUPTI_CHECK_H
#define ROOFLINE_CUPTI_CHECK_H

#include <stdio.h>

#include <cuda_runtime.h>
#include <cupti_result.h>

static inline int cupti_failed(CUptiResult r, const char *call, const char *file, int line,
                               char *err, size_t err_len)
{
    const char *text = NULL;
    if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || !text)
        text = "unknown CUPTI error";
    snprintf(err, err_len, "%s:%d: %s: %s", file, line, call, text);
    return (int)r;
}

static inline int cuda_failed(cudaError_t e, const char *call, const char *file, int line,
                              char *err, size_t err_len)
{
    snprintf(err, err_len, "%s:%d: %s: %s", file, line, call, cudaGetErrorString(e));
    return -1;
}

#define CUPTI_CHECK(call)                                                                     \
    do {                                                                                      \
        CUptiResult r_ = (call);                                                              \
        if (r_ != CUPTI_SUCCESS)                                                              \
            return cupti_failed(r_, #call, __FILE__, __LINE__, err, err_len);                 \
    } while (0)

#define CUDA_OR_RETURN(call)                                                                  \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess)                                                                \
            return cuda_failed(e_, #call, __FILE__, __LINE__, err, err_len);                  \
    } while (0)

#endif
