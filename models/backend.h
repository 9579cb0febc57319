/* The table of operations a training backend implements (CPU: models/cpu,
 * GPU: models/cuda). The step driver (step.c) walks the graph and calls these
 * per layer, so that CPU and CUDA share one driver and per-phase timing and the
 * DDP hook live in one place. Every operation returns 0 on success; on failure
 * error() says what happened. */
#ifndef ROOFLINE_BACKEND_H
#define ROOFLINE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cost.h"
#include "graph.h"

/* The host-visible buffers of a layer. For batch norm WEIGHT is gamma and BIAS
 * beta; for conv and fc WEIGHT is laid out as PyTorch's (out, in/groups, k, k).
 * Backends save memory as PyTorch does: an activation may overwrite its input
 * (in place), and an OUTPUT_GRAD is only defined from the backward of its
 * first consumer to the backward of its own layer. */
typedef enum {
    BUF_OUTPUT,        /* N x C x H x W, NCHW */
    BUF_OUTPUT_GRAD,   /* gradient of the loss with respect to BUF_OUTPUT */
    BUF_WEIGHT,
    BUF_WEIGHT_GRAD,
    BUF_BIAS,
    BUF_BIAS_GRAD,
    BUF_RUNNING_MEAN,  /* batch norm buffers */
    BUF_RUNNING_VAR,
    BUF_KIND_COUNT
} buffer_kind;

typedef struct {
    float lr, momentum, weight_decay;
} sgd_params;

typedef struct {
    int batch;
    int threads;
    uint64_t seed;      /* dropout masks */
} backend_config;

typedef struct backend backend;

typedef struct {
    const char *name;
    /* NULL on failure, with the reason in err (e.g. the memory a batch needs). */
    backend *(*create)(const network *net, const backend_config *cfg, char *err, size_t err_len);
    void (*destroy)(backend *b);
    const char *(*error)(const backend *b);

    int (*read)(backend *b, int layer, buffer_kind kind, float *dst);
    int (*write)(backend *b, int layer, buffer_kind kind, const float *src);
    /* images N x 3 x H x W fp32, labels in [0, classes) */
    int (*set_batch)(backend *b, const float *images, const int32_t *labels);

    int (*forward)(backend *b, int layer);
    /* mean softmax cross-entropy of the last layer's output; also writes the
     * logits' gradient */
    int (*loss)(backend *b, float *loss);
    /* gradient into the inputs' BUF_OUTPUT_GRAD: added to what is there where
     * accumulate[k] is set (a tensor with several consumers), else written */
    int (*backward_data)(backend *b, int layer, const bool accumulate[LAYER_MAX_INPUTS]);
    int (*backward_weights)(backend *b, int layer);
    int (*update)(backend *b, int layer, const sgd_params *sgd);
    /* waits for all queued work (timing boundaries) */
    int (*sync)(backend *b);
    /* What runs for a layer's pass (layer -1: the loss), for the trace's
     * kernel column: the library's implementation or the backend's own loop. */
    void (*kernel_name)(const backend *b, int layer, pass phase, char *buf, size_t len);
} backend_ops;

/* Elements of a buffer of layer `index` at batch size `batch` (0: none). */
int64_t backend_buffer_elems(const network *net, int index, int batch, buffer_kind kind);

#endif
