#include "layer_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../models/init.h"
#include "../models/rng.h"
#include "reference.h"

enum { BATCH = LAYER_CHECK_BATCH };

/* A test harness that cannot allocate has nothing sensible to report. */
static void *checked(void *p)
{
    if (!p) {
        fprintf(stderr, "layer_check: out of host memory\n");
        abort();
    }
    return p;
}

static void expectf(const layer_check_env *env, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void expectf(const layer_check_env *env, bool ok, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    env->expect(env->ctx, ok, msg);
}

typedef struct {
    const layer_check_env *env;
    backend *b;
    const network *net;
    const char *failed;   /* the operation that failed, or NULL */
} session;

static bool op_ok(session *s, int rc, const char *what)
{
    if (rc != 0 && !s->failed) {
        s->failed = what;
        expectf(s->env, false, "%s", s->env->ops->error(s->b));
    }
    return rc == 0;
}

static double *read_doubles(session *s, int layer, buffer_kind kind, int64_t *count)
{
    int64_t n = backend_buffer_elems(s->net, layer, BATCH, kind);
    *count = n;
    if (n == 0)
        return NULL;
    float *f = checked(malloc((size_t)n * sizeof *f));
    double *d = checked(calloc((size_t)n, sizeof *d));
    if (op_ok(s, s->env->ops->read(s->b, layer, kind, f), "read"))
        for (int64_t j = 0; j < n; j++)
            d[j] = f[j];
    free(f);
    return d;
}

static void write_values(session *s, int layer, buffer_kind kind, const float *f)
{
    op_ok(s, s->env->ops->write(s->b, layer, kind, f), "write");
}

/* Inputs of ReLU and ReLU6 kept 1/32 away from where the activation bends
 * (0, and 6): central differences are meaningless there, and bf16 rounds
 * anything within 1/64 of 6 to 6 itself (its step is 1/32 in [4, 8)). */
static float off_the_bends(layer_type tested, float v)
{
    const float band = 1.0f / 32.0f, bends[2] = {0.0f, 6.0f};
    int n = tested == LAYER_RELU6 ? 2 : tested == LAYER_RELU ? 1 : 0;
    for (int k = 0; k < n; k++)
        if (fabsf(v - bends[k]) < band)
            v = bends[k] + (v < bends[k] ? -band : band);
    return v;
}

static void write_random_for(session *s, int layer, buffer_kind kind, uint64_t stream, float lo,
                             float hi, layer_type reader)
{
    int64_t n = backend_buffer_elems(s->net, layer, BATCH, kind);
    float *f = checked(malloc((size_t)n * sizeof *f));
    for (int64_t j = 0; j < n; j++)
        f[j] = off_the_bends(reader, lo + (hi - lo) * (float)rng_uniform(99, stream, (uint64_t)j));
    write_values(s, layer, kind, f);
    free(f);
}

static void write_random(session *s, int layer, buffer_kind kind, uint64_t stream, float lo,
                         float hi)
{
    write_random_for(s, layer, kind, stream, lo, hi, LAYER_TYPE_COUNT);
}

/* k/4 for k in -8..7, distinct within any 3x3 or 2x2 window: h*7 + w*3
 * differs modulo 16 over a window. */
static void write_distinct_windows(session *s, int layer)
{
    tensor_shape sh = s->net->layers[layer].out_shape;
    int64_t n = backend_buffer_elems(s->net, layer, BATCH, BUF_OUTPUT);
    float *f = checked(malloc((size_t)n * sizeof *f));
    for (int b = 0; b < BATCH; b++)
        for (int c = 0; c < sh.c; c++)
            for (int h = 0; h < sh.h; h++)
                for (int w = 0; w < sh.w; w++)
                    f[((b * sh.c + c) * sh.h + h) * sh.w + w] =
                        (float)((h * 7 + w * 3 + c * 5 + b * 11) % 16 - 8) / 4.0f;
    write_values(s, layer, BUF_OUTPUT, f);
    free(f);
}

typedef struct {
    const layer *l;
    double *x[2], *w, *bias, *r, *y;
    uint8_t *keep;
} fd_problem;

/* The loss the gradients are checked on: sum of r * layer(x). */
static double fd_loss(const fd_problem *p)
{
    ref_forward(p->l, BATCH, p->x[0], p->x[1], p->w, p->bias, p->keep, p->y);
    double s = 0.0;
    int64_t n = BATCH * shape_elems(p->l->out_shape);
    for (int64_t j = 0; j < n; j++)
        s += p->r[j] * p->y[j];
    return s;
}

/* Central differences against the backend's gradient: over every element of
 * v, or over an evenly spread sample of FD_MAX_CHECKS where v is large. */
enum { FD_MAX_CHECKS = 300 };

static void expect_gradient(const layer_check_env *env, fd_problem *p, double *v,
                            const double *grad, int64_t n, const char *what)
{
    const double h = 1e-5;
    double worst = 0.0, scale = 1.0;
    for (int64_t j = 0; j < n; j++)
        scale = fmax(scale, fabs(grad[j]));
    /* an odd stride walks through every channel and position of a layout */
    int64_t stride = n > FD_MAX_CHECKS ? (n / FD_MAX_CHECKS) | 1 : 1;
    for (int64_t j = 0; j < n; j += stride) {
        double keep = v[j];
        v[j] = keep + h;
        double up = fd_loss(p);
        v[j] = keep - h;
        double down = fd_loss(p);
        v[j] = keep;
        double fd = (up - down) / (2 * h);
        worst = fmax(worst, fabs(fd - grad[j]) / scale);
    }
    expectf(env, worst <= env->tol.gradient, "%s %s: worst error %.3g of %.3g (tolerance %.3g)",
            p->l->name, what, worst, scale, env->tol.gradient);
}

static void free_problem(fd_problem *p)
{
    for (int k = 0; k < 2; k++)
        free(p->x[k]);
    free(p->w);
    free(p->bias);
    free(p->r);
    free(p->y);
    free(p->keep);
}

/* v to `bits` significant bits, to nearest (ties away from zero: the copies
 * round to nearest even, which differs only on exact ties). */
static void round_to_bits(double *v, int64_t n, int bits)
{
    for (int64_t j = 0; bits > 0 && j < n; j++) {
        int e;
        double m = frexp(v[j], &e);
        v[j] = ldexp(round(ldexp(m, bits)), e - bits);
    }
}

/* The forward against the reference; fills p. */
static void check_forward(session *s, const layer_case *c, int tested, fd_problem *p)
{
    const layer_check_env *env = s->env;
    const layer *l = &s->net->layers[tested];
    int64_t n_x, n_w, n_b, n_y;
    /* before the forward: an activation may run in place over its input */
    for (int k = 0; k < l->n_inputs; k++)
        p->x[k] = read_doubles(s, l->inputs[k], BUF_OUTPUT, &n_x);
    if (!op_ok(s, env->ops->forward(s->b, tested), "forward") ||
        !op_ok(s, env->ops->sync(s->b), "sync"))
        return;
    p->w = read_doubles(s, tested, BUF_WEIGHT, &n_w);
    p->bias = read_doubles(s, tested, BUF_BIAS, &n_b);
    if (l->type == LAYER_CONV || l->type == LAYER_FC) {
        round_to_bits(p->w, n_w, env->weight_bits);
        round_to_bits(p->bias, n_b, env->weight_bits);
    }
    double *y = read_doubles(s, tested, BUF_OUTPUT, &n_y);
    p->y = checked(malloc((size_t)n_y * sizeof *p->y));
    if (l->type == LAYER_DROPOUT) {
        /* the reference takes the backend's mask: inputs are never zero */
        p->keep = checked(malloc((size_t)n_y));
        for (int64_t j = 0; j < n_y; j++)
            p->keep[j] = y[j] != 0.0;
    }
    ref_forward(l, BATCH, p->x[0], p->x[1], p->w, p->bias, p->keep, p->y);
    double worst = 0.0;
    for (int64_t j = 0; j < n_y; j++)
        worst = fmax(worst, fabs(y[j] - p->y[j]) / (1.0 + fabs(p->y[j])));
    expectf(env, worst <= env->tol.forward, "%s forward: worst error %.3g (tolerance %.3g)",
            c->name, worst, env->tol.forward);
    free(y);
}

/* Every gradient against central differences, then the accumulate path: a
 * tensor with several consumers gets the gradient added to what is there. */
static void check_backward(session *s, int tested, fd_problem *p)
{
    const layer_check_env *env = s->env;
    const layer *l = &s->net->layers[tested];
    int64_t n_w = 0, n_b = 0, n_r, n_x[2] = {0, 0};
    /* at most 0.5: a half-precision gradient has room for the sums of backward */
    write_random(s, tested, BUF_OUTPUT_GRAD, 20, -0.5f, 0.5f);
    p->r = read_doubles(s, tested, BUF_OUTPUT_GRAD, &n_r);
    if (l->params && !op_ok(s, env->ops->backward_weights(s->b, tested), "backward_weights"))
        return;
    bool fresh[LAYER_MAX_INPUTS] = {false, false};
    if (!op_ok(s, env->ops->backward_data(s->b, tested, fresh), "backward_data"))
        return;
    if (l->params) {
        double *dw = read_doubles(s, tested, BUF_WEIGHT_GRAD, &n_w);
        if (n_w)
            expect_gradient(env, p, p->w, dw, n_w, "weight gradient");
        free(dw);
        double *db = read_doubles(s, tested, BUF_BIAS_GRAD, &n_b);
        if (n_b)
            expect_gradient(env, p, p->bias, db, n_b, "bias gradient");
        free(db);
    }
    double *dx[2] = {NULL, NULL};
    const double base = 0.25;
    for (int k = 0; k < l->n_inputs; k++) {
        dx[k] = read_doubles(s, l->inputs[k], BUF_OUTPUT_GRAD, &n_x[k]);
        expect_gradient(env, p, p->x[k], dx[k], n_x[k],
                        k ? "second input gradient" : "input gradient");
    }
    /* the accumulate path needs the layer's own gradient unchanged: put it back */
    float *r = checked(malloc((size_t)n_r * sizeof *r));
    for (int64_t j = 0; j < n_r; j++)
        r[j] = (float)p->r[j];
    for (int k = 0; k < l->n_inputs; k++)
        write_random(s, l->inputs[k], BUF_OUTPUT_GRAD, 30 + k, (float)base, (float)base);
    write_values(s, tested, BUF_OUTPUT_GRAD, r);
    free(r);
    bool accumulate[LAYER_MAX_INPUTS] = {true, true};
    if (op_ok(s, env->ops->backward_data(s->b, tested, accumulate), "backward_data (accumulate)"))
        for (int k = 0; k < l->n_inputs; k++) {
            int64_t n;
            double *sum = read_doubles(s, l->inputs[k], BUF_OUTPUT_GRAD, &n);
            double off = 0.0;
            for (int64_t j = 0; j < n; j++)
                off = fmax(off, fabs(sum[j] - (base + dx[k][j])) / (1.0 + fabs(base + dx[k][j])));
            expectf(env, off <= env->tol.accumulate,
                    "%s: accumulated gradient off by %.3g (tolerance %.3g)", l->name, off,
                    env->tol.accumulate);
            free(sum);
        }
    free(dx[0]);
    free(dx[1]);
}

int layer_check_case(const layer_check_env *env, const layer_case *c)
{
    network net;
    int tested = c->build(&net);
    if (net.status != NET_OK) {
        expectf(env, false, "%s: building the network: %s", c->name, net.err);
        net_free(&net);
        return -1;
    }
    char err[640];
    backend *b = env->ops->create(&net, &env->cfg, err, sizeof err);
    if (!b) {
        expectf(env, false, "%s: creating the backend: %s", c->name, err);
        net_free(&net);
        return -1;
    }
    session s = {env, b, &net, NULL};
    if (init_parameters(env->ops, b, &net, 3, err, sizeof err))
        expectf(env, false, "%s: %s", c->name, err);
    const layer *l = &net.layers[tested];
    if (l->params) {
        write_random(&s, tested, BUF_WEIGHT, 1, -1.0f, 1.0f);
        if (backend_buffer_elems(&net, tested, BATCH, BUF_BIAS))
            write_random(&s, tested, BUF_BIAS, 2, -1.0f, 1.0f);
    }
    for (int k = 0; k < l->n_inputs; k++) {
        if (c->distinct_windows)
            write_distinct_windows(&s, l->inputs[k]);
        else
            write_random_for(&s, l->inputs[k], BUF_OUTPUT, 10 + k, c->lo, c->hi, l->type);
    }
    fd_problem p = {.l = l};
    if (!s.failed)
        check_forward(&s, c, tested, &p);
    if (!s.failed)
        check_backward(&s, tested, &p);
    free_problem(&p);
    env->ops->destroy(b);
    net_free(&net);
    return s.failed ? -1 : 0;
}

/* ---- the cases ------------------------------------------------------------------ */

/* input -> 1x1 conv (so that the tested layer's input has a gradient) -> tested */
static void stem(network *net, tensor_shape in)
{
    net_init(net, "test", in.h, 1, in);
    net_conv(net, "stem", GRAPH_INPUT, in.c, 1, 1, 0, 1, false);
}

#define CONV_CASE(fn, c, h, out, k, s, p, g, bias)                                             \
    static int fn(network *net)                                                               \
    {                                                                                         \
        stem(net, (tensor_shape){c, h, h});                                                   \
        return net_conv(net, "conv", 0, out, k, s, p, g, bias);                               \
    }

CONV_CASE(conv3x3_bias_vgg, 3, 6, 4, 3, 1, 1, 1, true)
CONV_CASE(conv3x3_stride2_resnet, 4, 7, 6, 3, 2, 1, 1, false)
CONV_CASE(conv7x7_stride2_pad3_stem, 3, 9, 4, 7, 2, 3, 1, false)
CONV_CASE(conv1x1_stride2_downsample, 4, 6, 8, 1, 2, 0, 1, false)
CONV_CASE(conv1x1_pointwise, 8, 5, 16, 1, 1, 0, 1, false)
CONV_CASE(conv1x1_pointwise_wide, 64, 4, 128, 1, 1, 0, 1, false)
CONV_CASE(depthwise3x3_stride1, 6, 5, 6, 3, 1, 1, 6, false)
CONV_CASE(depthwise3x3_stride2, 6, 7, 6, 3, 2, 1, 6, false)
CONV_CASE(conv3x3_wide, 32, 6, 32, 3, 1, 1, 1, false)
CONV_CASE(conv1x1_stride2_wide, 32, 6, 64, 1, 2, 0, 1, false)
CONV_CASE(depthwise3x3_stride2_wide, 32, 7, 32, 3, 2, 1, 32, false)
CONV_CASE(conv7x7_stem_wide_output, 3, 12, 32, 7, 2, 3, 1, false)
CONV_CASE(grouped_conv, 4, 5, 6, 3, 1, 1, 2, false)
CONV_CASE(depthwise5x5_stride1, 6, 7, 6, 5, 1, 2, 6, false)
CONV_CASE(depthwise5x5_stride2, 6, 9, 6, 5, 2, 2, 6, false)
CONV_CASE(depthwise3x3_many_positions, 8, 24, 8, 3, 1, 1, 8, false)

static int fully_connected_flattens(network *net)
{
    stem(net, (tensor_shape){4, 2, 2});
    return net_fc(net, "fc", 0, 5);
}

static int fully_connected_bias_only(network *net)
{
    stem(net, (tensor_shape){16, 1, 1});
    return net_fc(net, "fc", 0, 8);
}

static int batch_norm_training(network *net)
{
    stem(net, (tensor_shape){3, 4, 4});
    return net_bn(net, "bn", 0);
}

/* wide enough that the CPU's convolution before hands its output over in
 * oneDNN's blocked layout (nChw8c or nChw16c, several blocks), and 9 x 9
 * positions: ten transposed tiles of 8 and a tail of one in its loops */
static int batch_norm_after_wide_conv(network *net)
{
    stem(net, (tensor_shape){32, 9, 9});
    return net_bn(net, "bn", 0);
}

static int relu(network *net)
{
    stem(net, (tensor_shape){3, 4, 4});
    return net_relu(net, "relu", 0);
}

static int relu6_clips_both_ends(network *net)
{
    stem(net, (tensor_shape){3, 4, 4});
    return net_relu6(net, "relu6", 0);
}

static int maxpool3x3_stride2_pad1(network *net)
{
    stem(net, (tensor_shape){4, 7, 7});
    return net_maxpool(net, "maxpool", 0, 3, 2, 1);
}

static int maxpool2x2_stride2(network *net)
{
    stem(net, (tensor_shape){4, 6, 6});
    return net_maxpool(net, "maxpool", 0, 2, 2, 0);
}

static int global_avgpool(network *net)
{
    stem(net, (tensor_shape){4, 5, 5});
    return net_avgpool(net, "gap", 0, 1);
}

static int adaptive_avgpool_down(network *net)
{
    stem(net, (tensor_shape){3, 8, 8});
    return net_avgpool(net, "pool7", 0, 7);
}

static int adaptive_avgpool_up(network *net)
{
    stem(net, (tensor_shape){3, 2, 2});
    return net_avgpool(net, "pool7up", 0, 7);
}

static int residual_add(network *net)
{
    net_init(net, "test", 5, 1, (tensor_shape){4, 5, 5});
    int a = net_conv(net, "a", GRAPH_INPUT, 4, 1, 1, 0, 1, false);
    int b = net_conv(net, "b", GRAPH_INPUT, 4, 1, 1, 0, 1, false);
    return net_add(net, "add", a, b);
}

static int dropout(network *net)
{
    stem(net, (tensor_shape){4, 3, 3});
    return net_dropout(net, "dropout", 0, 0.5f);
}

/* ---- the same layers between two convolutions, where the CPU backend keeps
 * their tensors in oneDNN's channel-blocked layout (models/cpu/cpu_blocking.c):
 * 32 channels (several blocks of 8 or 16) and 9 x 9 positions (ten tiles of 8
 * and a tail of one in the batch norm's loops); a 1x1 convolution after the
 * tested layer reads its output ------------------------------------------ */

static int tail(network *net, int tested)
{
    net_conv(net, "tail", tested, net->layers[tested].out_shape.c, 1, 1, 0, 1, false);
    return tested;
}

static int batch_norm_between_blocked_convs(network *net)
{
    stem(net, (tensor_shape){32, 9, 9});
    return tail(net, net_bn(net, "bn", 0));
}

static int relu_between_blocked_convs(network *net)
{
    stem(net, (tensor_shape){32, 9, 9});
    return tail(net, net_relu(net, "relu", 0));
}

static int relu6_between_blocked_convs(network *net)
{
    stem(net, (tensor_shape){32, 9, 9});
    return tail(net, net_relu6(net, "relu6", 0));
}

static int maxpool3x3_stride2_pad1_between_blocked_convs(network *net)
{
    stem(net, (tensor_shape){32, 9, 9});
    return tail(net, net_maxpool(net, "maxpool", 0, 3, 2, 1));
}

static int adaptive_avgpool_between_blocked_convs(network *net)
{
    stem(net, (tensor_shape){32, 9, 9});
    return tail(net, net_avgpool(net, "pool7", 0, 7));
}

/* the fully connected layer reads the 1 x 1 planes as they are */
static int global_avgpool_of_a_blocked_conv(network *net)
{
    stem(net, (tensor_shape){32, 9, 9});
    int gap = net_avgpool(net, "gap", 0, 1);
    net_fc(net, "fc", gap, 10);
    return gap;
}

static int residual_add_between_blocked_convs(network *net)
{
    net_init(net, "test", 9, 1, (tensor_shape){32, 9, 9});
    int a = net_conv(net, "a", GRAPH_INPUT, 32, 1, 1, 0, 1, false);
    int b = net_conv(net, "b", GRAPH_INPUT, 32, 1, 1, 0, 1, false);
    return tail(net, net_add(net, "add", a, b));
}

static const layer_case cases[] = {
    {"conv3x3_bias_vgg", -2, 2, false, conv3x3_bias_vgg},
    {"conv3x3_stride2_resnet", -2, 2, false, conv3x3_stride2_resnet},
    {"conv7x7_stride2_pad3_stem", -2, 2, false, conv7x7_stride2_pad3_stem},
    {"conv1x1_stride2_downsample", -2, 2, false, conv1x1_stride2_downsample},
    {"conv1x1_pointwise", -2, 2, false, conv1x1_pointwise},
    {"conv1x1_pointwise_wide", -2, 2, false, conv1x1_pointwise_wide},
    {"depthwise3x3_stride1", -2, 2, false, depthwise3x3_stride1},
    {"depthwise3x3_stride2", -2, 2, false, depthwise3x3_stride2},
    /* wide enough that oneDNN picks its blocked JIT kernels (nChw16c), so the
     * reorders in and out, and the summing reorder of a shared gradient, run */
    {"conv3x3_wide", -2, 2, false, conv3x3_wide},
    {"conv1x1_stride2_wide", -2, 2, false, conv1x1_stride2_wide},
    {"depthwise3x3_stride2_wide", -2, 2, false, depthwise3x3_stride2_wide},
    {"conv7x7_stem_wide_output", -2, 2, false, conv7x7_stem_wide_output},
    {"grouped_conv", -2, 2, false, grouped_conv},
    /* the CUDA backend's own depthwise kernels take 5x5 filters too, and sum
     * a filter gradient over slices of the positions: 2 x 24 x 24 positions
     * make several slices */
    {"depthwise5x5_stride1", -2, 2, false, depthwise5x5_stride1},
    {"depthwise5x5_stride2", -2, 2, false, depthwise5x5_stride2},
    {"depthwise3x3_many_positions", -2, 2, false, depthwise3x3_many_positions},
    {"fully_connected_flattens", -2, 2, false, fully_connected_flattens},
    {"fully_connected_bias_only", -2, 2, false, fully_connected_bias_only},
    {"batch_norm_training", -2, 2, false, batch_norm_training},
    {"batch_norm_after_wide_conv", -2, 2, false, batch_norm_after_wide_conv},
    {"relu", -2, 2, false, relu},
    {"relu6_clips_both_ends", -3, 9, false, relu6_clips_both_ends},
    {"maxpool3x3_stride2_pad1", -2, 2, true, maxpool3x3_stride2_pad1},
    {"maxpool2x2_stride2", -2, 2, true, maxpool2x2_stride2},
    {"global_avgpool", -2, 2, false, global_avgpool},
    {"adaptive_avgpool_down", -2, 2, false, adaptive_avgpool_down},
    {"adaptive_avgpool_up", -2, 2, false, adaptive_avgpool_up},
    {"residual_add", -2, 2, false, residual_add},
    {"dropout", 0.5f, 2, false, dropout},
    {"batch_norm_between_blocked_convs", -2, 2, false, batch_norm_between_blocked_convs},
    {"relu_between_blocked_convs", -2, 2, false, relu_between_blocked_convs},
    {"relu6_between_blocked_convs", -3, 9, false, relu6_between_blocked_convs},
    {"maxpool3x3_stride2_pad1_between_blocked_convs", -2, 2, true,
     maxpool3x3_stride2_pad1_between_blocked_convs},
    {"adaptive_avgpool_between_blocked_convs", -2, 2, false,
     adaptive_avgpool_between_blocked_convs},
    {"global_avgpool_of_a_blocked_conv", -2, 2, false, global_avgpool_of_a_blocked_conv},
    {"residual_add_between_blocked_convs", -2, 2, false, residual_add_between_blocked_convs},
};

const layer_case *layer_cases(int *count)
{
    *count = (int)(sizeof cases / sizeof *cases);
    return cases;
}

const layer_case *layer_case_find(const char *name)
{
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        if (strcmp(cases[k].name, name) == 0)
            return &cases[k];
    return NULL;
}
