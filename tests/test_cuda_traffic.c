/* What the CUDA backend's operations move by the design of their kernels
 * (models/cuda/cuda_traffic.h): worked out by hand for the fused operations
 * of ResNet-18, VGG-16 and MobileNetV2, equal to the cost model's minimal
 * bytes where an operation runs alone as the cost model books it, and less
 * over a whole step with the fusions than without. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../models/backend.h"
#include "../models/cuda/cuda_traffic.h"
#include "../models/step.h"
#include "helpers.h"

enum { BATCH = 2 };

typedef struct {
    network net;
    precision_plan pp;
    mem_plan mp;
    layer_fusion *fusion;
    bool *bias_in_call;
    cuda_traffic_plan t;
} traffic_case;

static void open_case(traffic_case *c, const char *model, precision prec, bool fusion)
{
    c->net = build_or_fail(model, 32, 10);
    c->pp = precision_plan_of(prec);
    memplan_rules rules = cuda_memplan_rules(fusion);
    cr_assert_eq(memplan_make(&c->net, BATCH, &rules, NULL, &c->mp), 0);
    c->fusion = calloc((size_t)c->net.n_layers, sizeof *c->fusion);
    c->bias_in_call = calloc((size_t)c->net.n_layers, sizeof *c->bias_in_call);
    cr_assert(c->fusion && c->bias_in_call);
    fusion_plan_make(&c->net, &c->mp, fusion, c->fusion);
    c->t = (cuda_traffic_plan){&c->net, BATCH, &c->pp, c->fusion, &c->mp, c->bias_in_call};
}

static void close_case(traffic_case *c)
{
    free(c->fusion);
    free(c->bias_in_call);
    memplan_free(&c->mp);
    net_free(&c->net);
}

static int index_of(const network *net, const char *name)
{
    for (int i = 0; i < net->n_layers; i++)
        if (strcmp(net->layers[i].name, name) == 0)
            return i;
    cr_assert_fail("no layer %s in %s", name, net->model);
    return -1;
}

static cuda_traffic of(const traffic_case *c, const char *name, pass phase)
{
    return cuda_op_traffic(&c->t, index_of(&c->net, name), phase);
}

static void expect_bytes(cuda_traffic got, int64_t read, int64_t written, const char *what)
{
    cr_expect_eq(got.read, read, "%s: read %lld, expected %lld", what, (long long)got.read,
                 (long long)read);
    cr_expect_eq(got.written, written, "%s: written %lld, expected %lld", what,
                 (long long)got.written, (long long)written);
}

/* ResNet-18 at 32 x 32, bf16, batch 2: the stem's batch norm carries its
 * ReLU, a block's second batch norm is normalised by the residual add. */
Test(cuda_traffic, resnet18_batch_norm_and_add_fused)
{
    traffic_case c;
    open_case(&c, "resnet18", PREC_BF16, true);
    /* bn1: 64 channels of 16 x 16, 65536 bytes; the statistics read x, the
     * channels' shifts (64 bf16) and the running mean and variance, write
     * mean, rstd and both running ones; the normalisation reads x again with
     * the four parameters, writes y */
    int64_t x = BATCH * 64 * 16 * 16 * 2, ch = 64 * 4, shift = 64 * 2;
    expect_bytes(of(&c, "bn1", PASS_FWD), x + shift + 2 * ch + x + 4 * ch, 4 * ch + x,
                 "bn1 fwd");
    expect_bytes(of(&c, "relu", PASS_FWD), 0, 0, "relu fused into bn1");
    expect_bytes(of(&c, "relu", PASS_BWD_DATA), 0, 0, "relu's mask applied by bn1");
    /* its backward: dy and x with six per-channel arrays, dx written */
    expect_bytes(of(&c, "bn1", PASS_BWD_DATA), 2 * x + 6 * ch, x, "bn1 bwd_data");
    /* the sums read x, dy and four parameters; adding them up reads rstd again */
    expect_bytes(of(&c, "bn1", PASS_BWD_WEIGHTS), 2 * x + 5 * ch, 2 * ch, "bn1 bwd_weights");

    /* layer1: 64 channels of 8 x 8 after the max pool */
    int64_t t = BATCH * 64 * 8 * 8 * 2;
    expect_bytes(of(&c, "layer1.0.bn2", PASS_FWD), t + shift + 2 * ch, 4 * ch,
                 "layer1.0.bn2: statistics only");
    expect_bytes(of(&c, "layer1.0.add", PASS_FWD), 2 * t + 4 * ch, t,
                 "layer1.0.add: bn2's x and parameters, the identity, y");
    expect_bytes(of(&c, "layer1.0.relu2", PASS_FWD), 0, 0, "relu2 fused into the add");
    /* masked by the fused ReLU: dy and y read, the gradient stored once for
     * each input whose gradient is not dy itself, or once for both */
    cuda_traffic add = of(&c, "layer1.0.add", PASS_BWD_DATA);
    cr_expect_eq(add.read % t, 0);
    cr_expect(add.read >= 2 * t && add.written >= t && add.written <= 2 * t);
    close_case(&c);
}

/* The add of an inverted residual block has no activation: where the plan
 * passes dy on as both inputs' gradient, its backward launches nothing. */
Test(cuda_traffic, mobilenet_v2_residual_backward_moves_nothing)
{
    traffic_case c;
    open_case(&c, "mobilenet_v2", PREC_BF16, true);
    int adds = 0;
    for (int i = 0; i < c.net.n_layers; i++) {
        const layer *l = &c.net.layers[i];
        if (l->type != LAYER_ADD)
            continue;
        adds++;
        for (int k = 0; k < 2; k++)
            cr_expect_eq(c.mp.grad_buffer[l->inputs[k]], c.mp.grad_buffer[i],
                         "%s: input %d's gradient is dy", l->name, k);
        expect_bytes(cuda_op_traffic(&c.t, i, PASS_BWD_DATA), 0, 0, l->name);
        cuda_traffic fwd = cuda_op_traffic(&c.t, i, PASS_FWD);
        cr_expect(fwd.read > 0 && fwd.written > 0, "%s fwd", l->name);
    }
    cr_expect_eq(adds, 10);
    close_case(&c);

    /* unfused, the same adds write both input gradients */
    open_case(&c, "mobilenet_v2", PREC_BF16, false);
    int i = index_of(&c.net, "features.3.add");
    cuda_traffic bwd = cuda_op_traffic(&c.t, i, PASS_BWD_DATA);
    int64_t t = BATCH * shape_elems(c.net.layers[i].out_shape) * 2;
    cr_expect(bwd.read >= t && bwd.written == 2 * t, "read %lld written %lld of %lld",
              (long long)bwd.read, (long long)bwd.written, (long long)t);
    close_case(&c);
}

/* VGG-16's first convolution adds its bias and ReLU in a pass of its own
 * over the output; the ReLU's backward sums the bias gradient as it writes
 * the conv's output gradient (fused), else the conv's backward reads that
 * again for its sums; the classifier's bias rides in cuBLASLt's epilogue
 * when the heuristic offered one. */
Test(cuda_traffic, vgg16_bias_pass_and_bias_in_call)
{
    traffic_case c;
    open_case(&c, "vgg16", PREC_BF16, true);
    int64_t x = BATCH * 3 * 32 * 32 * 2, w = 64 * 3 * 3 * 3 * 2, bias = 64 * 2,
            y = BATCH * 64 * 32 * 32 * 2;
    expect_bytes(of(&c, "features.0", PASS_FWD), x + w + y + bias, 2 * y,
                 "conv, then bias and ReLU in place");
    expect_bytes(of(&c, "features.0", PASS_BWD_WEIGHTS), x + y, w,
                 "filter gradient; the bias gradient is the ReLU's");
    expect_bytes(of(&c, "features.1", PASS_BWD_DATA), y + y, y + bias,
                 "the ReLU's backward: dy and y in, dx and the conv's bias gradient out");
    expect_bytes(of(&c, "features.0", PASS_BWD_DATA), 0, 0, "the first conv has no dx");
    c.bias_in_call[index_of(&c.net, "features.0")] = true;
    expect_bytes(of(&c, "features.0", PASS_FWD), x + w + bias, y,
                 "cuDNN's fused conv+bias+ReLU: no pass over the output of its own");
    expect_bytes(of(&c, "features.0", PASS_BWD_WEIGHTS), x + y, w,
                 "fused forward or not, the same filter gradient");
    c.bias_in_call[index_of(&c.net, "features.0")] = false;
    traffic_case alone;
    open_case(&alone, "vgg16", PREC_BF16, false);
    expect_bytes(of(&alone, "features.0", PASS_BWD_WEIGHTS), x + y + y, w + bias,
                 "unfused: filter gradient, then the bias gradient's sums of dy");
    expect_bytes(of(&alone, "features.1", PASS_BWD_DATA), y + y, y, "unfused: the ReLU alone");
    close_case(&alone);

    int fc = index_of(&c.net, "classifier.0");
    const layer *l = &c.net.layers[fc];
    int64_t in = BATCH * shape_elems(l->in_shape) * 2, out = BATCH * l->out_channels * 2,
            weights = (l->params - l->out_channels) * 2, fc_bias = l->out_channels * 2;
    expect_bytes(cuda_op_traffic(&c.t, fc, PASS_FWD), in + weights + out + fc_bias, 2 * out,
                 "fc without its epilogue");
    c.bias_in_call[fc] = true;
    expect_bytes(cuda_op_traffic(&c.t, fc, PASS_FWD), in + weights + fc_bias, out,
                 "fc with the bias and ReLU epilogue");
    close_case(&c);
}

/* Operations that run alone as the cost model books them move its minimal
 * bytes: each operand read once, each result written once. */
Test(cuda_traffic, unfused_single_passes_match_the_cost_model)
{
    const char *models[] = {"resnet18", "vgg16", "mobilenet_v2"};
    int compared = 0;
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        traffic_case c;
        open_case(&c, models[m], PREC_BF16, false);
        for (int i = 0; i < c.net.n_layers; i++) {
            const layer *l = &c.net.layers[i];
            bool alone = (l->type == LAYER_CONV && !l->has_bias) || l->type == LAYER_RELU ||
                         l->type == LAYER_RELU6 || l->type == LAYER_MAXPOOL ||
                         l->type == LAYER_AVGPOOL || l->type == LAYER_DROPOUT;
            if (!alone)
                continue;
            layer_cost lc = cost_layer(&c.net, i, BATCH, PREC_BF16);
            cuda_traffic fwd = cuda_op_traffic(&c.t, i, PASS_FWD);
            cr_expect_eq(fwd.read + fwd.written, lc.bytes[PASS_FWD], "%s %s fwd", models[m],
                         l->name);
            cr_expect_eq(fwd.written, lc.written[PASS_FWD], "%s %s fwd written", models[m],
                         l->name);
            if (l->computes_input_grad && !step_grad_accumulates(&c.net, i, 0)) {
                cuda_traffic bwd = cuda_op_traffic(&c.t, i, PASS_BWD_DATA);
                cr_expect_eq(bwd.read + bwd.written, lc.bytes[PASS_BWD_DATA], "%s %s bwd_data",
                             models[m], l->name);
            }
            compared++;
        }
        close_case(&c);
    }
    cr_expect_gt(compared, 50);
}

static int64_t step_bytes(const traffic_case *c)
{
    int64_t sum = 0;
    for (int i = 0; i < c->net.n_layers; i++)
        for (int p = PASS_FWD; p <= PASS_BWD_WEIGHTS; p++) {
            cuda_traffic t = cuda_op_traffic(&c->t, i, (pass)p);
            sum += t.read + t.written;
        }
    cuda_traffic loss = cuda_op_traffic(&c->t, STEP_LOSS, PASS_FWD);
    cuda_traffic update = cuda_op_traffic(&c->t, STEP_ALL_LAYERS, PASS_UPDATE);
    return sum + loss.read + loss.written + update.read + update.written;
}

Test(cuda_traffic, fusion_moves_less_over_a_step)
{
    const char *models[] = {"resnet50", "mobilenet_v2", "vgg16"};
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        traffic_case fused, alone;
        open_case(&fused, models[m], PREC_BF16, true);
        open_case(&alone, models[m], PREC_BF16, false);
        int64_t a = step_bytes(&fused), b = step_bytes(&alone);
        cr_expect(a > 0 && a < b, "%s: fused %lld bytes, unfused %lld", models[m], (long long)a,
                  (long long)b);
        close_case(&fused);
        close_case(&alone);
    }
}

/* The loss reads the logits and labels, writes the logits' gradient and each
 * image's loss, then averages those; the fused update reads and writes the
 * fp32 master and momentum, reads the gradient (twice in fp16: the overflow
 * check) and writes the copy computed with (not for batch norm, kept fp32). */
Test(cuda_traffic, loss_and_update)
{
    traffic_case c;
    open_case(&c, "resnet18", PREC_BF16, true);
    int64_t logits = BATCH * 10 * 2;
    expect_bytes(cuda_op_traffic(&c.t, STEP_LOSS, PASS_FWD), logits + BATCH * 4 + BATCH * 4,
                 logits + BATCH * 4, "loss");
    expect_bytes(cuda_op_traffic(&c.t, STEP_LOSS, PASS_BWD_DATA), 0, 0, "the loss is one op");
    int64_t bn = 0, other = 0, read = 0, written = 0;
    for (int i = 0; i < c.net.n_layers; i++) {
        const layer *l = &c.net.layers[i];
        if (l->type == LAYER_BN)
            bn += l->params;
        else
            other += l->params;
        cuda_traffic one = cuda_op_traffic(&c.t, i, PASS_UPDATE);
        read += one.read;
        written += one.written;
    }
    cuda_traffic all = cuda_op_traffic(&c.t, STEP_ALL_LAYERS, PASS_UPDATE);
    expect_bytes(all, bn * 12 + other * 10, bn * 8 + other * 10, "bf16 update");
    expect_bytes(all, read, written, "the fused update is every layer's");
    close_case(&c);

    open_case(&c, "resnet18", PREC_FP16, true);
    expect_bytes(cuda_op_traffic(&c.t, STEP_ALL_LAYERS, PASS_UPDATE), bn * 16 + other * 12,
                 bn * 8 + other * 10, "fp16 update with the overflow check");
    close_case(&c);
    open_case(&c, "resnet18", PREC_FP32, true);
    expect_bytes(cuda_op_traffic(&c.t, STEP_ALL_LAYERS, PASS_UPDATE), (bn + other) * 12,
                 (bn + other) * 8, "fp32 update: no copy");
    close_case(&c);
}
