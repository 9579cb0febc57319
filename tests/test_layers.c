/* Every layer type of the CPU backend on its own (tests/layer_check.c): the
 * forward against a direct loop in double, every gradient against central
 * differences of that loop, and the accumulate path. make test-gpu runs the
 * same cases on the CUDA backend. */
#ifdef HAVE_DNNL
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../models/cpu/cpu_backend.h"
#include "../models/cpu/cpu_blocking.h"
#include "../models/cpu/cpu_internal.h"
#include "../models/zoo.h"
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
LAYER_TEST(batch_norm_between_blocked_convs)
LAYER_TEST(relu_between_blocked_convs)
LAYER_TEST(relu6_between_blocked_convs)
LAYER_TEST(maxpool3x3_stride2_pad1_between_blocked_convs)
LAYER_TEST(adaptive_avgpool_between_blocked_convs)
LAYER_TEST(global_avgpool_of_a_blocked_conv)
LAYER_TEST(residual_add_between_blocked_convs)

/* The cases above between convolutions do run on the blocked layout: the
 * tested layer's input and output are oneDNN's nChw8c or nChw16c. */
Test(layers, the_cases_between_convolutions_run_blocked, .timeout = 60)
{
    const char *names[] = {"batch_norm_between_blocked_convs",
                           "relu_between_blocked_convs",
                           "relu6_between_blocked_convs",
                           "maxpool3x3_stride2_pad1_between_blocked_convs",
                           "adaptive_avgpool_between_blocked_convs",
                           "global_avgpool_of_a_blocked_conv",
                           "residual_add_between_blocked_convs"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        const layer_case *c = layer_case_find(names[k]);
        cr_assert_not_null(c, "no case %s", names[k]);
        network net;
        int tested = c->build(&net);
        cr_assert_eq(net.status, NET_OK, "%s", net.err);
        backend_config cfg = {.batch = LAYER_CHECK_BATCH, .threads = 1, .seed = 5};
        char err[640];
        backend *b = cpu_backend_ops.create(&net, &cfg, err, sizeof err);
        cr_assert_not_null(b, "%s", err);
        const layer *l = &net.layers[tested];
        for (int i = 0; i < l->n_inputs; i++)
            cr_expect_gt(b->layers[l->inputs[i]].block, 0, "%s: input %d is NCHW", names[k], i);
        cr_expect_gt(b->layers[tested].block, 0, "%s: output is NCHW", names[k]);
        cpu_backend_ops.destroy(b);
        net_free(&net);
    }
}

/* Max pool on plains with ties (values from {0, 1, 2}) and windows clipped on
 * every side of an oblong plane: each output is its window's maximum and its
 * gradient goes to the window's first maximum in row-major order, as in
 * PyTorch. The finite-difference cases above cannot see ties. */
static void check_pool_ties(int h, int w, int kernel, int stride, int pad, bool blocked)
{
    enum { N = 2 };
    /* with a convolution after it and 32 channels, the pool runs over the
     * blocked layout (cpu_blocking.c) */
    const int C = blocked ? 32 : 3;
    network net;
    net_init(&net, "test", h, 1, (tensor_shape){C, h, w});
    net_conv(&net, "stem", GRAPH_INPUT, C, 1, 1, 0, 1, false);
    int pool = net_maxpool(&net, "pool", 0, kernel, stride, pad);
    if (blocked)
        net_conv(&net, "tail", pool, C, 1, 1, 0, 1, false);
    cr_assert_eq(net.status, NET_OK, "%s", net.err);
    const layer *l = &net.layers[pool];
    int oh = l->out_shape.h, ow = l->out_shape.w;
    backend_config cfg = {.batch = N, .threads = 2, .seed = 5};
    char err[640];
    backend *b = cpu_backend_ops.create(&net, &cfg, err, sizeof err);
    cr_assert_not_null(b, "%s", err);
    cr_assert_eq(b->layers[pool].block > 0, blocked, "the pool's layout");
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
    cr_expect_eq(wrong, 0, "max pool %dx%d/%d pad %d over %dx%d%s: %d values differ", kernel,
                 kernel, stride, pad, h, w, blocked ? " (blocked)" : "", wrong);
    free(x);
    free(dx);
    free(y);
    free(dy);
    free(want_dx);
    cpu_backend_ops.destroy(b);
    net_free(&net);
}

static void check_maxpool_ties(int h, int w, int kernel, int stride, int pad)
{
    check_pool_ties(h, w, kernel, stride, pad, false);
    check_pool_ties(h, w, kernel, stride, pad, true);
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

/* The reorders that one forward of `layer` runs; frees net. */
static int forward_reorders_of(network *net, int layer)
{
    cr_assert_eq(net->status, NET_OK, "%s", net->err);
    backend_config cfg = {.batch = 2, .threads = 2, .seed = 5};
    char err[640], kernel[64];
    backend *b = cpu_backend_ops.create(net, &cfg, err, sizeof err);
    cr_assert_not_null(b, "%s", err);
    cr_assert_eq(cpu_backend_ops.forward(b, layer), 0, "%s", cpu_backend_ops.error(b));
    layout_work work;
    cpu_backend_ops.take_layout_work(b, &work, kernel, sizeof kernel);
    cpu_backend_ops.destroy(b);
    net_free(net);
    return work.count;
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
    return forward_reorders_of(&net, conv);
}

/* A convolution whose output only a batch norm reads leaves it in oneDNN's
 * blocked layout for the batch norm (whose results the case
 * batch_norm_after_wide_conv checks), even where the batch norm is the
 * network's last layer: one reorder fewer than before a ReLU there, whose
 * output, the network's, is NCHW, and so is its input. */
Test(layers, a_conv_hands_its_blocked_output_to_the_batch_norm, .timeout = 60)
{
    int to_bn = forward_reorders(LAYER_BN), to_relu = forward_reorders(LAYER_RELU);
    cr_expect_gt(to_relu, 0, "oneDNN kept the plain layout: nothing to hand over");
    cr_expect_eq(to_bn, to_relu - 1, "forward reorders: %d before a batch norm, %d before a ReLU",
                 to_bn, to_relu);
}

/* The reorders of the forward of a 1x1 convolution whose input comes from a
 * convolution, a batch norm and then `between`. */
static int chain_reorders(layer_type between)
{
    network net;
    net_init(&net, "test", 6, 1, (tensor_shape){16, 6, 6});
    int x = net_conv(&net, "conv1", GRAPH_INPUT, 16, 1, 1, 0, 1, false);
    x = net_bn(&net, "bn1", x);
    x = between == LAYER_RELU ? net_relu(&net, "relu", x) : net_dropout(&net, "drop", x, 0.5f);
    int conv2 = net_conv(&net, "conv2", x, 16, 1, 1, 0, 1, false);
    net_bn(&net, "bn2", conv2);
    return forward_reorders_of(&net, conv2);
}

/* conv -> BN -> ReLU -> conv: the second convolution reads its input as the
 * chain left it, blocked, one reorder fewer than after dropout (NCHW). */
Test(layers, a_conv_reads_a_blocked_chain_without_a_reorder, .timeout = 60)
{
    int after_relu = chain_reorders(LAYER_RELU), after_dropout = chain_reorders(LAYER_DROPOUT);
    cr_expect_gt(after_dropout, 0, "oneDNN kept the plain layout: nothing to keep blocked");
    cr_expect_eq(after_relu, after_dropout - 1,
                 "forward reorders: %d after a ReLU, %d after dropout", after_relu, after_dropout);
}

/* A convolution keeps its weights, their gradient and momentum in the layout
 * its forward and backward-weights chose: neither pass reorders them, read
 * and write convert (bit for bit: a permutation), and DDP is told the
 * layout, which differs between layouts. */
Test(layers, a_conv_keeps_its_weights_in_the_layout_onednn_chose, .timeout = 60)
{
    enum { N = 2, H = 6, C = 16 };
    network net;
    net_init(&net, "test", H, 1, (tensor_shape){3, H, H});
    int stem = net_conv(&net, "stem", GRAPH_INPUT, C, 3, 1, 1, 1, false);
    int x = net_relu(&net, "relu", net_bn(&net, "bn", stem));
    int conv = net_conv(&net, "conv", x, C, 3, 1, 1, 1, false);
    net_bn(&net, "bn2", conv);
    cr_assert_eq(net.status, NET_OK, "%s", net.err);
    backend_config cfg = {.batch = N, .threads = 2, .seed = 5};
    char err[640], kernel[64];
    const backend_ops *ops = &cpu_backend_ops;
    backend *b = ops->create(&net, &cfg, err, sizeof err);
    cr_assert_not_null(b, "%s", err);
    const dnnl_layer *d = &b->layers[conv].dnnl;
    if (!d->kept_weights) {
        ops->destroy(b);
        net_free(&net);
        cr_skip_test("oneDNN chose plain weights or two layouts here (%s)", d->impl[PASS_FWD]);
    }
    enum { W = C * C * 9 };
    static float w[W], back[W];
    for (int j = 0; j < W; j++)
        w[j] = (float)sin(0.1 * j);
    cr_assert_eq(ops->write(b, conv, BUF_WEIGHT, w), 0, "%s", ops->error(b));
    cr_expect(memcmp(b->layers[conv].w, w, sizeof w) != 0, "the kept array is in plain order");
    cr_assert_eq(ops->read(b, conv, BUF_WEIGHT, back), 0, "%s", ops->error(b));
    cr_expect(memcmp(back, w, sizeof w) == 0, "weights read back differ from those written");

    static float images[N * 3 * H * H], dy[N * C * H * H];
    for (int j = 0; j < N * 3 * H * H; j++)
        images[j] = (float)cos(0.3 * j);
    for (int j = 0; j < N * C * H * H; j++)
        dy[j] = (float)sin(0.7 * j);
    cr_assert_eq(ops->set_batch(b, images, (const int32_t[N]){0, 0}), 0, "%s", ops->error(b));
    for (int i = 0; i < conv; i++)
        cr_assert_eq(ops->forward(b, i), 0, "%s", ops->error(b));
    layout_work work;
    ops->take_layout_work(b, &work, kernel, sizeof kernel);
    cr_assert_eq(ops->forward(b, conv), 0, "%s", ops->error(b));
    ops->take_layout_work(b, &work, kernel, sizeof kernel);
    cr_expect_eq(work.count, 0, "forward reordered %d times", work.count);
    cr_assert_eq(ops->write(b, conv, BUF_OUTPUT_GRAD, dy), 0, "%s", ops->error(b));
    cr_assert_eq(ops->backward_weights(b, conv), 0, "%s", ops->error(b));
    layout_work after;
    ops->take_layout_work(b, &after, kernel, sizeof kernel);
    cr_expect_eq(after.count, 0, "backward-weights reordered %d times", after.count);

    grad_memory g, g_stem;
    cr_assert_eq(ops->grad_storage(b, conv, BUF_WEIGHT_GRAD, &g), 0, "%s", ops->error(b));
    cr_assert_eq(ops->grad_storage(b, stem, BUF_WEIGHT_GRAD, &g_stem), 0, "%s", ops->error(b));
    cr_expect_neq(g.layout, 0, "DDP is not told the gradient's layout");
    cr_expect(!b->layers[stem].dnnl.kept_weights || g_stem.layout != g.layout,
              "two layouts (%s and %s weights), one digest", "3-channel", "16-channel");
    ops->destroy(b);
    net_free(&net);
}

/* What conv -> BN -> `act` (-> a 1x1 conv where `tail`) computes through
 * the backend from fixed inputs: the activation's output, then the batch
 * norm's parameter gradients and the convolution's output gradient from a
 * fixed gradient of the activation's output; `fused` says whether the batch
 * norm did the activation's work. */
typedef struct {
    float y[2 * 32 * 81], dgamma[32], dbeta[32], dx[2 * 32 * 81];
    bool fused;
} bn_act_run;

/* `act` (ReLU or ReLU6) over layer x, then a 1x1 convolution where `tail`
 * (so that x's output sits between convolutions); the activation's index. */
static int act_and_tail(network *net, layer_type act, int x, bool tail)
{
    int a = act == LAYER_RELU ? net_relu(net, "act", x) : net_relu6(net, "act", x);
    cr_assert_eq(net->status, NET_OK, "%s", net->err);
    if (tail)
        net_conv(net, "tail", a, net->layers[a].out_shape.c, 1, 1, 0, 1, false);
    cr_assert_eq(net->status, NET_OK, "%s", net->err);
    return a;
}

static backend *fusion_backend(const network *net, int batch, bool no_fusion)
{
    backend_config cfg = {.batch = batch, .threads = 2, .seed = 5, .no_fusion = no_fusion};
    char err[640];
    backend *b = cpu_backend_ops.create(net, &cfg, err, sizeof err);
    cr_assert_not_null(b, "%s", err);
    return b;
}

static void run_bn_act(int channels, layer_type act, bool tail, bool no_fusion, bn_act_run *r)
{
    enum { N = 2, H = 9 };
    network net;
    net_init(&net, "test", H, 1, (tensor_shape){channels, H, H});
    int conv = net_conv(&net, "conv", GRAPH_INPUT, channels, 1, 1, 0, 1, false);
    int bn = net_bn(&net, "bn", conv);
    int a = act_and_tail(&net, act, bn, tail);
    const backend_ops *ops = &cpu_backend_ops;
    backend *b = fusion_backend(&net, N, no_fusion);
    int64_t e = (int64_t)N * channels * H * H;
    static float z[2 * 32 * 81], dy[2 * 32 * 81], gamma[32], beta[32];
    for (int64_t j = 0; j < e; j++) {
        z[j] = (float)(4.0 * sin(0.37 * j));
        dy[j] = (float)cos(0.11 * j);
    }
    for (int c = 0; c < channels; c++) {
        gamma[c] = 1.5f + 0.1f * c;
        beta[c] = 0.3f * c - 1.0f;
    }
    cr_assert_eq(ops->write(b, conv, BUF_OUTPUT, z), 0);
    cr_assert_eq(ops->write(b, bn, BUF_WEIGHT, gamma), 0);
    cr_assert_eq(ops->write(b, bn, BUF_BIAS, beta), 0);
    cr_assert_eq(ops->forward(b, bn), 0, "%s", ops->error(b));
    cr_assert_eq(ops->forward(b, a), 0, "%s", ops->error(b));
    cr_assert_eq(ops->read(b, a, BUF_OUTPUT, r->y), 0);
    cr_assert_eq(ops->write(b, a, BUF_OUTPUT_GRAD, dy), 0);
    bool fresh[LAYER_MAX_INPUTS] = {false, false};
    cr_assert_eq(ops->backward_data(b, a, fresh), 0, "%s", ops->error(b));
    cr_assert_eq(ops->backward_weights(b, bn), 0, "%s", ops->error(b));
    cr_assert_eq(ops->backward_data(b, bn, fresh), 0, "%s", ops->error(b));
    cr_assert_eq(ops->read(b, bn, BUF_WEIGHT_GRAD, r->dgamma), 0);
    cr_assert_eq(ops->read(b, bn, BUF_BIAS_GRAD, r->dbeta), 0);
    cr_assert_eq(ops->read(b, conv, BUF_OUTPUT_GRAD, r->dx), 0);
    r->fused = b->layers[bn].act_layer == a;
    ops->destroy(b);
    net_free(&net);
}

/* The batch norm applying the activation after it gives what the two layers
 * give alone, bit for bit, on the NCHW loops (3 channels) and on the blocked
 * ones (32 channels between convolutions), for ReLU and ReLU6 (the inputs
 * cross 0 and 6). */
Test(layers, a_batch_norm_fused_with_its_activation_matches_the_two_alone, .timeout = 60)
{
    const layer_type acts[] = {LAYER_RELU, LAYER_RELU6};
    for (int k = 0; k < 2; k++)
        for (int blocked = 0; blocked < 2; blocked++) {
            int channels = blocked ? 32 : 3;
            static bn_act_run fused, alone;
            run_bn_act(channels, acts[k], blocked, false, &fused);
            run_bn_act(channels, acts[k], blocked, true, &alone);
            const char *what = acts[k] == LAYER_RELU ? "relu" : "relu6";
            cr_expect(fused.fused && !alone.fused, "%s: fused %d, alone %d", what, fused.fused,
                      alone.fused);
            int64_t e = 2 * (int64_t)channels * 81;
            int clipped = 0;
            for (int64_t j = 0; j < e; j++)
                clipped += fused.y[j] == 0.0f || fused.y[j] == 6.0f;
            cr_expect_gt(clipped, 0, "%s: nothing clipped", what);
            cr_expect(memcmp(fused.y, alone.y, (size_t)e * sizeof(float)) == 0,
                      "%s, %d channels: output", what, channels);
            cr_expect(memcmp(fused.dx, alone.dx, (size_t)e * sizeof(float)) == 0,
                      "%s, %d channels: input gradient", what, channels);
            cr_expect(memcmp(fused.dgamma, alone.dgamma, (size_t)channels * sizeof(float)) == 0 &&
                          memcmp(fused.dbeta, alone.dbeta, (size_t)channels * sizeof(float)) == 0,
                      "%s, %d channels: parameter gradients", what, channels);
        }
}

/* What add(conv1, conv2 or the input) -> `act` (-> a 1x1 conv where
 * `tail`) computes through the backend from fixed inputs: the activation's
 * output and, from a fixed gradient of it, the convolutions' output
 * gradients, conv1's added to one already there. */
typedef struct {
    float y[2 * 32 * 81], d1[2 * 32 * 81], d2[2 * 32 * 81];
    bool fused;
} add_act_run;

static void run_add_act(int channels, layer_type act, bool tail, bool from_input, bool no_fusion,
                        add_act_run *r)
{
    enum { N = 2, H = 9 };
    network net;
    net_init(&net, "test", H, 1, (tensor_shape){channels, H, H});
    int conv1 = net_conv(&net, "conv1", GRAPH_INPUT, channels, 1, 1, 0, 1, false);
    int conv2 = from_input ? GRAPH_INPUT : net_conv(&net, "conv2", GRAPH_INPUT, channels, 1, 1, 0,
                                                    1, false);
    int add = net_add(&net, "add", conv1, conv2);
    int a = act_and_tail(&net, act, add, tail);
    const backend_ops *ops = &cpu_backend_ops;
    backend *b = fusion_backend(&net, N, no_fusion);
    int64_t e = (int64_t)N * channels * H * H;
    static float z1[2 * 32 * 81], z2[2 * 32 * 81], dy[2 * 32 * 81], before[2 * 32 * 81];
    for (int64_t j = 0; j < e; j++) {
        z1[j] = (float)(4.0 * sin(0.37 * j));
        z2[j] = (float)(3.0 * cos(0.23 * j));
        dy[j] = (float)cos(0.11 * j);
        before[j] = (float)sin(0.05 * j);
    }
    cr_assert_eq(ops->write(b, conv1, BUF_OUTPUT, z1), 0);
    if (!from_input)
        cr_assert_eq(ops->write(b, conv2, BUF_OUTPUT, z2), 0);
    else
        cr_assert_eq(ops->set_batch(b, z2, (const int32_t[N]){0, 0}), 0, "%s", ops->error(b));
    cr_assert_eq(ops->forward(b, add), 0, "%s", ops->error(b));
    cr_assert_eq(ops->forward(b, a), 0, "%s", ops->error(b));
    cr_assert_eq(ops->read(b, a, BUF_OUTPUT, r->y), 0);
    cr_assert_eq(ops->write(b, a, BUF_OUTPUT_GRAD, dy), 0);
    cr_assert_eq(ops->write(b, conv1, BUF_OUTPUT_GRAD, before), 0);
    bool fresh[LAYER_MAX_INPUTS] = {false, false}, first_adds[LAYER_MAX_INPUTS] = {true, false};
    cr_assert_eq(ops->backward_data(b, a, fresh), 0, "%s", ops->error(b));
    cr_assert_eq(ops->backward_data(b, add, first_adds), 0, "%s", ops->error(b));
    cr_assert_eq(ops->read(b, conv1, BUF_OUTPUT_GRAD, r->d1), 0);
    if (!from_input)
        cr_assert_eq(ops->read(b, conv2, BUF_OUTPUT_GRAD, r->d2), 0);
    r->fused = b->layers[add].act_layer == a;
    ops->destroy(b);
    net_free(&net);
}

/* The residual add applying the activation after it gives what the two
 * layers give alone, bit for bit: NCHW (3 channels) and blocked (32 between
 * convolutions), ReLU and ReLU6, two convolutions' outputs or one and the
 * network's input (whose gradient nobody takes). */
Test(layers, an_add_fused_with_its_activation_matches_the_two_alone, .timeout = 60)
{
    const layer_type acts[] = {LAYER_RELU, LAYER_RELU6};
    for (int k = 0; k < 2; k++)
        for (int blocked = 0; blocked < 2; blocked++)
            for (int from_input = 0; from_input < 2; from_input++) {
                int channels = blocked ? 32 : 3;
                static add_act_run fused, alone;
                memset(&fused, 0, sizeof fused);
                memset(&alone, 0, sizeof alone);
                run_add_act(channels, acts[k], blocked, from_input, false, &fused);
                run_add_act(channels, acts[k], blocked, from_input, true, &alone);
                const char *what = acts[k] == LAYER_RELU ? "relu" : "relu6";
                cr_expect(fused.fused && !alone.fused, "%s: fused %d, alone %d", what,
                          fused.fused, alone.fused);
                int64_t e = 2 * (int64_t)channels * 81;
                int clipped = 0, masked = 0;
                for (int64_t j = 0; j < e; j++) {
                    clipped += fused.y[j] == 0.0f || fused.y[j] == 6.0f;
                    masked += fused.d2[j] == 0.0f;
                }
                cr_expect_gt(clipped, 0, "%s: nothing clipped", what);
                cr_expect(from_input || masked > 0, "%s: no gradient masked", what);
                size_t bytes = (size_t)e * sizeof(float);
                cr_expect(memcmp(fused.y, alone.y, bytes) == 0, "%s, %d channels: output", what,
                          channels);
                cr_expect(memcmp(fused.d1, alone.d1, bytes) == 0 &&
                              memcmp(fused.d2, alone.d2, bytes) == 0,
                          "%s, %d channels, input %d: input gradients", what, channels,
                          from_input);
            }
}

/* ---- the blocking plan (models/cpu/cpu_blocking.c) on the zoo --------------- */

static bool keeps_layout(layer_type t)
{
    return t == LAYER_BN || t == LAYER_RELU || t == LAYER_RELU6 || t == LAYER_ADD ||
           t == LAYER_MAXPOOL || t == LAYER_AVGPOOL;
}

/* Every blocked tensor can be written so by its producer and read so by each
 * of its consumers; returns how many violate that. */
static int plan_violations(const network *net, const int *src, const int *dst,
                           const int *block)
{
    int bad = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const layer *l = &net->layers[i];
        int B = block[i];
        if (!B)
            continue;
        bool ok = i != net->n_layers - 1 && l->out_shape.c % B == 0;
        if (l->type == LAYER_CONV)
            ok = ok && dst[i] == B;
        else if (keeps_layout(l->type))
            for (int k = 0; k < l->n_inputs; k++)
                ok = ok && l->inputs[k] != GRAPH_INPUT && block[l->inputs[k]] == B;
        else
            ok = false;
        for (int c = i + 1; c < net->n_layers; c++) {
            const layer *u = &net->layers[c];
            for (int k = 0; k < u->n_inputs; k++) {
                if (u->inputs[k] != i)
                    continue;
                if (u->type == LAYER_CONV)
                    ok = ok && src[c] == B;
                else if (u->type == LAYER_FC || u->type == LAYER_DROPOUT)
                    ok = ok && l->out_shape.h == 1 && l->out_shape.w == 1;
                else if (u->type != LAYER_BN)
                    ok = ok && keeps_layout(u->type) && block[c] == B;
            }
        }
        if (!ok) {
            cr_log_error("%s: layer %s cannot be blocked by %d", net->model, l->name, B);
            bad++;
        }
    }
    return bad;
}

typedef struct {
    network net;
    int *src, *dst, *block;
    int blocked;
} zoo_plan;

/* the plan of `model` at 224 where every convolution chose `in_block` for its
 * input and `out_block` for its output (0 where the channels do not divide) */
static zoo_plan plan_zoo(const char *model, int in_block, int out_block)
{
    zoo_plan z;
    cr_assert_eq(zoo_build(&z.net, model, 224, 1000), NET_OK, "%s", z.net.err);
    int n = z.net.n_layers;
    z.src = calloc(3 * (size_t)n, sizeof(int));
    cr_assert_not_null(z.src);
    z.dst = z.src + n;
    z.block = z.src + 2 * n;
    for (int i = 0; i < n; i++) {
        const layer *l = &z.net.layers[i];
        if (l->type != LAYER_CONV)
            continue;
        z.src[i] = l->in_shape.c % in_block ? 0 : in_block;
        z.dst[i] = l->out_shape.c % out_block ? 0 : out_block;
    }
    z.blocked = cpu_decide_blocks(&z.net, z.src, z.dst, z.block);
    cr_expect_eq(plan_violations(&z.net, z.src, z.dst, z.block), 0, "%s", model);
    return z;
}

static void free_plan(zoo_plan *z)
{
    free(z->src);
    net_free(&z->net);
}

/* With every convolution on nChw16c, ResNet and MobileNetV2 stay blocked from
 * the stem to the global pool; VGG-16 up to its last convolution, whose
 * output the classifier flattens. */
Test(layers, the_zoo_stays_blocked_between_its_convolutions)
{
    const char *models[] = {"resnet18", "resnet50", "mobilenet_v2", "vgg16"};
    for (size_t k = 0; k < 4; k++) {
        zoo_plan z = plan_zoo(models[k], 16, 16);
        /* NCHW: the classifier, and the tensors whose channels make no whole
         * block (MobileNetV2's 24: two convolutions, their batch norms, an add) */
        int plain = 0;
        for (int i = 0; i < z.net.n_layers; i++) {
            const layer *l = &z.net.layers[i];
            plain += l->type == LAYER_FC || l->type == LAYER_DROPOUT ||
                     l->out_shape.c % 16 != 0 || (l->out_shape.h == 1 && l->type == LAYER_RELU);
        }
        int want = z.net.n_layers - plain;
        if (k == 3)
            want -= 3; /* VGG-16's last convolution, its ReLU and its pool */
        cr_expect_eq(z.blocked, want, "%s: %d of %d layers blocked, want %d", models[k],
                     z.blocked, z.net.n_layers, want);
        free_plan(&z);
    }
}

/* Where the convolutions read another block than they write, none reads a
 * blocked input, and each one's output that a batch norm alone reads (the
 * batch norm takes any block) stays blocked. */
Test(layers, mismatched_blocks_leave_every_conv_input_plain)
{
    const char *models[] = {"resnet18", "resnet50", "mobilenet_v2", "vgg16"};
    for (size_t k = 0; k < 4; k++) {
        zoo_plan z = plan_zoo(models[k], 16, 8);
        for (int i = 0; i < z.net.n_layers; i++) {
            const layer *l = &z.net.layers[i];
            if (l->type != LAYER_CONV)
                continue;
            int consumer;
            bool to_bn = net_consumers(&z.net, i, &consumer, 1) == 1 &&
                         z.net.layers[consumer].type == LAYER_BN;
            cr_expect(l->inputs[0] == GRAPH_INPUT || z.block[l->inputs[0]] == 0,
                      "%s: layer %s reads a blocked input", models[k], l->name);
            if (to_bn)
                cr_expect_eq(z.block[i], 8, "%s: layer %s", models[k], l->name);
        }
        free_plan(&z);
    }
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
    cr_expect_eq(n, 36, "add a LAYER_TEST for each new case");
}
#endif /* HAVE_DNNL */
