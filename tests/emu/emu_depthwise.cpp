/* The own depthwise convolution kernels (models/cuda/cuda_depthwise_kernels.cuh)
 * against direct loops in double, in both layouts and the three element
 * types, with the filter gradient split into several slices and channel
 * groups; each result must not depend on the order threads run in. */
#include "emu_check.h"

#include "../../models/cuda/cuda_depthwise_kernels.cuh"

namespace {

struct dw_case {
    int n, c, h, w, stride;
    bool nhwc;
};

/* Launches run with DW_THREADS threads a block and few blocks, so that the
 * grid-stride loops go round more than once. */
const dim3 few_blocks(3), dw_block(DW_THREADS);

template <typename T, int K> struct dw_run {
    dw_case cs;
    int pad = K / 2, oh = 0, ow = 0;
    dw_geom g;
    std::vector<T> x, w, dy;

    explicit dw_run(const dw_case &c) : cs(c)
    {
        oh = (c.h + 2 * pad - K) / c.stride + 1;
        ow = (c.w + 2 * pad - K) / c.stride + 1;
        g = dw_geom_make(c.n, c.c, c.h, c.w, oh, ow, c.stride, pad, c.nhwc);
        x = random_values<T>(in_elems(), 1, -1.0f, 1.0f);
        w = random_values<T>((size_t)c.c * K * K, 2, -1.0f, 1.0f);
        dy = random_values<T>(out_elems(), 3, -1.0f, 1.0f);
    }
    size_t in_elems() const { return (size_t)cs.n * cs.c * cs.h * cs.w; }
    size_t out_elems() const { return (size_t)cs.n * cs.c * oh * ow; }
    int64_t in_at(int n, int c, int y, int x_) const
    {
        return at_nchw_or_nhwc(n, c, y, x_, cs.c, cs.h, cs.w, cs.nhwc);
    }
    int64_t out_at(int n, int c, int y, int x_) const
    {
        return at_nchw_or_nhwc(n, c, y, x_, cs.c, oh, ow, cs.nhwc);
    }

    /* f(n, c, oy, ox, iy, ix, tap) over every tap inside the input */
    template <typename F> void each_tap(F f) const
    {
        for (int n = 0; n < cs.n; n++)
            for (int c = 0; c < cs.c; c++)
                for (int oy = 0; oy < oh; oy++)
                    for (int ox = 0; ox < ow; ox++)
                        for (int r = 0; r < K; r++)
                            for (int s = 0; s < K; s++) {
                                int iy = oy * cs.stride - pad + r, ix = ox * cs.stride - pad + s;
                                if (iy >= 0 && iy < cs.h && ix >= 0 && ix < cs.w)
                                    f(n, c, oy, ox, iy, ix, r * K + s);
                            }
    }

    std::vector<T> forward() const
    {
        std::vector<T> y(out_elems(), host_elem<T>(NAN));
        emu::launch("dw_forward_kernel", few_blocks, dw_block, dw_forward_kernel<T, K>, x.data(),
                    w.data(), y.data(), g, (uint32_t)y.size());
        return y;
    }
    std::vector<double> forward_ref() const
    {
        std::vector<double> y(out_elems(), 0.0);
        each_tap([&](int n, int c, int oy, int ox, int iy, int ix, int tap) {
            y[(size_t)out_at(n, c, oy, ox)] +=
                (double)host_float(x[(size_t)in_at(n, c, iy, ix)]) * host_float(w[(size_t)c * K * K + tap]);
        });
        return y;
    }

    /* the vector kernels where the backend takes them (vec_fits_nhwc); empty
     * elsewhere. On `blocks` blocks: the backend's grid (vec_blocks, whole
     * rows a stride, so that a thread keeps its weights) or few_blocks,
     * whose stride is not whole rows of most of these shapes (a thread's
     * channels, and weights, change between its vectors). */
    std::vector<T> forward_vec(dim3 blocks) const
    {
        std::vector<T> y(out_elems(), host_elem<T>(NAN));
        const void *pointers[] = {x.data(), y.data()};
        if (!vec_fits_nhwc<T>(cs.nhwc ? LAYOUT_NHWC : LAYOUT_NCHW, cs.c, (int64_t)y.size(),
                              pointers, 2))
            return {};
        emu::launch("dw_forward_vec_kernel", blocks, dw_block, dw_forward_vec_kernel<T, K>,
                    x.data(), w.data(), y.data(), g, per_row(), (uint32_t)(y.size() / width()));
        return y;
    }
    std::vector<T> backward_data_vec(const std::vector<T> &base, bool accumulate,
                                     dim3 blocks) const
    {
        std::vector<T> dx = base;
        const void *pointers[] = {dy.data(), dx.data()};
        if (!vec_fits_nhwc<T>(cs.nhwc ? LAYOUT_NHWC : LAYOUT_NCHW, cs.c, (int64_t)dx.size(),
                              pointers, 2))
            return {};
        emu::launch("dw_backward_data_vec_kernel", blocks, dw_block,
                    dw_backward_data_vec_kernel<T, K>, dy.data(), w.data(), dx.data(), g,
                    per_row(), (uint32_t)(dx.size() / width()), accumulate);
        return dx;
    }
    static int width() { return vec16<T>::width; }
    fast_divisor per_row() const { return fast_divisor_of((uint32_t)(cs.c / width())); }
    bool vectors_expected() const { return cs.nhwc && cs.c % width() == 0; }
    /* the grid cuda_depthwise.cu launches the vector kernels on over `elems` */
    dim3 vec_blocks(size_t elems, int sm_count) const
    {
        uint32_t vectors = (uint32_t)(elems / width());
        return dim3(vec_row_blocks(cuda_grid_blocks(vectors, DW_THREADS, sm_count),
                                   (uint32_t)(cs.c / width()), DW_THREADS));
    }

    std::vector<T> backward_data(const std::vector<T> &base, bool accumulate) const
    {
        std::vector<T> dx = base;
        emu::launch("dw_backward_data_kernel", few_blocks, dw_block, dw_backward_data_kernel<T, K>,
                    dy.data(), w.data(), dx.data(), g, (uint32_t)dx.size(), accumulate);
        return dx;
    }
    std::vector<double> backward_data_ref(const std::vector<T> &base, bool accumulate) const
    {
        std::vector<double> dx(in_elems(), 0.0);
        if (accumulate)
            for (size_t i = 0; i < dx.size(); i++)
                dx[i] = host_float(base[i]);
        each_tap([&](int n, int c, int oy, int ox, int iy, int ix, int tap) {
            dx[(size_t)in_at(n, c, iy, ix)] +=
                (double)host_float(dy[(size_t)out_at(n, c, oy, ox)]) * host_float(w[(size_t)c * K * K + tap]);
        });
        return dx;
    }

    /* The filter gradient as the backend runs it: the slice plan of
     * cuda_plan.c for sm_count SMs, partial sums, then their ordered sum.
     * The partial sums start as NaN so that a slot no block writes shows. */
    std::vector<T> backward_filter(int sm_count, int *slices, bool vec = false) const
    {
        conv_shape s = {cs.n, cs.c, cs.h, cs.w, cs.c, K, K, pad, cs.stride, cs.c,
                        oh, ow, true, false, PREC_FP32};
        depthwise_filter_plan plan = depthwise_filter_plan_of(&s, cs.nhwc, sm_count);
        uint32_t positions = (uint32_t)cs.n * oh * ow;
        uint32_t per_slice = (positions + plan.slices - 1) / plan.slices;
        std::vector<float> partial((size_t)plan.partial_bytes / sizeof(float), NAN);
        dim3 grid((unsigned)plan.channel_groups, (unsigned)plan.slices);
        if (vec)
            emu::launch("dw_filter_nhwc_vec_kernel", grid,
                        dim3(dw_filter_vec<K>::cols, dw_filter_vec<K>::rows),
                        dw_filter_nhwc_vec_kernel<T, K>, x.data(), dy.data(), partial.data(), g,
                        positions, per_slice);
        else if (cs.nhwc)
            emu::launch("dw_filter_nhwc_kernel", grid, dim3(DW_CHANNELS_PER_BLOCK, DW_FILTER_ROWS),
                        dw_filter_nhwc_kernel<T, K>, x.data(), dy.data(), partial.data(), g,
                        positions, per_slice);
        else
            emu::launch("dw_filter_nchw_kernel", grid, dw_block, dw_filter_nchw_kernel<T, K>,
                        x.data(), dy.data(), partial.data(), g, positions, per_slice);
        std::vector<T> dw((size_t)cs.c * K * K, host_elem<T>(NAN));
        emu::launch("dw_filter_sum_kernel", few_blocks, dim3(32, DW_SUM_ROWS),
                    dw_filter_sum_kernel<T>, partial.data(), dw.data(), plan.slices,
                    (uint32_t)dw.size());
        *slices = plan.slices;
        return dw;
    }
    std::vector<double> backward_filter_ref() const
    {
        std::vector<double> dw((size_t)cs.c * K * K, 0.0);
        each_tap([&](int n, int c, int oy, int ox, int iy, int ix, int tap) {
            dw[(size_t)c * K * K + tap] += (double)host_float(dy[(size_t)out_at(n, c, oy, ox)]) *
                                          host_float(x[(size_t)in_at(n, c, iy, ix)]);
        });
        return dw;
    }
};

template <typename T, int K>
void check_case(checker &ck, const dw_case &c, int sm_count, bool every_schedule = true)
{
    dw_run<T, K> run(c);
    char what[160];
    snprintf(what, sizeof what, "%s %dx%d n%d c%d %dx%d stride %d %s", elem_name<T>(), K, K, c.n,
             c.c, c.h, c.w, c.stride, c.nhwc ? "NHWC" : "NCHW");
    double tol = elem_tolerance<T>();

    /* the large cases are there for their index arithmetic: one schedule */
    std::vector<T> y = under_every_schedule(ck, what, [&] { return run.forward(); }, every_schedule);
    double e = relative_error(y, run.forward_ref());
    ck.expect(e <= tol, "%s forward: relative error %.3g > %.3g", what, e, tol);
    const dim3 grids[2] = {few_blocks, run.vectors_expected()
                                           ? run.vec_blocks(run.out_elems(), sm_count)
                                           : few_blocks};
    const char *grid_names[2] = {"few blocks", "the backend's grid"};
    for (int k = 0; k < 2; k++) {
        std::vector<T> yv = run.forward_vec(grids[k]);
        ck.expect(yv.empty() != run.vectors_expected(), "%s forward: the vector kernel %s", what,
                  yv.empty() ? "was not taken" : "ran where it may not");
        ck.expect(yv.empty() || same_bits(y, yv),
                  "%s forward: the vector kernel on %s differs from the per-element one", what,
                  grid_names[k]);
    }
    const dim3 back_grid = run.vectors_expected() ? run.vec_blocks(run.in_elems(), sm_count)
                                                  : few_blocks;

    std::vector<T> base = random_values<T>(run.in_elems(), 4, -2.0f, 2.0f);
    for (int accumulate = 0; accumulate < 2; accumulate++) {
        std::vector<T> dx = run.backward_data(base, accumulate);
        e = relative_error(dx, run.backward_data_ref(base, accumulate));
        ck.expect(e <= tol, "%s backward data%s: relative error %.3g > %.3g", what,
                  accumulate ? " (accumulating)" : "", e, tol);
        for (int k = 0; k < 2; k++) {
            std::vector<T> dxv = run.backward_data_vec(base, accumulate,
                                                       k ? back_grid : few_blocks);
            ck.expect(dxv.empty() != run.vectors_expected(),
                      "%s backward data: the vector kernel %s", what,
                      dxv.empty() ? "was not taken" : "ran where it may not");
            ck.expect(dxv.empty() || same_bits(dx, dxv),
                      "%s backward data%s: the vector kernel on %s differs from the per-element "
                      "one", what, accumulate ? " (accumulating)" : "", grid_names[k]);
        }
    }

    int slices = 0;
    std::vector<T> dw = under_every_schedule(
        ck, what, [&] { return run.backward_filter(sm_count, &slices); }, every_schedule);
    std::vector<double> dw_ref = run.backward_filter_ref();
    e = relative_error(dw, dw_ref);
    ck.expect(e <= tol, "%s backward filter (%d slices): relative error %.3g > %.3g", what, slices,
              e, tol);
    /* the kernel cuda_depthwise.cu launches where channels make whole groups */
    bool vec_fits = dw_filter_vec_fits<T, K>(run.cs.nhwc, run.cs.c, run.x.data(), run.dy.data());
    ck.expect(vec_fits == (run.cs.nhwc && run.cs.c % dw_filter_vec<K>::channels == 0),
              "%s backward filter: the vector kernel %s", what,
              vec_fits ? "would run where it may not" : "would not be taken");
    if (vec_fits) {
        std::vector<T> dwv = under_every_schedule(
            ck, what, [&] { return run.backward_filter(sm_count, &slices, true); },
            every_schedule);
        e = relative_error(dwv, dw_ref);
        ck.expect(e <= tol,
                  "%s backward filter, %d channels a thread (%d slices): relative error %.3g > "
                  "%.3g", what, dw_filter_vec<K>::channels, slices, e, tol);
    }
}

/* The plan-time helpers: values in [-1, 1) from the fill kernel, and the
 * comparison's largest difference and reference. */
template <typename T> void check_fill_and_compare(checker &ck)
{
    const uint32_t n = 3000;
    std::vector<T> a(n), b(n);
    emu::launch("dw_fill_kernel", few_blocks, dw_block, dw_fill_kernel<T>, a.data(), n, 11u);
    emu::launch("dw_fill_kernel", few_blocks, dw_block, dw_fill_kernel<T>, b.data(), n, 12u);
    float lo = 1.0f, hi = -1.0f, largest = 0.0f;
    for (T v : a) {
        lo = host_float(v) < lo ? host_float(v) : lo;
        hi = host_float(v) > hi ? host_float(v) : hi;
        largest = fabsf(host_float(v)) > largest ? fabsf(host_float(v)) : largest;
    }
    ck.expect(lo >= -1.0f && hi <= 1.0f && lo < -0.9f && hi > 0.9f,
              "%s fill: values span [%g, %g], not most of [-1, 1]", elem_name<T>(), lo, hi);
    ck.expect(!same_bits(a, b), "%s fill: two seeds gave the same values", elem_name<T>());

    std::vector<T> got = a;
    got[1234] = host_elem<T>(host_float(a[1234]) + 0.5f);
    unsigned maxima[2] = {0, 0};
    emu::launch("dw_compare_kernel", few_blocks, dw_block, dw_compare_kernel<T>, got.data(),
                a.data(), n, maxima);
    float diff = __uint_as_float(maxima[0]), ref = __uint_as_float(maxima[1]);
    float want_diff = fabsf(host_float(got[1234]) - host_float(a[1234]));
    ck.expect(diff == want_diff && ref == largest,
              "%s compare: max difference %g (want %g), max reference %g", elem_name<T>(), diff,
              want_diff, ref);
    got[77] = host_elem<T>(NAN);
    maxima[0] = maxima[1] = 0;
    emu::launch("dw_compare_kernel", few_blocks, dw_block, dw_compare_kernel<T>, got.data(),
                a.data(), n, maxima);
    ck.expect(std::isinf(__uint_as_float(maxima[0])), "%s compare: a NaN is not infinitely far",
              elem_name<T>());
}

} // namespace

void check_depthwise_kernels(checker &ck)
{
    ck.family = "depthwise";
    /* 2 x 24 x 24 positions: 4 slices of the filter gradient; 40 channels:
     * two NHWC channel groups, the second partly empty; odd sizes and both
     * strides of MobileNetV2 */
    const dw_case many_positions[] = {{2, 5, 24, 24, 1, false}, {2, 5, 24, 24, 1, true}};
    const dw_case odd_shapes[] = {{2, 40, 9, 11, 2, true}, {2, 40, 9, 11, 2, false},
                                  {3, 7, 12, 10, 1, true}, {1, 3, 5, 7, 2, false}};
    for (const dw_case &c : many_positions) {
        check_case<float, 3>(ck, c, 132);
        check_case<__nv_bfloat16, 3>(ck, c, 132);
    }
    /* the filter gradient on several channels a thread (40 of them make
     * whole groups) over several slices, 5 x 5 as 3 x 3 */
    const dw_case slices_of_groups = {2, 40, 24, 24, 1, true};
    check_case<float, 5>(ck, slices_of_groups, 8);
    check_case<__half, 3>(ck, slices_of_groups, 8);
    for (const dw_case &c : odd_shapes) {
        check_case<float, 3>(ck, c, 8);
        check_case<float, 5>(ck, c, 8);
        check_case<__half, 5>(ck, c, 1);
        check_case<__nv_bfloat16, 3>(ck, c, 132);
    }
    /* two of MobileNetV2's own layers at batch 1: 32 channels at 112 x 112
     * (the filter gradient in 49 slices), 144 channels 56 -> 28 */
    const dw_case network_layers[] = {{1, 32, 112, 112, 1, true}, {1, 144, 56, 56, 2, true}};
    for (const dw_case &c : network_layers)
        check_case<__nv_bfloat16, 3>(ck, c, 132, false);
    check_case<float, 3>(ck, {1, 32, 112, 112, 1, false}, 132, false);
    check_fill_and_compare<float>(ck);
    check_fill_and_compare<__half>(ck);
    check_fill_and_compare<__nv_bfloat16>(ck);
}
