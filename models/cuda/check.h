/* One checking macro per GPU library: on failure, print file, line, the call
 * and the library's own error string, then exit non-zero. Used by host code in
 * .cu files (models/cuda, counters, peaks, tests/gpu). */
#ifndef ROOFLINE_CUDA_CHECK_H
#define ROOFLINE_CUDA_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#define CUDA_CHECK(call)                                                                      \
    do {                                                                                      \
        cudaError_t err_ = (call);                                                            \
        if (err_ != cudaSuccess) {                                                            \
            fprintf(stderr, "%s:%d: CUDA error in %s: %s\n", __FILE__, __LINE__, #call,       \
                    cudaGetErrorString(err_));                                                \
            exit(EXIT_FAILURE);                                                               \
        }                                                                                     \
    } while (0)

#define CUDNN_CHECK(call)                                                                     \
    do {                                                                                      \
        cudnnStatus_t st_ = (call);                                                           \
        if (st_ != CUDNN_STATUS_SUCCESS) {                                                    \
            fprintf(stderr, "%s:%d: cuDNN error in %s: %s\n", __FILE__, __LINE__, #call,      \
                    cudnnGetErrorString(st_));                                                \
            exit(EXIT_FAILURE);                                                               \
        }                                                                                     \
    } while (0)

#define CUBLAS_CHECK(call)                                                                    \
    do {                                                                                      \
        cublasStatus_t st_ = (call);                                                          \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                   \
            fprintf(stderr, "%s:%d: cuBLAS error in %s: %s\n", __FILE__, __LINE__, #call,     \
                    cublasGetStatusString(st_));                                              \
            exit(EXIT_FAILURE);                                                               \
        }                                                                                     \
    } while (0)

#endif
