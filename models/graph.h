/* The layer graph: a network is an array of layers in topological order, each
 * naming its inputs by index. Shapes are inferred as the graph is built, for
 * one image at the resolution the network was built for; the batch size only
 * enters in cost.c and the backends. */
#ifndef ROOFLINE_GRAPH_H
#define ROOFLINE_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

enum {
    GRAPH_INPUT = -1,       /* "input" index meaning the network's input image */
    LAYER_MAX_INPUTS = 2,   /* a residual add has two */
    LAYER_NAME_LEN = 48,
    NET_ERR_LEN = 200,
};

typedef enum {
    LAYER_CONV,     /* 2-D convolution with groups (depthwise when groups == channels) */
    LAYER_BN,       /* batch norm, training mode */
    LAYER_RELU,
    LAYER_RELU6,
    LAYER_MAXPOOL,
    LAYER_AVGPOOL,  /* adaptive average pool to pool_out x pool_out (global when 1) */
    LAYER_FC,       /* fully connected over the flattened C*H*W input */
    LAYER_ADD,      /* residual add of two tensors of one shape */
    LAYER_DROPOUT,
    LAYER_TYPE_COUNT
} layer_type;

typedef struct {
    int c, h, w;
} tensor_shape;

typedef struct {
    layer_type type;
    char name[LAYER_NAME_LEN];   /* torchvision's module path where one exists */
    int n_inputs;
    int inputs[LAYER_MAX_INPUTS];

    int out_channels;            /* conv, fc */
    int kernel, stride, pad;     /* conv, maxpool */
    int groups;                  /* conv */
    bool has_bias;               /* conv, fc */
    int pool_out;                /* avgpool */
    float drop_p;                /* dropout */

    tensor_shape in_shape;       /* of inputs[0] */
    tensor_shape out_shape;
    int64_t params;
    /* Autograd's requires_grad: false where no parameter lies upstream, so
     * nothing consumes this layer's input gradient (the first conv). */
    bool computes_input_grad;
} layer;

typedef struct {
    char model[32];
    int res, classes;
    tensor_shape input;
    int n_layers, cap;
    layer *layers;
    char prefix[LAYER_NAME_LEN]; /* prepended to layer names while building */
    int status;                  /* net_status of the first failure while building */
    char err[NET_ERR_LEN];
} network;

typedef enum {
    NET_OK = 0,
    NET_ENOMEM,
    NET_TOO_SMALL,   /* some layer's output would have no pixels */
    NET_BAD_ARG,
} net_status;

void net_init(network *net, const char *model, int res, int classes, tensor_shape input);
void net_free(network *net);
void net_set_prefix(network *net, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Builders: each appends one layer fed by `in` (a layer index or GRAPH_INPUT)
 * and returns its index. After a failure they do nothing and return the last
 * valid index; net->status and net->err tell what went wrong. */
int net_conv(network *net, const char *name, int in, int out_channels, int kernel,
             int stride, int pad, int groups, bool bias);
int net_bn(network *net, const char *name, int in);
int net_relu(network *net, const char *name, int in);
int net_relu6(network *net, const char *name, int in);
int net_maxpool(network *net, const char *name, int in, int kernel, int stride, int pad);
int net_avgpool(network *net, const char *name, int in, int out_size);
int net_fc(network *net, const char *name, int in, int out_features);
int net_add(network *net, const char *name, int a, int b);
int net_dropout(network *net, const char *name, int in, float p);

const char *layer_type_name(layer_type type);
tensor_shape net_tensor_shape(const network *net, int index); /* GRAPH_INPUT allowed */
int64_t shape_elems(tensor_shape s);
int64_t net_params(const network *net);
int net_count_layers(const network *net, layer_type type);
/* Consumers of tensor `index` (a layer output or GRAPH_INPUT): fills up to
 * `max` layer indices and returns how many there are. */
int net_consumers(const network *net, int index, int *out, int max);

#endif
