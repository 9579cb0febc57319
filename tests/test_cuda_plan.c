/* The host-side decisions of the CUDA backend, checked without a GPU: the
 * precision plan, the fusion plan over the zoo's networks, the NCHW/NHWC
 * permutations of activations and weights, the distinct convolution shapes
 * whose algorithms are searched once, the device memory a batch needs, and
 * fp16's loss-scaling state machine. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "../models/backend.h"
#include "../models/cost.h"
#include "../models/cuda/cuda_plan.h"
#include "../models/cuda/fast_divide.h"
#include "../models/cuda/loss_scale.h"
#include "helpers.h"


Test(cuda_plan, precisions)
{
    precision_plan p = precision_plan_of(PREC_FP32);
    cr_expect(p.elem == ELEM_F32 && p.layout == LAYOUT_NCHW && !p.tensor_cores && !p.master_copy);
    p = precision_plan_of(PREC_TF32);
    cr_expect(p.elem == ELEM_F32 && p.layout == LAYOUT_NHWC && p.tensor_cores && !p.master_copy);
    p = precision_plan_of(PREC_FP16);
    cr_expect(p.elem == ELEM_F16 && p.elem_bytes == 2 && p.layout == LAYOUT_NHWC &&
              p.master_copy && p.loss_scaling);
    p = precision_plan_of(PREC_BF16);
    cr_expect(p.elem == ELEM_BF16 && p.master_copy && !p.loss_scaling && p.tensor_cores);
}

Test(cuda_plan, permutation_round_trip_and_known_element)
{
    enum { N = 2, C = 3, H = 4, W = 5, E = N * C * H * W };
    float src[E], nhwc[E], back[E];
    for (int j = 0; j < E; j++)
        src[j] = (float)j;
    permute_nchw_nhwc(src, nhwc, N, C, H, W, true);
    /* (n=1, c=2, h=3, w=4): NCHW index ((1*3+2)*4+3)*5+4, NHWC ((1*4+3)*5+4)*3+2 */
    cr_expect_float_eq(nhwc[((1 * 4 + 3) * 5 + 4) * 3 + 2], (float)(((1 * 3 + 2) * 4 + 3) * 5 + 4),
                       0.0f);
    permute_nchw_nhwc(nhwc, back, N, C, H, W, false);
    for (int j = 0; j < E; j++)
        cr_expect_float_eq(back[j], src[j], 0.0f, "element %d", j);
}

/* Each model's fusions, counted by kind, and the rules they follow. */
typedef struct {
    int act_into_bn, act_into_add, act_into_bias, bn_into_add, bwd_fused, bias_grads_fused;
} fusion_counts;

static fusion_counts fusions_of(const char *model, int res)
{
    network net = build_or_fail(model, res, 10);
    mem_plan mp;
    memplan_rules rules = cuda_memplan_rules(true);
    cr_assert_eq(memplan_make(&net, 2, &rules, NULL, &mp), 0);
    layer_fusion *f = calloc((size_t)net.n_layers, sizeof *f);
    cr_assert_not_null(f);
    fusion_plan_make(&net, &mp, true, f);
    fusion_counts n = {0};
    for (int i = 0; i < net.n_layers; i++) {
        const layer *l = &net.layers[i];
        if (f[i].fwd_by >= 0) {
            const layer *p = &net.layers[f[i].fwd_by];
            cr_expect(l->type == LAYER_RELU || l->type == LAYER_RELU6, "%s", l->name);
            cr_expect_eq(l->inputs[0], f[i].fwd_by, "%s fused into its producer", l->name);
            cr_expect_eq(mp.out_owner[i], mp.out_owner[f[i].fwd_by], "%s runs in place", l->name);
            cr_expect_neq(f[f[i].fwd_by].act, ACT_NONE);
            n.act_into_bn += p->type == LAYER_BN;
            n.act_into_add += p->type == LAYER_ADD;
            n.act_into_bias += p->type == LAYER_CONV || p->type == LAYER_FC;
            if (p->type == LAYER_CONV || p->type == LAYER_FC) {
                cr_expect(p->has_bias && f[i].bwd_by < 0, "%s", l->name);
                /* its own backward kernel sums the layer's bias gradient */
                cr_expect_eq(f[i].sums_bias_of, f[i].fwd_by, "%s", l->name);
                cr_expect_eq(f[f[i].fwd_by].bias_grad_by, i, "%s", l->name);
            } else {
                cr_expect_eq(f[i].bwd_by, f[i].fwd_by, "%s", l->name);
            }
        }
        if (f[i].sums_bias_of >= 0)
            cr_expect_eq(f[i].fwd_by, f[i].sums_bias_of, "%s sums only what it is fused into",
                         l->name);
        n.bwd_fused += f[i].bwd_by >= 0;
        n.bias_grads_fused += f[i].bias_grad_by >= 0;
        if (f[i].bn_applied_by >= 0) {
            int add = f[i].bn_applied_by;
            cr_expect_eq(net.layers[add].type, LAYER_ADD);
            cr_expect(f[add].add_bn == i || (f[add].add_bn2 == i && mp.out_owner[i] < 0),
                      "%s: normalised by %s, never stored when second", l->name,
                      net.layers[add].name);
            cr_expect_eq(f[i].act, ACT_NONE, "%s: a normalised-by-add batch norm has no act",
                         l->name);
            n.bn_into_add++;
        }
    }
    /* off: every layer alone */
    fusion_plan_make(&net, &mp, false, f);
    for (int i = 0; i < net.n_layers; i++)
        cr_expect(f[i].fwd_by < 0 && f[i].bwd_by < 0 && f[i].act == ACT_NONE &&
                  f[i].bn_applied_by < 0 && f[i].add_bn < 0 && f[i].add_bn2 < 0 &&
                  f[i].bias_grad_by < 0 && f[i].sums_bias_of < 0);
    free(f);
    memplan_free(&mp);
    net_free(&net);
    return n;
}

Test(cuda_plan, resnet50_fuses_bn_relu_and_the_bottleneck_tail)
{
    fusion_counts n = fusions_of("resnet50", 64);
    /* stem bn1 + 2 per bottleneck (16); bn3 of every bottleneck and the four
     * downsample batch norms are normalised by their add */
    cr_expect_eq(n.act_into_bn, 33);
    cr_expect_eq(n.bn_into_add, 20);
    cr_expect_eq(n.act_into_add, 16);
    cr_expect_eq(n.act_into_bias, 0);
    cr_expect_eq(n.bias_grads_fused, 0);
    cr_expect_eq(n.bwd_fused, 49);
}

Test(cuda_plan, vgg16_fuses_bias_and_relu)
{
    fusion_counts n = fusions_of("vgg16", 64);
    cr_expect_eq(n.act_into_bias, 13 + 2, "13 convs and 2 hidden fc layers");
    cr_expect_eq(n.bias_grads_fused, 13 + 2, "their ReLUs' backward sums their bias gradients");
    cr_expect_eq(n.act_into_bn + n.bn_into_add + n.act_into_add + n.bwd_fused, 0);
}

Test(cuda_plan, mobilenet_v2_fuses_relu6_and_residual_bn)
{
    fusion_counts n = fusions_of("mobilenet_v2", 64);
    cr_expect_eq(n.act_into_bn, 35, "stem, 2 per expanding block (16 x 2), the first block's "
                                    "depthwise, the head");
    cr_expect_eq(n.bn_into_add, 10, "the ten residual adds");
    cr_expect_eq(n.act_into_add, 0);
}

Test(cuda_plan, conv_shapes_searched_once)
{
    network net = build_or_fail("resnet50", 224, 1000);
    int *first = malloc((size_t)net.n_layers * sizeof *first);
    cr_assert_not_null(first);
    int distinct = conv_shape_groups(&net, NULL, 256, PREC_BF16, first);
    int convs = net_count_layers(&net, LAYER_CONV);
    cr_expect(distinct > 10 && distinct < convs, "%d distinct of %d", distinct, convs);
    for (int i = 0; i < net.n_layers; i++) {
        if (net.layers[i].type != LAYER_CONV) {
            cr_expect_eq(first[i], -1);
            continue;
        }
        cr_expect(first[i] >= 0 && first[i] <= i && first[first[i]] == first[i]);
        conv_shape a = conv_shape_of(&net.layers[i], NULL, 256, PREC_BF16);
        conv_shape b = conv_shape_of(&net.layers[first[i]], NULL, 256, PREC_BF16);
        cr_expect(conv_shape_equal(&a, &b), "%s", net.layers[i].name);
    }
    free(first);
    net_free(&net);
}

/* VGG-16's 13 convolutions all add a bias under a fused ReLU: cuDNN's fused
 * conv+bias+ReLU may run their forwards, so their shapes say so, and a conv
 * of the same geometry without (fusion off) is another shape. */
Test(cuda_plan, vgg16_conv_shapes_carry_bias_relu)
{
    network net = build_or_fail("vgg16", 224, 1000);
    mem_plan mp;
    memplan_rules rules = cuda_memplan_rules(true);
    cr_assert_eq(memplan_make(&net, 2, &rules, NULL, &mp), 0);
    layer_fusion *f = calloc((size_t)net.n_layers, sizeof *f);
    int *first = malloc((size_t)net.n_layers * sizeof *first);
    cr_assert(f && first);
    fusion_plan_make(&net, &mp, true, f);
    int distinct = conv_shape_groups(&net, f, 64, PREC_BF16, first), with = 0;
    for (int i = 0; i < net.n_layers; i++) {
        if (net.layers[i].type != LAYER_CONV)
            continue;
        conv_shape fused = conv_shape_of(&net.layers[i], &f[i], 64, PREC_BF16);
        conv_shape alone = conv_shape_of(&net.layers[i], NULL, 64, PREC_BF16);
        with += fused.bias_relu;
        cr_expect(!alone.bias_relu, "%s", net.layers[i].name);
        cr_expect(!conv_shape_equal(&fused, &alone), "%s", net.layers[i].name);
    }
    cr_expect_eq(with, 13);
    cr_expect_eq(distinct, conv_shape_groups(&net, NULL, 64, PREC_BF16, first),
                 "the same groups, all of them bias_relu");
    fusion_plan_make(&net, &mp, false, f);
    int conv0 = 0;
    while (net.layers[conv0].type != LAYER_CONV)
        conv0++;
    cr_expect(!conv_shape_of(&net.layers[conv0], &f[conv0], 64, PREC_BF16).bias_relu,
              "--no-fusion: the ReLU is its own layer");
    free(first);
    free(f);
    memplan_free(&mp);
    net_free(&net);
}

/* MobileNetV2's 17 depthwise 3x3 convolutions are the own kernels' to take,
 * at the gpu rows' batch too; ordinary and grouped convolutions are not. */
Test(cuda_plan, depthwise_layers_of_mobilenet_v2_fit_the_own_kernels)
{
    network net = build_or_fail("mobilenet_v2", 224, 1000);
    int depthwise = 0, fits = 0;
    for (int i = 0; i < net.n_layers; i++) {
        if (net.layers[i].type != LAYER_CONV)
            continue;
        conv_shape s = conv_shape_of(&net.layers[i], NULL, 256, PREC_BF16);
        depthwise += conv_is_depthwise(&s);
        fits += depthwise_own_fits(&s);
        cr_expect(!depthwise_own_fits(&s) || conv_is_depthwise(&s), "%s", net.layers[i].name);
    }
    cr_expect_eq(depthwise, 17);
    cr_expect_eq(fits, 17);
    net_free(&net);
    net = build_or_fail("resnet50", 224, 1000);
    for (int i = 0; i < net.n_layers; i++)
        if (net.layers[i].type == LAYER_CONV) {
            conv_shape s = conv_shape_of(&net.layers[i], NULL, 256, PREC_BF16);
            cr_expect(!conv_is_depthwise(&s), "%s", net.layers[i].name);
        }
    net_free(&net);
    conv_shape grouped = {.n = 8, .c = 8, .h = 9, .w = 9, .k = 8, .r = 3, .s = 3, .pad = 1,
                          .stride = 1, .groups = 2, .out_h = 9, .out_w = 9};
    cr_expect(!conv_is_depthwise(&grouped));
    conv_shape dw7 = grouped;
    dw7.groups = 8, dw7.r = dw7.s = 7, dw7.pad = 3;
    cr_expect(conv_is_depthwise(&dw7) && !depthwise_own_fits(&dw7), "7x7: cuDNN's alone");
    conv_shape huge = grouped;
    huge.groups = 8, huge.n = 1 << 20, huge.h = huge.w = huge.out_h = huge.out_w = 32;
    cr_expect(!depthwise_own_fits(&huge), "2^33 elements: beyond 32-bit indices");
}

/* The filter gradient's slices: enough blocks for the SMs, never fewer than
 * 256 positions a slice, at most 1024, and a workspace that holds them. */
Test(cuda_plan, depthwise_filter_slices)
{
    conv_shape first = {.n = 256, .c = 32, .h = 112, .w = 112, .k = 32, .r = 3, .s = 3,
                        .pad = 1, .stride = 1, .groups = 32, .out_h = 112, .out_w = 112};
    depthwise_filter_plan nhwc = depthwise_filter_plan_of(&first, true, 132);
    cr_expect_eq(nhwc.channel_groups, 1);
    cr_expect_eq(nhwc.slices, 528, "4 blocks per SM of 132");
    cr_expect_eq(nhwc.partial_bytes, 528LL * 32 * 9 * 4);
    depthwise_filter_plan nchw = depthwise_filter_plan_of(&first, false, 132);
    cr_expect_eq(nchw.channel_groups, 32);
    cr_expect_eq(nchw.slices, 17, "ceil(528 / 32)");
    conv_shape last = first;
    last.n = 256, last.c = last.k = last.groups = 960, last.h = last.w = 7;
    last.out_h = last.out_w = 7;
    depthwise_filter_plan l = depthwise_filter_plan_of(&last, true, 132);
    cr_expect_eq(l.channel_groups, 30);
    cr_expect_eq(l.slices, 18);
    conv_shape tiny = first;
    tiny.n = 1, tiny.h = tiny.w = tiny.out_h = tiny.out_w = 8;
    cr_expect_eq(depthwise_filter_plan_of(&tiny, true, 132).slices, 1, "64 positions: one");
    conv_shape many = first;
    many.n = 4096;
    cr_expect_eq(depthwise_filter_plan_of(&many, true, 100000).slices, 1024);
}

/* Auto takes the own kernel only when it matched cuDNN and was faster, or
 * when cuDNN has nothing; a mismatch never wins. */
Test(cuda_plan, depthwise_choice)
{
    depthwise_trial t = {.cudnn_ms = 2.0f, .own_ms = 1.0f, .verified = true, .matched = true};
    cr_expect_eq(depthwise_choose(&t), DW_PICK_OWN);
    t.own_ms = 3.0f;
    cr_expect_eq(depthwise_choose(&t), DW_PICK_CUDNN);
    t.own_ms = 1.0f, t.matched = false;
    cr_expect_eq(depthwise_choose(&t), DW_PICK_CUDNN, "faster but wrong");
    t.matched = true, t.verified = false;
    cr_expect_eq(depthwise_choose(&t), DW_PICK_CUDNN, "faster but not compared");
    t.cudnn_ms = -1.0f;
    cr_expect_eq(depthwise_choose(&t), DW_PICK_OWN, "cuDNN has no algorithm");
    t.own_ms = -1.0f;
    cr_expect_eq(depthwise_choose(&t), DW_PICK_CUDNN, "neither: cuDNN's error is reported");
    precision_plan fp32 = precision_plan_of(PREC_FP32), tf32 = precision_plan_of(PREC_TF32);
    precision_plan fp16 = precision_plan_of(PREC_FP16), bf16 = precision_plan_of(PREC_BF16);
    cr_expect(trial_match_tolerance(&fp32) < trial_match_tolerance(&fp16));
    cr_expect(trial_match_tolerance(&fp16) < trial_match_tolerance(&bf16));
    cr_expect(trial_match_tolerance(&tf32) > trial_match_tolerance(&fp32));
    cr_expect(trial_match_tolerance(&bf16) < 0.1, "an indexing error moves results by more");
    /* an engine computing fp32 in tf32 (inputs rounded to 11 bits: some 1e-4
     * of the largest output on these trials) must not pass the fused trial as
     * fp32; the other precisions keep the trials' room */
    cr_expect_leq(fused_match_tolerance(&fp32), 5e-5);
    cr_expect_eq(fused_match_tolerance(&bf16), trial_match_tolerance(&bf16));
    cr_expect_eq(fused_match_tolerance(&tf32), trial_match_tolerance(&tf32));
}

/* cuDNN's fused conv+bias+ReLU: under auto only where it agreed and was
 * faster; under cudnn wherever cuDNN takes it; never under own. */
Test(cuda_plan, conv_bias_choice)
{
    conv_bias_trial t = {.own_ms = 2.0f, .fused_ms = 1.0f, .verified = true, .matched = true};
    cr_expect(conv_bias_choose_fused(CONV_BIAS_AUTO, &t));
    cr_expect(!conv_bias_choose_fused(CONV_BIAS_OWN, &t));
    t.fused_ms = 3.0f;
    cr_expect(!conv_bias_choose_fused(CONV_BIAS_AUTO, &t), "slower");
    cr_expect(conv_bias_choose_fused(CONV_BIAS_CUDNN, &t), "slower, but asked for");
    t.fused_ms = 1.0f, t.matched = false;
    cr_expect(!conv_bias_choose_fused(CONV_BIAS_AUTO, &t), "faster but wrong");
    t.matched = true, t.verified = false;
    cr_expect(!conv_bias_choose_fused(CONV_BIAS_AUTO, &t), "faster but not compared");
    t.verified = true, t.own_ms = -1.0f;
    cr_expect(!conv_bias_choose_fused(CONV_BIAS_AUTO, &t), "the own way not timed");
    t.own_ms = 2.0f, t.fused_ms = -1.0f;
    cr_expect(!conv_bias_choose_fused(CONV_BIAS_AUTO, &t), "cuDNN refused it");
    cr_expect(!conv_bias_choose_fused(CONV_BIAS_CUDNN, &t), "refused: the own kernel runs it");
    cr_expect_str_eq(conv_bias_choice_name(CONV_BIAS_CUDNN), "cudnn");
    cr_expect_str_eq(conv_bias_choice_name((conv_bias_choice)7), "?");
}

Test(cuda_plan, conv_api_choice)
{
    conv_api_trial t = {.legacy_ms = 2.0f, .graph_ms = 1.0f, .verified = true, .matched = true};
    cr_expect(conv_api_choose_graph(CONV_API_AUTO, &t));
    cr_expect(!conv_api_choose_graph(CONV_API_LEGACY, &t));
    t.graph_ms = 3.0f;
    cr_expect(!conv_api_choose_graph(CONV_API_AUTO, &t), "slower");
    cr_expect(conv_api_choose_graph(CONV_API_GRAPH, &t), "slower, but asked for");
    t.graph_ms = 2.0f;
    cr_expect(!conv_api_choose_graph(CONV_API_AUTO, &t), "as fast: the legacy call stays");
    t.graph_ms = 1.0f, t.matched = false;
    cr_expect(!conv_api_choose_graph(CONV_API_AUTO, &t), "faster but wrong");
    cr_expect(conv_api_choose_graph(CONV_API_GRAPH, &t), "wrong, but asked for (reported)");
    t.matched = true, t.verified = false;
    cr_expect(!conv_api_choose_graph(CONV_API_AUTO, &t), "faster but not compared");
    t.legacy_ms = -1.0f;
    cr_expect(conv_api_choose_graph(CONV_API_AUTO, &t), "the legacy calls had nothing");
    t.legacy_ms = 2.0f, t.graph_ms = -1.0f, t.verified = true;
    cr_expect(!conv_api_choose_graph(CONV_API_AUTO, &t), "no engine built");
    cr_expect(!conv_api_choose_graph(CONV_API_GRAPH, &t), "no engine: the legacy call runs it");
    cr_expect_str_eq(conv_api_choice_name(CONV_API_GRAPH), "graph");
    cr_expect_str_eq(conv_api_choice_name((conv_api_choice)7), "?");
}

/* cuDNN's results in its order (fastest first, failures last): the least
 * workspace within the tolerance of the fastest usable one, never an
 * unusable one, and the fastest where nothing close needs less. */
Test(cuda_plan, conv_algo_pick_trades_two_percent_for_workspace)
{
    conv_algo_result r[] = {
        {.usable = false, .ms = 0.50f, .memory = 0},        /* not allowed (math, status) */
        {.usable = true, .ms = 1.00f, .memory = 400 << 20},
        {.usable = true, .ms = 1.01f, .memory = 64 << 20},
        {.usable = true, .ms = 1.015f, .memory = 64 << 20}, /* as small, slower */
        {.usable = true, .ms = 1.03f, .memory = 0},         /* smallest, but 3% slower */
    };
    int n = (int)(sizeof r / sizeof *r);
    cr_expect_eq(conv_algo_pick(r, n, CONV_ALGO_TIME_TOLERANCE), 2);
    cr_expect_eq(conv_algo_pick(r, n, 0.0), 1, "no tolerance: the fastest usable");
    cr_expect_eq(conv_algo_pick(r, n, 0.05), 4, "within 5%: no workspace at all");
    r[2].usable = r[3].usable = r[4].usable = false;
    cr_expect_eq(conv_algo_pick(r, n, CONV_ALGO_TIME_TOLERANCE), 1);
    r[1].usable = false;
    cr_expect_eq(conv_algo_pick(r, n, CONV_ALGO_TIME_TOLERANCE), -1, "none usable");
    cr_expect_eq(conv_algo_pick(r, 0, CONV_ALGO_TIME_TOLERANCE), -1, "none found");
    /* not relying on cuDNN's order */
    conv_algo_result shuffled[] = {
        {.usable = true, .ms = 2.0f, .memory = 0},
        {.usable = true, .ms = 1.0f, .memory = 8 << 20},
        {.usable = true, .ms = 1.01f, .memory = 8 << 20},
    };
    cr_expect_eq(conv_algo_pick(shuffled, 3, CONV_ALGO_TIME_TOLERANCE), 1,
                 "equal workspace: the faster");
}

/* Workspaces as the memory plan's scratch: the forward's in elements,
 * rounded up; the backward's the larger of its two passes (they run one
 * after the other in one region). */
Test(cuda_plan, scratch_is_the_larger_backward_pass_rounded_up)
{
    const int64_t pass_bytes[] = {
        0,    0,    0,       /* no workspace at all */
        1,    4096, 4097,    /* a byte; backward filter larger */
        4096, 8191, 100,     /* backward data larger */
    };
    int64_t scratch[6] = {-1, -1, -1, -1, -1, -1};
    cuda_scratch_elems(3, pass_bytes, 2, scratch);
    const int64_t want[] = {0, 0, 1, 2049, 2048, 4096};
    for (int k = 0; k < 6; k++)
        cr_expect_eq(scratch[k], want[k], "scratch[%d]: %lld, want %lld", k, (long long)scratch[k],
                     (long long)want[k]);
    cuda_scratch_elems(3, pass_bytes, 4, scratch);
    cr_expect_eq(scratch[3], 1025, "fp32 elements");
}

/* The own kernels' index splitting: multiply-and-shift division equals n / d
 * for every divisor a layer has (and far beyond) at the numerators that
 * break a wrong multiplier: around multiples of d, near 2^31 and at random. */
Test(cuda_plan, fast_divide_matches_division)
{
    uint64_t state = 88172645463325252ull;
    uint32_t divisors[5200];
    int nd = 0;
    for (uint32_t d = 1; d <= 5000; d++)
        divisors[nd++] = d;
    uint32_t big[] = {65535, 65536, 65537, 1u << 20, (1u << 20) + 1, 12544, 802816, 2147483647u,
                      1u << 30, (1u << 30) + 3, 1000003, 3211264};
    for (size_t k = 0; k < sizeof big / sizeof *big; k++)
        divisors[nd++] = big[k];
    long failures = 0;
    for (int k = 0; k < nd; k++) {
        uint32_t d = divisors[k];
        fast_divisor f = fast_divisor_of(d);
        uint32_t probes[64];
        int np = 0;
        uint32_t top = 2147483647u;
        probes[np++] = 0, probes[np++] = 1, probes[np++] = top, probes[np++] = top - 1;
        probes[np++] = top / d * d, probes[np++] = top / d * d - 1;
        for (uint32_t m = 1; m <= 8 && (uint64_t)m * d <= top; m++)
            probes[np++] = m * d, probes[np++] = m * d - 1;
        while (np < 64) {
            state ^= state << 13, state ^= state >> 7, state ^= state << 17;
            probes[np++] = (uint32_t)(state % 2147483648ull);
        }
        for (int j = 0; j < np; j++) {
            uint32_t rem, q = fast_divmod(f, probes[j], &rem);
            if (q != probes[j] / d || rem != probes[j] % d)
                failures++;
            if (failures == 1 && (q != probes[j] / d || rem != probes[j] % d))
                cr_log_error("%u / %u: %u rem %u", probes[j], d, q, rem);
        }
    }
    cr_expect_eq(failures, 0);
}

/* What the backend allocates tracks the analytic footprint: within 0.7x to
 * 1.6x of it (the plan shares gradients; it also keeps every activation, not
 * only what backward needs), and half precision needs less. */
Test(cuda_plan, planned_bytes_track_the_footprint)
{
    const char *models[] = {"resnet50", "vgg16", "mobilenet_v2", "resnet18"};
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        network net = build_or_fail(models[m], 224, 1000);
        mem_plan mp;
        memplan_rules rules = cuda_memplan_rules(true);
        cr_assert_eq(memplan_make(&net, 64, &rules, NULL, &mp), 0);
        precision_plan f32 = precision_plan_of(PREC_FP32), b16 = precision_plan_of(PREC_BF16);
        int64_t need32 = cuda_planned_bytes(&net, 64, &f32, &mp);
        int64_t need16 = cuda_planned_bytes(&net, 64, &b16, &mp);
        step_cost c = cost_step(&net, 64, PREC_FP32, NULL);
        double ratio = (double)need32 / (double)c.memory.total;
        cr_expect(ratio > 0.7 && ratio < 1.6, "%s: planned %.2f GiB, footprint %.2f GiB",
                  models[m], need32 / 1073741824.0, c.memory.total / 1073741824.0);
        cr_expect(need16 < need32, "%s", models[m]);
        memplan_free(&mp);
        net_free(&net);
    }
}

Test(loss_scale, follows_grad_scaler)
{
    loss_scale_state s = loss_scale_initial();
    cr_expect_float_eq(s.scale, 65536.0f, 0.0f);
    s.found_inf = 1;
    loss_scale_update(&s);
    cr_expect_float_eq(s.scale, 32768.0f, 0.0f, "an overflow halves the scale");
    cr_expect_eq(s.skipped_steps, 1);
    cr_expect_eq(s.found_inf, 0, "the flag is cleared for the next step");
    for (int k = 0; k < LOSS_SCALE_GROWTH_INTERVAL - 1; k++)
        loss_scale_update(&s);
    cr_expect_float_eq(s.scale, 32768.0f, 0.0f, "1999 clean steps change nothing");
    loss_scale_update(&s);
    cr_expect_float_eq(s.scale, 65536.0f, 0.0f, "the 2000th doubles it");
    cr_expect_eq(s.clean_steps, 0);
    for (int k = 0; k < 1000; k++)
        loss_scale_update(&s);
    s.found_inf = 1;
    loss_scale_update(&s);
    cr_expect_eq(s.clean_steps, 0, "an overflow restarts the count");
    cr_expect_eq(s.skipped_steps, 2);
}
