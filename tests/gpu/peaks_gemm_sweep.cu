/* make test-gpu: the full-mode tensor-core sweep of bin/peaks (issue 13)
 * runs at least 6 shapes and, for each, every algorithm cuBLASLt's heuristic
 * offers (it is asked for 16). fp16 in, fp32 accumulate: every GPU with
 * tensor cores has it. About 10 s on an H100. */
#include <stdio.h>

#include "gpu_test.h"
#include "../../peaks/gpu_bench.h"

static gpu_tally tally;

int main(void)
{
    if (gpu_test_skip())
        return 0;
    gpu_context c;
    gpu_context_open(&c, 0, false);
    if (c.cc < 70) {
        printf("skipped: %s has no fp16 tensor cores\n", c.prop.name);
        gpu_context_close(&c);
        return 0;
    }
    gpu_result r = gpu_gemm_peak(c, GPU_GEMM_FP16);
    char line[640];
    snprintf(line, sizeof line, "fp16_tensor = %.1f GFLOP/s (%s)", r.value, r.detail);
    gpu_expect(&tally, r.value > 0, line);
    snprintf(line, sizeof line, "full sweep: %d shapes run (want >= 6)", r.shapes_tried);
    gpu_expect(&tally, r.shapes_tried >= 6, line);
    snprintf(line, sizeof line,
             "every offered algorithm run: %s (fewest offered for a shape %d, fewest run %d)",
             r.all_offered_tried ? "yes" : "no", r.algos_offered_min, r.algos_tried_min);
    gpu_expect(&tally, r.all_offered_tried && r.algos_offered_min >= 1, line);
    snprintf(line, sizeof line, "SM clock during the winning GEMM: %.0f MHz (NVML)", r.sm_mhz);
    gpu_expect(&tally, c.nvml == NULL || (r.sm_mhz > 100 && r.sm_mhz < 5000), line);
    gpu_context_close(&c);
    return gpu_test_finish(&tally);
}
