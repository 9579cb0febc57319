/* make test-gpu: the GPU stack this suite stands on answers, and computes.
 * Skips (exit 0, one line) where no CUDA device can be opened. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_test.h"
#include "../../models/cuda/check.h"

static gpu_tally tally;

static void expect(bool ok, const char *what)
{
    gpu_expect(&tally, ok, what);
}

/* C = A * B for row-major n x n matrices, through cuBLAS's column-major
 * interface (B^T A^T = C^T), checked against a direct loop in double. */
static void check_sgemm(cublasHandle_t blas)
{
    const int n = 96;
    size_t bytes = (size_t)n * n * sizeof(float);
    float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *c = (float *)malloc(bytes);
    if (!a || !b || !c) {
        fprintf(stderr, "device_check: out of host memory\n");
        exit(EXIT_FAILURE);
    }
    for (int i = 0; i < n * n; i++) {
        a[i] = (float)((i * 7 % 13) - 6) / 8.0f;
        b[i] = (float)((i * 5 % 11) - 5) / 4.0f;
    }
    float *da, *db, *dc;
    CUDA_CHECK(cudaMalloc(&da, bytes));
    CUDA_CHECK(cudaMalloc(&db, bytes));
    CUDA_CHECK(cudaMalloc(&dc, bytes));
    CUDA_CHECK(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice));
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasSetMathMode(blas, CUBLAS_PEDANTIC_MATH));
    CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, db, n, da, n, &zero,
                             dc, n));
    CUDA_CHECK(cudaMemcpy(c, dc, bytes, cudaMemcpyDeviceToHost));
    double worst = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double ref = 0.0;
            for (int k = 0; k < n; k++)
                ref += (double)a[i * n + k] * b[k * n + j];
            worst = fmax(worst, fabs(ref - c[i * n + j]));
        }
    expect(worst < 1e-3, "cuBLAS sgemm 96x96 matches a direct loop (fp32, no tensor cores)");
    CUDA_CHECK(cudaFree(da));
    CUDA_CHECK(cudaFree(db));
    CUDA_CHECK(cudaFree(dc));
    free(a);
    free(b);
    free(c);
}

int main(void)
{
    if (gpu_test_skip())
        return 0;
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("device 0: %s, %d SMs, %.1f GiB, compute %d.%d\n", prop.name, prop.multiProcessorCount,
           prop.totalGlobalMem / 1073741824.0, prop.major, prop.minor);
    expect(prop.multiProcessorCount > 0 && prop.totalGlobalMem > 0, "device reports SMs and memory");

    cudnnHandle_t dnn;
    CUDNN_CHECK(cudnnCreate(&dnn));
    expect(cudnnGetVersion() / 10000 == CUDNN_MAJOR, "cuDNN library major version matches its header");
    CUDNN_CHECK(cudnnDestroy(dnn));

    cublasHandle_t blas;
    CUBLAS_CHECK(cublasCreate(&blas));
    check_sgemm(blas);
    CUBLAS_CHECK(cublasDestroy(blas));

    return gpu_test_finish(&tally);
}
