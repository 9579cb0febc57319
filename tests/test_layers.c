/* Every layer type of the CPU backend on its own (tests/layer_check.c): the
 * forward against a direct loop in double, every gradient against central
 * differences of that loop, and the accumulate path. make test-gpu runs the
 * same cases on the CUDA backend. */
#ifdef HAVE_DNNL
#include <criterion/criterion.h>
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

/* Every case of the harness has a test above. */
Test(layers, every_case_is_run)
{
    int n;
    layer_cases(&n);
    cr_expect_eq(n, 28, "add a LAYER_TEST for each new case");
}
#endif /* HAVE_DNNL */
