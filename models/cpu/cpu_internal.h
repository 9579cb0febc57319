/* The CPU backend's state, shared by its files. oneDNN does the convolutions
 * and fully connected layers (cpu_dnnl.c); the memory-bound layers are plain
 * OpenMP loops over NCHW or over oneDNN's channel-blocked layout where the
 * convolutions around them take it (cpu_layer.block, cpu_blocking.c). Every
 * oneDNN call goes through DNNL_CHECK. */
#ifndef ROOFLINE_CPU_INTERNAL_H
#define ROOFLINE_CPU_INTERNAL_H

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <stdint.h>
#include <stdio.h>

#include "../backend.h"
#include "../cost.h"
#include "../memplan.h"

enum { DNNL_IMPL_LEN = 40 };

typedef struct {
    dnnl_primitive_t fwd, bwd_data, bwd_weights;
    char impl[PASS_UPDATE][DNNL_IMPL_LEN];  /* oneDNN's implementation, per pass */
    /* on the backend's plain tensors */
    dnnl_memory_t src, weights, bias, dst;
    dnnl_memory_t diff_dst, diff_src, diff_weights, diff_bias;
    /* in the layouts the primitives chose (NULL where that is the plain one):
     * activations on the shared scratch buffers, weights kept per layer */
    dnnl_memory_t src_blk, weights_blk, dst_blk;                  /* forward */
    dnnl_memory_t src_blk_w, diff_dst_blk, diff_weights_blk;      /* backward-weights */
    dnnl_memory_t diff_dst_blk_d, diff_src_blk, weights_blk_d;    /* backward-data */
    bool diff_dst_shared;  /* backward-data takes backward-weights' diff_dst layout */
    bool plain_weights_d;  /* backward-data takes the plain weights, forward blocked ones */
    dnnl_primitive_t src_in, weights_in, dst_out;                 /* reorders */
    dnnl_primitive_t src_in_w, diff_dst_in, diff_weights_out;
    dnnl_primitive_t diff_dst_in_d, diff_src_out, diff_src_add, weights_in_d;
    /* a convolution whose forward and backward-weights chose one layout for
     * the weights and their gradient, with nothing padded, keeps w, dw and
     * vw in it (the update is elementwise): no reorder of them each step.
     * read and write convert through weights_plain (handle set per call). */
    bool kept_weights;
    dnnl_memory_t weights_plain;
    dnnl_primitive_t weights_to_plain, weights_from_plain;
    uint64_t weights_layout;  /* a digest of that layout; 0: plain OIHW */
    /* between cpu_dnnl_plan and cpu_dnnl_bind: the primitives' descriptors,
     * and the blocks (8, 16; 0: another layout) of the input and output
     * layouts a convolution's forward chose */
    dnnl_primitive_desc_t pd[PASS_UPDATE];
    int chosen_src_block, chosen_dst_block;
} dnnl_layer;

typedef struct {
    float *out, *grad;              /* N x C x H x W */
    /* channels per block of out and grad: 0, NCHW; 8 or 16, oneDNN's nChw8c
     * or nChw16c (C a multiple of it, nothing padded), where the layer can
     * write that layout and its consumers read it (cpu_blocking.c) */
    int block;
    float *w, *dw, *vw;             /* weights, their gradient and momentum */
    float *bias, *dbias, *vbias;
    float *mean, *rstd;             /* batch norm: this batch's statistics */
    float *scale, *shift;           /* and the per channel factors forward normalized by */
    /* a batch norm or add whose output a ReLU or ReLU6 in place alone reads
     * applies it itself, and starts its backward from that activation's
     * gradient (cpu_norm.c, cpu_pointwise.c): act_layer is the activation,
     * fused_into (on the activation) the layer; -1 where nothing is fused */
    int act_layer, fused_into;
    float *run_mean, *run_var;
    int32_t *argmax;                /* max pool: index in the input plane */
    uint8_t *keep;                  /* dropout mask */
    dnnl_layer dnnl;
} cpu_layer;

/* Buffers shared by lifetime (models/memplan.c): ReLU in place, gradients in
 * slabs. The CPU backend passes no gradient on in place. */
extern const memplan_rules cpu_memplan_rules;

struct backend {
    const network *net;
    backend_config cfg;
    cpu_layer *layers;
    mem_plan plan;
    float **buffers;                /* plan.n_buffers activations and gradients, in arena */
    float *arena;                   /* the memory plan's arena (plan.arena_elems floats) */
    float *input;
    int32_t *labels;
    float *scratch;                 /* a gradient to be added into another */
    void *blk[3];                   /* blocked activations and weight gradients (cpu_dnnl.c) */
    size_t blk_bytes[3];
    int diff_dst_blk_layer;         /* whose blocked diff_dst blk[1] holds, or -1 */
    /* batch norms over blocked inputs (cpu_norm.c): per image and channel
     * partial sums, two arrays of batch x C doubles; per channel coefficients
     * of backward, 3 x C floats (k_dy, k_xhat, k_const) */
    double *bn_partials;
    float *bn_coef;
    layout_work reorders;           /* since the trace last took them (cpu_dnnl.c) */
    uint64_t forward_count;         /* dropout masks differ from step to step */
    float loss;                     /* of the last cpu_loss */
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    char err[320];
};

int cpu_fail(backend *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define DNNL_CHECK(b, call)                                                                   \
    do {                                                                                      \
        dnnl_status_t st_ = (call);                                                           \
        if (st_ != dnnl_success)                                                              \
            return cpu_fail((b), "%s:%d: oneDNN error in %s: %s", __FILE__, __LINE__, #call,  \
                            dnnl_status2str(st_));                                            \
    } while (0)

/* The tensor feeding input k of layer i (the batch's images for GRAPH_INPUT). */
const float *cpu_input(const backend *b, int layer, int k);
/* dst = src, or dst += src */
void cpu_store(float *dst, const float *src, int64_t n, bool accumulate);

/* NCHW <-> nChw{block}c of `images` x `channels` x `plane` floats (cpu_layout.c) */
void cpu_layout_copy(float *dst, const float *src, int images, int channels, int64_t plane,
                     int block, bool to_blocked);

/* backend_ops.grad_storage (cpu_grad_storage.c) */
int cpu_grad_storage(backend *b, int layer, buffer_kind kind, grad_memory *out);

/* a convolution's or fully connected layer's primitives, then, once every
 * layer's block is known, its memory objects and reorders */
int cpu_dnnl_plan(backend *b, int layer);
int cpu_dnnl_bind(backend *b, int layer);
void cpu_dnnl_destroy(dnnl_layer *d);
int cpu_dnnl_forward(backend *b, int layer);
int cpu_dnnl_backward_data(backend *b, int layer, bool accumulate);
int cpu_dnnl_backward_weights(backend *b, int layer);
void cpu_dnnl_take_reorders(backend *b, layout_work *out, char *kernel, size_t len);
int cpu_dnnl_copy_weights(backend *b, int layer, bool grad, float *plain, bool to_plain);

int cpu_bn_forward(backend *b, int layer);
int cpu_bn_backward_weights(backend *b, int layer);
int cpu_bn_backward_data(backend *b, int layer, bool accumulate);

int cpu_pointwise_forward(backend *b, int layer);
int cpu_pointwise_backward(backend *b, int layer, const bool accumulate[LAYER_MAX_INPUTS]);

int cpu_pool_forward(backend *b, int layer);
int cpu_pool_backward(backend *b, int layer, bool accumulate);

int cpu_loss(backend *b);
int cpu_read_loss(backend *b, float *loss);
int cpu_update(backend *b, int layer, const sgd_params *sgd);

#endif
