/* The pooling kernels (models/cuda/cuda_pool_kernels.cuh) against direct
 * loops in double, in both layouts and the three element types: max pool's
 * value and window index (the first maximum, padding never chosen) and its
 * gathered gradient, the adaptive average pool's overlapping bins both ways,
 * each backward also accumulating into what the gradient held. */
#include "emu_check.h"

#include "../../models/cuda/cuda_pool_kernels.cuh"

namespace {

/* Few blocks, so that the grid-stride loops go round more than once. */
const dim3 few_blocks(3), pool_block(POOL_THREADS);

struct pool_case {
    int n, c, h, w;
    int kernel, stride, pad; /* max pool; the average pool's output is oh x ow */
    int oh, ow;
    bool nhwc;
};

struct pool_run {
    pool_case cs;
    pool_dims d;

    /* wide: index by the 64-bit operators, as tensors of 2^31 elements or
     * more are */
    pool_run(const pool_case &c, bool wide) : cs(c)
    {
        d = pool_dims_make(c.n, c.c, c.h, c.w, c.oh, c.ow, c.kernel, c.stride, c.pad,
                           c.nhwc ? LAYOUT_NHWC : LAYOUT_NCHW);
        d.narrow = d.narrow && !wide;
    }
    size_t in_elems() const { return (size_t)cs.n * cs.c * cs.h * cs.w; }
    size_t out_elems() const { return (size_t)cs.n * cs.c * cs.oh * cs.ow; }
    size_t in_at(int n, int c, int y, int x) const
    {
        return (size_t)at_nchw_or_nhwc(n, c, y, x, cs.c, cs.h, cs.w, cs.nhwc);
    }
    size_t out_at(int n, int c, int y, int x) const
    {
        return (size_t)at_nchw_or_nhwc(n, c, y, x, cs.c, cs.oh, cs.ow, cs.nhwc);
    }
    /* f(n, c, oy, ox) over every output */
    template <typename F> void each_out(F f) const
    {
        for (int n = 0; n < cs.n; n++)
            for (int c = 0; c < cs.c; c++)
                for (int oy = 0; oy < cs.oh; oy++)
                    for (int ox = 0; ox < cs.ow; ox++)
                        f(n, c, oy, ox);
    }
};

/* Max pool's output size, as torch computes it (no ceil mode). */
pool_case max_case(int n, int c, int h, int w, int kernel, int stride, int pad, bool nhwc)
{
    return {n, c, h, w, kernel, stride, pad, (h + 2 * pad - kernel) / stride + 1,
            (w + 2 * pad - kernel) / stride + 1, nhwc};
}

/* Max pool by direct loops: the first maximum in row-major window order
 * among the taps inside the input, its value and its tap index. */
template <typename T>
void maxpool_ref(const pool_run &r, const std::vector<T> &x, std::vector<T> *y,
                 std::vector<uint8_t> *where)
{
    const pool_case &c = r.cs;
    y->assign(r.out_elems(), host_elem<T>(0.0f));
    where->assign(r.out_elems(), 0);
    r.each_out([&](int n, int ch, int oy, int ox) {
        int at = -1;
        float best = 0.0f;
        for (int tap = 0; tap < c.kernel * c.kernel; tap++) {
            int iy = oy * c.stride - c.pad + tap / c.kernel;
            int ix = ox * c.stride - c.pad + tap % c.kernel;
            if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w)
                continue;
            float v = host_float(x[r.in_at(n, ch, iy, ix)]);
            if (at < 0 || v > best)
                best = v, at = tap;
        }
        (*y)[r.out_at(n, ch, oy, ox)] = host_elem<T>(best);
        (*where)[r.out_at(n, ch, oy, ox)] = (uint8_t)at;
    });
}

/* Max pool's gradient by scattering each output's to the input its window
 * index names, onto base when accumulating. */
template <typename T>
std::vector<double> maxpool_backward_ref(const pool_run &r, const std::vector<T> &dy,
                                         const std::vector<uint8_t> &where,
                                         const std::vector<T> &base, bool accumulate)
{
    const pool_case &c = r.cs;
    std::vector<double> dx(r.in_elems(), 0.0);
    for (size_t i = 0; accumulate && i < dx.size(); i++)
        dx[i] = host_float(base[i]);
    r.each_out([&](int n, int ch, int oy, int ox) {
        size_t o = r.out_at(n, ch, oy, ox);
        int iy = oy * c.stride - c.pad + where[o] / c.kernel;
        int ix = ox * c.stride - c.pad + where[o] % c.kernel;
        dx[r.in_at(n, ch, iy, ix)] += host_float(dy[o]);
    });
    return dx;
}

/* The vector kernels where the backend takes them (NHWC, whole vectors of
 * channels): the same maxima, window indices and gradient bits as the
 * per-element kernels. */
template <typename T>
void check_maxpool_vectors(checker &ck, const pool_run &r, const std::vector<T> &x,
                           const std::vector<T> &y, const std::vector<uint8_t> &where,
                           const char *what)
{
    const int W = vec16<T>::width;
    std::vector<T> yv(r.out_elems(), host_elem<T>(NAN));
    std::vector<uint8_t> where_v(r.out_elems(), 0xff);
    const void *pointers[] = {yv.data(), where_v.data(), x.data()};
    bool fits = r.d.narrow && vec_fits_nhwc<T>(r.d.layout, r.cs.c, (int64_t)yv.size(), pointers, 3);
    ck.expect(fits == (r.d.narrow && r.cs.nhwc && r.cs.c % W == 0), "%s: the vectors %s", what,
              fits ? "fit where they may not" : "do not fit");
    if (!fits)
        return;
    fast_divisor per_row = fast_divisor_of((uint32_t)(r.cs.c / W));
    emu::launch("maxpool_vec_kernel", few_blocks, pool_block, maxpool_vec_kernel<T>, yv.data(),
                where_v.data(), x.data(), r.d, per_row, (uint32_t)(yv.size() / W));
    ck.expect(same_bits(y, yv) && where == where_v,
              "%s: the vector kernel's maxima or indices differ from the per-element one's", what);
    std::vector<T> dy = random_values<T>(r.out_elems(), 24, -1.0f, 1.0f);
    std::vector<T> base = random_values<T>(r.in_elems(), 25, -2.0f, 2.0f);
    for (int accumulate = 0; accumulate < 2; accumulate++) {
        std::vector<T> dx = base, dxv = base;
        emu::launch("maxpool_backward_kernel", few_blocks, pool_block, maxpool_backward_kernel<T>,
                    dx.data(), dy.data(), where.data(), r.d, (bool)accumulate,
                    (int64_t)dx.size());
        emu::launch("maxpool_backward_vec_kernel", few_blocks, pool_block,
                    maxpool_backward_vec_kernel<T>, dxv.data(), dy.data(), where.data(), r.d,
                    (bool)accumulate, per_row, (uint32_t)(dxv.size() / W));
        ck.expect(same_bits(dx, dxv), "%s backward%s: the vector kernel differs from the "
                  "per-element one", what, accumulate ? " (accumulating)" : "");
    }
}

template <typename T> void check_maxpool(checker &ck, const pool_case &c, bool wide)
{
    pool_run r(c, wide);
    char what[160];
    snprintf(what, sizeof what, "%s maxpool %dx%d/%d pad %d n%d c%d %dx%d %s%s", elem_name<T>(),
             c.kernel, c.kernel, c.stride, c.pad, c.n, c.c, c.h, c.w, c.nhwc ? "NHWC" : "NCHW",
             wide ? ", 64-bit indices" : "");
    /* halves in [-3, 1): ties in most windows, and windows with nothing
     * above zero (a maximum that starts at 0 would show) */
    std::vector<T> x = random_values<T>(r.in_elems(), 21, -3.0f, 1.0f);
    for (T &v : x)
        v = host_elem<T>(floorf(host_float(v) * 2.0f) / 2.0f);
    std::vector<T> y_ref;
    std::vector<uint8_t> where_ref;
    maxpool_ref(r, x, &y_ref, &where_ref);

    std::vector<T> y(r.out_elems(), host_elem<T>(NAN));
    std::vector<uint8_t> where(r.out_elems(), 0xff);
    emu::launch("maxpool_kernel", few_blocks, pool_block, maxpool_kernel<T>, y.data(), where.data(),
                x.data(), r.d, (int64_t)y.size());
    ck.expect(same_bits(y, y_ref), "%s: the maxima differ from the direct loop's", what);
    ck.expect(where == where_ref, "%s: a window index is not the first maximum's", what);

    /* the gradient from the direct loop's indices: checked on its own */
    std::vector<T> dy = random_values<T>(r.out_elems(), 22, -1.0f, 1.0f);
    std::vector<T> base = random_values<T>(r.in_elems(), 23, -2.0f, 2.0f);
    for (int accumulate = 0; accumulate < 2; accumulate++) {
        std::vector<T> dx = base;
        emu::launch("maxpool_backward_kernel", few_blocks, pool_block, maxpool_backward_kernel<T>,
                    dx.data(), dy.data(), where_ref.data(), r.d, (bool)accumulate,
                    (int64_t)dx.size());
        double e = relative_error(dx, maxpool_backward_ref(r, dy, where_ref, base, accumulate));
        double tol = elem_tolerance<T>();
        ck.expect(e <= tol, "%s backward%s: relative error %.3g > %.3g", what,
                  accumulate ? " (accumulating)" : "", e, tol);
    }
    check_maxpool_vectors(ck, r, x, y, where, what);
}

/* torch's adaptive bins: [floor(i in / out), ceil((i + 1) in / out)) */
int bin_lo(int i, int in, int out) { return (int)floor((double)i * in / out); }
int bin_hi(int i, int in, int out) { return (int)ceil((double)(i + 1) * in / out); }

/* f(n, c, oy, ox, iy, ix, 1 / bin size) over every input of every output's bin */
template <typename F> void each_bin_tap(const pool_run &r, F f)
{
    const pool_case &c = r.cs;
    r.each_out([&](int n, int ch, int oy, int ox) {
        int y0 = bin_lo(oy, c.h, c.oh), y1 = bin_hi(oy, c.h, c.oh);
        int x0 = bin_lo(ox, c.w, c.ow), x1 = bin_hi(ox, c.w, c.ow);
        double share = 1.0 / ((y1 - y0) * (x1 - x0));
        for (int iy = y0; iy < y1; iy++)
            for (int ix = x0; ix < x1; ix++)
                f(n, ch, oy, ox, iy, ix, share);
    });
}

/* The global pool's vector kernels where the backend takes them (output
 * 1x1, NHWC, whole vectors of channels): the per-element kernels' bits. */
template <typename T>
void check_global_avgpool_vectors(checker &ck, const pool_run &r, const std::vector<T> &x,
                                  const std::vector<T> &y, const char *what)
{
    const int W = vec16<T>::width;
    const pool_case &c = r.cs;
    if (c.oh != 1 || c.ow != 1 || !r.d.narrow || !c.nhwc || c.c % W != 0)
        return;
    fast_divisor per_row = fast_divisor_of((uint32_t)(c.c / W));
    fast_divisor per_image = fast_divisor_of((uint32_t)(c.c / W * c.h * c.w));
    std::vector<T> yv(r.out_elems(), host_elem<T>(NAN));
    emu::launch("global_avgpool_vec_kernel", few_blocks, pool_block, global_avgpool_vec_kernel<T>,
                yv.data(), x.data(), c.h * c.w, per_row, (uint32_t)(yv.size() / W));
    ck.expect(same_bits(y, yv), "%s: the vector kernel's means differ from the per-element one's",
              what);
    /* zeros among the gradients: -0 / plane must come out as the per-element kernel's +0 */
    std::vector<T> dy = random_values<T>(r.out_elems(), 34, -1.0f, 1.0f);
    dy[0] = host_elem<T>(-0.0f);
    std::vector<T> base = random_values<T>(r.in_elems(), 35, -2.0f, 2.0f);
    for (int accumulate = 0; accumulate < 2; accumulate++) {
        std::vector<T> dx = base, dxv = base;
        emu::launch("avgpool_backward_kernel", few_blocks, pool_block, avgpool_backward_kernel<T>,
                    dx.data(), dy.data(), r.d, (bool)accumulate, (int64_t)dx.size());
        emu::launch("global_avgpool_backward_vec_kernel", few_blocks, pool_block,
                    global_avgpool_backward_vec_kernel<T>, dxv.data(), dy.data(), c.h * c.w,
                    per_row, per_image, (bool)accumulate, (uint32_t)(dxv.size() / W));
        ck.expect(same_bits(dx, dxv), "%s backward%s: the vector kernel differs from the "
                  "per-element one", what, accumulate ? " (accumulating)" : "");
    }
}

template <typename T> void check_avgpool(checker &ck, const pool_case &c, bool wide)
{
    pool_run r(c, wide);
    char what[160];
    snprintf(what, sizeof what, "%s avgpool n%d c%d %dx%d to %dx%d %s%s", elem_name<T>(), c.n,
             c.c, c.h, c.w, c.oh, c.ow, c.nhwc ? "NHWC" : "NCHW", wide ? ", 64-bit indices" : "");
    double tol = elem_tolerance<T>();
    std::vector<T> x = random_values<T>(r.in_elems(), 31, -1.0f, 1.0f);
    std::vector<T> y(r.out_elems(), host_elem<T>(NAN));
    emu::launch("avgpool_kernel", few_blocks, pool_block, avgpool_kernel<T>, y.data(), x.data(),
                r.d, (int64_t)y.size());
    std::vector<double> y_ref(r.out_elems(), 0.0);
    each_bin_tap(r, [&](int n, int ch, int oy, int ox, int iy, int ix, double share) {
        y_ref[r.out_at(n, ch, oy, ox)] += host_float(x[r.in_at(n, ch, iy, ix)]) * share;
    });
    double e = relative_error(y, y_ref);
    ck.expect(e <= tol, "%s forward: relative error %.3g > %.3g", what, e, tol);

    std::vector<T> dy = random_values<T>(r.out_elems(), 32, -1.0f, 1.0f);
    std::vector<T> base = random_values<T>(r.in_elems(), 33, -2.0f, 2.0f);
    for (int accumulate = 0; accumulate < 2; accumulate++) {
        std::vector<T> dx = base;
        emu::launch("avgpool_backward_kernel", few_blocks, pool_block, avgpool_backward_kernel<T>,
                    dx.data(), dy.data(), r.d, (bool)accumulate, (int64_t)dx.size());
        std::vector<double> dx_ref(r.in_elems(), 0.0);
        for (size_t i = 0; accumulate && i < dx_ref.size(); i++)
            dx_ref[i] = host_float(base[i]);
        each_bin_tap(r, [&](int n, int ch, int oy, int ox, int iy, int ix, double share) {
            dx_ref[r.in_at(n, ch, iy, ix)] += host_float(dy[r.out_at(n, ch, oy, ox)]) * share;
        });
        e = relative_error(dx, dx_ref);
        ck.expect(e <= tol, "%s backward%s: relative error %.3g > %.3g", what,
                  accumulate ? " (accumulating)" : "", e, tol);
    }
    check_global_avgpool_vectors(ck, r, x, y, what);
}

template <typename T> void check_pools(checker &ck)
{
    for (int nhwc = 0; nhwc < 2; nhwc++)
        for (int wide = 0; wide < 2; wide++) {
            /* ResNet's stem (3x3/2 pad 1) over odd sizes with more outputs
             * than the grid has threads; VGG's 2x2/2; a 3x3/1 whose windows
             * overlap most; a 3x3/2 without padding that leaves the last row
             * unread; the first two again with whole vectors of channels in
             * every type (NHWC takes the vector kernels) */
            check_maxpool<T>(ck, max_case(2, 6, 17, 15, 3, 2, 1, nhwc), wide);
            check_maxpool<T>(ck, max_case(1, 5, 8, 10, 2, 2, 0, nhwc), wide);
            check_maxpool<T>(ck, max_case(2, 3, 7, 6, 3, 1, 1, nhwc), wide);
            check_maxpool<T>(ck, max_case(1, 4, 10, 9, 3, 2, 0, nhwc), wide);
            check_maxpool<T>(ck, max_case(2, 16, 17, 15, 3, 2, 1, nhwc), wide);
            check_maxpool<T>(ck, max_case(1, 8, 8, 10, 2, 2, 0, nhwc), wide);
            /* the global pool of a classifier head (NHWC takes the vector
             * kernels), again with more vectors both ways than the grid has
             * threads;
             * bins that overlap (5 to 3); more outputs than inputs; the same
             * size both sides */
            check_avgpool<T>(ck, {2, 40, 7, 7, 0, 0, 0, 1, 1, (bool)nhwc}, wide);
            check_avgpool<T>(ck, {16, 512, 3, 2, 0, 0, 0, 1, 1, (bool)nhwc}, wide);
            check_avgpool<T>(ck, {2, 6, 5, 7, 0, 0, 0, 3, 2, (bool)nhwc}, wide);
            check_avgpool<T>(ck, {1, 3, 3, 2, 0, 0, 0, 5, 4, (bool)nhwc}, wide);
            check_avgpool<T>(ck, {2, 3, 6, 4, 0, 0, 0, 6, 4, (bool)nhwc}, wide);
        }
}

} // namespace

void check_pool_kernels(checker &ck)
{
    ck.family = "pool";
    check_pools<float>(ck);
    check_pools<__half>(ck);
    check_pools<__nv_bfloat16>(ck);
}
