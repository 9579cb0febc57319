/* The loss and update kernels (models/cuda/cuda_loss_sgd_kernels.cuh)
 * against direct loops in double, in the three element types: softmax cross
 * entropy with logits of 80 (exp would overflow without the max taken out)
 * and its gradient times the loss scale over the batch, the batch mean, the
 * search for a non-finite gradient, the fused SGD update of several tensors
 * cut into chunks (PyTorch's momentum and weight decay, the gradient
 * unscaled, the fp32 master and its half copy written together, nothing
 * written on a skipped step) and the loss scale's moves. Kernels with
 * barriers must not depend on the order threads run in. */

#include "emu_check.h"

#include "../../models/cuda/cuda_loss_sgd_kernels.cuh"

namespace {



/* ---- loss -------------------------------------------------------------------- */

template <typename T> struct loss_result {
    std::vector<T> dlogits;
    std::vector<float> each;
    float grad_scale = NAN, mean = NAN;
    bool same(const loss_result &o) const
    {
        return same_bits(dlogits, o.dlogits) && same_bits(each, o.each) &&
               grad_scale == o.grad_scale && mean == o.mean;
    }
};

/* The loss of each image, and its mean, as cuda_loss_run launches them. */
template <typename T>
loss_result<T> run_loss(const std::vector<T> &logits, const std::vector<int32_t> &labels,
                        int classes, float scale)
{
    int batch = (int)labels.size();
    loss_result<T> r;
    r.dlogits.assign(logits.size(), host_elem<T>(NAN));
    r.each.assign((size_t)batch, NAN);
    loss_scale_state state = loss_scale_initial();
    state.scale = scale;
    emu::launch("softmax_xent_kernel", dim3((unsigned)batch), dim3(LOSS_THREADS),
                softmax_xent_kernel<T>, logits.data(), r.dlogits.data(), labels.data(),
                r.each.data(), (const loss_scale_state *)&state, &r.grad_scale, classes, batch);
    emu::launch("mean_kernel", dim3(1), dim3(LOSS_THREADS), mean_kernel,
                (const float *)r.each.data(), batch, &r.mean);
    return r;
}

template <typename T> void check_loss(checker &ck, int batch, int classes, float scale)
{
    char what[96];
    snprintf(what, sizeof what, "%s softmax cross entropy batch %d, %d classes, scale %g",
             elem_name<T>(), batch, classes, scale);
    /* logits in [-4, 4), one of each image's 80: on the label for the first
     * image (a loss near 0), elsewhere for the others (near 80) */
    std::vector<T> logits = random_values<T>((size_t)batch * classes, 41, -4.0f, 4.0f);
    std::vector<int32_t> labels((size_t)batch);
    for (int i = 0; i < batch; i++) {
        labels[(size_t)i] = (int32_t)((i * 7919 + 13) % classes);
        int big = i == 0 ? labels[0] : (i * 104729 + 5) % classes;
        logits[(size_t)i * classes + big] = host_elem<T>(80.0f);
    }
    loss_result<T> got = under_every_schedule(
        ck, what, [&] { return run_loss(logits, labels, classes, scale); });

    std::vector<double> dz((size_t)batch * classes), each((size_t)batch);
    for (int i = 0; i < batch; i++) {
        const T *z = &logits[(size_t)i * classes];
        double top = -INFINITY, sum = 0.0;
        for (int c = 0; c < classes; c++)
            top = fmax(top, (double)host_float(z[c]));
        for (int c = 0; c < classes; c++)
            sum += exp(host_float(z[c]) - top);
        double log_sum = top + log(sum);
        for (int c = 0; c < classes; c++)
            dz[(size_t)i * classes + c] =
                (exp(host_float(z[c]) - log_sum) - (c == labels[(size_t)i])) * scale / batch;
        each[(size_t)i] = log_sum - host_float(z[labels[(size_t)i]]);
    }
    double e = relative_error(got.dlogits, dz), tol = elem_tolerance<T>();
    ck.expect(e <= tol, "%s: dlogits relative error %.3g > %.3g", what, e, tol);
    /* in fp32 from the rounded logits: fp32's tolerance whatever T */
    e = relative_error(got.each, each, 1.0);
    ck.expect(e <= elem_tolerance<float>(), "%s: losses relative error %.3g", what, e);
    /* the mean of what the kernel left, in double: its only rounding is to float */
    double mean = 0.0;
    for (float v : got.each)
        mean += v;
    mean /= batch;
    ck.expect(got.mean == (float)mean, "%s: mean %.9g, want %.9g", what, got.mean, mean);
    ck.expect(got.grad_scale == scale, "%s: the gradients' scale is %g", what, got.grad_scale);
}

/* The mean alone over more images than the block has threads. */
void check_mean(checker &ck)
{
    struct mean_result {
        float mean = NAN;
        bool same(const mean_result &o) const { return mean == o.mean; }
    };
    const int batch = 600;
    std::vector<float> each = random_values<float>(batch, 42, 0.0f, 9.0f);
    mean_result got = under_every_schedule(ck, "mean over 600 images", [&] {
        mean_result r;
        emu::launch("mean_kernel", dim3(1), dim3(LOSS_THREADS), mean_kernel,
                    (const float *)each.data(), batch, &r.mean);
        return r;
    });
    double want = 0.0;
    for (float v : each)
        want += v;
    want /= batch;
    ck.expect(got.mean == (float)want, "mean over %d images: %.9g, want %.9g", batch, got.mean,
              want);
}

/* ---- the fused update ------------------------------------------------------------ */

/* One parameter tensor of the update with its own storage: gradient in T
 * (or fp32 for batch norm's), the copy in T where T is not fp32. */
template <typename T> struct param {
    int64_t n;
    bool fp32_grad;
    std::vector<float> master, momentum, grad_f;
    std::vector<T> grad_t, copy;

    param(int64_t elems, bool f32, uint32_t seed, float scale) : n(elems), fp32_grad(f32)
    {
        master = random_values<float>((size_t)n, seed, -1.0f, 1.0f);
        momentum = random_values<float>((size_t)n, seed + 1, -0.1f, 0.1f);
        /* what backward left: the gradient times the loss scale */
        if (fp32_grad)
            grad_f = random_values<float>((size_t)n, seed + 2, -scale, scale);
        else
            grad_t = random_values<T>((size_t)n, seed + 2, -scale, scale);
        if (elem_code<T>() != ELEM_F32)
            copy.assign((size_t)n, host_elem<T>(NAN));
    }
    float grad(int64_t j) const
    {
        return fp32_grad ? grad_f[(size_t)j] : host_float(grad_t[(size_t)j]);
    }
    void set_grad(int64_t j, float v)
    {
        if (fp32_grad)
            grad_f[(size_t)j] = v;
        else
            grad_t[(size_t)j] = host_elem<T>(v);
    }
    sgd_tensor table()
    {
        sgd_tensor t;
        t.master = master.data();
        t.grad = fp32_grad ? (const void *)grad_f.data() : (const void *)grad_t.data();
        t.momentum = momentum.data();
        t.copy = copy.empty() ? nullptr : (void *)copy.data();
        t.grad_elem = fp32_grad ? ELEM_F32 : elem_code<T>();
        t.copy_elem = elem_code<T>();
        t.n = n;
        return t;
    }
};

/* A network's parameters: conv weights in three chunks, the last short;
 * batch norm's with an fp32 gradient; a small bias. */
template <typename T> struct param_set {
    std::vector<param<T>> params;
    std::vector<sgd_tensor> tensors;
    std::vector<sgd_chunk> chunks;
    loss_scale_state scale = loss_scale_initial();

    explicit param_set(float loss_scale)
    {
        scale.scale = loss_scale;
        params.emplace_back(2 * SGD_CHUNK + 3000, false, 51, loss_scale);
        params.emplace_back(300, true, 61, loss_scale);
        params.emplace_back(17, false, 71, loss_scale);
        for (int t = 0; t < (int)params.size(); t++) {
            tensors.push_back(params[(size_t)t].table());
            size_t k = chunks.size();
            chunks.resize(k + (size_t)sgd_cut(t, params[(size_t)t].n, nullptr));
            sgd_cut(t, params[(size_t)t].n, &chunks[k]);
        }
    }
    dim3 grid() const { return dim3((unsigned)chunks.size()); }
};

struct flag_result {
    int32_t found_inf;
    bool same(const flag_result &o) const { return found_inf == o.found_inf; }
};

template <typename T> int32_t find_non_finite(checker &ck, param_set<T> &set, const char *what)
{
    flag_result r = under_every_schedule(ck, what, [&] {
        set.scale.found_inf = 0;
        emu::launch("find_non_finite_kernel", set.grid(), dim3(SGD_THREADS), find_non_finite_kernel,
                    (const sgd_tensor *)set.tensors.data(), (const sgd_chunk *)set.chunks.data(),
                    &set.scale);
        return flag_result{set.scale.found_inf};
    });
    return r.found_inf;
}

void run_sgd(sgd_tensor *tensors, sgd_chunk *chunks, dim3 grid, loss_scale_state *scale,
             float lr, float momentum, float weight_decay)
{
    emu::launch("sgd_kernel", grid, dim3(SGD_THREADS), sgd_kernel, (const sgd_tensor *)tensors,
                (const sgd_chunk *)chunks, (const loss_scale_state *)scale, lr, momentum,
                weight_decay);
}

/* Cut into chunks of SGD_CHUNK in order, the last one shorter, every
 * element in exactly one. */
void check_cut(checker &ck)
{
    const int64_t sizes[] = {1, SGD_CHUNK - 1, SGD_CHUNK, SGD_CHUNK + 1, 5 * SGD_CHUNK + 77};
    for (int64_t n : sizes) {
        std::vector<sgd_chunk> c((size_t)sgd_cut(3, n, nullptr));
        int64_t k = sgd_cut(3, n, c.data()), next = 0;
        bool ok = k == (int64_t)c.size() && k == (n + SGD_CHUNK - 1) / SGD_CHUNK;
        for (const sgd_chunk &ch : c) {
            ok &= ch.tensor == 3 && ch.start == next && ch.len > 0 && ch.len <= SGD_CHUNK;
            ok &= ch.len == SGD_CHUNK || ch.start + ch.len == n;
            next = ch.start + ch.len;
        }
        ck.expect(ok && next == n, "the update's cut of %lld elements", (long long)n);
    }
}

/* One step of the update against PyTorch's SGD in double: g unscaled,
 * d = g + wd w, v = m v + d, w -= lr v; the copy is the new master in T. */
template <typename T> void check_sgd_step(checker &ck, float loss_scale)
{
    const float lr = 0.1f, momentum = 0.9f, wd = 5e-4f;
    char what[96];
    snprintf(what, sizeof what, "%s SGD update, loss scale %g", elem_name<T>(), loss_scale);
    param_set<T> set(loss_scale);
    ck.expect(find_non_finite(ck, set, what) == 0, "%s: a finite gradient was found not finite",
              what);

    std::vector<param<T>> before = set.params;
    run_sgd(set.tensors.data(), set.chunks.data(), set.grid(), &set.scale, lr, momentum, wd);
    for (size_t t = 0; t < set.params.size(); t++) {
        const param<T> &p = set.params[t], &b = before[t];
        std::vector<double> w((size_t)p.n), v((size_t)p.n);
        for (int64_t j = 0; j < p.n; j++) {
            double w0 = b.master[(size_t)j], d = (double)b.grad(j) / loss_scale + wd * w0;
            v[(size_t)j] = momentum * (double)b.momentum[(size_t)j] + d;
            w[(size_t)j] = w0 - lr * v[(size_t)j];
        }
        double ew = relative_error(p.master, w), ev = relative_error(p.momentum, v);
        double tol = elem_tolerance<float>();
        ck.expect(ew <= tol && ev <= tol,
                  "%s tensor %zu: master relative error %.3g, momentum %.3g (> %.3g)", what, t, ew,
                  ev, tol);
        if (!p.copy.empty()) {
            double ec = relative_error(p.copy, w);
            ck.expect(ec <= elem_tolerance<T>(), "%s tensor %zu: the copy's relative error %.3g",
                      what, t, ec);
        }
    }
}

/* A non-finite gradient in any one chunk is found, and the update then
 * writes nothing. */
template <typename T> void check_skipped_step(checker &ck, float loss_scale)
{
    struct spot {
        size_t tensor;
        int64_t at;
        float value;
    };
    const spot spots[] = {{0, SGD_CHUNK + 5000, INFINITY}, {0, 2 * SGD_CHUNK + 2999, -INFINITY},
                          {1, 150, NAN}, {2, 0, NAN}};
    for (const spot &s : spots) {
        char what[96];
        snprintf(what, sizeof what, "%s update with %g in tensor %zu at %lld", elem_name<T>(),
                 s.value, s.tensor, (long long)s.at);
        param_set<T> set(loss_scale);
        set.params[s.tensor].set_grad(s.at, s.value);
        ck.expect(find_non_finite(ck, set, what) == 1, "%s: not found", what);
        std::vector<param<T>> before = set.params;
        run_sgd(set.tensors.data(), set.chunks.data(), set.grid(), &set.scale, 0.1f, 0.9f, 5e-4f);
        bool untouched = true;
        for (size_t t = 0; t < set.params.size(); t++)
            untouched &= same_bits(set.params[t].master, before[t].master) &&
                         same_bits(set.params[t].momentum, before[t].momentum) &&
                         (set.params[t].copy.empty() || /* same_bits of no elements: memcmp(NULL) */
                          same_bits(set.params[t].copy, before[t].copy));
        ck.expect(untouched, "%s: the skipped step wrote parameters", what);
    }
}

/* ---- the loss scale ------------------------------------------------------------- */

/* GradScaler's rule, written out: an overflow halves the scale and counts a
 * skipped step; 2000 clean steps in a row double it. */
void scale_rule(loss_scale_state *s, bool overflow)
{
    if (overflow) {
        s->scale /= 2.0f;
        s->clean_steps = 0;
        s->skipped_steps += 1;
    } else if (++s->clean_steps == 2000) {
        s->scale *= 2.0f;
        s->clean_steps = 0;
    }
    s->found_inf = 0;
}

bool same_state(const loss_scale_state &a, const loss_scale_state &b)
{
    return a.scale == b.scale && a.found_inf == b.found_inf && a.clean_steps == b.clean_steps &&
           a.skipped_steps == b.skipped_steps;
}

/* Steps: two overflows, 2000 clean (the scale doubles at the last), an
 * overflow 1500 clean steps later (the count starts again), 2000 more. */
void check_loss_scale(checker &ck)
{
    loss_scale_state dev = loss_scale_initial(), rule = dev, host = dev;
    int steps = 0, mismatch = -1;
    auto step = [&](bool overflow) {
        dev.found_inf = host.found_inf = overflow;
        emu::launch("loss_scale_kernel", dim3(1), dim3(1), loss_scale_kernel, &dev);
        loss_scale_update(&host);
        scale_rule(&rule, overflow);
        if (mismatch < 0 && !(same_state(dev, rule) && same_state(dev, host)))
            mismatch = steps;
        steps++;
    };
    step(true);
    step(true);
    for (int i = 0; i < 2000; i++)
        step(false);
    ck.expect(dev.scale == LOSS_SCALE_INIT / 2.0f && dev.clean_steps == 0 && dev.skipped_steps == 2,
              "loss scale after 2 overflows and 2000 clean steps: %g, %d clean, %lld skipped",
              dev.scale, dev.clean_steps, (long long)dev.skipped_steps);
    for (int i = 0; i < 1500; i++)
        step(false);
    step(true);
    for (int i = 0; i < 2000; i++)
        step(false);
    ck.expect(dev.scale == LOSS_SCALE_INIT / 2.0f && dev.skipped_steps == 3,
              "loss scale after an overflow and 2000 clean steps: %g, %lld skipped", dev.scale,
              (long long)dev.skipped_steps);
    ck.expect(mismatch < 0,
              "loss scale: the kernel left GradScaler's rule (or loss_scale.h's) at step %d",
              mismatch);
}

/* loss_scale for the loss; update_scale for the gradients the update reads,
 * which stay finite in T at that scale */
template <typename T> void check_type(checker &ck, float loss_scale, float update_scale)
{
    check_loss<T>(ck, 3, 10, loss_scale);
    check_loss<T>(ck, 3, 700, loss_scale);
    check_sgd_step<T>(ck, update_scale);
    check_skipped_step<T>(ck, update_scale);
}

} // namespace

void check_loss_sgd_kernels(checker &ck)
{
    ck.family = "loss+sgd";
    /* fp16 trains under GradScaler's scale (its first, 2^16, for the loss);
     * the others at 1, and bf16 at 8 too: the kernels take whatever scale
     * the state holds */
    check_type<float>(ck, 1.0f, 1.0f);
    check_type<__half>(ck, LOSS_SCALE_INIT, 1024.0f);
    check_type<__nv_bfloat16>(ck, 8.0f, 8.0f);
    check_mean(ck);
    check_cut(ck);
    check_loss_scale(ck);
}
