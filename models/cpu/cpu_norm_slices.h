/* Batch norm's loops over one image's slice of 8 channels of a blocked
 * (nChw8c / nChw16c) input, position p at xs[p * stride]; the output side
 * (y, dy) in that layout too (*_blocked) or NCHW, its 8 planes at
 * y + c * plane (cpu_norm_slices.c). */
#ifndef ROOFLINE_CPU_NORM_SLICES_H
#define ROOFLINE_CPU_NORM_SLICES_H

#include <stdbool.h>
#include <stdint.h>

/* The activation a batch norm applies to its output itself (the ReLU or ReLU6
 * in place after it): forward clips y; backward takes the activation's
 * gradient and masks it where x * scale + shift, recomputed bit for bit as
 * forward computed it, lies outside (0, 6) or (0, inf). */
typedef enum { BN_ACT_NONE, BN_ACT_RELU, BN_ACT_RELU6 } bn_act;

/* a batch norm's activation over 8 channels: their scale and shift */
typedef struct {
    bn_act kind;
    const float *scale, *shift;
} bn_slice_act;

/* per channel: the sum and the sum of squares of x */
void bn_slice_sums(const float *xs, int64_t plane, int stride, double sum[8], double sq[8]);
/* y = act(x * scale + shift) */
void bn_slice_normalize(const float *xs, int64_t plane, int stride, float *y, bool y_blocked,
                        const float scale[8], const float shift[8], bn_act act);
/* per channel: sum(dy) and sum(dy * (x - mean)), dy masked by act */
void bn_slice_grad_sums(const float *dy, bool dy_blocked, const float *xs, int64_t plane,
                        int stride, const float mean[8], bn_slice_act act, double dbeta[8],
                        double dxc[8]);
/* dx (blocked, as x) = k_dy * dy - (k_xhat * x + k_const), or added to dx;
 * dy masked by act */
void bn_slice_data(const float *dy, bool dy_blocked, const float *xs, float *dxs, int64_t plane,
                   int stride, const float k_dy[8], const float k_xhat[8], const float k_const[8],
                   bn_slice_act act, bool accumulate);

/* the activation of one value, and whether its gradient passes (the same
 * tests as models/cpu/cpu_pointwise.c's) */
static inline float bn_activate(bn_act act, float y)
{
    if (act == BN_ACT_NONE)
        return y;
    return y > 0.0f ? (act == BN_ACT_RELU6 && !(y < 6.0f) ? 6.0f : y) : 0.0f;
}

static inline bool bn_passes(bn_act act, float y)
{
    return act == BN_ACT_NONE || (y > 0.0f && (act == BN_ACT_RELU || y < 6.0f));
}

#endif
