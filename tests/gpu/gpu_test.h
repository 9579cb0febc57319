/* What every GPU test program shares: PASS/FAIL lines with a tally, the skip
 * where no CUDA device opens, and the closing "N passed, M failed" line. */
#ifndef ROOFLINE_GPU_TEST_H
#define ROOFLINE_GPU_TEST_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

typedef struct {
    int passed, failed;
} gpu_tally;

static inline void gpu_expect(gpu_tally *t, bool ok, const char *what)
{
    printf("%s: %s\n", ok ? "PASS" : "FAIL", what);
    ok ? t->passed++ : t->failed++;
}

/* gpu_expect with a formatted line. */
static inline void gpu_expectf(gpu_tally *t, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void gpu_expectf(gpu_tally *t, bool ok, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    gpu_expect(t, ok, line);
}

/* Prints the one skip line and returns true where no CUDA device can be opened. */
static inline bool gpu_test_skip(void)
{
    int devices = 0;
    cudaError_t err = cudaGetDeviceCount(&devices);
    if (err == cudaSuccess && devices > 0)
        return false;
    printf("skipped: no CUDA device (%s)\n",
           err != cudaSuccess ? cudaGetErrorString(err) : "none found");
    return true;
}

/* Whether device 0 is tests/emu's host emulator (tests/emu/host/fake_cuda.cpp),
 * where a check runs its work at small sizes: every kernel is emulated
 * thread by thread and every convolution is a direct loop. */
static inline bool gpu_test_emulated(void)
{
    cudaDeviceProp prop;
    return cudaGetDeviceProperties(&prop, 0) == cudaSuccess &&
           !strncmp(prop.name, "host emulator", 13);
}

/* The closing line; the program's exit status. */
static inline int gpu_test_finish(const gpu_tally *t)
{
    printf("%d passed, %d failed\n", t->passed, t->failed);
    return t->failed ? 1 : 0;
}

#endif
