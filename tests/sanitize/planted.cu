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
 *   planted synccheck   a __syncwarp whose mask leaves out the calling lane
 *                       (synccheck's "invalid arguments"; undefined behaviour
 *                       on the GPU, so the stage gives it a minute)
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

/* lane 1 never calls __syncwarp and exits: nothing waits on it */
__global__ void planted_sync_kernel(int *out)
{
    unsigned lane = threadIdx.x % 32;
    if (lane == 0)
        __syncwarp(0x2u); /* the bug: lane 0 is not in its own mask */
    out[threadIdx.x] = (int)lane;
}

int main(int argc, char **argv)
{
    const char *tools[] = {"memcheck", "racecheck", "synccheck"};
    const char *kernels[] = {"planted_oob_kernel", "planted_race_kernel", "planted_sync_kernel"};
    int tool = -1;
    for (int i = 0; i < 3 && argc == 2; i++)
        if (strcmp(argv[1], tools[i]) == 0)
            tool = i;
    if (tool < 0) {
        fprintf(stderr, "usage: planted memcheck|racecheck|synccheck (under compute-sanitizer's "
                        "tool of that name: check-gpu's sanitize stage)\n");
        return 2;
    }
    const int n = 1000;
    int *buffer;
    CUDA_CHECK(cudaMalloc(&buffer, n * sizeof(int)));
    if (tool == 0)
        planted_oob_kernel<<<(n + 1 + 255) / 256, 256>>>(buffer, n);
    else if (tool == 1)
        planted_race_kernel<<<1, 64>>>(buffer);
    else
        planted_sync_kernel<<<1, 32>>>(buffer);
    /* not checked: the sanitizer may end the kernel it reports */
    cudaError_t launched = cudaGetLastError();
    cudaError_t ran = cudaDeviceSynchronize();
    printf("%s: launch %s, run %s\n", kernels[tool], cudaGetErrorString(launched),
           cudaGetErrorString(ran));
    cudaFree(buffer);
    return 0;
}
