/* One training step between cudaProfilerStart and cudaProfilerStop, so that
 * Nsight Compute run with --profile-from-start off profiles that step's
 * kernels and nothing else (not cuDNN's algorithm search at creation, not
 * the warm-up steps): scripts/check_gpu.sh's counters stage runs
 *   ROOFLINE_PROFILE_STEP=2 ncu --profile-from-start off ... bin/train ...
 * to read the same metrics as the suite's metric pass, side by side.
 * ROOFLINE_PROFILE_STEP=k (k >= 1) is the k-th step the backend runs,
 * warm-up included, counted at the first layer's forward or at a CUDA
 * graph's replay (a capture runs nothing and is not counted); unset or
 * empty: nothing happens. Without a profiler attached the two calls do nothing. */
#include <cuda_profiler_api.h>
#include <errno.h>
#include <stdlib.h>

#include "cuda_internal.h"

int cuda_profile_setup(backend *b)
{
    b->profile_step = 0;
    b->steps_begun = 0;
    b->profiling = false;
    const char *v = getenv("ROOFLINE_PROFILE_STEP");
    if (!v || !*v)
        return 0;
    char *end = NULL;
    errno = 0;
    long k = strtol(v, &end, 10);
    if (errno || *end || k < 1 || k > 1000000)
        return cuda_fail(b, "ROOFLINE_PROFILE_STEP='%s' is not a step number 1..1000000", v);
    b->profile_step = k;
    return 0;
}

int cuda_profile_step_begin(backend *b)
{
    if (b->capturing)
        return 0; /* a capture runs nothing: not a step (each replay is one) */
    b->steps_begun++;
    if (b->profile_step == 0 || b->steps_begun != b->profile_step)
        return 0;
    CUDA_TRY(b, cudaProfilerStart());
    b->profiling = true;
    return 0;
}

int cuda_profile_step_end(backend *b)
{
    if (!b->profiling)
        return 0;
    b->profiling = false;
    CUDA_TRY(b, cudaProfilerStop());
    return 0;
}
