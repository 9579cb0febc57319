/* Batch norm's loops over a blocked input (cpu_norm.c): one image's slice of
 * 8 channels of an nChw8c or nChw16c tensor, whose position p holds the 8
 * channels at xs[p * stride .. + 8). The output and the output's gradient are
 * in the same layout, or NCHW: the 8 planes of the slice at y + c * plane.
 * Where the two layouts meet, 8 x 8 tiles are transposed in AVX registers;
 * gcc makes scalar moves of such strided loops, which ran at a third of the
 * plain loops' bandwidth. The positions after the last multiple of 8, and
 * machines without AVX, take the scalar loops. Sums are in double, in a fixed
 * order. */
#include "cpu_norm_slices.h"

/* where channel c of position p is on the output's side of the slice */
static inline int64_t out_at(int64_t p, int c, int64_t plane, int stride, bool blocked)
{
    return blocked ? p * stride + c : c * plane + p;
}

#ifdef __AVX__
#include <immintrin.h>

/* r[k] becomes column k of the 8 x 8 tile whose row k it was */
static inline void transpose8(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int k = 0; k < 8; k += 2) {
        t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 8; k += 4) {
        u[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int k = 0; k < 4; k++) {
        r[k] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
        r[k + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
    }
}

static inline __m256d low_half(__m256 v)
{
    return _mm256_cvtps_pd(_mm256_castps256_ps128(v));
}

static inline __m256d high_half(__m256 v)
{
    return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
}

/* the positions p..p+7 of the slice's output side, as 8 channel vectors */
static inline void load_positions(const float *y, int64_t plane, int stride, bool blocked,
                                  int64_t p, __m256 r[8])
{
    if (blocked) {
        for (int t = 0; t < 8; t++)
            r[t] = _mm256_loadu_ps(y + (p + t) * stride);
        return;
    }
    for (int c = 0; c < 8; c++)
        r[c] = _mm256_loadu_ps(y + c * plane + p);
    transpose8(r);
}
#endif

void bn_slice_sums(const float *xs, int64_t plane, int stride, double sum[8], double sq[8])
{
    int64_t p = 0;
    for (int c = 0; c < 8; c++)
        sum[c] = sq[c] = 0.0;
#ifdef __AVX__
    /* two chains per half (even and odd positions), added at the end */
    __m256d s[4], q[4];
    for (int k = 0; k < 4; k++)
        s[k] = q[k] = _mm256_setzero_pd();
    for (; p + 2 <= plane; p += 2)
        for (int e = 0; e < 2; e++) {
            __m256 v = _mm256_loadu_ps(xs + (p + e) * stride);
            __m256d lo = low_half(v), hi = high_half(v);
            s[2 * e] = _mm256_add_pd(s[2 * e], lo);
            s[2 * e + 1] = _mm256_add_pd(s[2 * e + 1], hi);
            q[2 * e] = _mm256_add_pd(q[2 * e], _mm256_mul_pd(lo, lo));
            q[2 * e + 1] = _mm256_add_pd(q[2 * e + 1], _mm256_mul_pd(hi, hi));
        }
    _mm256_storeu_pd(sum, _mm256_add_pd(s[0], s[2]));
    _mm256_storeu_pd(sum + 4, _mm256_add_pd(s[1], s[3]));
    _mm256_storeu_pd(sq, _mm256_add_pd(q[0], q[2]));
    _mm256_storeu_pd(sq + 4, _mm256_add_pd(q[1], q[3]));
#endif
    for (; p < plane; p++)
        for (int c = 0; c < 8; c++) {
            double v = xs[p * stride + c];
            sum[c] += v;
            sq[c] += v * v;
        }
}

#ifdef __AVX__
static inline __m256 activate8(__m256 v, bn_act act)
{
    if (act == BN_ACT_NONE)
        return v;
    /* max(v, 0) is 0 for a NaN v, as the scalar test is */
    v = _mm256_max_ps(v, _mm256_setzero_ps());
    return act == BN_ACT_RELU6 ? _mm256_min_ps(v, _mm256_set1_ps(6.0f)) : v;
}

/* dy where the activation passes it at x * scale + shift, else 0 */
static inline __m256 mask8(__m256 dy, __m256 x, const bn_slice_act *act, __m256 scale,
                           __m256 shift)
{
    if (act->kind == BN_ACT_NONE)
        return dy;
    __m256 y = _mm256_add_ps(_mm256_mul_ps(x, scale), shift);
    __m256 m = _mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_GT_OQ);
    if (act->kind == BN_ACT_RELU6)
        m = _mm256_and_ps(m, _mm256_cmp_ps(y, _mm256_set1_ps(6.0f), _CMP_LT_OQ));
    return _mm256_and_ps(m, dy);
}

static inline __m256 load8_or_zero(const float *v)
{
    return v ? _mm256_loadu_ps(v) : _mm256_setzero_ps();
}
#endif

/* the scalar side of mask8 */
static inline float mask1(float dy, float x, const bn_slice_act *act, int c)
{
    if (act->kind == BN_ACT_NONE)
        return dy;
    return bn_passes(act->kind, x * act->scale[c] + act->shift[c]) ? dy : 0.0f;
}

void bn_slice_normalize(const float *xs, int64_t plane, int stride, float *y, bool y_blocked,
                        const float scale[8], const float shift[8], bn_act act)
{
    int64_t p = 0;
#ifdef __AVX__
    if (y_blocked) {
        __m256 sc = _mm256_loadu_ps(scale), sh = _mm256_loadu_ps(shift);
        for (; p < plane; p++)
            _mm256_storeu_ps(y + p * stride,
                             activate8(_mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(xs + p * stride),
                                                                   sc),
                                                     sh),
                                       act));
    }
    for (; p + 8 <= plane; p += 8) {
        __m256 r[8];
        for (int t = 0; t < 8; t++)
            r[t] = _mm256_loadu_ps(xs + (p + t) * stride);
        transpose8(r);
        for (int c = 0; c < 8; c++)
            _mm256_storeu_ps(y + c * plane + p,
                             activate8(_mm256_add_ps(_mm256_mul_ps(r[c], _mm256_set1_ps(scale[c])),
                                                     _mm256_set1_ps(shift[c])),
                                       act));
    }
#endif
    for (; p < plane; p++)
        for (int c = 0; c < 8; c++)
            y[out_at(p, c, plane, stride, y_blocked)] =
                bn_activate(act, xs[p * stride + c] * scale[c] + shift[c]);
}

void bn_slice_grad_sums(const float *dy, bool dy_blocked, const float *xs, int64_t plane,
                        int stride, const float mean[8], bn_slice_act act, double dbeta[8],
                        double dxc[8])
{
    int64_t p = 0;
    for (int c = 0; c < 8; c++)
        dbeta[c] = dxc[c] = 0.0;
#ifdef __AVX__
    __m256d s[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
    __m256d d[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
    __m256 mv = _mm256_loadu_ps(mean), sc = load8_or_zero(act.scale), sh = load8_or_zero(act.shift);
    __m256d m[2] = {low_half(mv), high_half(mv)};
    for (; p + 8 <= plane; p += 8) {
        __m256 r[8];
        load_positions(dy, plane, stride, dy_blocked, p, r);
        for (int t = 0; t < 8; t++) {
            __m256 x = _mm256_loadu_ps(xs + (p + t) * stride), gv = mask8(r[t], x, &act, sc, sh);
            __m256d g[2] = {low_half(gv), high_half(gv)}, xd[2] = {low_half(x), high_half(x)};
            for (int h = 0; h < 2; h++) {
                s[h] = _mm256_add_pd(s[h], g[h]);
                d[h] = _mm256_add_pd(d[h], _mm256_mul_pd(g[h], _mm256_sub_pd(xd[h], m[h])));
            }
        }
    }
    _mm256_storeu_pd(dbeta, s[0]);
    _mm256_storeu_pd(dbeta + 4, s[1]);
    _mm256_storeu_pd(dxc, d[0]);
    _mm256_storeu_pd(dxc + 4, d[1]);
#endif
    for (; p < plane; p++)
        for (int c = 0; c < 8; c++) {
            float x = xs[p * stride + c];
            double g = mask1(dy[out_at(p, c, plane, stride, dy_blocked)], x, &act, c);
            dbeta[c] += g;
            dxc[c] += g * (x - (double)mean[c]);
        }
}

void bn_slice_data(const float *dy, bool dy_blocked, const float *xs, float *dxs, int64_t plane,
                   int stride, const float k_dy[8], const float k_xhat[8], const float k_const[8],
                   bn_slice_act act, bool accumulate)
{
    int64_t p = 0;
#ifdef __AVX__
    __m256 kd = _mm256_loadu_ps(k_dy), kx = _mm256_loadu_ps(k_xhat), kc = _mm256_loadu_ps(k_const);
    __m256 sc = load8_or_zero(act.scale), sh = load8_or_zero(act.shift);
    for (; p + 8 <= plane; p += 8) {
        __m256 r[8];
        load_positions(dy, plane, stride, dy_blocked, p, r);
        for (int t = 0; t < 8; t++) {
            float *at = dxs + (p + t) * stride;
            __m256 x = _mm256_loadu_ps(xs + (p + t) * stride);
            __m256 g = _mm256_sub_ps(_mm256_mul_ps(kd, mask8(r[t], x, &act, sc, sh)),
                                     _mm256_add_ps(_mm256_mul_ps(kx, x), kc));
            _mm256_storeu_ps(at, accumulate ? _mm256_add_ps(_mm256_loadu_ps(at), g) : g);
        }
    }
#endif
    for (; p < plane; p++)
        for (int c = 0; c < 8; c++) {
            float x = xs[p * stride + c];
            float g = k_dy[c] * mask1(dy[out_at(p, c, plane, stride, dy_blocked)], x, &act, c) -
                      (k_xhat[c] * x + k_const[c]);
            float *at = dxs + p * stride + c;
            *at = accumulate ? *at + g : g;
        }
}
