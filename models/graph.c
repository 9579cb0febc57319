#include "graph.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[LAYER_TYPE_COUNT] = {
    [LAYER_CONV] = "conv",       [LAYER_BN] = "bn",           [LAYER_RELU] = "relu",
    [LAYER_RELU6] = "relu6",     [LAYER_MAXPOOL] = "maxpool", [LAYER_AVGPOOL] = "avgpool",
    [LAYER_FC] = "fc",           [LAYER_ADD] = "add",         [LAYER_DROPOUT] = "dropout",
};

const char *layer_type_name(layer_type type)
{
    return (unsigned)type < LAYER_TYPE_COUNT ? type_names[type] : "?";
}

int64_t shape_elems(tensor_shape s)
{
    return (int64_t)s.c * s.h * s.w;
}

void net_init(network *net, const char *model, int res, int classes, tensor_shape input)
{
    memset(net, 0, sizeof *net);
    snprintf(net->model, sizeof net->model, "%s", model);
    net->res = res;
    net->classes = classes;
    net->input = input;
}

void net_free(network *net)
{
    free(net->layers);
    net->layers = NULL;
    net->n_layers = net->cap = 0;
}

void net_set_prefix(network *net, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(net->prefix, sizeof net->prefix, fmt, ap);
    va_end(ap);
}

static int fail(network *net, net_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(network *net, net_status status, const char *fmt, ...)
{
    if (net->status == NET_OK) {
        net->status = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(net->err, sizeof net->err, fmt, ap);
        va_end(ap);
    }
    return net->n_layers - 1;
}

tensor_shape net_tensor_shape(const network *net, int index)
{
    return index == GRAPH_INPUT ? net->input : net->layers[index].out_shape;
}

static bool input_requires_grad(const network *net, int index)
{
    if (index == GRAPH_INPUT)
        return false;
    const layer *l = &net->layers[index];
    return l->params > 0 || l->computes_input_grad;
}

/* Appends a layer of `type` fed by `in`; returns NULL once building has failed. */
static layer *push(network *net, layer_type type, const char *name, int in)
{
    if (net->status != NET_OK)
        return NULL;
    if (in < GRAPH_INPUT || in >= net->n_layers) {
        fail(net, NET_BAD_ARG, "layer %s%s: input %d does not exist", net->prefix, name, in);
        return NULL;
    }
    if (net->n_layers == net->cap) {
        int cap = net->cap ? 2 * net->cap : 64;
        layer *grown = realloc(net->layers, (size_t)cap * sizeof *grown);
        if (!grown) {
            fail(net, NET_ENOMEM, "out of memory building %s", net->model);
            return NULL;
        }
        net->layers = grown;
        net->cap = cap;
    }
    layer *l = &net->layers[net->n_layers];
    memset(l, 0, sizeof *l);
    l->type = type;
    snprintf(l->name, sizeof l->name, "%s%s", net->prefix, name);
    l->n_inputs = 1;
    l->inputs[0] = in;
    l->in_shape = net_tensor_shape(net, in);
    l->out_shape = l->in_shape;
    l->computes_input_grad = input_requires_grad(net, in);
    return l;
}

/* Commits the layer push() returned, after checking the inferred shape. */
static int commit(network *net, layer *l)
{
    if (l->out_shape.c <= 0 || l->out_shape.h <= 0 || l->out_shape.w <= 0)
        return fail(net, NET_TOO_SMALL,
                    "%s at %dx%d: layer %s would output %dx%dx%d", net->model, net->res,
                    net->res, l->name, l->out_shape.c, l->out_shape.h, l->out_shape.w);
    return net->n_layers++;
}

/* floor((size + 2 pad - kernel) / stride) + 1, or 0 when the window does not fit */
static int window_out(int size, int kernel, int stride, int pad)
{
    int span = size + 2 * pad - kernel;
    return span < 0 ? 0 : span / stride + 1;
}

int net_conv(network *net, const char *name, int in, int out_channels, int kernel,
             int stride, int pad, int groups, bool bias)
{
    layer *l = push(net, LAYER_CONV, name, in);
    if (!l)
        return net->n_layers - 1;
    if (out_channels <= 0 || kernel <= 0 || stride <= 0 || pad < 0 || groups <= 0 ||
        l->in_shape.c % groups || out_channels % groups)
        return fail(net, NET_BAD_ARG, "conv %s: bad hyper-parameters", l->name);
    l->out_channels = out_channels;
    l->kernel = kernel;
    l->stride = stride;
    l->pad = pad;
    l->groups = groups;
    l->has_bias = bias;
    l->out_shape = (tensor_shape){out_channels, window_out(l->in_shape.h, kernel, stride, pad),
                                  window_out(l->in_shape.w, kernel, stride, pad)};
    l->params = (int64_t)out_channels * (l->in_shape.c / groups) * kernel * kernel +
                (bias ? out_channels : 0);
    return commit(net, l);
}

int net_bn(network *net, const char *name, int in)
{
    layer *l = push(net, LAYER_BN, name, in);
    if (!l)
        return net->n_layers - 1;
    l->params = 2 * (int64_t)l->in_shape.c; /* gamma, beta; running stats are buffers */
    return commit(net, l);
}

int net_relu(network *net, const char *name, int in)
{
    layer *l = push(net, LAYER_RELU, name, in);
    return l ? commit(net, l) : net->n_layers - 1;
}

int net_relu6(network *net, const char *name, int in)
{
    layer *l = push(net, LAYER_RELU6, name, in);
    return l ? commit(net, l) : net->n_layers - 1;
}

int net_maxpool(network *net, const char *name, int in, int kernel, int stride, int pad)
{
    layer *l = push(net, LAYER_MAXPOOL, name, in);
    if (!l)
        return net->n_layers - 1;
    if (kernel <= 0 || stride <= 0 || pad < 0 || 2 * pad > kernel)
        return fail(net, NET_BAD_ARG, "maxpool %s: bad hyper-parameters", l->name);
    l->kernel = kernel;
    l->stride = stride;
    l->pad = pad;
    l->out_shape.h = window_out(l->in_shape.h, kernel, stride, pad);
    l->out_shape.w = window_out(l->in_shape.w, kernel, stride, pad);
    return commit(net, l);
}

int net_avgpool(network *net, const char *name, int in, int out_size)
{
    layer *l = push(net, LAYER_AVGPOOL, name, in);
    if (!l)
        return net->n_layers - 1;
    if (out_size <= 0)
        return fail(net, NET_BAD_ARG, "avgpool %s: bad output size", l->name);
    l->pool_out = out_size;
    l->out_shape.h = l->out_shape.w = out_size;
    return commit(net, l);
}

int net_fc(network *net, const char *name, int in, int out_features)
{
    layer *l = push(net, LAYER_FC, name, in);
    if (!l)
        return net->n_layers - 1;
    if (out_features <= 0)
        return fail(net, NET_BAD_ARG, "fc %s: bad output size", l->name);
    l->out_channels = out_features;
    l->has_bias = true;
    l->out_shape = (tensor_shape){out_features, 1, 1};
    l->params = shape_elems(l->in_shape) * out_features + out_features;
    return commit(net, l);
}

int net_add(network *net, const char *name, int a, int b)
{
    layer *l = push(net, LAYER_ADD, name, a);
    if (!l)
        return net->n_layers - 1;
    if (b < GRAPH_INPUT || b >= net->n_layers)
        return fail(net, NET_BAD_ARG, "add %s: input %d does not exist", l->name, b);
    tensor_shape sb = net_tensor_shape(net, b);
    if (sb.c != l->in_shape.c || sb.h != l->in_shape.h || sb.w != l->in_shape.w)
        return fail(net, NET_BAD_ARG, "add %s: inputs differ in shape (%dx%dx%d vs %dx%dx%d)",
                    l->name, l->in_shape.c, l->in_shape.h, l->in_shape.w, sb.c, sb.h, sb.w);
    l->n_inputs = 2;
    l->inputs[1] = b;
    l->computes_input_grad = l->computes_input_grad || input_requires_grad(net, b);
    return commit(net, l);
}

int net_dropout(network *net, const char *name, int in, float p)
{
    layer *l = push(net, LAYER_DROPOUT, name, in);
    if (!l)
        return net->n_layers - 1;
    if (!(p >= 0.0f && p < 1.0f))
        return fail(net, NET_BAD_ARG, "dropout %s: p must be in [0, 1)", l->name);
    l->drop_p = p;
    return commit(net, l);
}

int64_t net_params(const network *net)
{
    int64_t total = 0;
    for (int i = 0; i < net->n_layers; i++)
        total += net->layers[i].params;
    return total;
}

int net_count_layers(const network *net, layer_type type)
{
    int n = 0;
    for (int i = 0; i < net->n_layers; i++)
        n += net->layers[i].type == type;
    return n;
}

int net_consumers(const network *net, int index, int *out, int max)
{
    int n = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const layer *l = &net->layers[i];
        for (int k = 0; k < l->n_inputs; k++) {
            if (l->inputs[k] != index)
                continue;
            if (n < max)
                out[n] = i;
            n++;
            break;
        }
    }
    return n;
}
