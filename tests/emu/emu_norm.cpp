/* The own batch norm kernels (models/cuda/cuda_norm_kernels.cuh) against
 * direct loops in double: the statistics and running statistics, the
 * normalisation with each fusion, the backward (weights, and data plain and
 * accumulating, masked by a fused activation) and the bias gradient's plain
 * sums, in both layouts and the three element types, with each channel's
 * sums in one chunk and in several; the sums must not depend on the order
 * threads run in. */
#include "emu_check.h"

#include "../../models/cuda/cuda_norm_kernels.cuh"

namespace {

struct bn_case {
    int n, c, h, w;
    bool nhwc;
    float lo, hi; /* the inputs' range */
};

/* gamma (x - mean) rstd + beta of element j (channel c), in double from the
 * parameters the kernel reads */
template <typename T> double normalised_ref(const bn_norm<T> &b, size_t j, size_t c)
{
    return (double)b.gamma[c] * (host_float(b.x[j]) - b.mean[c]) * b.rstd[c] + b.beta[c];
}

/* What the forward leaves for the apply and the backward, per channel. */
struct bn_stats {
    std::vector<float> mean, rstd, run_mean, run_var;

    /* all four, to compare bits */
    std::vector<float> joined() const
    {
        std::vector<float> all = mean;
        all.insert(all.end(), rstd.begin(), rstd.end());
        all.insert(all.end(), run_mean.begin(), run_mean.end());
        all.insert(all.end(), run_var.begin(), run_var.end());
        return all;
    }
};

/* The backward's weight gradients, per channel. */
struct bn_grads {
    std::vector<float> dbeta, dgamma;

    std::vector<float> joined() const
    {
        std::vector<float> all = dbeta;
        all.insert(all.end(), dgamma.begin(), dgamma.end());
        return all;
    }
};

template <typename T> struct bn_run {
    bn_case cs;
    channel_view v;
    int sm_count;
    /* the sums on the per-element kernels even where the vector ones fit */
    bool scalar_sums = false;
    bool raw_grid = false; /* vec_blocks */
    std::vector<T> x, dy;
    std::vector<float> gamma, beta, run_mean0, run_var0;

    bn_run(const bn_case &c, int sms) : cs(c), sm_count(sms)
    {
        v = channel_view_of(c.n, c.c, c.h, c.w, c.nhwc ? LAYOUT_NHWC : LAYOUT_NCHW);
        x = random_values<T>(elems(), 1, c.lo, c.hi);
        dy = random_values<T>(elems(), 2, -1.0f, 1.0f);
        /* gamma and beta large enough that some normalised values pass 6 */
        gamma = random_values<float>((size_t)c.c, 3, 0.5f, 3.0f);
        beta = random_values<float>((size_t)c.c, 4, -1.0f, 3.0f);
        run_mean0 = random_values<float>((size_t)c.c, 5, -1.0f, 1.0f);
        run_var0 = random_values<float>((size_t)c.c, 6, 0.5f, 1.5f);
    }
    size_t elems() const { return (size_t)cs.n * cs.c * cs.h * cs.w; }
    int64_t plane() const { return (int64_t)cs.h * cs.w; }
    int64_t count() const { return v.outer * v.inner; }
    int chunks() const { return chunks_for(&v, sm_count); }
    bn_norm<T> norm(const bn_stats &s) const
    {
        return bn_norm<T>{x.data(), gamma.data(), beta.data(), s.mean.data(), s.rstd.data()};
    }

    /* f(c, index) over every element, indexed independently of the kernels */
    template <typename F> void each_elem(F f) const
    {
        for (int n = 0; n < cs.n; n++)
            for (int c = 0; c < cs.c; c++)
                for (int y = 0; y < cs.h; y++)
                    for (int x_ = 0; x_ < cs.w; x_++)
                        f((size_t)c,
                          (size_t)at_nchw_or_nhwc(n, c, y, x_, cs.c, cs.h, cs.w, cs.nhwc));
    }

    /* Both kernels of one channel sum, launched as channel_sums launches
     * them. The partial sums are exactly as many as cuda_bn_partials_needed
     * plans (AddressSanitizer sees a write past them) and start as NaN, so
     * that a slot no block writes shows. */
    void channel_sums(summand<T> f, float *mean, float *rstd, float *run_mean, float *run_var,
                      float *out1, float *out2, void *bias_grad) const
    {
        int k = chunks();
        int64_t per_chunk = (v.outer + k - 1) / k;
        std::vector<float> partials((size_t)k * v.channels * 2, NAN);
        unsigned tiles = (unsigned)((v.channels + TILE - 1) / TILE);
        const void *pointers[] = {f.x, f.dy};
        const int W = vec16<T>::width;
        bool nhwc_view = v.layout == LAYOUT_NHWC;
        if (nhwc_view && !scalar_sums &&
            vec_fits_nhwc<T>(v.layout, v.channels, v.outer * v.channels, pointers, 2))
            with_sum_mode(f.mode, [&](auto mode) {
                emu::launch("partial_sums_nhwc_vec", dim3(tiles, (unsigned)k),
                            dim3(sum_vec_shape<T>::cols, sum_vec_shape<T>::lanes),
                            partial_sums_nhwc_vec<T, decltype(mode)::value>, f, v.channels,
                            v.outer, partials.data());
            });
        else if (nhwc_view)
            emu::launch("partial_sums_nhwc", dim3(tiles, (unsigned)k), dim3(TILE, ROWS),
                        partial_sums_nhwc<T>, f, v.channels, v.outer, per_chunk, partials.data());
        else if (!scalar_sums && v.inner % W == 0 &&
                 vec_fits<T>(v.outer * v.channels * v.inner, pointers, 2))
            emu::launch("partial_sums_nchw<vector>", dim3((unsigned)v.channels, (unsigned)k),
                        dim3(NCHW_THREADS), partial_sums_nchw<T, vec16<T>::width>, f, v.channels,
                        v.outer, fast_divisor_of((uint32_t)(v.inner / W)), per_chunk,
                        partials.data());
        else
            emu::launch("partial_sums_nchw", dim3((unsigned)v.channels, (unsigned)k),
                        dim3(NCHW_THREADS), partial_sums_nchw<T, 1>, f, v.channels, v.outer,
                        fast_divisor_of((uint32_t)v.inner), per_chunk, partials.data());
        int64_t shift_stride = nhwc_view ? 1 : v.inner;
        emu::launch("finish_sums", dim3(finish_blocks(v.channels)), dim3(FINISH_THREADS),
                    finish_sums<T>, f.mode, (const float *)partials.data(), k, v.channels, count(),
                    (const T *)f.x, shift_stride, mean, rstd, run_mean, run_var, out1, out2,
                    bias_grad, elem_code<T>());
    }

    bn_stats forward_stats() const
    {
        size_t c = (size_t)cs.c;
        bn_stats s = {std::vector<float>(c, NAN), std::vector<float>(c, NAN), run_mean0, run_var0};
        summand<T> f = {SUM_STATS, ACT_NONE, x.data(), nullptr, nullptr,
                        nullptr,   nullptr,  nullptr,  nullptr};
        channel_sums(f, s.mean.data(), s.rstd.data(), s.run_mean.data(), s.run_var.data(), nullptr,
                     nullptr, nullptr);
        return s;
    }
    /* In double and without a shift: mean, rstd, and the running mean and
     * variance as PyTorch keeps them (momentum 0.1, the unbiased variance). */
    std::vector<std::vector<double>> forward_stats_ref() const
    {
        size_t channels = (size_t)cs.c;
        std::vector<double> sum(channels, 0.0), dev(channels, 0.0);
        each_elem([&](size_t c, size_t j) { sum[c] += host_float(x[j]); });
        double m = (double)count();
        each_elem([&](size_t c, size_t j) {
            double d = host_float(x[j]) - sum[c] / m;
            dev[c] += d * d;
        });
        std::vector<std::vector<double>> r(4, std::vector<double>(channels));
        for (size_t c = 0; c < channels; c++) {
            double mean = sum[c] / m, var = dev[c] / m;
            r[0][c] = mean;
            r[1][c] = 1.0 / sqrt(var + 1e-5);
            r[2][c] = 0.9 * run_mean0[c] + 0.1 * mean;
            r[3][c] = 0.9 * run_var0[c] + 0.1 * var * m / (m - 1.0);
        }
        return r;
    }

    /* y = act(bn(x) [+ other | + bn2(x2)]) as bn_apply launches it; without
     * a second batch norm the first goes in its place, as there. */
    std::vector<T> apply(const bn_norm<T> &first, const T *other, const bn_norm<T> *second,
                         int act) const
    {
        std::vector<T> y(elems(), host_elem<T>(NAN));
        int64_t n = (int64_t)elems();
        emu::launch("bn_apply_kernel", dim3(cuda_grid_blocks(n, APPLY_THREADS, sm_count)),
                    dim3(APPLY_THREADS), bn_apply_kernel<T>, y.data(), first, other,
                    second ? *second : first, second != nullptr, act, finder(), n);
        return y;
    }

    int layout() const { return cs.nhwc ? LAYOUT_NHWC : LAYOUT_NCHW; }
    channel_finder finder() const
    {
        return channel_finder_of(cs.c, plane(), layout(), (int64_t)elems());
    }

    /* apply and backward data on 16-byte vectors (bn_apply_vec_kernel, as
     * bn_apply launches it where with_vector_map finds a map); empty where
     * they may not run */
    std::vector<T> apply_vec(const bn_norm<T> &first, const T *other, const bn_norm<T> *second,
                             int act) const
    {
        std::vector<T> y(elems(), host_elem<T>(NAN));
        int64_t n = (int64_t)elems();
        const bn_norm<T> &bn2 = second ? *second : first;
        const void *pointers[] = {y.data(), first.x, other, bn2.x};
        bool ran = with_vector_map<T>(
            layout(), cs.c, plane(), n, pointers, 4, [&](auto map, uint32_t vectors) {
                with_apply_kind(other, second != nullptr, [&](auto kind) {
                    emu::launch("bn_apply_vec_kernel", dim3(vec_blocks(map, vectors)),
                                dim3(APPLY_THREADS),
                                bn_apply_vec_kernel<T, decltype(map), decltype(kind)::value>,
                                y.data(), first, other, bn2, act, map, vectors);
                });
            });
        return ran ? y : std::vector<T>();
    }

    /* dy where the fused activation lets it through, the mask taken from
     * the forward's normalised value (clear_mask_edges keeps float and
     * double from disagreeing on it) */
    double masked_dy(size_t j, size_t c, const bn_stats &s, int act) const
    {
        return passes_ref(normalised_ref(norm(s), j, c), act) ? host_float(dy[j]) : 0.0;
    }

    bn_grads backward_weights(const bn_stats &s, int act) const
    {
        size_t c = (size_t)cs.c;
        bn_grads g = {std::vector<float>(c, NAN), std::vector<float>(c, NAN)};
        summand<T> f = {SUM_GRAD,      act,           x.data(),     dy.data(),
                        s.mean.data(), s.rstd.data(), gamma.data(), beta.data(),
                        nullptr};
        /* finish_sums only reads rstd for gradients */
        channel_sums(f, nullptr, (float *)s.rstd.data(), nullptr, nullptr, g.dbeta.data(),
                     g.dgamma.data(), nullptr);
        return g;
    }
    /* d-beta = sum g, d-gamma = sum g x-hat, x-hat from the forward's mean
     * and rstd as the kernels have them */
    std::vector<std::vector<double>> backward_weights_ref(const bn_stats &s, int act) const
    {
        std::vector<std::vector<double>> r(2, std::vector<double>((size_t)cs.c, 0.0));
        each_elem([&](size_t c, size_t j) {
            double g = masked_dy(j, c, s, act);
            r[0][c] += g;
            r[1][c] += g * (host_float(x[j]) - s.mean[c]) * s.rstd[c];
        });
        return r;
    }

    std::vector<T> backward_data(const bn_stats &s, const bn_grads &g, int act,
                                 const std::vector<T> &base, bool accumulate) const
    {
        std::vector<T> dx = base;
        int64_t n = (int64_t)elems();
        float inv_count = (float)(1.0 / ((double)cs.n * plane()));
        emu::launch("bn_backward_data_kernel", dim3(cuda_grid_blocks(n, APPLY_THREADS, sm_count)),
                    dim3(APPLY_THREADS), bn_backward_data_kernel<T>, dx.data(),
                    (const T *)dy.data(), (const T *)x.data(), gamma.data(), beta.data(),
                    s.mean.data(), s.rstd.data(), g.dbeta.data(), g.dgamma.data(), act,
                    inv_count, accumulate, finder(), n);
        return dx;
    }
    std::vector<T> backward_data_vec(const bn_stats &s, const bn_grads &g, int act,
                                     const std::vector<T> &base, bool accumulate) const
    {
        std::vector<T> dx = base;
        int64_t n = (int64_t)elems();
        const void *pointers[] = {dx.data(), dy.data(), x.data()};
        float inv_count = (float)(1.0 / ((double)cs.n * plane()));
        bool ran = with_vector_map<T>(
            layout(), cs.c, plane(), n, pointers, 3, [&](auto map, uint32_t vectors) {
                emu::launch("bn_backward_data_vec_kernel", dim3(vec_blocks(map, vectors)),
                            dim3(APPLY_THREADS), bn_backward_data_vec_kernel<T, decltype(map)>,
                            dx.data(), (const T *)dy.data(), (const T *)x.data(), gamma.data(),
                            beta.data(), s.mean.data(), s.rstd.data(), g.dbeta.data(),
                            g.dgamma.data(), act, inv_count, accumulate, map, vectors);
            });
        return ran ? dx : std::vector<T>();
    }
    /* the vector kernels' grid as bn_apply chooses it (in NHWC whole rows a
     * stride, so that a thread keeps its channels), or with raw_grid one
     * block, whose 256-vector stride is not whole rows of these shapes: a
     * thread's channels change between its vectors */
    template <typename Map> unsigned vec_blocks(const Map &map, uint32_t vectors) const
    {
        return raw_grid ? 1 : map.blocks(cuda_grid_blocks(vectors, APPLY_THREADS, sm_count),
                                         APPLY_THREADS);
    }
    /* whole vectors in a row (NHWC, or a plane of one element) or in a plane
     * (NCHW) must take the vector kernels */
    bool vectors_expected() const
    {
        const int W = vec16<T>::width;
        return cs.nhwc || plane() == 1 ? cs.c % W == 0 : plane() % W == 0;
    }

    /* gamma rstd (g - d-beta / M - x-hat d-gamma / M), from the d-beta and
     * d-gamma the kernels gave */
    std::vector<double> backward_data_ref(const bn_stats &s, const bn_grads &g, int act,
                                          const std::vector<T> &base, bool accumulate) const
    {
        std::vector<double> dx(elems(), 0.0);
        double m = (double)count();
        each_elem([&](size_t c, size_t j) {
            double xhat = (host_float(x[j]) - s.mean[c]) * s.rstd[c];
            double d = (double)gamma[c] * s.rstd[c] *
                       (masked_dy(j, c, s, act) - g.dbeta[c] / m - xhat * g.dgamma[c] / m);
            dx[j] = (accumulate ? host_float(base[j]) : 0.0) + d;
        });
        return dx;
    }

    /* the conv/fc bias gradient: dy summed per channel, kept in T */
    std::vector<T> bias_grad() const
    {
        std::vector<T> db((size_t)cs.c, host_elem<T>(NAN));
        summand<T> f = {SUM_PLAIN, ACT_NONE, dy.data(), dy.data(),
                        nullptr,   nullptr,  nullptr,   nullptr,
                        nullptr};
        channel_sums(f, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, db.data());
        return db;
    }
    /* A ReLU/ReLU6's backward fused with the bias gradient of the layer
     * under it: dx = dy where y, the activation's output, passes, summed per
     * channel as it is written; in place, into dy's own buffer. Returns the
     * bias gradient followed by dx. */
    std::vector<T> act_bias_grad(int act, const std::vector<T> &y, bool in_place) const
    {
        std::vector<T> db((size_t)cs.c, host_elem<T>(NAN)), g = dy,
                                         dx(elems(), host_elem<T>(NAN));
        T *out = in_place ? g.data() : dx.data();
        summand<T> f = {SUM_PLAIN, act,     y.data(), g.data(), nullptr,
                        nullptr,   nullptr, nullptr,  out};
        channel_sums(f, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, db.data());
        db.insert(db.end(), out, out + elems());
        return db;
    }
    std::vector<double> bias_grad_ref() const
    {
        std::vector<double> db((size_t)cs.c, 0.0);
        each_elem([&](size_t c, size_t j) { db[c] += host_float(dy[j]); });
        return db;
    }
};

const char *const act_names[] = {"", " relu", " relu6"};

/* The statistics are fp32 sums of values exact in T, added in double and
 * kept in fp32: fp32's tolerance whatever T is. */
template <typename T> bn_stats check_stats(checker &ck, const bn_run<T> &run, const char *what)
{
    bn_stats s;
    under_every_schedule(ck, what, [&] { return (s = run.forward_stats()).joined(); });
    std::vector<std::vector<double>> ref = run.forward_stats_ref();
    const std::vector<float> *got[] = {&s.mean, &s.rstd, &s.run_mean, &s.run_var};
    const char *names[] = {"mean", "rstd", "running mean", "running variance"};
    double tol = elem_tolerance<float>();
    for (int k = 0; k < 4; k++) {
        double e = relative_error(*got[k], ref[(size_t)k]);
        ck.expect(e <= tol, "%s %s: relative error %.3g > %.3g", what, names[k], e, tol);
    }
    return s;
}

/* A second batch norm's input and parameters; the kernel only reads its
 * statistics, so they are made up. */
template <typename T> struct second_bn {
    std::vector<T> x;
    std::vector<float> gamma, beta, mean, rstd;

    second_bn(size_t elems, size_t c)
        : x(random_values<T>(elems, 8, -1.0f, 1.0f)), gamma(random_values<float>(c, 9, 0.5f, 2.0f)),
          beta(random_values<float>(c, 10, -1.0f, 1.0f)),
          mean(random_values<float>(c, 11, -0.5f, 0.5f)),
          rstd(random_values<float>(c, 12, 0.5f, 2.0f))
    {
    }
    bn_norm<T> norm() const
    {
        return bn_norm<T>{x.data(), gamma.data(), beta.data(), mean.data(), rstd.data()};
    }
};

/* The normalisation alone, with a residual and with a second batch norm,
 * each under the three activations. */
template <typename T>
void check_apply(checker &ck, const bn_run<T> &run, const bn_stats &s, const char *what)
{
    std::vector<T> other = random_values<T>(run.elems(), 7, -2.0f, 2.0f);
    second_bn<T> bn2(run.elems(), (size_t)run.cs.c);
    bn_norm<T> first = run.norm(s), second = bn2.norm();
    const char *fusions[] = {"", " + other", " + bn2"};
    double tol = elem_tolerance<T>();
    for (int fusion = 0; fusion < 3; fusion++)
        for (int act = ACT_NONE; act <= ACT_RELU6; act++) {
            std::vector<T> y = run.apply(first, fusion == 1 ? other.data() : nullptr,
                                         fusion == 2 ? &second : nullptr, act);
            std::vector<double> want(run.elems());
            run.each_elem([&](size_t c, size_t j) {
                double v = normalised_ref(first, j, c);
                v += fusion == 1 ? host_float(other[j]) : 0.0;
                v += fusion == 2 ? normalised_ref(second, j, c) : 0.0;
                want[j] = act_ref(v, act);
            });
            double e = relative_error(y, want);
            ck.expect(e <= tol, "%s apply%s%s: relative error %.3g > %.3g", what, fusions[fusion],
                      act_names[act], e, tol);
            std::vector<T> yv = run.apply_vec(first, fusion == 1 ? other.data() : nullptr,
                                              fusion == 2 ? &second : nullptr, act);
            ck.expect(yv.empty() != run.vectors_expected(), "%s apply%s%s: the vector kernel %s",
                      what, fusions[fusion], act_names[act],
                      yv.empty() ? "was not taken" : "ran where it may not");
            ck.expect(yv.empty() || same_bits(y, yv),
                      "%s apply%s%s: the vector kernel differs from the per-element one", what,
                      fusions[fusion], act_names[act]);
        }
}

/* Gradients at elements whose normalised value lies within 1e-4 of a mask
 * edge (0 or 6) are zeroed, so that the float kernels and the double
 * reference mask the same elements; every other element is clear of it. */
template <typename T> void clear_mask_edges(bn_run<T> &run, const bn_stats &s)
{
    run.each_elem([&](size_t c, size_t j) {
        double v = normalised_ref(run.norm(s), j, c);
        if (fabs(v) < 1e-4 || fabs(v - 6.0) < 1e-4)
            run.dy[j] = host_elem<T>(0.0f);
    });
}

/* Weights, then data from them, for each fused activation. The weight
 * gradients are fp32 sums like the statistics; dx's terms are of the size
 * of g, so one rounding to T and fp32's few more bound its error. */
template <typename T>
void check_backward(checker &ck, const bn_run<T> &run, const bn_stats &s, const char *what)
{
    std::vector<T> base = random_values<T>(run.elems(), 13, -2.0f, 2.0f);
    double tol = elem_tolerance<float>(), tol_dx = elem_tolerance<T>();
    char label[200];
    for (int act = ACT_NONE; act <= ACT_RELU6; act++) {
        snprintf(label, sizeof label, "%s backward%s", what, act_names[act]);
        bn_grads g;
        under_every_schedule(ck, label, [&] { return (g = run.backward_weights(s, act)).joined(); });
        std::vector<std::vector<double>> ref = run.backward_weights_ref(s, act);
        double e = relative_error(g.dbeta, ref[0]);
        ck.expect(e <= tol, "%s d-beta: relative error %.3g > %.3g", label, e, tol);
        e = relative_error(g.dgamma, ref[1]);
        ck.expect(e <= tol, "%s d-gamma: relative error %.3g > %.3g", label, e, tol);
        for (int accumulate = 0; accumulate < 2; accumulate++) {
            std::vector<T> dx = run.backward_data(s, g, act, base, accumulate);
            e = relative_error(dx, run.backward_data_ref(s, g, act, base, accumulate));
            ck.expect(e <= tol_dx, "%s data%s: relative error %.3g > %.3g", label,
                      accumulate ? " (accumulating)" : "", e, tol_dx);
            std::vector<T> dxv = run.backward_data_vec(s, g, act, base, accumulate);
            ck.expect(dxv.empty() != run.vectors_expected(), "%s data%s: the vector kernel %s",
                      label, accumulate ? " (accumulating)" : "",
                      dxv.empty() ? "was not taken" : "ran where it may not");
            ck.expect(dxv.empty() || same_bits(dx, dxv),
                      "%s data%s: the vector kernel differs from the per-element one", label,
                      accumulate ? " (accumulating)" : "");
        }
    }
}

/* The bias gradient alone, then with the backward of a ReLU/ReLU6 over the
 * layer's output (out of place and in place): dx is dy or exactly zero, the
 * sums are of dx. The activation's outputs are taken from [-2, 8], so that
 * both of ReLU6's edges (0 and 6) mask some elements. */
template <typename T> void check_bias_grad(checker &ck, const bn_run<T> &run, const char *what)
{
    std::vector<T> db = under_every_schedule(ck, what, [&] { return run.bias_grad(); });
    double e = relative_error(db, run.bias_grad_ref()), tol = elem_tolerance<T>();
    ck.expect(e <= tol, "%s bias gradient: relative error %.3g > %.3g", what, e, tol);
    std::vector<T> pre = random_values<T>(run.elems(), 14, -2.0f, 8.0f);
    for (int act = ACT_RELU; act <= ACT_RELU6; act++) {
        std::vector<T> y(run.elems()), dx_ref(run.elems());
        std::vector<double> db_ref((size_t)run.cs.c, 0.0);
        int masked = 0;
        run.each_elem([&](size_t c, size_t j) {
            float v = host_float(pre[j]), out = v > 0.0f ? v : 0.0f;
            if (act == ACT_RELU6 && out > 6.0f)
                out = 6.0f;
            y[j] = host_elem<T>(out);
            bool passes = out > 0.0f && (act == ACT_RELU || out < 6.0f);
            masked += !passes;
            dx_ref[j] = passes ? run.dy[j] : host_elem<T>(0.0f);
            db_ref[c] += passes ? host_float(run.dy[j]) : 0.0;
        });
        for (int in_place = 0; in_place < 2; in_place++) {
            char label[240];
            snprintf(label, sizeof label, "%s%s backward with the bias gradient%s", what,
                     act_names[act], in_place ? ", in place" : "");
            std::vector<T> got = under_every_schedule(
                ck, label, [&] { return run.act_bias_grad(act, y, in_place); });
            std::vector<T> got_db(got.begin(), got.begin() + run.cs.c),
                got_dx(got.begin() + run.cs.c, got.end());
            e = relative_error(got_db, db_ref);
            ck.expect(e <= tol, "%s: bias gradient relative error %.3g > %.3g", label, e, tol);
            ck.expect(same_bits(got_dx, dx_ref), "%s: dx is not dy masked by y (%d of %zu masked)",
                      label, masked, run.elems());
        }
    }
}

template <typename T> void check_case(checker &ck, const bn_case &c, int sm_count)
{
    bn_run<T> run(c, sm_count);
    char what[160];
    snprintf(what, sizeof what, "%s n%d c%d %dx%d %s in [%g, %g], %d chunk(s)", elem_name<T>(),
             c.n, c.c, c.h, c.w, c.nhwc ? "NHWC" : "NCHW", c.lo, c.hi, run.chunks());
    bn_stats s = check_stats(ck, run, what);
    check_apply(ck, run, s, what);
    clear_mask_edges(run, s);
    check_backward(ck, run, s, what);
    check_bias_grad(ck, run, what);
    if (run.vectors_expected()) {
        /* the sums once more on the per-element kernel the vector one replaced */
        run.scalar_sums = true;
        run.raw_grid = true;
        snprintf(what + strlen(what), sizeof what - strlen(what), ", per-element sums, raw grid");
        check_stats(ck, run, what);
        check_apply(ck, run, s, what);
        check_backward(ck, run, s, what);
        check_bias_grad(ck, run, what);
    }
}

} // namespace

void check_norm_kernels(checker &ck)
{
    ck.family = "batchnorm";
    /* NHWC: 297 rows make up to 4 chunks (64 rows each at least), the last
     * one shorter; 40 channels are two tiles, the second mostly empty, 72
     * three; 126 rows are one chunk, each thread going down 16 of them.
     * NCHW: 17 x 17 = 289 positions, more than a block's threads; 5 images
     * in 4 chunks of 2 leave the last chunk empty (5 SMs). Inputs in
     * [100, 101] cancel the variance unless it is taken around a shift;
     * 6 elements a channel make the unbiased variance 1.2 times the biased. */
    const bn_case nhwc = {3, 40, 9, 11, true, -1.0f, 1.0f};
    const bn_case nhwc_far = {3, 40, 9, 11, true, 100.0f, 101.0f};
    const bn_case nhwc_wide = {3, 72, 9, 11, true, -1.0f, 1.0f};
    const bn_case nhwc_one_chunk = {2, 72, 7, 9, true, -1.0f, 1.0f};
    const bn_case nchw = {5, 5, 17, 17, false, -1.0f, 1.0f};
    const bn_case nchw_far = {5, 5, 17, 17, false, 100.0f, 101.0f};
    const bn_case nchw_wide = {3, 40, 5, 7, false, -1.0f, 1.0f};
    /* NCHW planes of 80 are whole vectors in every type (10 bf16, 20 fp32
     * vectors); 5 images of 6 channels make 1 to 5 chunks. A plane of one
     * element (a fully connected layer's output) is NHWC's layout. */
    const bn_case nchw_vectors = {5, 6, 8, 10, false, -1.0f, 1.0f};
    const bn_case nchw_vectors_far = {5, 6, 8, 10, false, 100.0f, 101.0f};
    const bn_case nchw_fc = {70, 40, 1, 1, false, -1.0f, 1.0f};
    const bn_case tiny = {2, 5, 1, 3, true, -1.0f, 2.0f};
    /* 12 channels: three fp32 vectors a row, but not whole bf16 vectors
     * (the element count still is a multiple of 8) */
    const bn_case nhwc_part_vectors = {2, 12, 2, 3, true, -1.0f, 1.0f};
    check_case<float>(ck, nhwc, 1);
    check_case<float>(ck, nhwc_far, 132);
    check_case<float>(ck, nhwc_one_chunk, 132);
    check_case<float>(ck, nchw, 5);
    check_case<float>(ck, nchw_far, 132);
    check_case<float>(ck, nchw_wide, 8);
    check_case<float>(ck, tiny, 8);
    check_case<float>(ck, nchw_vectors, 5);
    check_case<float>(ck, nchw_vectors_far, 132);
    check_case<float>(ck, nchw_fc, 8);
    check_case<__nv_bfloat16>(ck, nchw_vectors, 1);
    check_case<__nv_bfloat16>(ck, nhwc, 132);
    check_case<__nv_bfloat16>(ck, nhwc_far, 8);
    check_case<__nv_bfloat16>(ck, nhwc_wide, 8);
    check_case<__nv_bfloat16>(ck, nhwc_part_vectors, 8);
    check_case<float>(ck, nhwc_part_vectors, 8);
    check_case<__nv_bfloat16>(ck, nchw, 1);
    check_case<__half>(ck, nchw_fc, 132);
    check_case<__nv_bfloat16>(ck, nchw_far, 5);
    check_case<__half>(ck, nhwc, 8);
    check_case<__half>(ck, nhwc_far, 1);
    check_case<__half>(ck, tiny, 132);
}
