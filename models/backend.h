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
#include "precision.h"

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

/* cuda: depthwise convolutions on cuDNN, on the backend's own kernels, or
 * (auto) per pass whichever was faster on the layer's shape at plan time
 * once its result matched cuDNN's. */
typedef enum { DEPTHWISE_AUTO, DEPTHWISE_CUDNN, DEPTHWISE_OWN } depthwise_choice;
/* "auto", "cudnn", "own" (bin/train's --depthwise words) */
const char *depthwise_choice_name(depthwise_choice d);

/* cuda: who adds a convolution's bias and applies the ReLU fused into it in
 * the forward: cuDNN, in the convolution's own call (its fused
 * conv+bias+ReLU), the backend's own kernel after cuDNN's convolution, or
 * (auto) per shape whichever was faster at plan time once their results
 * agreed. */
typedef enum { CONV_BIAS_AUTO, CONV_BIAS_CUDNN, CONV_BIAS_OWN } conv_bias_choice;
/* "auto", "cudnn", "own" (bin/train's --conv-bias words) */
const char *conv_bias_choice_name(conv_bias_choice c);

/* cuda: which of cuDNN's interfaces runs a convolution pass (depthwise ones
 * aside): the legacy calls (cudnnConvolutionForward ..., the algorithm
 * cudnnFind* chose), the graph API (the engine configuration that was
 * fastest of those its heuristics rank first), or (auto) per pass whichever
 * was faster at plan time once the two results agreed. */
typedef enum { CONV_API_AUTO, CONV_API_LEGACY, CONV_API_GRAPH } conv_api_choice;
/* "auto", "legacy", "graph" (bin/train's --conv-api words) */
const char *conv_api_choice_name(conv_api_choice c);

typedef struct {
    int batch;
    int threads;
    uint64_t seed;              /* dropout masks */
    precision prec;             /* what the backend computes in (cpu: fp32 only) */
    int device;                 /* GPU index (cuda) */
    int64_t workspace_limit;    /* bytes of workspace a convolution algorithm may need (cuda;
                                   0: default) */
    /* every layer its own kernels or loops (to measure what fusion gains, and
     * to test layers alone); cuda: and its own buffers, laid out as the CPU
     * backend lays them */
    bool no_fusion;
    float initial_loss_scale;   /* fp16 (cuda; 0: 65536, as PyTorch's GradScaler) */
    depthwise_choice depthwise; /* cuda: who runs depthwise convolutions */
    conv_bias_choice conv_bias; /* cuda: who adds a conv's bias (and ReLU) in the forward */
    conv_api_choice conv_api;   /* cuda: cuDNN's legacy calls or its graph API */
    /* cuda: a file of convolution algorithms chosen by earlier processes, reused
     * where its key matches and extended with what this one searches
     * (models/cuda/algo_cache.h); NULL: search every shape */
    const char *algo_cache;
} backend_config;

/* What a backend reports of a run (backend_ops.stats). */
typedef struct {
    int64_t device_bytes;       /* device memory the backend holds for the steps (0: host
                                   only): constant once created, so also its peak; not
                                   the CUDA context, the libraries' own memory or the
                                   plan-time search workspace (freed before any step) */
    int64_t device_used_bytes;  /* the device's memory in use by every process (its
                                   total less its free memory; 0: host only) */
    int64_t workspace_bytes;    /* of which what the libraries' workspaces add (cuda: to the
                                   arena, where each operation's lives while it runs) */
    int64_t largest_workspace_bytes; /* the largest one operation's workspace */
    int64_t skipped_steps;      /* fp16: steps skipped for a non-finite gradient */
    float loss_scale;           /* fp16: the current dynamic loss scale (else 1) */
    char choices[2048];         /* what the backend chose at plan time, worth a line
                                   ("" if nothing): cuda, the depthwise kernels,
                                   the conv-bias forwards, the algorithm cache */
} backend_stats;

/* Layout conversions an operation ran around its kernel (the CPU backend's
 * oneDNN reorders between its plain NCHW tensors and the blocked layouts of
 * oneDNN's kernels): how many, their time and the bytes they read and wrote. */
typedef struct {
    int count;
    int64_t ns, read_bytes, written_bytes;
} layout_work;

/* Where a layer's gradient lives, for data-parallel training (models/ddp):
 * in the backend's own layout and element type (a sum over ranks does not
 * care about the layout, as long as every rank has the same one: DDP
 * compares `layout` across ranks). The codes are those of
 * models/ddp/ddp_pack.h. */
typedef enum { GRAD_F32 = 0, GRAD_F16 = 1, GRAD_BF16 = 2 } grad_elem;
typedef struct {
    void *ptr;            /* host memory, or device memory ordered by ops.stream */
    int64_t elems;        /* backend_buffer_elems(net, layer, batch, kind) */
    grad_elem elem;
    bool device;
    uint64_t layout;      /* a digest of the element order; 0: the plain one */
} grad_memory;

typedef struct backend backend;

/* The operations of a training step. Operations may run asynchronously on a
 * device: `sync` waits for all of them, and values a step produces (the loss)
 * are read after it. Entries marked optional may be NULL. */
typedef struct {
    const char *name;
    /* NULL on failure, with the reason in err (e.g. the memory a batch needs). */
    backend *(*create)(const network *net, const backend_config *cfg, char *err, size_t err_len);
    /* optional: 1 where this machine cannot run cfg's configuration at all
     * (a GPU without the precision, a batch larger than its memory holds),
     * with the reason in why; 0 where it can; -1 where it cannot be asked
     * (why says why). What create would refuse first, asked before, so that
     * such a configuration is told from a failure (bin/train: exit 3). */
    int (*cannot_run)(const network *net, const backend_config *cfg, char *why, size_t why_len);
    void (*destroy)(backend *b);
    const char *(*error)(const backend *b);

    /* Host copies in the host layout (NCHW; weights as PyTorch's), fp32 and
     * unscaled whatever the backend computes in: weights are the fp32 master
     * copy, gradients divided by any loss scale. */
    int (*read)(backend *b, int layer, buffer_kind kind, float *dst);
    int (*write)(backend *b, int layer, buffer_kind kind, const float *src);
    /* images N x 3 x H x W fp32, labels in [0, classes) */
    int (*set_batch)(backend *b, const float *images, const int32_t *labels);

    int (*forward)(backend *b, int layer);
    /* mean softmax cross-entropy of the last layer's output, and the logits'
     * gradient; the value is read with read_loss after the next sync */
    int (*loss)(backend *b);
    int (*read_loss)(backend *b, float *loss);
    /* gradient into the inputs' BUF_OUTPUT_GRAD: added to what is there where
     * accumulate[k] is set (a tensor with several consumers), else written */
    int (*backward_data)(backend *b, int layer, const bool accumulate[LAYER_MAX_INPUTS]);
    int (*backward_weights)(backend *b, int layer);
    int (*update)(backend *b, int layer, const sgd_params *sgd);
    /* optional: one fused update of every layer's parameters, used instead of
     * `update` per layer (and where fp16 skips a step with a non-finite gradient) */
    int (*update_all)(backend *b, const sgd_params *sgd);
    /* waits for all queued work (timing boundaries) */
    int (*sync)(backend *b);
    /* What runs for a layer's pass (layer STEP_LOSS: the loss, STEP_ALL_LAYERS:
     * the fused update), for the trace's kernel column: the library's
     * implementation or the backend's own kernel. */
    void (*kernel_name)(const backend *b, int layer, pass phase, char *buf, size_t len);
    /* optional: the layer whose operation of the same pass also does this
     * one's work (a ReLU fused into the batch norm before it), or -1 */
    int (*fused_into)(const backend *b, int layer, pass phase);
    /* optional: the layer whose backward-data kernel also sums this conv or
     * fc's bias gradient (a ReLU in place over it), or -1: the sums' FLOPs are
     * booked on that row instead of the layer's bwd_weights */
    int (*bias_grad_by)(const backend *b, int layer);
    /* optional: the DRAM bytes that the kernels of an operation (layer and
     * phase as kernel_name's) read and write by their design, each tensor
     * once a kernel, the backend's fusions included (models/cuda/cuda_traffic.h):
     * a GPU trace's rows without counters carry them. -1 where not known:
     * the cost model's minimal bytes of the layer's pass stand. */
    int (*op_bytes)(const backend *b, int layer, pass phase, int64_t *read, int64_t *written);
    /* optional: the layout conversions of the operations since the last
     * call, then cleared; the trace gives them a row of their own (kernel
     * `kernel`, layer type "reorder") so that the operation's row holds its
     * kernel's time alone */
    void (*take_layout_work)(backend *b, layout_work *out, char *kernel, size_t len);

    /* optional: a step timed on the device's clock. timer_start before the
     * step's first operation, timer_stop after its last, timer_read after the
     * sync that follows; without them the caller times the host's clock. */
    int (*timer_start)(backend *b);
    int (*timer_stop)(backend *b);
    int (*timer_read)(backend *b, double *ms);
    /* optional: record the operations between capture_begin and capture_end
     * once (nothing runs), then run them as one unit with replay */
    int (*capture_begin)(backend *b);
    int (*capture_end)(backend *b);
    int (*replay)(backend *b);
    /* optional: memory, loss scale and skipped steps */
    int (*stats)(backend *b, backend_stats *out);

    /* optional (data-parallel training): the storage of `layer`'s
     * BUF_WEIGHT_GRAD or BUF_BIAS_GRAD, valid from create to destroy and
     * complete once the layer's backward_weights has run (on ops.stream).
     * DDP overwrites it with the average over the ranks before the update.
     * fp16 gradients stay multiplied by the loss scale: every rank has the
     * same scale, so every rank sees the same averaged gradients and all skip
     * a step together. */
    int (*grad_storage)(backend *b, int layer, buffer_kind kind, grad_memory *out);
    /* optional: the stream every operation of a step is queued on (a
     * cudaStream_t), so that DDP's communication stream can wait on an event
     * of it and the update on DDP's; NULL (or absent) for a host backend */
    void *(*stream)(backend *b);
} backend_ops;

/* backend_ops has grad_storage and stream (models/ddp uses them) */
#define BACKEND_HAS_GRAD_STORAGE 1

/* Pseudo layer indices of the operations that belong to no layer. */
enum { STEP_LOSS = -1, STEP_ALL_LAYERS = -2 };

/* Elements of a buffer of layer `index` at batch size `batch` (0: none). */
int64_t backend_buffer_elems(const network *net, int index, int batch, buffer_kind kind);

#endif
