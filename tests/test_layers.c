/* Every layer type of the CPU backend on its own (tests/layer_check.c): the
 * forward against a direct loop in double, every gradient against central
 * differences of that loop, and the accumulate path. make test-gpu runs the
 * same cases on the CUDA backend. */
#ifdef HAVE_DNNL
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "../models/cpu/cpu_backend.h"
#include "layer_check.h"

static void expect(void *ctx, bool ok, const char *message)
{
    (void)ctx;
    cr_expect(ok, "%s", message);
}

static void check(const char *name)
{
    const layer_case *c = layer_case_find(name);
    cr_assert_not_null(c, "no case %s", name);
    layer_check_env env = {
        .ops = &cpu_backend_ops,
        .cfg = {.batch = LAYER_CHECK_BATCH, .threads = 1, .seed = 5},
        /* fp32 against double: float rounding in sums of at most a few
         * hundred terms, and central differences of a piecewise-linear loss */
        .tol = {.forward = 1e-4, .gradient = 2e-3, .accumulate = 1e-5},
        .expect = expect,
    };
    layer_check_case(&env, c);
}

#define LAYER_TEST(name) \
    Test(layers, name, .timeout = 120) { check(#name); }

LAYER_TEST(conv3x3_bias_vgg)
LAYER_TEST(conv3x3_stride2_resnet)
LAYER_TEST(conv7x7_stride2_pad3_stem)
LAYER_TEST(conv1x1_stride2_downsample)
LAYER_TEST(conv1x1_pointwise)
LAYER_TEST(conv1x1_pointwise_wide)
LAYER_TEST(depthwise3x3_stride1)
LAYER_TEST(depthwise3x3_stride2)
LAYER_TEST(conv3x3_wide)
LAYER_TEST(conv1x1_stride2_wide)
LAYER_TEST(depthwise3x3_stride2_wide)
LAYER_TEST(conv7x7_stem_wide_output)
LAYER_TEST(grouped_conv)
LAYER_TEST(depthwise5x5_stride1)
LAYER_TEST(depthwise5x5_stride2)
LAYER_TEST(depthwise3x3_many_positions)
LAYER_TEST(fully_connected_flattens)
LAYER_TEST(fully_connected_bias_only)
LAYER_TEST(batch_norm_training)
LAYER_TEST(batch_norm_after_wide_conv)
LAYER_TEST(relu)
LAYER_TEST(relu6_clips_both_ends)
LAYER_TEST(maxpool3x3_stride2_pad1)
LAYER_TEST(maxpool2x2_stride2)
LAYER_TEST(global_avgpool)
LAYER_TEST(adaptive_avgpool_down)
LAYER_TEST(adaptive_avgpool_up)
LAYER_TEST(residual_add)
LAYER_TEST(dropout)

/* Max pool on plains with ties (values from {0, 1, 2}) and windows clipped on
 * every side of an oblong plane: each output is its window's maximum and its
 * gradient goes to the window's first maximum in row-major order, as in
 * PyTorch. The finite-difference cases above cannot see ties. */
static void check_maxpool_ties(int h, int w, int kernel, int stride, int pad)
{
    enum { N = 2, C = 3 };
    network net;
    net_init(&net, "test", h, 1, (tensor_shape){C, h, w});
    net_conv(&net, "stem", GRAPH_INPUT, C, 1, 1, 0, 1, false);
    int pool = net_maxpool(&net, "pool", 0, kernel, stride, pad);
    cr_assert_eq(net.status, NET_OK, "%s", net.err);
    const layer *l = &net.layers[pool];
    int oh = l->out_shape.h, ow = l->out_shape.w;
    backend_config cfg = {.batch = N, .threads = 2, .seed = 5};
    char err[640];
    backend *b = cpu_backend_ops.create(&net, &cfg, err, sizeof err);
    cr_assert_not_null(b, "%s", err);
    int64_t n_in = (int64_t)N * C * h * w, n_out = (int64_t)N * C * oh * ow;
    float *x = calloc((size_t)n_in, sizeof *x), *dx = calloc((size_t)n_in, sizeof *dx);
    float *y = calloc((size_t)n_out, sizeof *y), *dy = calloc((size_t)n_out, sizeof *dy);
    float *want_dx = calloc((size_t)n_in, sizeof *want_dx);
    cr_assert(x && dx && y && dy && want_dx);
    for (int64_t j = 0; j < n_in; j++)
        x[j] = (float)((j * 7 / 3 + j / 5) % 3);
    for (int64_t j = 0; j < n_out; j++)
        dy[j] = (float)(1 + j % 4);
    cr_assert_eq(cpu_backend_ops.write(b, 0, BUF_OUTPUT, x), 0);
    cr_assert_eq(cpu_backend_ops.forward(b, pool), 0, "%s", cpu_backend_ops.error(b));
    cr_assert_eq(cpu_backend_ops.read(b, pool, BUF_OUTPUT, y), 0);
    cr_assert_eq(cpu_backend_ops.write(b, pool, BUF_OUTPUT_GRAD, dy), 0);
    bool fresh[LAYER_MAX_INPUTS] = {false, false};
    cr_assert_eq(cpu_backend_ops.backward_data(b, pool, fresh), 0);
    cr_assert_eq(cpu_backend_ops.read(b, 0, BUF_OUTPUT_GRAD, dx), 0);
    int wrong = 0;
    for (int plane = 0; plane < N * C; plane++)
        for (int r = 0; r < oh; r++)
            for (int c = 0; c < ow; c++) {
                int64_t first = -1;
                float best = 0.0f;
                for (int row = r * stride - pad; row < r * stride - pad + kernel; row++)
                    for (int col = c * stride - pad; col < c * stride - pad + kernel; col++) {
                        if (row < 0 || row >= h || col < 0 || col >= w)
                            continue;
                        int64_t at = ((int64_t)plane * h + row) * w + col;
                        if (first < 0 || x[at] > best) {
                            first = at;
                            best = x[at];
                        }
                    }
                int64_t o = ((int64_t)plane * oh + r) * ow + c;
                want_dx[first] += dy[o];
                wrong += y[o] != best;
            }
    for (int64_t j = 0; j < n_in; j++)
        wrong += dx[j] != want_dx[j];
    cr_expect_eq(wrong, 0, "max pool %dx%d/%d pad %d over %dx%d: %d values differ", kernel,
                 kernel, stride, pad, h, w, wrong);
    free(x);
    free(dx);
    free(y);
    free(dy);
    free(want_dx);
    cpu_backend_ops.destroy(b);
    net_free(&net);
}

Test(layers, maxpool_ties_go_to_the_first_maximum, .timeout = 60)
{
    check_maxpool_ties(7, 11, 3, 2, 1);  /* ResNet's stem pool, clipped on every side */
    check_maxpool_ties(8, 5, 3, 2, 1);
    check_maxpool_ties(2, 3, 3, 2, 1);   /* no window inside the plane */
    check_maxpool_ties(6, 9, 2, 2, 0);   /* VGG's pool; the last column uncovered */
    check_maxpool_ties(5, 7, 3, 1, 1);
    check_maxpool_ties(9, 12, 5, 3, 2);
}

/* The reorders of one forward of a 16-channel convolution followed by `next`. */
static int forward_reorders(layer_type next)
{
    network net;
    net_init(&net, "test", 6, 1, (tensor_shape){16, 6, 6});
    int conv = net_conv(&net, "conv", GRAPH_INPUT, 16, 1, 1, 0, 1, false);
    if (next == LAYER_BN)
        net_bn(&net, "bn", conv);
    else
        net_relu(&net, "relu", conv);
    cr_assert_eq(net.status, NET_OK, "%s", net.err);
    backend_config cfg = {.batch = 2, .threads = 2, .seed = 5};
    char err[640], kernel[64];
    backend *b = cpu_backend_ops.create(&net, &cfg, err, sizeof err);
    cr_assert_not_null(b, "%s", err);
    cr_assert_eq(cpu_backend_ops.forward(b, conv), 0, "%s", cpu_backend_ops.error(b));
    layout_work work;
    cpu_backend_ops.take_layout_work(b, &work, kernel, sizeof kernel);
    cpu_backend_ops.destroy(b);
    net_free(&net);
    return work.count;
}

/* A convolution whose output only a batch norm reads leaves it in oneDNN's
 * blocked layout for the batch norm (whose results the case
 * batch_norm_after_wide_conv checks): one reorder fewer than before a ReLU,
 * which reads NCHW. */
Test(layers, a_conv_hands_its_blocked_output_to_the_batch_norm, .timeout = 60)
{
    int to_bn = forward_reorders(LAYER_BN), to_relu = forward_reorders(LAYER_RELU);
    cr_expect_gt(to_relu, 0, "oneDNN kept the plain layout: nothing to hand over");
    cr_expect_eq(to_bn, to_relu - 1, "forward reorders: %d before a batch norm, %d before a ReLU",
                 to_bn, to_relu);
}

/* worst |got - want| / (1 + |want|) over n values */
static double worst_error(const float *got, const double *want, int64_t n)
{
    double worst = 0.0;
    for (int64_t j = 0; j < n; j++) {
        double e = fabs(got[j] - want[j]) / (1.0 + fabs(want[j]));
        worst = e > worst ? e : worst;
    }
    return worst;
}

/* The whole hand-over through the backend, against direct loops in double: a
 * 1x1 convolution writes its output in the blocked layout, the batch norm
 * reads it and writes its input gradient blocked, the convolution's
 * backward-weights reads that; the reads in NCHW agree with each step. */
Test(layers, conv_and_batch_norm_agree_through_the_blocked_layout, .timeout = 60)
{
    enum { N = 2, C = 16, H = 6, P = H * H, E = N * C * P };
    network net;
    net_init(&net, "test", H, 1, (tensor_shape){C, H, H});
    int conv = net_conv(&net, "conv", GRAPH_INPUT, C, 1, 1, 0, 1, false);
    int bn = net_bn(&net, "bn", conv);
    cr_assert_eq(net.status, NET_OK, "%s", net.err);
    backend_config cfg = {.batch = N, .threads = 2, .seed = 5};
    char err[640];
    backend *b = cpu_backend_ops.create(&net, &cfg, err, sizeof err);
    cr_assert_not_null(b, "%s", err);
    static float x[E], w[C * C], gamma[C], beta[C], z[E], y[E], dy[E], dz[E], dw[C * C];
    static double want[E];
    for (int j = 0; j < E; j++) {
        x[j] = (float)sin(0.37 * j);
        dy[j] = (float)cos(0.11 * j);
    }
    for (int j = 0; j < C * C; j++)
        w[j] = (float)sin(1.3 * j + 0.5);
    for (int c = 0; c < C; c++) {
        gamma[c] = 0.5f + 0.1f * c;
        beta[c] = 0.2f * c - 1.0f;
    }
    const int32_t labels[N] = {0, 0};
    const backend_ops *ops = &cpu_backend_ops;
    cr_assert_eq(ops->set_batch(b, x, labels), 0);
    cr_assert_eq(ops->write(b, conv, BUF_WEIGHT, w), 0);
    cr_assert_eq(ops->write(b, bn, BUF_WEIGHT, gamma), 0);
    cr_assert_eq(ops->write(b, bn, BUF_BIAS, beta), 0);
    cr_assert_eq(ops->forward(b, conv), 0, "%s", ops->error(b));
    cr_assert_eq(ops->forward(b, bn), 0, "%s", ops->error(b));
    cr_assert_eq(ops->read(b, conv, BUF_OUTPUT, z), 0);
    cr_assert_eq(ops->read(b, bn, BUF_OUTPUT, y), 0);
    for (int n = 0; n < N; n++)
        for (int o = 0; o < C; o++)
            for (int p = 0; p < P; p++) {
                double sum = 0.0;
                for (int i = 0; i < C; i++)
                    sum += (double)w[o * C + i] * x[(n * C + i) * P + p];
                want[(n * C + o) * P + p] = sum;
            }
    cr_expect_lt(worst_error(z, want, E), 1e-4, "conv output");

    /* batch norm of the output as read, and its input gradient */
    static double xhat[E], dx_want[E];
    for (int c = 0; c < C; c++) {
        double mean = 0.0, var = 0.0, mdy = 0.0, mdyx = 0.0;
        for (int n = 0; n < N; n++)
            for (int p = 0; p < P; p++)
                mean += z[(n * C + c) * P + p] / (double)(N * P);
        for (int n = 0; n < N; n++)
            for (int p = 0; p < P; p++)
                var += pow(z[(n * C + c) * P + p] - mean, 2) / (N * P);
        double rstd = 1.0 / sqrt(var + 1e-5);
        for (int n = 0; n < N; n++)
            for (int p = 0; p < P; p++) {
                int at = (n * C + c) * P + p;
                xhat[at] = (z[at] - mean) * rstd;
                want[at] = xhat[at] * gamma[c] + beta[c];
                mdy += dy[at] / (N * P);
                mdyx += dy[at] * xhat[at] / (N * P);
            }
        for (int n = 0; n < N; n++)
            for (int p = 0; p < P; p++) {
                int at = (n * C + c) * P + p;
                dx_want[at] = gamma[c] * rstd * (dy[at] - mdy - xhat[at] * mdyx);
            }
    }
    cr_expect_lt(worst_error(y, want, E), 1e-4, "batch norm output");
    bool fresh[LAYER_MAX_INPUTS] = {false, false};
    cr_assert_eq(ops->write(b, bn, BUF_OUTPUT_GRAD, dy), 0);
    cr_assert_eq(ops->backward_weights(b, bn), 0, "%s", ops->error(b));
    cr_assert_eq(ops->backward_data(b, bn, fresh), 0, "%s", ops->error(b));
    cr_assert_eq(ops->read(b, conv, BUF_OUTPUT_GRAD, dz), 0);
    cr_expect_lt(worst_error(dz, dx_want, E), 1e-4, "batch norm input gradient");

    /* the convolution's weight gradient from the gradient as read */
    cr_assert_eq(ops->backward_weights(b, conv), 0, "%s", ops->error(b));
    cr_assert_eq(ops->read(b, conv, BUF_WEIGHT_GRAD, dw), 0);
    for (int o = 0; o < C; o++)
        for (int i = 0; i < C; i++) {
            double sum = 0.0;
            for (int n = 0; n < N; n++)
                for (int p = 0; p < P; p++)
                    sum += (double)dz[(n * C + o) * P + p] * x[(n * C + i) * P + p];
            want[o * C + i] = sum;
        }
    cr_expect_lt(worst_error(dw, want, C * C), 1e-4, "conv weight gradient");
    ops->destroy(b);
    net_free(&net);
}

/* Every case of the harness has a test above. */
Test(layers, every_case_is_run)
{
    int n;
    layer_cases(&n);
    cr_expect_eq(n, 29, "add a LAYER_TEST for each new case");
}
#endif /* HAVE_DNNL */
