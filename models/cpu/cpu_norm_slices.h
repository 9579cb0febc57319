/* Batch norm's loops over one image's slice of 8 channels of a blocked
 * (nChw8c / nChw16c) input, position p at xs[p * stride]; the output side
 * (y, dy) in that layout too (*_blocked) or NCHW, its 8 planes at
 * y + c * plane (cpu_norm_slices.c). */
#ifndef ROOFLINE_CPU_NORM_SLICES_H
#define ROOFLINE_CPU_NORM_SLICES_H

#include <stdbool.h>
#include <stdint.h>

/* per channel: the sum and the sum of squares of x */
void bn_slice_sums(const float *xs, int64_t plane, int stride, double sum[8], double sq[8]);
/* y = x * scale + shift */
void bn_slice_normalize(const float *xs, int64_t plane, int stride, float *y, bool y_blocked,
                        const float scale[8], const float shift[8]);
/* per channel: sum(dy) and sum(dy * (x - mean)) */
void bn_slice_grad_sums(const float *dy, bool dy_blocked, const float *xs, int64_t plane,
                        int stride, const float mean[8], double dbeta[8], double dxc[8]);
/* dx (blocked, as x) = k_dy * dy - (k_xhat * x + k_const), or added to dx */
void bn_slice_data(const float *dy, bool dy_blocked, const float *xs, float *dxs, int64_t plane,
                   int stride, const float k_dy[8], const float k_xhat[8], const float k_const[8],
                   bool accumulate);

#endif
