/* Vendor figures of GPUs (peaks/specs.csv), to set beside what bin/peaks
 * measures. */
#ifndef ROOFLINE_SPECS_H
#define ROOFLINE_SPECS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    char gpu[48];
    char match[48];       /* words that must all be words of the device's name */
    int sms;
    double boost_mhz;     /* the clock the CUDA-core figures assume */
    double tensor_mhz;    /* the clock the tensor figures assume (H100: 1830, not boost) */
    double fp64_tflops, fp32_tflops, fp16_tflops; /* CUDA cores; fp16 = half2 */
    double tf32_tensor_tflops, fp16_tensor_tflops, bf16_tensor_tflops, fp8_tensor_tflops;
    double mem_gbs;
    char source[400];
} gpu_spec;               /* NAN where the GPU has no such figure */

typedef struct {
    gpu_spec *rows;
    int n;
} gpu_spec_table;

/* Reads a specs file. Returns 0, or -1 with the reason in err. */
int specs_load(const char *path, gpu_spec_table *t, char *err, size_t err_len);

/* Finds specs.csv: $ROOFLINE_SPECS, then peaks/specs.csv under the current
 * folder, then ../peaks/specs.csv beside the running executable (bin/peaks in
 * a checkout). Returns 0 with the path, or -1. */
int specs_find_file(char *path, size_t len);

/* The row whose match words are all words of `device` (split at anything
 * that is not a letter or digit, compared without case), preferring the row
 * with the most words; NULL when none matches. */
const gpu_spec *specs_match(const gpu_spec_table *t, const char *device);

/* The vendor figure for a ceiling bin/peaks reports, in its unit (GFLOP/s or
 * GB/s): fp64_fma, fp32_fma, fp16_fma, tf32/fp16/bf16/fp8_tensor, hbm_*.
 * NAN for anything else or where the GPU has no such figure. */
double specs_value(const gpu_spec *s, const char *ceiling);

/* The SM clock in MHz the figure for `ceiling` assumes: tensor_mhz for the
 * *_tensor ceilings, boost_mhz for the CUDA-core ones; NAN otherwise. A
 * figure scales with the clock, so figure x measured / this is the spec at
 * the clock the GPU ran. */
double specs_clock_mhz(const gpu_spec *s, const char *ceiling);

void specs_free(gpu_spec_table *t);

#ifdef __cplusplus
}
#endif

#endif
