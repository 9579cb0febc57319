/* Architectures follow torchvision's code (and, for the CIFAR variants, the
 * public CIFAR code named in shared/notes/models.md §1.5) layer for layer, so
 * that parameter counts and MACs match theirs exactly; tests check both. */
#include "zoo.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef int (*build_fn)(network *net);

static const char *name_of(char buf[LAYER_NAME_LEN], const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static const char *name_of(char buf[LAYER_NAME_LEN], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, LAYER_NAME_LEN, fmt, ap);
    va_end(ap);
    return buf;
}

/* ---- ResNet (torchvision resnet.py; CIFAR stem as in kuangliu's resnet.py) ---- */

typedef enum { BLOCK_BASIC, BLOCK_BOTTLENECK } block_kind;

static int downsample(network *net, int x, int channels, int stride)
{
    int y = net_conv(net, "downsample.0", x, channels, 1, stride, 0, 1, false);
    return net_bn(net, "downsample.1", y);
}

static int basic_block(network *net, int x, int planes, int stride)
{
    int in_channels = net_tensor_shape(net, x).c;
    int y = net_conv(net, "conv1", x, planes, 3, stride, 1, 1, false);
    y = net_bn(net, "bn1", y);
    y = net_relu(net, "relu1", y);
    y = net_conv(net, "conv2", y, planes, 3, 1, 1, 1, false);
    y = net_bn(net, "bn2", y);
    int shortcut = x;
    if (stride != 1 || in_channels != planes)
        shortcut = downsample(net, x, planes, stride);
    y = net_add(net, "add", y, shortcut);
    return net_relu(net, "relu2", y);
}

/* v1.5: the stride sits on the 3x3 conv, not on the first 1x1. */
static int bottleneck_block(network *net, int x, int planes, int stride)
{
    const int expansion = 4;
    int in_channels = net_tensor_shape(net, x).c;
    int y = net_conv(net, "conv1", x, planes, 1, 1, 0, 1, false);
    y = net_bn(net, "bn1", y);
    y = net_relu(net, "relu1", y);
    y = net_conv(net, "conv2", y, planes, 3, stride, 1, 1, false);
    y = net_bn(net, "bn2", y);
    y = net_relu(net, "relu2", y);
    y = net_conv(net, "conv3", y, planes * expansion, 1, 1, 0, 1, false);
    y = net_bn(net, "bn3", y);
    int shortcut = x;
    if (stride != 1 || in_channels != planes * expansion)
        shortcut = downsample(net, x, planes * expansion, stride);
    y = net_add(net, "add", y, shortcut);
    return net_relu(net, "relu3", y);
}

static int resnet(network *net, block_kind kind, const int blocks[4], bool cifar_stem)
{
    int x;
    if (cifar_stem) {
        x = net_conv(net, "conv1", GRAPH_INPUT, 64, 3, 1, 1, 1, false);
        x = net_bn(net, "bn1", x);
        x = net_relu(net, "relu", x);
    } else {
        x = net_conv(net, "conv1", GRAPH_INPUT, 64, 7, 2, 3, 1, false);
        x = net_bn(net, "bn1", x);
        x = net_relu(net, "relu", x);
        x = net_maxpool(net, "maxpool", x, 3, 2, 1);
    }
    for (int stage = 0; stage < 4; stage++) {
        int planes = 64 << stage;
        for (int b = 0; b < blocks[stage]; b++) {
            int stride = (stage > 0 && b == 0) ? 2 : 1;
            net_set_prefix(net, "layer%d.%d.", stage + 1, b);
            x = kind == BLOCK_BASIC ? basic_block(net, x, planes, stride)
                                    : bottleneck_block(net, x, planes, stride);
        }
    }
    net_set_prefix(net, "%s", "");
    x = net_avgpool(net, "avgpool", x, 1);
    net_fc(net, "fc", x, net->classes);
    return net->status;
}

static const int resnet18_blocks[4] = {2, 2, 2, 2};
static const int resnet50_blocks[4] = {3, 4, 6, 3};

static int build_resnet18(network *net) { return resnet(net, BLOCK_BASIC, resnet18_blocks, false); }
static int build_resnet50(network *net) { return resnet(net, BLOCK_BOTTLENECK, resnet50_blocks, false); }
static int build_resnet18_cifar(network *net) { return resnet(net, BLOCK_BASIC, resnet18_blocks, true); }
static int build_resnet50_cifar(network *net) { return resnet(net, BLOCK_BOTTLENECK, resnet50_blocks, true); }

/* ---- VGG-16, configuration "D" (torchvision vgg.py; CIFAR: kuangliu vgg.py) ---- */

enum { VGG_POOL = 0 };
static const int vgg16_cfg[] = {64,  64,  VGG_POOL, 128, 128, VGG_POOL, 256, 256, 256, VGG_POOL,
                                512, 512, 512, VGG_POOL, 512, 512, 512, VGG_POOL};

static int vgg_features(network *net, bool batch_norm)
{
    char name[LAYER_NAME_LEN];
    int x = GRAPH_INPUT, index = 0;
    for (size_t i = 0; i < sizeof vgg16_cfg / sizeof vgg16_cfg[0]; i++) {
        if (vgg16_cfg[i] == VGG_POOL) {
            x = net_maxpool(net, name_of(name, "features.%d", index++), x, 2, 2, 0);
            continue;
        }
        x = net_conv(net, name_of(name, "features.%d", index++), x, vgg16_cfg[i], 3, 1, 1, 1, true);
        if (batch_norm)
            x = net_bn(net, name_of(name, "features.%d", index++), x);
        x = net_relu(net, name_of(name, "features.%d", index++), x);
    }
    return x;
}

static int build_vgg16(network *net)
{
    int x = vgg_features(net, false);
    /* AdaptiveAvgPool2d((7, 7)) is the identity at 7x7 (224 input): no layer then. */
    tensor_shape s = net_tensor_shape(net, x);
    if (net->status == NET_OK && (s.h != 7 || s.w != 7))
        x = net_avgpool(net, "avgpool", x, 7);
    x = net_fc(net, "classifier.0", x, 4096);
    x = net_relu(net, "classifier.1", x);
    x = net_dropout(net, "classifier.2", x, 0.5f);
    x = net_fc(net, "classifier.3", x, 4096);
    x = net_relu(net, "classifier.4", x);
    x = net_dropout(net, "classifier.5", x, 0.5f);
    net_fc(net, "classifier.6", x, net->classes);
    return net->status;
}

/* kuangliu's VGG('VGG16'): BN after every conv, one FC on the flattened
 * features (512 inputs at 32x32). */
static int build_vgg16_cifar(network *net)
{
    int x = vgg_features(net, true);
    net_fc(net, "classifier", x, net->classes);
    return net->status;
}

/* ---- MobileNetV2, width 1.0 (torchvision mobilenetv2.py) ---- */

typedef struct {
    int expand, channels, repeats, stride;
} inverted_residual_cfg;

static const inverted_residual_cfg mobilenet_v2_cfg[] = {
    {1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
    {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1},
};

/* torchvision's Conv2dNormActivation: conv (no bias) -> BN -> ReLU6, named .0 .1 .2 */
static int conv_bn_relu6(network *net, const char *at, int x, int out, int kernel, int stride,
                         int groups)
{
    char name[LAYER_NAME_LEN];
    x = net_conv(net, name_of(name, "%s.0", at), x, out, kernel, stride, (kernel - 1) / 2, groups,
                 false);
    x = net_bn(net, name_of(name, "%s.1", at), x);
    return net_relu6(net, name_of(name, "%s.2", at), x);
}

static int inverted_residual(network *net, int x, int expand, int out, int stride)
{
    char at[LAYER_NAME_LEN];
    int in = net_tensor_shape(net, x).c;
    int hidden = in * expand;
    int y = x, part = 0;
    if (expand != 1)
        y = conv_bn_relu6(net, name_of(at, "conv.%d", part++), y, hidden, 1, 1, 1);
    y = conv_bn_relu6(net, name_of(at, "conv.%d", part++), y, hidden, 3, stride, hidden);
    y = net_conv(net, name_of(at, "conv.%d", part++), y, out, 1, 1, 0, 1, false);
    y = net_bn(net, name_of(at, "conv.%d", part), y);
    if (stride == 1 && in == out)
        y = net_add(net, "add", y, x);
    return y;
}

/* The CIFAR variant (chenyaofo's, torchvision's code) runs the stem and the
 * second stage at stride 1. */
static int mobilenet_v2(network *net, bool cifar)
{
    int x = conv_bn_relu6(net, "features.0", GRAPH_INPUT, 32, 3, cifar ? 1 : 2, 1);
    int block = 1;
    for (size_t s = 0; s < sizeof mobilenet_v2_cfg / sizeof mobilenet_v2_cfg[0]; s++) {
        const inverted_residual_cfg *c = &mobilenet_v2_cfg[s];
        int stride = (cifar && s == 1) ? 1 : c->stride;
        for (int r = 0; r < c->repeats; r++, block++) {
            net_set_prefix(net, "features.%d.", block);
            x = inverted_residual(net, x, c->expand, c->channels, r == 0 ? stride : 1);
        }
    }
    net_set_prefix(net, "%s", "");
    char at[LAYER_NAME_LEN];
    x = conv_bn_relu6(net, name_of(at, "features.%d", block), x, 1280, 1, 1, 1);
    x = net_avgpool(net, "avgpool", x, 1);
    x = net_dropout(net, "classifier.0", x, 0.2f);
    net_fc(net, "classifier.1", x, net->classes);
    return net->status;
}

static int build_mobilenet_v2(network *net) { return mobilenet_v2(net, false); }
static int build_mobilenet_v2_cifar(network *net) { return mobilenet_v2(net, true); }

/* ---- the table ---- */

static const model_info infos[] = {
    {"resnet18", "ResNet-18 (torchvision), BasicBlock x[2,2,2,2], 11.7M params", 224, 1000, 0.1f},
    {"resnet50", "ResNet-50 v1.5 (torchvision), Bottleneck x[3,4,6,3], 25.6M params", 224, 1000,
     0.1f},
    {"vgg16", "VGG-16 config D without BN (torchvision), 138.4M params", 224, 1000, 0.01f},
    {"mobilenet_v2", "MobileNetV2 width 1.0 (torchvision), 3.5M params", 224, 1000, 0.1f},
    {"resnet18-cifar", "ResNet-18 with a 3x3 stride-1 stem and no max-pool (kuangliu)", 32, 10,
     0.1f},
    {"resnet50-cifar", "ResNet-50 v1.5 with the CIFAR stem of resnet18-cifar", 32, 10, 0.1f},
    {"vgg16-cifar", "VGG-16 with BN and one FC on the flattened features (kuangliu)", 32, 10, 0.1f},
    {"mobilenet_v2-cifar", "MobileNetV2, stem and stage 2 at stride 1 (chenyaofo)", 32, 10, 0.1f},
};
/* In the order of infos[]. */
static const build_fn builders[] = {
    build_resnet18,       build_resnet50,       build_vgg16,       build_mobilenet_v2,
    build_resnet18_cifar, build_resnet50_cifar, build_vgg16_cifar, build_mobilenet_v2_cifar,
};
enum { ZOO_COUNT = sizeof infos / sizeof infos[0] };
_Static_assert(sizeof builders / sizeof builders[0] == ZOO_COUNT, "one builder per model");

const model_info *zoo_models(int *count)
{
    *count = ZOO_COUNT;
    return infos;
}

static int find_index(const char *name)
{
    for (int i = 0; i < ZOO_COUNT; i++)
        if (strcmp(infos[i].name, name) == 0)
            return i;
    return -1;
}

const model_info *zoo_find(const char *name)
{
    int i = find_index(name);
    return i < 0 ? NULL : &infos[i];
}

const char *zoo_names(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < ZOO_COUNT && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", infos[i].name);
    return buf;
}

int zoo_build(network *net, const char *model, int res, int classes)
{
    net_init(net, model, res, classes, (tensor_shape){3, res, res});
    int index = find_index(model);
    if (index < 0) {
        char names[ZOO_NAMES_LEN];
        net->status = NET_BAD_ARG;
        snprintf(net->err, sizeof net->err, "unknown model '%s' (known: %s)", model,
                 zoo_names(names, sizeof names));
        return net->status;
    }
    if (res < 1 || res > ZOO_MAX_RES || classes < 1 || classes > ZOO_MAX_CLASSES) {
        net->status = NET_BAD_ARG;
        snprintf(net->err, sizeof net->err, "%s: resolution must be 1..%d and classes 1..%d",
                 model, ZOO_MAX_RES, ZOO_MAX_CLASSES);
        return net->status;
    }
    if (builders[index](net) != NET_OK)
        net_free(net);
    return net->status;
}

int zoo_min_res(const char *model)
{
    if (find_index(model) < 0)
        return 0;
    for (int res = 1; res <= ZOO_MAX_RES; res++) {
        network net;
        int status = zoo_build(&net, model, res, 1);
        net_free(&net);
        if (status == NET_OK)
            return res;
        if (status != NET_TOO_SMALL)
            return 0;
    }
    return 0;
}

/* A fixed synthetic batch, as the suite trains, is where a recipe's rate at
 * batch 256 is least forgiving: VGG-16 at batch 4 and lr 0.01 reaches NaN in
 * a few steps (PyTorch does the same). Scaling the rate with the batch (Goyal
 * et al., "Accurate, Large Minibatch SGD") keeps the step size per image
 * that the recipe was tuned for. */
float zoo_default_lr(const model_info *m, int batch)
{
    return m->base_lr * (float)batch / (float)ZOO_LR_BASE_BATCH;
}
