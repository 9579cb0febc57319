/* The analytic cost model: a hand-built network with every number worked out
 * by hand, then the zoo against shared/notes/models.md §2. */
#include <criterion/criterion.h>
#include <math.h>

#include "helpers.h"

/* 3x8x8 -> conv 3x3 (bias) -> bn -> relu -> depthwise 3x3/2 -> maxpool 2/2
 *       -> global avgpool -> fc 2, at batch 2 */
static network hand_network(void)
{
    network net;
    net_init(&net, "hand", 8, 2, (tensor_shape){3, 8, 8});
    int x = net_conv(&net, "c1", GRAPH_INPUT, 4, 3, 1, 1, 1, true);
    x = net_bn(&net, "b1", x);
    x = net_relu(&net, "r1", x);
    x = net_conv(&net, "c2", x, 4, 3, 2, 1, 4, false);
    x = net_maxpool(&net, "p1", x, 2, 2, 0);
    x = net_avgpool(&net, "gap", x, 1);
    net_fc(&net, "fc", x, 2);
    cr_assert_eq(net.status, NET_OK, "%s", net.err);
    return net;
}

enum { C1, B1, R1, C2, P1, GAP, FC };

Test(cost, conv_with_bias_by_hand)
{
    network net = hand_network();
    layer_cost c = cost_layer(&net, C1, 2, PREC_FP32);
    /* 2 images x 4x8x8 outputs x 3*3*3 MACs */
    cr_expect_eq(c.macs, 13824);
    cr_expect_eq(c.flops[PASS_FWD], 2 * 13824 + 512, "bias adds one per output");
    cr_expect_eq(c.flops[PASS_BWD_DATA], 0, "the first conv computes no input gradient");
    cr_expect_eq(c.flops[PASS_BWD_WEIGHTS], 2 * 13824 + 512);
    cr_expect_eq(net.layers[C1].params, 112);
    cr_expect_eq(c.bytes[PASS_FWD], 4 * (384 + 112 + 512));
    cr_expect_eq(c.bytes[PASS_BWD_WEIGHTS], 4 * (384 + 512 + 112));
    cr_expect_eq(c.flops[PASS_UPDATE], 6 * 112);
    cr_expect_eq(c.bytes[PASS_UPDATE], 20 * 112);
    cr_expect_eq(c.written[PASS_FWD], 4 * 512, "forward writes the output");
    cr_expect_eq(c.written[PASS_BWD_WEIGHTS], 4 * 112, "the weight gradient");
    cr_expect_eq(c.written[PASS_UPDATE], 8 * 112, "momentum and weights");
    net_free(&net);
}

/* kernels.csv splits the analytic bytes into reads and writes */
Test(cost, written_bytes_are_part_of_every_pass)
{
    int n_models;
    const model_info *models = zoo_models(&n_models);
    for (int m = 0; m < n_models; m++) {
        network net = build_or_fail(models[m].name, zoo_min_res(models[m].name),
                                    models[m].default_classes);
        for (int prec = 0; prec < PREC_COUNT; prec++) {
            step_cost s = cost_step(&net, 2, (precision)prec, NULL);
            for (int p = 0; p < PASS_COUNT; p++) {
                cr_expect(s.written[p] > 0 && s.written[p] < s.bytes[p], "%s %s: %lld of %lld",
                          net.model, pass_name(p), (long long)s.written[p], (long long)s.bytes[p]);
            }
            cr_expect_eq(2 * s.loss_written, s.loss_bytes);
            for (int i = 0; i < net.n_layers; i++) {
                layer_cost c = cost_layer(&net, i, 2, (precision)prec);
                for (int p = 0; p < PASS_COUNT; p++)
                    cr_expect((c.bytes[p] == 0) == (c.written[p] == 0) && c.written[p] <= c.bytes[p],
                              "%s %s %s", net.model, net.layers[i].name, pass_name(p));
            }
        }
        net_free(&net);
    }
}

Test(cost, depthwise_conv_by_hand)
{
    network net = hand_network();
    layer_cost c = cost_layer(&net, C2, 2, PREC_FP32);
    cr_expect_eq(c.macs, 2 * 4 * 4 * 4 * 9, "one input channel per output channel");
    cr_expect_eq(c.flops[PASS_BWD_DATA], c.flops[PASS_FWD]);
    cr_expect_eq(c.flops[PASS_BWD_WEIGHTS], c.flops[PASS_FWD]);
    cr_expect_eq(c.bytes[PASS_BWD_DATA], 4 * (128 + 36 + 512));
    net_free(&net);
}

Test(cost, batch_norm_by_hand)
{
    network net = hand_network();
    layer_cost c = cost_layer(&net, B1, 2, PREC_FP32);
    cr_expect_eq(c.flops[PASS_FWD], 5 * 512);
    cr_expect_eq(c.bytes[PASS_FWD], 4 * 2 * 512 + 4 * 8 * 4);
    cr_expect_eq(c.flops[PASS_BWD_WEIGHTS], 5 * 512, "d-gamma and d-beta reductions");
    cr_expect_eq(c.bytes[PASS_BWD_WEIGHTS], 4 * 2 * 512 + 4 * 4 * 4);
    cr_expect_eq(c.written[PASS_BWD_WEIGHTS], 4 * 2 * 4);
    cr_expect_eq(c.flops[PASS_BWD_DATA], 6 * 512, "dx with x-hat recomputed");
    cr_expect_eq(c.bytes[PASS_BWD_DATA], 4 * 3 * 512 + 4 * 5 * 4);
    cr_expect_eq(c.written[PASS_BWD_DATA], 4 * 512);
    layer_cost half = cost_layer(&net, B1, 2, PREC_BF16);
    cr_expect_eq(half.bytes[PASS_FWD], 2 * 2 * 512 + 4 * 8 * 4, "statistics stay fp32");
    cr_expect_eq(half.bytes[PASS_UPDATE], 20 * 8, "BN parameters have no low-precision copy");
    net_free(&net);
}

Test(cost, pools_relu_and_fc_by_hand)
{
    network net = hand_network();
    layer_cost relu = cost_layer(&net, R1, 2, PREC_FP32);
    cr_expect_eq(relu.flops[PASS_FWD], 512);
    cr_expect_eq(relu.bytes[PASS_FWD], 4 * 2 * 512);
    cr_expect_eq(relu.bytes[PASS_BWD_DATA], 4 * 3 * 512);
    layer_cost pool = cost_layer(&net, P1, 2, PREC_FP32);
    cr_expect_eq(pool.flops[PASS_FWD], 3 * 32, "3 compares per 2x2 window");
    cr_expect_eq(pool.bytes[PASS_FWD], 4 * (128 + 32) + 32, "plus a 1-byte argmax per output");
    layer_cost gap = cost_layer(&net, GAP, 2, PREC_FP32);
    cr_expect_eq(gap.flops[PASS_FWD], 2 * 4 * 4);
    layer_cost fc = cost_layer(&net, FC, 2, PREC_FP32);
    cr_expect_eq(fc.macs, 16);
    cr_expect_eq(fc.flops[PASS_FWD], 32 + 4);
    cr_expect_eq(fc.bytes[PASS_FWD], 4 * (8 + 10 + 4));
    net_free(&net);
}

Test(cost, adaptive_pool_windows_overlap_like_torch)
{
    /* 8 -> 7 bins: torch's windows are [0,2) [1,3) [2,4) [3,5) [4,6) [5,7) [6,8): 14 each way */
    network net;
    net_init(&net, "pool", 8, 2, (tensor_shape){1, 8, 8});
    net_avgpool(&net, "p", GRAPH_INPUT, 7);
    layer_cost c = cost_layer(&net, 0, 1, PREC_FP32);
    cr_expect_eq(c.flops[PASS_FWD], 14 * 14);
    cr_expect_eq(c.flops[PASS_BWD_DATA], 0, "nothing upstream needs a gradient");
    net_free(&net);
}

Test(cost, saved_activations_by_hand)
{
    network net = hand_network();
    step_cost s = cost_step(&net, 2, PREC_FP32, NULL);
    /* image (read by c1's wgrad) 1536 + c1 out (b1) 2048 + BN mean/inv-std 32
     * + r1 out (its own mask) 2048 + maxpool argmax 32 + gap out (fc) 32;
     * b1 out (relu reads its output), c2 out (max pool keeps an index) and the
     * logits are not kept. */
    cr_expect_eq(s.memory.saved_activations, 1536 + 2048 + 32 + 2048 + 32 + 32);
    net_free(&net);
}

Test(cost, step_totals_are_the_sum_of_layers)
{
    int n_models;
    const model_info *models = zoo_models(&n_models);
    for (int m = 0; m < n_models; m++) {
        network net = build_or_fail(models[m].name, models[m].default_res, models[m].default_classes);
        layer_cost per[net.n_layers];
        step_cost s = cost_step(&net, 3, PREC_FP16, per);
        int64_t flops = s.loss_flops, bytes = s.loss_bytes, macs = 0;
        for (int i = 0; i < net.n_layers; i++) {
            flops += layer_cost_flops(&per[i]);
            bytes += layer_cost_bytes(&per[i]);
            macs += per[i].macs;
        }
        cr_expect_eq(s.step_flops, flops, "%s", net.model);
        cr_expect_eq(s.step_bytes, bytes, "%s", net.model);
        cr_expect_eq(s.fwd_macs, macs, "%s", net.model);
        net_free(&net);
    }
}

Test(cost, backward_passes_repeat_forward_macs)
{
    network net = build_or_fail("resnet50", 224, 1000);
    for (int i = 0; i < net.n_layers; i++) {
        const layer *l = &net.layers[i];
        if (l->type != LAYER_CONV)
            continue;
        layer_cost c = cost_layer(&net, i, 4, PREC_FP32);
        cr_expect_eq(c.flops[PASS_BWD_WEIGHTS], c.flops[PASS_FWD], "%s", l->name);
        cr_expect_eq(c.flops[PASS_BWD_DATA], i == 0 ? 0 : c.flops[PASS_FWD], "%s", l->name);
    }
    net_free(&net);
}

/* Training conv+fc GFLOP per image, 2 x (3F - conv1), from models.md §2. */
Test(cost, training_flops_match_the_notes)
{
    struct {
        const char *model;
        double gflop;
    } want[] = {
        {"resnet18", 10.648},    {"resnet50", 24.299},   {"vgg16", 92.648},
        {"mobilenet_v2", 1.783}, {"resnet18-cifar", 3.329}, {"vgg16-cifar", 1.876},
        {"mobilenet_v2-cifar", 0.526},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        double got = gemm_train_gflop_per_image(want[i].model);
        cr_expect(fabs(got - want[i].gflop) < 0.0005, "%s: %.4f GFLOP, notes %.3f", want[i].model,
                  got, want[i].gflop);
    }
}

/* Minimal forward DRAM bytes per step in fp32, to the two decimals of
 * models.md §2, which counts each layer's inputs, weights and outputs once but
 * not the 1-byte max-pool argmax and dropout mask. */
Test(cost, forward_bytes_match_the_notes)
{
    struct {
        const char *model;
        int batch;
        double gb;
    } want[] = {
        {"resnet18", 256, 18.01}, {"resnet50", 256, 82.93}, {"vgg16", 256, 59.38},
        {"mobilenet_v2", 256, 40.70}, {"resnet18-cifar", 128, 2.28},
        {"vgg16-cifar", 128, 0.94}, {"mobilenet_v2-cifar", 128, 5.02},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const model_info *info = zoo_find(want[i].model);
        network net = build_or_fail(info->name, info->default_res, info->default_classes);
        int64_t bytes = 0;
        for (int k = 0; k < net.n_layers; k++) {
            layer_cost c = cost_layer(&net, k, want[i].batch, PREC_FP32);
            bytes += c.bytes[PASS_FWD];
            layer_type t = net.layers[k].type;
            if (t == LAYER_MAXPOOL || t == LAYER_DROPOUT)
                bytes -= want[i].batch * shape_elems(net.layers[k].out_shape);
        }
        double gb = bytes / 1e9;
        cr_expect(fabs(round(gb * 100) / 100 - want[i].gb) < 1e-9, "%s: %.4f GB, notes %.2f",
                  want[i].model, gb, want[i].gb);
        net_free(&net);
    }
}

Test(cost, precision_halves_activation_traffic)
{
    network net = build_or_fail("resnet18", 224, 1000);
    for (int i = 0; i < net.n_layers; i++) {
        if (net.layers[i].type != LAYER_CONV)
            continue;
        layer_cost full = cost_layer(&net, i, 8, PREC_FP32);
        layer_cost half = cost_layer(&net, i, 8, PREC_FP16);
        cr_expect_eq(2 * half.bytes[PASS_FWD], full.bytes[PASS_FWD], "%s", net.layers[i].name);
        cr_expect_eq(half.flops[PASS_FWD], full.flops[PASS_FWD]);
    }
    net_free(&net);
}

Test(cost, update_and_footprint_per_precision)
{
    network net = build_or_fail("resnet50", 224, 1000);
    int64_t params = net_params(&net), bn_params = 0;
    for (int i = 0; i < net.n_layers; i++)
        if (net.layers[i].type == LAYER_BN)
            bn_params += net.layers[i].params;
    for (int p = 0; p < PREC_COUNT; p++) {
        step_cost s = cost_step(&net, 16, (precision)p, NULL);
        cr_expect_eq(s.bytes[PASS_UPDATE], 20 * params, "%s", precision_name((precision)p));
        cr_expect_eq(s.flops[PASS_UPDATE], (p == PREC_FP16 ? 7 : 6) * params);
        cr_expect_eq(s.memory.weights, 4 * params);
        cr_expect_eq(s.memory.momentum, 4 * params);
    }
    step_cost full = cost_step(&net, 16, PREC_FP32, NULL);
    step_cost half = cost_step(&net, 16, PREC_FP16, NULL);
    cr_expect_eq(full.memory.master_copy, 0);
    cr_expect_eq(full.memory.grads, 4 * params);
    cr_expect_eq(half.memory.master_copy, 2 * (params - bn_params));
    cr_expect_eq(half.memory.grads, 2 * (params - bn_params) + 4 * bn_params);
    cr_expect_lt(half.memory.saved_activations, full.memory.saved_activations);
    cr_expect_eq(full.memory.total,
                 full.memory.weights + full.memory.master_copy + full.memory.grads +
                     full.memory.momentum + full.memory.buffers + full.memory.saved_activations +
                     full.memory.batch + full.memory.transient);
    net_free(&net);
}

Test(cost, loss_is_counted_once_per_logit)
{
    network net = build_or_fail("resnet18", 224, 1000);
    step_cost s = cost_step(&net, 4, PREC_BF16, NULL);
    cr_expect_eq(s.loss_flops, 5 * 4 * 1000);
    cr_expect_eq(s.loss_bytes, 2 * 4 * 4 * 1000, "logits and their gradient in fp32");
    net_free(&net);
}
