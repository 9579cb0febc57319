/* Every layer type of the CPU backend, forward against a direct loop in double
 * (tests/reference.c) and backward against central differences of that loop,
 * on small shapes with the groups, strides and padding the four networks use. */
#ifdef HAVE_DNNL
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../models/cpu/cpu_backend.h"
#include "../models/init.h"
#include "../models/rng.h"
#include "reference.h"

enum { BATCH = 2 };

typedef struct {
    float lo, hi;  /* range of the layer's input values */
} input_range;

static double *read_doubles(backend *b, const network *net, int layer, buffer_kind kind,
                            int64_t *count)
{
    int64_t n = backend_buffer_elems(net, layer, BATCH, kind);
    *count = n;
    if (n == 0)
        return NULL;
    float *f = malloc((size_t)n * sizeof *f);
    double *d = malloc((size_t)n * sizeof *d);
    cr_assert(f && d);
    cr_assert_eq(cpu_backend_ops.read(b, layer, kind, f), 0, "%s", cpu_backend_ops.error(b));
    for (int64_t j = 0; j < n; j++)
        d[j] = f[j];
    free(f);
    return d;
}

static void write_random(backend *b, const network *net, int layer, buffer_kind kind,
                         uint64_t stream, float lo, float hi)
{
    int64_t n = backend_buffer_elems(net, layer, BATCH, kind);
    float *f = malloc((size_t)n * sizeof *f);
    cr_assert(f);
    for (int64_t j = 0; j < n; j++)
        f[j] = lo + (hi - lo) * (float)rng_uniform(99, stream, (uint64_t)j);
    cr_assert_eq(cpu_backend_ops.write(b, layer, kind, f), 0, "%s", cpu_backend_ops.error(b));
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
 * v, or over an evenly spread sample of FD_MAX_CHECKS where v is large (the
 * wide layers that make oneDNN choose its blocked kernels). */
enum { FD_MAX_CHECKS = 300 };

static void expect_gradient(fd_problem *p, double *v, const double *grad, int64_t n,
                            const char *what)
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
    cr_expect(worst < 2e-3, "%s %s: worst gradient error %.3g of %.3g", p->l->name, what, worst,
              scale);
}

/* Checks layer `tested` of net; its inputs are layers with parameters, so
 * their gradient buffers receive its input gradient. */
static void check_layer(network *net, int tested, input_range range)
{
    cr_assert_eq(net->status, NET_OK, "%s", net->err);
    const backend_ops *ops = &cpu_backend_ops;
    char err[512];
    backend_config cfg = {.batch = BATCH, .threads = 1, .seed = 5};
    backend *b = ops->create(net, &cfg, err, sizeof err);
    cr_assert_not_null(b, "%s", err);
    cr_assert_eq(init_parameters(ops, b, net, 3, err, sizeof err), 0, "%s", err);
    const layer *l = &net->layers[tested];
    if (l->params) {
        write_random(b, net, tested, BUF_WEIGHT, 1, -1.0f, 1.0f);
        if (backend_buffer_elems(net, tested, BATCH, BUF_BIAS))
            write_random(b, net, tested, BUF_BIAS, 2, -1.0f, 1.0f);
    }
    for (int k = 0; k < l->n_inputs; k++)
        write_random(b, net, l->inputs[k], BUF_OUTPUT, 10 + k, range.lo, range.hi);
    fd_problem p = {.l = l};
    int64_t n_x[2] = {0, 0}, n_w, n_b, n_y, n_r;
    /* before the forward: an activation may run in place over its input */
    for (int k = 0; k < l->n_inputs; k++)
        p.x[k] = read_doubles(b, net, l->inputs[k], BUF_OUTPUT, &n_x[k]);
    cr_assert_eq(ops->forward(b, tested), 0, "%s", ops->error(b));
    p.w = read_doubles(b, net, tested, BUF_WEIGHT, &n_w);
    p.bias = read_doubles(b, net, tested, BUF_BIAS, &n_b);
    double *y = read_doubles(b, net, tested, BUF_OUTPUT, &n_y);
    p.y = malloc((size_t)n_y * sizeof *p.y);
    cr_assert_not_null(p.y);
    if (l->type == LAYER_DROPOUT) {
        /* the reference takes the backend's mask: inputs are never zero */
        p.keep = malloc((size_t)n_y);
        cr_assert_not_null(p.keep);
        for (int64_t j = 0; j < n_y; j++)
            p.keep[j] = y[j] != 0.0;
    }

    ref_forward(l, BATCH, p.x[0], p.x[1], p.w, p.bias, p.keep, p.y);
    double worst = 0.0;
    for (int64_t j = 0; j < n_y; j++)
        worst = fmax(worst, fabs(y[j] - p.y[j]) / (1.0 + fabs(p.y[j])));
    cr_expect(worst < 1e-4, "%s forward: worst error %.3g", l->name, worst);

    write_random(b, net, tested, BUF_OUTPUT_GRAD, 20, -1.0f, 1.0f);
    p.r = read_doubles(b, net, tested, BUF_OUTPUT_GRAD, &n_r);
    if (l->params)
        cr_assert_eq(ops->backward_weights(b, tested), 0, "%s", ops->error(b));
    bool fresh[LAYER_MAX_INPUTS] = {false, false};
    cr_assert_eq(ops->backward_data(b, tested, fresh), 0, "%s", ops->error(b));

    if (n_w) {
        double *dw = read_doubles(b, net, tested, BUF_WEIGHT_GRAD, &n_w);
        expect_gradient(&p, p.w, dw, n_w, "weight gradient");
        free(dw);
    }
    if (n_b) {
        double *db = read_doubles(b, net, tested, BUF_BIAS_GRAD, &n_b);
        expect_gradient(&p, p.bias, db, n_b, "bias gradient");
        free(db);
    }
    double *dx[2] = {NULL, NULL};
    for (int k = 0; k < l->n_inputs; k++) {
        dx[k] = read_doubles(b, net, l->inputs[k], BUF_OUTPUT_GRAD, &n_x[k]);
        expect_gradient(&p, p.x[k], dx[k], n_x[k], k ? "second input gradient" : "input gradient");
        write_random(b, net, l->inputs[k], BUF_OUTPUT_GRAD, 30 + k, 1.0f, 1.0f);
    }

    /* a tensor with several consumers: the gradient adds to what is there */
    bool accumulate[LAYER_MAX_INPUTS] = {true, true};
    cr_assert_eq(ops->backward_data(b, tested, accumulate), 0, "%s", ops->error(b));
    for (int k = 0; k < l->n_inputs; k++) {
        double *sum = read_doubles(b, net, l->inputs[k], BUF_OUTPUT_GRAD, &n_x[k]);
        double off = 0.0;
        for (int64_t j = 0; j < n_x[k]; j++)
            off = fmax(off, fabs(sum[j] - (1.0 + dx[k][j])));
        cr_expect(off < 1e-5, "%s: accumulated gradient off by %.3g", l->name, off);
        free(sum);
        free(dx[k]);
        free(p.x[k]);
    }
    free(p.w);
    free(p.bias);
    free(p.r);
    free(p.y);
    free(p.keep);
    free(y);
    ops->destroy(b);
    net_free(net);
}

/* input -> 1x1 conv (so that the tested layer's input has a gradient) -> tested */
static network stem(tensor_shape in)
{
    network net;
    net_init(&net, "test", in.h, 1, in);
    net_conv(&net, "stem", GRAPH_INPUT, in.c, 1, 1, 0, 1, false);
    return net;
}

static const input_range any_sign = {-2.0f, 2.0f};

Test(layers, conv3x3_bias_vgg)
{
    network net = stem((tensor_shape){3, 6, 6});
    check_layer(&net, net_conv(&net, "conv", 0, 4, 3, 1, 1, 1, true), any_sign);
}

Test(layers, conv3x3_stride2_resnet)
{
    network net = stem((tensor_shape){4, 7, 7});
    check_layer(&net, net_conv(&net, "conv", 0, 6, 3, 2, 1, 1, false), any_sign);
}

Test(layers, conv7x7_stride2_pad3_stem)
{
    network net = stem((tensor_shape){3, 9, 9});
    check_layer(&net, net_conv(&net, "conv", 0, 4, 7, 2, 3, 1, false), any_sign);
}

Test(layers, conv1x1_stride2_downsample)
{
    network net = stem((tensor_shape){4, 6, 6});
    check_layer(&net, net_conv(&net, "conv", 0, 8, 1, 2, 0, 1, false), any_sign);
}

Test(layers, depthwise3x3_stride1)
{
    network net = stem((tensor_shape){6, 5, 5});
    check_layer(&net, net_conv(&net, "dw", 0, 6, 3, 1, 1, 6, false), any_sign);
}

Test(layers, depthwise3x3_stride2)
{
    network net = stem((tensor_shape){6, 7, 7});
    check_layer(&net, net_conv(&net, "dw", 0, 6, 3, 2, 1, 6, false), any_sign);
}

/* Wide enough that oneDNN picks its blocked JIT kernels (nChw16c), so the
 * reorders in and out, and the summing reorder of a shared gradient, are tested. */
Test(layers, conv3x3_wide_blocked, .timeout = 120)
{
    network net = stem((tensor_shape){32, 6, 6});
    check_layer(&net, net_conv(&net, "conv", 0, 32, 3, 1, 1, 1, false), any_sign);
}

Test(layers, conv1x1_stride2_wide_blocked, .timeout = 120)
{
    network net = stem((tensor_shape){32, 6, 6});
    check_layer(&net, net_conv(&net, "conv", 0, 64, 1, 2, 0, 1, false), any_sign);
}

Test(layers, depthwise3x3_stride2_wide_blocked, .timeout = 120)
{
    network net = stem((tensor_shape){32, 7, 7});
    check_layer(&net, net_conv(&net, "dw", 0, 32, 3, 2, 1, 32, false), any_sign);
}

Test(layers, conv7x7_stem_wide_output, .timeout = 120)
{
    network net = stem((tensor_shape){3, 12, 12});
    check_layer(&net, net_conv(&net, "conv", 0, 32, 7, 2, 3, 1, false), any_sign);
}

Test(layers, grouped_conv)
{
    network net = stem((tensor_shape){4, 5, 5});
    check_layer(&net, net_conv(&net, "grouped", 0, 6, 3, 1, 1, 2, false), any_sign);
}

Test(layers, fully_connected_flattens)
{
    network net = stem((tensor_shape){4, 2, 2});
    check_layer(&net, net_fc(&net, "fc", 0, 5), any_sign);
}

Test(layers, batch_norm_training)
{
    network net = stem((tensor_shape){3, 4, 4});
    check_layer(&net, net_bn(&net, "bn", 0), any_sign);
}

Test(layers, relu)
{
    network net = stem((tensor_shape){3, 4, 4});
    check_layer(&net, net_relu(&net, "relu", 0), any_sign);
}

Test(layers, relu6_clips_both_ends)
{
    network net = stem((tensor_shape){3, 4, 4});
    check_layer(&net, net_relu6(&net, "relu6", 0), (input_range){-3.0f, 9.0f});
}

Test(layers, maxpool3x3_stride2_pad1)
{
    network net = stem((tensor_shape){4, 7, 7});
    check_layer(&net, net_maxpool(&net, "maxpool", 0, 3, 2, 1), any_sign);
}

Test(layers, maxpool2x2_stride2)
{
    network net = stem((tensor_shape){4, 6, 6});
    check_layer(&net, net_maxpool(&net, "maxpool", 0, 2, 2, 0), any_sign);
}

Test(layers, global_avgpool)
{
    network net = stem((tensor_shape){4, 5, 5});
    check_layer(&net, net_avgpool(&net, "gap", 0, 1), any_sign);
}

Test(layers, adaptive_avgpool_down_and_up)
{
    network net = stem((tensor_shape){3, 8, 8});
    check_layer(&net, net_avgpool(&net, "pool7", 0, 7), any_sign);
    net = stem((tensor_shape){3, 2, 2});
    check_layer(&net, net_avgpool(&net, "pool7up", 0, 7), any_sign);
}

Test(layers, residual_add)
{
    network net;
    net_init(&net, "test", 5, 1, (tensor_shape){4, 5, 5});
    int a = net_conv(&net, "a", GRAPH_INPUT, 4, 1, 1, 0, 1, false);
    int b = net_conv(&net, "b", GRAPH_INPUT, 4, 1, 1, 0, 1, false);
    check_layer(&net, net_add(&net, "add", a, b), any_sign);
}

Test(layers, dropout)
{
    network net = stem((tensor_shape){4, 3, 3});
    check_layer(&net, net_dropout(&net, "dropout", 0, 0.5f), (input_range){0.5f, 2.0f});
}
#endif /* HAVE_DNNL */
