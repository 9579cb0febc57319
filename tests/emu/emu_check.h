/* What the emulated kernel checks share: a tally of expectations, element
 * conversions, layout indexing and the agreement of a result with a direct
 * loop in double. */
#ifndef ROOFLINE_EMU_CHECK_H
#define ROOFLINE_EMU_CHECK_H

#include "cuda_emu.h"

#include "../../models/cuda/cuda_plan.h"

#include <cstdarg>
#include <cstdint>
#include <vector>

struct checker {
    const char *family = "";
    int checks = 0, failures = 0;

    void expect(bool ok, const char *format, ...) __attribute__((format(printf, 3, 4)))
    {
        checks++;
        if (ok)
            return;
        failures++;
        va_list ap;
        va_start(ap, format);
        fprintf(stderr, "FAIL %s: ", family);
        vfprintf(stderr, format, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
};

inline float host_float(float v) { return v; }
inline float host_float(__half v) { return __half2float(v); }
inline float host_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> T host_elem(float v);
template <> inline float host_elem<float>(float v) { return v; }
template <> inline __half host_elem<__half>(float v) { return __float2half_rn(v); }
template <> inline __nv_bfloat16 host_elem<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T> const char *elem_name();
template <> inline const char *elem_name<float>() { return "fp32"; }
template <> inline const char *elem_name<__half>() { return "fp16"; }
template <> inline const char *elem_name<__nv_bfloat16>() { return "bf16"; }

/* The largest error of a result rounded to T, relative to the largest
 * reference value: fp32 sums of up to a few thousand terms, or one rounding
 * of the result to fp16 (2^-11) or bf16 (2^-8) and then some. */
template <typename T> double elem_tolerance();
template <> inline double elem_tolerance<float>() { return 2e-5; }
template <> inline double elem_tolerance<__half>() { return 2e-3; }
template <> inline double elem_tolerance<__nv_bfloat16>() { return 1.2e-2; }

/* The elem_type of T, as the backend's tables name it. */
template <typename T> int elem_code();
template <> inline int elem_code<float>() { return ELEM_F32; }
template <> inline int elem_code<__half>() { return ELEM_F16; }
template <> inline int elem_code<__nv_bfloat16>() { return ELEM_BF16; }

/* The activations in double. */
inline double act_ref(double v, int act)
{
    if (act == ACT_RELU)
        return v > 0.0 ? v : 0.0;
    if (act == ACT_RELU6)
        return v > 0.0 ? (v < 6.0 ? v : 6.0) : 0.0;
    return v;
}

/* Whether the gradient passes where the activation's output is y: strictly
 * inside (0, 6), torch's mask on an in-place ReLU/ReLU6's output. */
inline bool passes_ref(double y, int act)
{
    if (act == ACT_RELU)
        return y > 0.0;
    if (act == ACT_RELU6)
        return y > 0.0 && y < 6.0;
    return true;
}

/* Element (n, c, y, x) of an (N, C, H, W) tensor in either layout. */
inline int64_t at_nchw_or_nhwc(int n, int c, int y, int x, int C, int H, int W, bool nhwc)
{
    return nhwc ? (((int64_t)n * H + y) * W + x) * C + c : (((int64_t)n * C + c) * H + y) * W + x;
}

/* Pseudo-random values in [lo, hi), representable in T. */
template <typename T> std::vector<T> random_values(size_t n, uint32_t seed, float lo, float hi)
{
    std::vector<T> v(n);
    uint32_t s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = host_elem<T>(lo + (hi - lo) * (float)(s >> 8) / 16777216.0f);
    }
    return v;
}

/* max |got - want| / max(max |want|, floor): NaN in got counts as infinite. */
template <typename T>
double relative_error(const std::vector<T> &got, const std::vector<double> &want, double floor = 1e-30)
{
    double diff = 0.0, scale = floor;
    for (size_t i = 0; i < got.size(); i++) {
        double g = host_float(got[i]), d = fabs(g - want[i]);
        diff = d != d ? INFINITY : (d > diff ? d : diff);
        scale = fabs(want[i]) > scale ? fabs(want[i]) : scale;
    }
    return diff / scale;
}

template <typename T> bool same_bits(const std::vector<T> &a, const std::vector<T> &b)
{
    return a.size() == b.size() &&
           (a.empty() || memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

/* Whether two runs gave the same result: vectors bit for bit, a struct by
 * its own same(). */
template <typename T> bool same_result(const std::vector<T> &a, const std::vector<T> &b)
{
    return same_bits(a, b);
}
template <typename R> auto same_result(const R &a, const R &b) -> decltype(a.same(b))
{
    return a.same(b);
}

/* Runs f under the forward schedule and returns its result; with every,
 * also backwards and shuffled, which must give the same result (else the
 * kernel races, or its sums depend on timing). */
template <typename F>
auto under_every_schedule(checker &ck, const char *what, F f, bool every = true) -> decltype(f())
{
    emu::set_schedule(emu::FORWARD);
    auto first = f();
    const emu::schedule others[] = {emu::BACKWARD, emu::SHUFFLED};
    for (int k = 0; every && k < 2; k++) {
        emu::set_schedule(others[k], 7);
        auto again = f();
        ck.expect(same_result(first, again), "%s: the result depends on the order threads run in",
                  what);
    }
    emu::set_schedule(emu::FORWARD);
    return first;
}

/* The kernel families; each returns through the checker. */
void check_emulator(checker &ck);
void check_depthwise_kernels(checker &ck);
void check_norm_kernels(checker &ck);
void check_elementwise_kernels(checker &ck);
void check_pool_kernels(checker &ck);
void check_loss_sgd_kernels(checker &ck);

/* Runs a kernel no GPU allows (emu_self.cpp); returns only if the emulator
 * let it pass. */
int emu_misuse(const char *which);

#endif
