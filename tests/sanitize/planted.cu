/* Bugs planted on purpose, for check-gpu's sanitize stage: before it trusts a
 * "0 errors" of compute-sanitizer over the suite's kernels, the stage runs
 * this program under the same tool with the same kernel filter and expects
 * the planted bug to be reported. A tool that instruments nothing (a filter
 * that matches no kernel, a tool that cannot see the device) would otherwise
 * pass every kernel.
 *
 *   planted memcheck    one write one element past the end of a buffer
 *   planted racecheck   two warps writing and reading one shared word with no
 *                       barrier between
 *
 * Not a test of the suite: make test-gpu does not run it, and outside the
 * sanitizer the out-of-bounds write lands in the allocation's rounding. */
#include <stdio.h>
#include <string.h>

#include "../../models/cuda/check.h"

__global__ void planted_oob_kernel(int *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) /* the bug: i == n is past the end */
        p[i] = i;
}

/* volatile: the store and the load both reach shared memory */
__global__ void planted_race_kernel(int *out)
{
    __shared__ volatile int word;
    word = threadIdx.x;
    out[threadIdx.x] = word;
}

int main(int argc, char **argv)
{
    bool memcheck = argc == 2 && strcmp(argv[1], "memcheck") == 0;
    bool racecheck = argc == 2 && strcmp(argv[1], "racecheck") == 0;
    if (!memcheck && !racecheck) {
        fprintf(stderr, "usage: planted memcheck|racecheck (under compute-sanitizer's tool of "
                        "that name: check-gpu's sanitize stage)\n");
        return 2;
    }
    const int n = 1000;
    int *buffer;
    CUDA_CHECK(cudaMalloc(&buffer, n * sizeof(int)));
    if (memcheck)
        planted_oob_kernel<<<(n + 1 + 255) / 256, 256>>>(buffer, n);
    else
        planted_race_kernel<<<1, 64>>>(buffer);
    /* not checked: the sanitizer may end the kernel it reports */
    cudaError_t launched = cudaGetLastError();
    cudaError_t ran = cudaDeviceSynchronize();
    printf("planted_%s_kernel: launch %s, run %s\n", memcheck ? "oob" : "race",
           cudaGetErrorString(launched), cudaGetErrorString(ran));
    cudaFree(buffer);
    return 0;
}
