/* The elementwise kernels (models/cuda/cuda_elementwise_kernels.cuh) against
 * direct loops in double, in the three element types: conversion, fill,
 * ReLU/ReLU6 (their edges 0 and 6 included), the residual add with its
 * activation, dropout (the CPU backend's mask bit for bit, in either layout)
 * and a bias with its activation; every backward both writing and
 * accumulating, and in place where the backend runs it so. */
#include "emu_check.h"

#include "../../models/cuda/cuda_elementwise_kernels.cuh"

namespace {

/* Few blocks, so that the grid-stride loops go round more than once. */
const dim3 few_blocks(3), ew_block(EW_THREADS);

/* (n, c, h, w) of the tensors: 1008 elements, more than the grid's threads */
const int N = 3, C = 6, H = 7, W = 8;
const size_t ELEMS = (size_t)N * C * H * W;

const char *act_name(int act)
{
    return act == ACT_RELU ? "ReLU" : act == ACT_RELU6 ? "ReLU6" : "none";
}

/* Values in [lo, hi) with the activations' edges, 0 and 6, among them. */
template <typename T> std::vector<T> values_with_edges(uint32_t seed, float lo, float hi)
{
    std::vector<T> v = random_values<T>(ELEMS, seed, lo, hi);
    for (size_t i = 0; i < v.size(); i += 7)
        v[i] = host_elem<T>(i % 2 ? 6.0f : 0.0f);
    return v;
}

template <typename T> std::vector<double> as_double(const std::vector<T> &v)
{
    std::vector<double> d(v.size());
    for (size_t i = 0; i < v.size(); i++)
        d[i] = host_float(v[i]);
    return d;
}

template <typename T>
void expect_close(checker &ck, const std::vector<T> &got, const std::vector<double> &want,
                  const char *what)
{
    double e = relative_error(got, want), tol = elem_tolerance<T>();
    ck.expect(e <= tol, "%s %s: relative error %.3g > %.3g", elem_name<T>(), what, e, tol);
}

/* ---- conversion and fill ------------------------------------------------------ */

/* Every element rounded once from S to D, as the host's conversions do. */
template <typename D, typename S> void check_convert(checker &ck)
{
    std::vector<S> src = random_values<S>(ELEMS, 1, -100.0f, 100.0f);
    std::vector<D> dst(ELEMS, host_elem<D>(NAN)), want(ELEMS);
    for (size_t i = 0; i < ELEMS; i++)
        want[i] = host_elem<D>(host_float(src[i]));
    emu::launch("convert_kernel", few_blocks, ew_block, convert_kernel<D, S>, dst.data(),
                src.data(), (int64_t)ELEMS);
    ck.expect(same_bits(dst, want), "convert %s to %s: not every element rounded once",
              elem_name<S>(), elem_name<D>());
}

template <typename T> void check_convert_and_fill(checker &ck)
{
    check_convert<T, float>(ck);
    check_convert<T, __half>(ck);
    check_convert<T, __nv_bfloat16>(ck);
    std::vector<T> dst(ELEMS, host_elem<T>(NAN)), want(ELEMS, host_elem<T>(0.1f));
    emu::launch("fill_kernel", few_blocks, ew_block, fill_kernel<T>, dst.data(), 0.1f,
                (int64_t)ELEMS);
    ck.expect(same_bits(dst, want), "%s fill: not every element is the value", elem_name<T>());
}

/* ---- activations and the residual add ----------------------------------------- */

template <typename T> void check_activate(checker &ck, int act)
{
    char what[64];
    std::vector<T> x = values_with_edges<T>(2, -8.0f, 10.0f);
    std::vector<T> dy = random_values<T>(ELEMS, 3, -1.0f, 1.0f);
    std::vector<T> y(ELEMS, host_elem<T>(NAN));
    emu::launch("activate_kernel", few_blocks, ew_block, activate_kernel<T>, y.data(), x.data(),
                act, (int64_t)ELEMS);
    std::vector<double> y_ref(ELEMS);
    for (size_t i = 0; i < ELEMS; i++)
        y_ref[i] = act_ref(host_float(x[i]), act);
    snprintf(what, sizeof what, "%s forward", act_name(act));
    expect_close(ck, y, y_ref, what);

    /* the gradient masked by the output, into a fresh buffer or onto one */
    std::vector<T> base = random_values<T>(ELEMS, 4, -2.0f, 2.0f);
    for (int acc = 0; acc < 2; acc++) {
        std::vector<T> dx = base;
        emu::launch("activate_backward_kernel", few_blocks, ew_block, activate_backward_kernel<T>,
                    dx.data(), dy.data(), y.data(), act, (bool)acc, (int64_t)ELEMS);
        std::vector<double> want(ELEMS);
        for (size_t i = 0; i < ELEMS; i++)
            want[i] = (acc ? host_float(base[i]) : 0.0) +
                      (passes_ref(host_float(y[i]), act) ? host_float(dy[i]) : 0.0);
        snprintf(what, sizeof what, "%s backward%s", act_name(act), acc ? " (accumulating)" : "");
        expect_close(ck, dx, want, what);
        /* the same on 16-byte vectors, as the backend launches it where vec_fits */
        std::vector<T> dxv = base;
        const void *pointers[] = {dxv.data(), dy.data(), y.data()};
        ck.expect(vec_fits<T>((int64_t)ELEMS, pointers, 3), "%s: vectors do not fit", what);
        uint32_t vectors = (uint32_t)(ELEMS / vec16<T>::width);
        emu::launch("activate_backward_vec_kernel", few_blocks, ew_block,
                    activate_backward_vec_kernel<T>, dxv.data(), (const T *)dy.data(),
                    (const T *)y.data(), act, (bool)acc, vectors);
        ck.expect(same_bits(dx, dxv), "%s: the vector kernel differs from the per-element one",
                  what);
    }
    /* in place: the gradient of the input is the gradient of the output */
    std::vector<T> g = dy;
    emu::launch("activate_backward_kernel", few_blocks, ew_block, activate_backward_kernel<T>,
                g.data(), g.data(), y.data(), act, false, (int64_t)ELEMS);
    std::vector<double> want(ELEMS);
    for (size_t i = 0; i < ELEMS; i++)
        want[i] = passes_ref(host_float(y[i]), act) ? host_float(dy[i]) : 0.0;
    snprintf(what, sizeof what, "%s backward in place", act_name(act));
    expect_close(ck, g, want, what);
}

/* add's backward: g = dy masked by the fused activation, to both inputs */
template <typename T>
void check_add_backward(checker &ck, int act, const std::vector<T> &y, bool in_place, bool acc0,
                        bool acc1, bool second)
{
    std::vector<T> dy = random_values<T>(ELEMS, 6, -1.0f, 1.0f);
    std::vector<T> base0 = random_values<T>(ELEMS, 7, -2.0f, 2.0f);
    std::vector<T> base1 = random_values<T>(ELEMS, 8, -2.0f, 2.0f);
    std::vector<T> g = dy, dx0 = base0, dx1 = base1;
    T *p0 = in_place ? g.data() : dx0.data(), *p1 = second ? dx1.data() : nullptr;
    emu::launch("add_backward_kernel", few_blocks, ew_block, add_backward_kernel<T>, g.data(),
                y.data(), p0, p1, act, acc0, acc1, (int64_t)ELEMS);
    std::vector<double> want0(ELEMS), want1(ELEMS);
    for (size_t i = 0; i < ELEMS; i++) {
        double d = passes_ref(host_float(y[i]), act) ? host_float(dy[i]) : 0.0;
        /* an input gradient in dy's own buffer takes g in place, whatever acc0 */
        want0[i] = (acc0 && !in_place ? host_float(base0[i]) : 0.0) + d;
        want1[i] = second ? (acc1 ? host_float(base1[i]) : 0.0) + d : host_float(base1[i]);
    }
    char what[128];
    snprintf(what, sizeof what, "add backward (%s%s%s%s%s)", act_name(act),
             in_place ? ", in place" : "", acc0 ? ", accumulating 0" : "",
             acc1 ? ", accumulating 1" : "", second ? "" : ", no second input");
    expect_close(ck, in_place ? g : dx0, want0, what);
    expect_close(ck, dx1, want1, what);
    /* the same on 16-byte vectors, as the backend launches it where vec_fits */
    std::vector<T> gv = dy, dx0v = base0, dx1v = base1;
    T *q0 = in_place ? gv.data() : dx0v.data(), *q1 = second ? dx1v.data() : nullptr;
    const void *pointers[] = {gv.data(), y.data(), q0, q1};
    ck.expect(vec_fits<T>((int64_t)ELEMS, pointers, 4), "%s: vectors do not fit", what);
    emu::launch("add_backward_vec_kernel", few_blocks, ew_block, add_backward_vec_kernel<T>,
                gv.data(), y.data(), q0, q1, act, acc0, acc1, (uint32_t)(ELEMS / vec16<T>::width));
    ck.expect(same_bits(in_place ? g : dx0, in_place ? gv : dx0v) && same_bits(dx1, dx1v),
              "%s: the vector kernel differs from the per-element one", what);
}

template <typename T> void check_add(checker &ck, int act)
{
    std::vector<T> x0 = values_with_edges<T>(9, -8.0f, 8.0f);
    std::vector<T> x1 = random_values<T>(ELEMS, 10, -2.0f, 2.0f);
    /* sums exactly at the edges too */
    for (size_t i = 3; i < ELEMS; i += 11)
        x0[i] = host_elem<T>(i % 2 ? 5.5f : -0.5f), x1[i] = host_elem<T>(0.5f);
    std::vector<T> y(ELEMS, host_elem<T>(NAN));
    emu::launch("add_kernel", few_blocks, ew_block, add_kernel<T>, y.data(), x0.data(), x1.data(),
                act, (int64_t)ELEMS);
    std::vector<double> want(ELEMS);
    for (size_t i = 0; i < ELEMS; i++)
        want[i] = act_ref((double)host_float(x0[i]) + host_float(x1[i]), act);
    char what[64];
    snprintf(what, sizeof what, "add (%s) forward", act_name(act));
    expect_close(ck, y, want, what);

    check_add_backward<T>(ck, act, y, false, false, false, true);
    check_add_backward<T>(ck, act, y, false, true, false, true);
    check_add_backward<T>(ck, act, y, false, false, true, true);
    check_add_backward<T>(ck, act, y, true, true, true, true);
    check_add_backward<T>(ck, act, y, false, true, false, false);
}

/* ---- dropout ---------------------------------------------------------------- */

struct dropout_case {
    int c, h, w; /* 1 x 1: after a fully connected layer */
    bool nhwc;
    float p;
    size_t elems() const { return (size_t)N * c * h * w; }
};

/* What the CPU backend keeps: uniform(seed, step x layers + layer, the NCHW
 * index) >= p. */
struct dropout_draw {
    uint64_t seed = 1234, forward_count = 5, n_layers = 10, layer = 3;
};

template <typename T>
void run_dropout(const dropout_case &dc, const dropout_draw &dd, const std::vector<T> &x,
                 std::vector<T> *y, std::vector<uint8_t> *keep)
{
    size_t n = dc.elems();
    y->assign(n, host_elem<T>(NAN));
    keep->assign(n, 0xff);
    emu::launch("dropout_kernel", few_blocks, ew_block, dropout_kernel<T>, y->data(), keep->data(),
                x.data(), dc.p, dd.seed, &dd.forward_count, dd.n_layers, dd.layer, dc.c,
                (int64_t)dc.h * dc.w, dc.nhwc ? LAYOUT_NHWC : LAYOUT_NCHW, (int64_t)n);
}

template <typename T> void check_dropout(checker &ck, const dropout_case &dc)
{
    char what[96];
    snprintf(what, sizeof what, "%s dropout p %.2f c%d %dx%d %s", elem_name<T>(), dc.p, dc.c,
             dc.h, dc.w, dc.nhwc ? "NHWC" : "NCHW");
    size_t n = dc.elems();
    dropout_draw dd;
    std::vector<T> x = random_values<T>(n, 11, -2.0f, 2.0f), y, y2;
    std::vector<uint8_t> keep, keep2;
    run_dropout(dc, dd, x, &y, &keep);

    /* the CPU backend's mask, element by element in either layout */
    bool same_as_cpu = true;
    uint64_t stream = dd.forward_count * dd.n_layers + dd.layer;
    for (int i = 0; i < N; i++)
        for (int c = 0; c < dc.c; c++)
            for (int r = 0; r < dc.h; r++)
                for (int q = 0; q < dc.w; q++) {
                    size_t j = (size_t)at_nchw_or_nhwc(i, c, r, q, dc.c, dc.h, dc.w, dc.nhwc);
                    uint64_t nchw = (uint64_t)at_nchw_or_nhwc(i, c, r, q, dc.c, dc.h, dc.w, false);
                    same_as_cpu &= keep[j] == (rng_uniform(dd.seed, stream, nchw) >= (double)dc.p);
                }
    ck.expect(same_as_cpu, "%s: the mask is not the CPU backend's", what);
    size_t kept = 0;
    std::vector<double> want(n);
    for (size_t j = 0; j < n; j++) {
        kept += keep[j];
        want[j] = keep[j] ? host_float(x[j]) / (1.0 - dc.p) : 0.0;
    }
    /* 4 standard deviations of a binomial fraction */
    double fraction = (double)kept / n, spread = 4.0 * sqrt(dc.p * (1.0 - dc.p) / n);
    ck.expect(fabs(fraction - (1.0 - dc.p)) <= spread, "%s: kept %.3f, not near %.3f", what,
              fraction, 1.0 - dc.p);
    double e = relative_error(y, want), tol = elem_tolerance<T>();
    ck.expect(e <= tol, "%s: kept values not scaled by 1 / (1 - p): relative error %.3g", what, e);

    run_dropout(dc, dd, x, &y2, &keep2);
    ck.expect(keep2 == keep && same_bits(y2, y), "%s: the same step drew another mask", what);
    dd.forward_count++;
    run_dropout(dc, dd, x, &y2, &keep2);
    ck.expect(keep2 != keep, "%s: the next step drew the same mask", what);

    std::vector<T> dy = random_values<T>(n, 12, -1.0f, 1.0f);
    std::vector<T> base = random_values<T>(n, 13, -2.0f, 2.0f);
    for (int acc = 0; acc < 2; acc++) {
        std::vector<T> dx = base;
        emu::launch("dropout_backward_kernel", few_blocks, ew_block, dropout_backward_kernel<T>,
                    dx.data(), dy.data(), keep.data(), dc.p, (bool)acc, (int64_t)n);
        for (size_t j = 0; j < n; j++)
            want[j] = (acc ? host_float(base[j]) : 0.0) +
                      (keep[j] ? host_float(dy[j]) / (1.0 - dc.p) : 0.0);
        e = relative_error(dx, want);
        ck.expect(e <= tol, "%s backward%s: relative error %.3g > %.3g", what,
                  acc ? " (accumulating)" : "", e, tol);
    }
}

/* ---- bias and activation, the step counter ----------------------------------- */

template <typename T> void check_bias_act(checker &ck, int act, bool nhwc, int c, int h, int w)
{
    size_t n = (size_t)N * c * h * w;
    std::vector<T> y = random_values<T>(n, 14, -7.0f, 9.0f);
    std::vector<T> bias = random_values<T>((size_t)c, 15, -3.0f, 3.0f), before = y, yv = y;
    int layout = nhwc ? LAYOUT_NHWC : LAYOUT_NCHW;
    int64_t plane = (int64_t)h * w;
    emu::launch("bias_act_kernel", few_blocks, ew_block, bias_act_kernel<T>, y.data(), bias.data(),
                act, channel_finder_of(c, plane, layout, (int64_t)n), (int64_t)n);
    /* on 16-byte vectors exactly where the backend would take them: whole
     * vectors in a row (NHWC, or a plane of one element) or in a plane */
    const void *pointers[] = {yv.data(), bias.data()};
    bool vectors = with_vector_map<T>(
        layout, c, plane, (int64_t)n, pointers, 2, [&](auto map, uint32_t count) {
            emu::launch("bias_act_vec_kernel", few_blocks, ew_block,
                        bias_act_vec_kernel<T, decltype(map)>, yv.data(), (const T *)bias.data(),
                        act, map, count);
        });
    const int width = vec16<T>::width;
    bool expected = nhwc || plane == 1 ? c % width == 0 : plane % width == 0;
    ck.expect(vectors == expected, "bias c%d %dx%d: with_vector_map says %d", c, h, w,
              (int)vectors);
    ck.expect(!vectors || same_bits(y, yv), "bias and activation c%d %dx%d %s: the vector kernel "
              "differs from the per-element one", c, h, w, nhwc ? "NHWC" : "NCHW");
    std::vector<double> want(n);
    for (int i = 0; i < N; i++)
        for (int ch = 0; ch < c; ch++)
            for (int r = 0; r < h; r++)
                for (int q = 0; q < w; q++) {
                    size_t j = (size_t)at_nchw_or_nhwc(i, ch, r, q, c, h, w, nhwc);
                    want[j] = act_ref((double)host_float(before[j]) + host_float(bias[ch]), act);
                }
    char what[96];
    snprintf(what, sizeof what, "bias and %s c%d %dx%d %s", act_name(act), c, h, w,
             nhwc ? "NHWC" : "NCHW");
    expect_close(ck, y, want, what);
}

/* channel_finder against the 64-bit operators, at indices up to 2^31 - 1
 * (multiply and shift) and beyond (64-bit division) */
void check_channel_finder(checker &ck)
{
    const int channels[] = {1, 3, 64, 1000, 2048};
    const int64_t planes[] = {1, 49, 3136, 12544, 50176};
    const int64_t near = ((int64_t)1 << 31) - 1, far = (int64_t)3 << 33;
    for (int c : channels)
        for (int64_t plane : planes)
            for (int layout = LAYOUT_NCHW; layout <= LAYOUT_NHWC; layout++) {
                const int64_t sizes[] = {near, far}; /* the first narrow, the second not */
                for (int64_t n : sizes) {
                    channel_finder f = channel_finder_of(c, plane, layout, n);
                    int bad = 0;
                    for (int64_t k = 0; k < 4000; k++) {
                        /* the first elements, then spread up to n - 1 */
                        int64_t e = k < 1000 ? k : (n - 1) / 3000 * (k - 1000) + (k & 7);
                        e = e < n ? e : n - 1;
                        int want = layout == LAYOUT_NHWC ? (int)(e % c) : (int)(e / plane % c);
                        bad += f.of(e) != want;
                    }
                    ck.expect(bad == 0, "channel_finder c%d plane %lld %s, %lld elements: %d of "
                              "4000 channels wrong", c, (long long)plane,
                              layout == LAYOUT_NHWC ? "NHWC" : "NCHW", (long long)n, bad);
                }
            }
}

template <typename T> void check_all(checker &ck)
{
    check_convert_and_fill<T>(ck);
    const int acts[] = {ACT_NONE, ACT_RELU, ACT_RELU6};
    for (int act : acts) {
        if (act != ACT_NONE)
            check_activate<T>(ck, act);
        check_add<T>(ck, act);
        for (int nhwc = 0; nhwc < 2; nhwc++) {
            check_bias_act<T>(ck, act, nhwc, C, H, W);
            check_bias_act<T>(ck, act, nhwc, 300, 1, 1); /* a fully connected layer's */
            check_bias_act<T>(ck, act, nhwc, 24, 3, 5);  /* whole vectors in every type */
            check_bias_act<T>(ck, act, nhwc, 6, 4, 5);   /* planes of whole fp32 vectors */
            check_bias_act<T>(ck, act, nhwc, 5, 4, 6);   /* planes of whole vectors in all */
        }
    }
    const dropout_case drops[] = {{C, H, W, false, 0.3f}, {C, H, W, true, 0.3f},
                                  {300, 1, 1, true, 0.5f}, {4, 5, 9, true, 0.1f}};
    for (const dropout_case &dc : drops)
        check_dropout<T>(ck, dc);
}

} // namespace

void check_elementwise_kernels(checker &ck)
{
    ck.family = "elementwise";
    check_channel_finder(ck);
    check_all<float>(ck);
    check_all<__half>(ck);
    check_all<__nv_bfloat16>(ck);
    uint64_t count = 41;
    emu::launch("step_counter_kernel", dim3(1), dim3(1), step_counter_kernel, &count);
    ck.expect(count == 42, "the step counter went from 41 to %llu", (unsigned long long)count);
}
