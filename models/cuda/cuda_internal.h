/* The CUDA backend's state, shared by its .cu files (CUDA C++). One stream
 * carries all work, so a step is one ordered sequence that a CUDA graph can
 * capture. Every CUDA, cuDNN and cuBLASLt call is checked through CUDA_TRY,
 * CUDNN_TRY and CUBLAS_TRY: on failure the operation returns -1 and
 * cuda_error() says which call failed where (file, line, the library's own
 * message) and for which layer, shape and precision. */
#ifndef ROOFLINE_CUDA_INTERNAL_H
#define ROOFLINE_CUDA_INTERNAL_H

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <stdint.h>

extern "C" {
#include "../backend.h"
#include "../memplan.h"
}
#include "algo_cache.h"
#include "cuda_backend.h"
#include "cuda_plan.h"
#include "cuda_traffic.h"
#include "loss_scale.h"

enum { CUDA_ERR_LEN = 640, CUDA_NO_LAYER = -100 };

/* One engine configuration of cuDNN's graph API finalized into an execution
 * plan for a convolution pass (cuda_conv_graph.cu). */
enum { CONV_GRAPH_MAX_OFFERED = 32 };
struct conv_graph_plan {
    cudnnBackendDescriptor_t config, plan; /* NULL: none */
    int engine;                  /* the engine's global index */
    int config_rank;             /* its place in heuristics mode A's list */
    bool tensor_core;            /* the engine's TENSOR_CORE note */
    int64_t workspace;           /* bytes the plan needs */
};

/* A convolution pass on the graph API: its operation graph (x, w, y in the
 * forward's roles; backward-data adds to the input gradient where the step
 * does; a forward with bias under ReLU may carry both in its epilogue), the
 * chosen plan, and the variant pack of the pointers last run. */
struct conv_graph {
    /* x, w, y, and for bias_relu the bias, the convolution's and the biased
     * sums (virtual: in no buffer) */
    cudnnBackendDescriptor_t tensors[6], conv, op, graph;
    cudnnBackendDescriptor_t pointwise[2], epilogue[2]; /* bias_relu: add, then ReLU */
    conv_graph_plan chosen;
    bool owns;                   /* false: descriptors and plan are another layer's */
    int pass;                    /* 0 fwd, 1 bwd_data, 2 bwd_filter */
    bool accumulates;
    bool bias_relu;              /* the forward's output is relu(conv + bias) */
    cudnnBackendDescriptor_t pack;
    void *packed[5];             /* x, w, y, bias, workspace as packed */
    /* backward-data run with the other beta (a layer check's call, not the
     * step's): the same engine's plan for it, built at the first such call */
    conv_graph *flipped;
};

/* A convolution's cuDNN state: descriptors and, per pass, what was chosen
 * once for its shape (cuda_conv_choose.cu): a cuDNN algorithm or, for
 * depthwise layers, the own kernels (cuda_depthwise.cu); for a forward with
 * bias under ReLU, maybe cuDNN's fused conv+bias+ReLU. */
struct cuda_conv {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv[3];   /* fwd, bwd_data, bwd_weights: own math type */
    conv_pass_choice choice[3];
    /* the choices were read from --algo-cache, not run by this process's
     * search: a workspace query refusing one is a stale row, not Find's */
    bool from_cache;
    /* conv_shape.bias_relu only (else NULL): the bias (1, K, 1, 1) and the
     * ReLU of cuDNN's fused call */
    cudnnTensorDescriptor_t bias;
    cudnnActivationDescriptor_t relu;
    conv_graph graph[3];         /* where choice[p].graph: the pass's graph-API plan */
};

/* A fully connected layer's cuBLASLt state (models/cuda/cuda_fc.cu). */
struct cuda_fc {
    cublasLtMatmulDesc_t desc[3];            /* fwd, bwd_data, bwd_weights */
    cublasLtMatrixLayout_t a[3], b[3], c[3];
    cublasLtMatmulAlgo_t algo[3];
    size_t workspace[3];                     /* what each GEMM is given */
    bool accumulate_desc;                    /* bwd_data's C layout also serves beta = 1 */
};

struct cuda_layer {
    void *out;            /* activation, elem type and layout (maybe the owner's buffer) */
    void *grad;           /* gradient of out (a slab), NULL where none is needed */
    /* parameters: fp32 master (device layout), the copy computed with (the
     * master itself without a master copy), gradient and momentum */
    float *w, *bias;
    void *w_copy, *bias_copy;
    void *dw, *dbias;     /* elem type; batch norm: fp32 (d-gamma, d-beta) */
    float *vw, *vbias;
    float *mean, *rstd, *run_mean, *run_var; /* batch norm */
    uint8_t *mask;        /* max pool: window index of the max; dropout: keep */
    cuda_conv *conv;
    cuda_fc *fc;
};

/* One parameter tensor of the fused SGD update. */
struct sgd_tensor {
    float *master;
    const void *grad;
    float *momentum;
    void *copy;           /* NULL: none */
    int grad_elem, copy_elem;
    int64_t n;
};

/* A slice of at most SGD_CHUNK elements of one tensor: one thread block. */
struct sgd_chunk {
    int tensor;
    int64_t start, len;
};
enum { SGD_CHUNK = 16384 };

struct backend {
    const network *net;
    backend_config cfg;
    precision_plan pp;
    mem_plan plan;
    layer_fusion *fusion;
    bool *bias_in_call;          /* per layer: a conv's or fc's bias (and ReLU) added in the
                                    library's call: an fc's in cuBLASLt's epilogue (chosen
                                    by cuda_fc_setup), a conv's in cuDNN's fused
                                    conv+bias+ReLU (by cuda_conv_choose) */
    cuda_layer *layers;
    void **buffers;              /* the memory plan's: activations, gradients, workspaces */
    void *arena;                 /* the memory plan's arena, of arena_bytes */
    int64_t arena_bytes;
    void *input;                 /* the batch in elem type and device layout */
    int32_t *labels;
    float *staging;              /* fp32 chunk for host transfers of fp16/bf16 buffers */
    int64_t staging_elems;       /* at most CUDA_STAGING_ELEMS */
    float *loss_each;            /* per image */
    float *loss_dev;             /* the batch mean */
    float *loss_host;            /* pinned: read after the step's sync */
    loss_scale_state *scale_dev; /* scale 1 and never updated without loss scaling */
    float *grad_scale;           /* device: the scale the last loss multiplied gradients by */
    uint64_t *forward_count;     /* device: dropout masks differ from step to step */
    float *bn_partials;          /* batch norm partial sums, shared by every layer */
    int64_t bn_partials_elems;
    /* at plan time only: cuDNN's search, the depthwise trials and every pass
     * they run share one workspace; after it, each operation has its own,
     * a region of the arena (cuda_workspace_of) */
    void *search_workspace;
    size_t search_workspace_bytes;
    size_t workspace_bytes;      /* the largest one operation's workspace */
    int64_t workspace_added;     /* bytes the workspaces added to the arena */
    sgd_tensor *sgd_tensors;     /* device tables of the fused update */
    sgd_chunk *sgd_chunks;
    int n_sgd_tensors, n_sgd_chunks;
    int sm_count;
    int64_t device_bytes;        /* everything cudaMalloc'd for this backend */
    void **allocs;               /* every allocation, freed by destroy */
    int n_allocs, cap_allocs;
    cudaStream_t stream;
    cudnnHandle_t dnn;
    cublasLtHandle_t lt;
    cudaEvent_t timer[2];
    cudaGraph_t graph;
    cudaGraphExec_t graph_exec;
    bool capturing;
    long profile_step;           /* ROOFLINE_PROFILE_STEP: the step run under the
                                    profiler (cuda_profile.cu), 0: none */
    long steps_begun;            /* steps started so far (first layer's forward) */
    bool profiling;              /* between cudaProfilerStart and Stop */
    int current_layer;           /* for error messages: a layer, STEP_LOSS, STEP_ALL_LAYERS
                                    or CUDA_NO_LAYER */
    pass current_pass;
    char choices[2048];         /* backend_stats.choices: depthwise, conv-bias, algorithms */
    /* cfg.algo_cache, at plan time: its rows and what keys them here */
    algo_cache algos;
    algo_context algo_ctx;
    char device_name[256];
    int shapes_cached, shapes_searched;
    char algo_cache_unsaved[CUDA_ERR_LEN]; /* why the searched choices were not written */
    int own_failures;            /* own depthwise launches that failed at plan time */
    char own_failure[CUDA_ERR_LEN]; /* the first one's error */
    int graph_failures;          /* passes whose graph-API plan failed to build (--conv-api
                                    auto, or a same-shape layer's plan rebuilt): the legacy
                                    call runs them */
    char graph_failure[CUDA_ERR_LEN]; /* the first one's error */
    int graph_rank_moves;        /* graph-API plans rebuilt (--algo-cache, a same-shape
                                    layer) from their engine's first configuration: the
                                    heuristics no longer ranked the timed one where it was */
    int fused_refusals;          /* bias_relu shapes whose fused forward cuDNN refused */
    char fused_refusal[160];     /* the first one's layer and cuDNN's status */
    int graph_fused_none;        /* bias_relu shapes with no graph-API conv+bias+ReLU plan */
    char graph_fused_why[CUDA_ERR_LEN]; /* the first one's error or account */
    char err[CUDA_ERR_LEN];
};

/* Records the failure of `call` at file:line with the library's message and
 * the layer being run; returns -1. */
int cuda_fail_call(backend *b, const char *file, int line, const char *call, const char *what);
/* ... for a cuDNN status, with cuDNN 9's own account of it where it gives one
 * (a bare NOT_SUPPORTED does not say what it objected to) */
int cudnn_fail_call(backend *b, const char *file, int line, const char *call, cudnnStatus_t st);
int cuda_fail(backend *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cuDNN's name for the storage type of the activations and weights (both of
 * its APIs: the legacy descriptors and the graph API's tensors) */
cudnnDataType_t cudnn_data_type(elem_type e);

#define CUDA_TRY(b, call)                                                                     \
    do {                                                                                      \
        cudaError_t err_ = (call);                                                            \
        if (err_ != cudaSuccess)                                                              \
            return cuda_fail_call((b), __FILE__, __LINE__, #call, cudaGetErrorString(err_));  \
    } while (0)

#define CUDNN_TRY(b, call)                                                                    \
    do {                                                                                      \
        cudnnStatus_t st_ = (call);                                                           \
        if (st_ != CUDNN_STATUS_SUCCESS)                                                      \
            return cudnn_fail_call((b), __FILE__, __LINE__, #call, st_);                      \
    } while (0)

#define CUBLAS_TRY(b, call)                                                                   \
    do {                                                                                      \
        cublasStatus_t st_ = (call);                                                          \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                                     \
            return cuda_fail_call((b), __FILE__, __LINE__, #call, cublasLtGetStatusString(st_)); \
    } while (0)

/* A kernel launch: the configuration error, if any, is known at once. */
#define LAUNCH_TRY(b) CUDA_TRY((b), cudaGetLastError())

/* Allocates and zeroes `bytes` of device memory, counted in device_bytes. */
int cuda_alloc(backend *b, void **p, size_t bytes, const char *what);
/* Frees an allocation of cuda_alloc's, uncounting it. */
int cuda_release(backend *b, void *p, size_t bytes);

/* The workspace of layer i's forward or backward (both backward passes
 * share it): a region of the arena that lives while that operation runs
 * (the memory plan's scratch), or the search workspace at plan time. */
struct cuda_workspace {
    void *ptr;
    size_t bytes;
};
cuda_workspace cuda_workspace_of(const backend *b, int layer, bool backward);

/* The tensor feeding input k of layer i (the batch for GRAPH_INPUT). */
const void *cuda_input(const backend *b, int layer, int k);
void *cuda_input_grad(const backend *b, int layer, int k);
int64_t cuda_elems(const backend *b, int layer);

/* Elementwise kernels (cuda_elementwise.cu). */
int cuda_convert(backend *b, void *dst, elem_type dst_elem, const void *src, elem_type src_elem,
                 int64_t n);
int cuda_fill(backend *b, void *dst, elem_type elem, float value, int64_t n);
int cuda_pointwise_forward(backend *b, int layer);
int cuda_pointwise_backward(backend *b, int layer, const bool accumulate[LAYER_MAX_INPUTS]);
/* y = act(y + bias[c]) over a layer's output, in place (conv and fc bias). */
int cuda_bias_act(backend *b, int layer, act_kind act);
/* Per-channel sum of a gradient (conv bias gradient), into fp32 or elem. */
int cuda_bias_grad(backend *b, int layer, void *dbias, elem_type dbias_elem);
/* The backward of ReLU/ReLU6 `layer` fused with the bias gradient of the
 * conv or fc under it (layer_fusion.sums_bias_of), in one pass: the input
 * gradient written (not added to) and summed per channel as it is. */
int cuda_act_backward_bias(backend *b, int layer);
int cuda_step_counter(backend *b);

/* Batch norm (cuda_norm.cu). */
int cuda_bn_forward(backend *b, int layer);
int cuda_bn_apply_add(backend *b, int add_layer);
int cuda_bn_backward_weights(backend *b, int layer);
int cuda_bn_backward_data(backend *b, int layer, bool accumulate);
int64_t cuda_bn_partials_needed(const backend *b);

/* Pooling (cuda_pool.cu). */
int cuda_pool_forward(backend *b, int layer);
int cuda_pool_backward(backend *b, int layer, bool accumulate);

/* Convolutions (cuda_conv.cu). */
int cuda_conv_setup(backend *b, int layer);
int cuda_conv_choose(backend *b, int layer, int same_as);
/* backend_stats.choices on the depthwise layers and the forwards with bias
 * under ReLU ("" if none). */
void cuda_conv_describe_choices(const backend *b, char *buf, size_t len);
void cuda_conv_destroy(cuda_conv *c);
int cuda_conv_forward(backend *b, int layer);
int cuda_conv_backward_data(backend *b, int layer, bool accumulate);
int cuda_conv_backward_weights(backend *b, int layer);
/* Pass p (0 fwd, 1 bwd_data, 2 bwd_filter) alone, without the conv bias: on
 * the own depthwise kernels or on cuDNN's chosen algorithm; bwd_data adds to
 * the input gradient where `accumulate`, the others overwrite. */
int cuda_conv_run_pass(backend *b, int layer, int p, bool own, bool accumulate);
/* cuDNN's fused conv+bias+ReLU forward of a bias_relu layer with `algo` and
 * the workspace at ws: cuDNN's status (the plan-time trial takes a refusal
 * as an answer; the step fails on it). */
cudnnStatus_t cuda_conv_fused_forward(backend *b, int layer, int algo, void *ws, size_t bytes);
/* The same where a refusal is a failure (the step, the trial's timed runs):
 * 0, or -1 with cuDNN's status in the backend's error. */
int cuda_conv_run_fused(backend *b, int layer, int algo, void *ws, size_t bytes);
void cuda_conv_name(const backend *b, int layer, pass phase, char *buf, size_t len);

/* Convolution passes on cuDNN's graph API (cuda_conv_graph.cu). build: the
 * operation graph of layer i's pass p, finalized; bias_relu (a forward
 * whose layer has a bias under ReLU): the bias added and the ReLU applied
 * in the convolution's epilogue, in fp32 before the output is rounded to
 * its type. plans: up to max of the
 * engine configurations heuristics mode A offers for it (*offered of them,
 * at most CONV_GRAPH_MAX_OFFERED) that the precision allows, that cuDNN
 * builds and that need at most max_workspace bytes, as execution plans,
 * in the heuristics' order; only engine only_engine's where it is >= 0, and
 * none begun once budget_s seconds went into building them (< 0: no
 * budget) and one is built. plan_again: the plan of engine `engine` (at
 * config_rank where it still is there) into g->chosen, or -1 with why.
 * run: the chosen plan on the layer's buffers; bwd_data's accumulate must
 * be the graph's, or the same engine's plan for the other is built (once,
 * not under capture). */
int cuda_conv_graph_build(backend *b, int layer, int p, bool accumulates, bool bias_relu,
                          conv_graph *g);
int cuda_conv_graph_plans(backend *b, conv_graph *g, int64_t max_workspace, int only_engine,
                          double budget_s, conv_graph_plan *out, int max, int *n, int *offered);
int cuda_conv_graph_plan_again(backend *b, conv_graph *g, int engine, int config_rank,
                               int64_t max_workspace);
int cuda_conv_graph_run(backend *b, int layer, conv_graph *g, bool accumulate, void *ws,
                        size_t ws_bytes);
void cuda_conv_graph_plan_destroy(conv_graph_plan *c);
void cuda_conv_graph_destroy(conv_graph *g);

/* Depthwise convolution on own kernels (cuda_depthwise.cu), for layers that
 * depthwise_own_fits: the passes of cuda_conv_*, with cuDNN's tensors; the
 * filter gradient's partial sums take cuda_dw_filter_workspace bytes of the
 * backward's workspace. */
int cuda_dw_forward(backend *b, int layer);
int cuda_dw_backward_data(backend *b, int layer, bool accumulate);
int cuda_dw_backward_weights(backend *b, int layer); /* no conv bias: the caller's */
size_t cuda_dw_filter_workspace(const backend *b, int layer);
/* The plan-time trials of cuda_conv_choose.cu (the own depthwise kernels,
 * cuDNN's fused conv+bias+ReLU, each against cuDNN's way): n elements filled
 * with values in [-1, 1], and two results compared, max |got - want| / max
 * |want| (maxima: 2 device words of scratch). In cuda_depthwise.cu, beside
 * their kernels. */
int cuda_trial_fill_random(backend *b, void *p, int64_t n, uint32_t seed);
int cuda_trial_compare(backend *b, const void *got, const void *want, int64_t n,
                       unsigned *maxima, double *relative);
/* The checksum of the own kernels' source as this program was built with
 * them (the Makefile's OWN_DEPTHWISE_SRCS): part of an algorithm cache key. */
uint32_t cuda_depthwise_source_id(void);

/* Fully connected (cuda_fc.cu). Setup chooses the GEMMs' algorithms within
 * the search workspace (at most CUDA_FC_WORKSPACE) and records what each
 * needs in workspace[]. */
int cuda_fc_setup(backend *b, int layer);
void cuda_fc_destroy(cuda_fc *f);
int cuda_fc_forward(backend *b, int layer);
int cuda_fc_backward_data(backend *b, int layer, bool accumulate);
int cuda_fc_backward_weights(backend *b, int layer);

/* Loss and the fused update (cuda_loss_sgd.cu). */
int cuda_sgd_setup(backend *b);
int cuda_loss_run(backend *b);
int cuda_sgd_run(backend *b, const sgd_params *sgd);

/* One step under Nsight Compute's --profile-from-start off (cuda_profile.cu):
 * setup reads ROOFLINE_PROFILE_STEP; begin at the first layer's forward, end
 * after the update, or both around a CUDA graph's replay. */
int cuda_profile_setup(backend *b);
int cuda_profile_step_begin(backend *b);
int cuda_profile_step_end(backend *b);

/* Launch geometry: a grid-stride loop over n elements on this GPU. */
static inline unsigned cuda_blocks(const backend *b, int64_t n, int threads)
{
    return cuda_grid_blocks(n, threads, b->sm_count);
}

#endif
