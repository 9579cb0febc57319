/* The zoo against torchvision's published numbers and the architectures of
 * shared/notes/models.md §1 and §7. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "helpers.h"

static void expect_params(const char *model, int classes, int64_t expected)
{
    network net = build_or_fail(model, zoo_find(model)->default_res, classes);
    cr_expect_eq(net_params(&net), expected, "%s: %lld parameters, torchvision has %lld", model,
                 (long long)net_params(&net), (long long)expected);
    net_free(&net);
}

Test(zoo, resnet18_params) { expect_params("resnet18", 1000, 11689512); }
Test(zoo, resnet50_params) { expect_params("resnet50", 1000, 25557032); }
Test(zoo, vgg16_params) { expect_params("vgg16", 1000, 138357544); }
Test(zoo, mobilenet_v2_params) { expect_params("mobilenet_v2", 1000, 3504872); }
Test(zoo, resnet18_cifar_params) { expect_params("resnet18-cifar", 10, 11173962); }
Test(zoo, resnet50_cifar_params) { expect_params("resnet50-cifar", 10, 23520842); }
Test(zoo, vgg16_cifar_params) { expect_params("vgg16-cifar", 10, 14728266); }
Test(zoo, mobilenet_v2_cifar_params) { expect_params("mobilenet_v2-cifar", 10, 2236682); }
/* torchvision resnet18(num_classes=10): only the FC changes */
Test(zoo, resnet18_ten_classes_params) { expect_params("resnet18", 10, 11181642); }

/* Forward conv+fc MACs per image, to the digits published (torchvision "GFLOPS"
 * _ops meta for 224; models.md §1.5 for 32). */
static void expect_gmacs(const char *model, double published, double unit)
{
    network net = build_or_fail(model, zoo_find(model)->default_res,
                                zoo_find(model)->default_classes);
    step_cost s = cost_step(&net, 1, PREC_FP32, NULL);
    double rounded = round(s.fwd_macs / unit) * unit;
    cr_expect(fabs(rounded - published) < unit / 10, "%s: %.6g MACs rounds to %.6g, published %.6g",
              model, (double)s.fwd_macs, rounded, published);
    net_free(&net);
}

Test(zoo, resnet18_gmacs) { expect_gmacs("resnet18", 1.814e9, 1e6); }
Test(zoo, resnet50_gmacs) { expect_gmacs("resnet50", 4.089e9, 1e6); }
Test(zoo, vgg16_gmacs) { expect_gmacs("vgg16", 15.47e9, 1e7); }
Test(zoo, mobilenet_v2_gmacs) { expect_gmacs("mobilenet_v2", 0.301e9, 1e6); }
Test(zoo, resnet18_cifar_mmacs) { expect_gmacs("resnet18-cifar", 555.4e6, 1e5); }
Test(zoo, vgg16_cifar_mmacs) { expect_gmacs("vgg16-cifar", 313.2e6, 1e5); }
Test(zoo, mobilenet_v2_cifar_mmacs) { expect_gmacs("mobilenet_v2-cifar", 88.0e6, 1e5); }

Test(zoo, layer_census)
{
    struct {
        const char *model;
        int convs, depthwise, adds, bns;
    } want[] = {
        {"resnet18", 20, 0, 8, 20},
        {"resnet50", 53, 0, 16, 53},
        {"vgg16", 13, 0, 0, 0},
        {"mobilenet_v2", 52, 17, 10, 52},
        {"vgg16-cifar", 13, 0, 0, 13},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        network net = build_or_fail(want[i].model, 224, 1000);
        int depthwise = 0;
        for (int k = 0; k < net.n_layers; k++) {
            const layer *l = &net.layers[k];
            depthwise += l->type == LAYER_CONV && l->groups > 1 && l->groups == l->in_shape.c;
        }
        cr_expect_eq(net_count_layers(&net, LAYER_CONV), want[i].convs, "%s convs", want[i].model);
        cr_expect_eq(depthwise, want[i].depthwise, "%s depthwise convs", want[i].model);
        cr_expect_eq(net_count_layers(&net, LAYER_ADD), want[i].adds, "%s adds", want[i].model);
        cr_expect_eq(net_count_layers(&net, LAYER_BN), want[i].bns, "%s BNs", want[i].model);
        net_free(&net);
    }
}

static const layer *find_layer(const network *net, const char *name)
{
    for (int i = 0; i < net->n_layers; i++)
        if (strcmp(net->layers[i].name, name) == 0)
            return &net->layers[i];
    cr_assert_fail("no layer %s in %s", name, net->model);
    return NULL;
}

static void expect_shape(const network *net, const char *name, int c, int h, int w)
{
    tensor_shape s = find_layer(net, name)->out_shape;
    cr_expect(s.c == c && s.h == h && s.w == w, "%s %s: %dx%dx%d, expected %dx%dx%d", net->model,
              name, s.c, s.h, s.w, c, h, w);
}

Test(zoo, resnet_shapes_follow_torchvision)
{
    network net = build_or_fail("resnet50", 224, 1000);
    expect_shape(&net, "conv1", 64, 112, 112);
    expect_shape(&net, "maxpool", 64, 56, 56);
    expect_shape(&net, "layer1.0.downsample.0", 256, 56, 56);
    expect_shape(&net, "layer2.0.conv1", 128, 56, 56); /* v1.5: no stride on the 1x1 */
    expect_shape(&net, "layer2.0.conv2", 128, 28, 28);
    expect_shape(&net, "layer4.2.relu3", 2048, 7, 7);
    expect_shape(&net, "fc", 1000, 1, 1);
    net_free(&net);
    /* odd resolutions round as PyTorch's floor division does */
    net = build_or_fail("resnet50", 299, 1000);
    expect_shape(&net, "conv1", 64, 150, 150);
    expect_shape(&net, "maxpool", 64, 75, 75);
    expect_shape(&net, "layer4.2.relu3", 2048, 10, 10);
    net_free(&net);
}

Test(zoo, vgg16_adaptive_pool_only_when_needed)
{
    network net = build_or_fail("vgg16", 224, 1000);
    cr_expect_eq(net_count_layers(&net, LAYER_AVGPOOL), 0, "identity pool at 7x7 kept");
    expect_shape(&net, "features.30", 512, 7, 7);
    net_free(&net);
    net = build_or_fail("vgg16", 256, 1000);
    expect_shape(&net, "features.30", 512, 8, 8);
    expect_shape(&net, "avgpool", 512, 7, 7);
    cr_expect_eq(net_params(&net), 138357544, "the classifier still sees 25088 inputs");
    net_free(&net);
}

Test(zoo, mobilenet_v2_cifar_strides)
{
    network net = build_or_fail("mobilenet_v2-cifar", 32, 10);
    expect_shape(&net, "features.0.0", 32, 32, 32);
    expect_shape(&net, "features.2.conv.1.0", 96, 32, 32); /* stage 2 at stride 1 */
    expect_shape(&net, "features.18.2", 1280, 4, 4);
    net_free(&net);
}

Test(zoo, graph_is_topological_with_unique_names)
{
    int n_models;
    const model_info *models = zoo_models(&n_models);
    for (int m = 0; m < n_models; m++) {
        network net = build_or_fail(models[m].name, models[m].default_res, models[m].default_classes);
        for (int i = 0; i < net.n_layers; i++) {
            const layer *l = &net.layers[i];
            for (int k = 0; k < l->n_inputs; k++)
                cr_expect(l->inputs[k] >= GRAPH_INPUT && l->inputs[k] < i, "%s %s input %d",
                          net.model, l->name, l->inputs[k]);
            for (int j = 0; j < i; j++)
                cr_expect(strcmp(l->name, net.layers[j].name) != 0, "%s: %s twice", net.model, l->name);
        }
        net_free(&net);
    }
}

Test(zoo, only_the_first_conv_skips_its_input_gradient)
{
    network net = build_or_fail("resnet18", 224, 1000);
    for (int i = 0; i < net.n_layers; i++)
        cr_expect_eq(net.layers[i].computes_input_grad, i != 0, "%s", net.layers[i].name);
    net_free(&net);
}

Test(zoo, minimum_resolutions)
{
    cr_expect_eq(zoo_min_res("vgg16"), 32);
    cr_expect_eq(zoo_min_res("vgg16-cifar"), 32);
    cr_expect_eq(zoo_min_res("resnet50"), 1); /* padded stride-2 windows never empty */
    cr_expect_eq(zoo_min_res("mobilenet_v2"), 1);
    cr_expect_eq(zoo_min_res("no-such-model"), 0);
}

Test(zoo, too_small_and_unknown_are_reported)
{
    network net;
    cr_assert_eq(zoo_build(&net, "vgg16", 31, 1000), NET_TOO_SMALL);
    cr_expect(strstr(net.err, "features.30") != NULL, "names the layer: %s", net.err);
    cr_expect_null(net.layers, "a failed build holds nothing");
    cr_assert_eq(zoo_build(&net, "resnet-18", 224, 1000), NET_BAD_ARG);
    cr_expect(strstr(net.err, "mobilenet_v2-cifar") != NULL, "lists the models: %s", net.err);
    cr_assert_eq(zoo_build(&net, "resnet18", 224, 0), NET_BAD_ARG);
}

Test(zoo, graph_builder_rejects_bad_layers)
{
    network net;
    net_init(&net, "hand", 8, 2, (tensor_shape){3, 8, 8});
    int a = net_conv(&net, "a", GRAPH_INPUT, 4, 3, 1, 1, 1, false);
    int b = net_conv(&net, "b", GRAPH_INPUT, 4, 3, 2, 1, 1, false);
    net_add(&net, "sum", a, b);
    cr_expect_eq(net.status, NET_BAD_ARG, "adding 4x8x8 to 4x4x4 must fail");
    cr_expect(strstr(net.err, "differ in shape") != NULL, "%s", net.err);
    int before = net.n_layers;
    net_relu(&net, "after", b);
    cr_expect_eq(net.n_layers, before, "builders stop after the first failure");
    net_free(&net);
    net_init(&net, "hand", 8, 2, (tensor_shape){3, 8, 8});
    net_conv(&net, "groups", GRAPH_INPUT, 4, 3, 1, 1, 2, false); /* 3 channels in 2 groups */
    cr_expect_eq(net.status, NET_BAD_ARG);
    net_free(&net);
}

/* bin/train's default learning rate: torchvision's recipe at batch 256
 * (lower for VGG-16 without batch norm), scaled linearly with the batch. */
Test(zoo, default_learning_rates_follow_torchvision_scaled_by_batch)
{
    int n;
    const model_info *models = zoo_models(&n);
    for (int m = 0; m < n; m++) {
        float base = strcmp(models[m].name, "vgg16") == 0 ? 0.01f : 0.1f;
        cr_expect_float_eq(models[m].base_lr, base, 1e-7f, "%s", models[m].name);
        cr_expect_float_eq(zoo_default_lr(&models[m], 256), base, 1e-7f, "%s", models[m].name);
        cr_expect_float_eq(zoo_default_lr(&models[m], 4), base / 64, 1e-9f, "%s",
                           models[m].name);
    }
}
