/* The host-side decisions of the CUDA backend, in plain C so that `make test`
 * checks them without a GPU: what a precision computes in and how tensors
 * are laid out, which layers' kernels are fused, the layout permutations
 * between the host's NCHW and the device's NHWC, the distinct convolution
 * shapes whose algorithms are chosen once, and the device memory a batch
 * needs. */
#ifndef ROOFLINE_CUDA_PLAN_H
#define ROOFLINE_CUDA_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "../backend.h"
#include "../graph.h"
#include "../memplan.h"
#include "../precision.h"

typedef enum { ELEM_F32, ELEM_F16, ELEM_BF16 } elem_type;
typedef enum { LAYOUT_NCHW, LAYOUT_NHWC } act_layout;

typedef struct {
    precision prec;
    elem_type elem;       /* activations, gradients and the weights computed with */
    int elem_bytes;
    act_layout layout;    /* tensor-core precisions use NHWC (DESIGN.md §5) */
    bool tensor_cores;    /* cuDNN and cuBLASLt may use tensor cores (and TF32) */
    bool master_copy;     /* fp32 master weights beside a copy in `elem` */
    bool loss_scaling;    /* fp16: dynamic loss scale, skipped steps */
} precision_plan;

precision_plan precision_plan_of(precision p);
const char *elem_type_name(elem_type t);

/* The memory plan's rules: fused, in place as PyTorch does it and as the
 * fusions need, dead activations lending their memory to gradients; unfused
 * (--no-fusion), laid out as the CPU backend lays them (every output kept,
 * for tests that read them back). */
memplan_rules cuda_memplan_rules(bool fusion);

typedef enum { ACT_NONE, ACT_RELU, ACT_RELU6 } act_kind;

/* How one layer's work is done. A ReLU/ReLU6 running in place over a batch
 * norm, a residual add, or a conv/fc with bias is done by that layer's kernel
 * (forward), and for batch norm and add also in its backward (the mask is
 * applied on the fly). A batch norm whose only consumer is an add running in
 * place over it computes its statistics in its own forward and leaves the
 * normalisation to the add's kernel: y = act(bn(x) + other), or where the
 * other input is a batch norm too (a ResNet downsample), y = act(bn(x) +
 * bn2(x2)), bn2's output never stored. A ReLU/ReLU6 fused into a conv or fc
 * with bias runs its backward as its own kernel, which also sums the layer's
 * bias gradient from the gradient it writes (one read of it fewer). */
typedef struct {
    int fwd_by;          /* the layer whose forward does this one's, or -1 */
    int bwd_by;          /* the layer whose backward_data does this one's, or -1 */
    act_kind act;        /* applied at the end of this layer's forward */
    int bn_applied_by;   /* batch norm: the add that normalises it, or -1 */
    int add_bn;          /* add: the batch norm it normalises (an input), or -1 */
    int add_bn2;         /* add: a second one, never stored (memplan's add_normalises_both) */
    int bias_grad_by;    /* conv/fc with bias: the activation whose backward sums its bias
                            gradient, or -1 */
    int sums_bias_of;    /* ReLU/ReLU6: the conv/fc whose bias gradient it sums, or -1 */
} layer_fusion;

/* Whether layer l (a conv or fc with bias) sums its own bias gradient after
 * its filter gradient, f being its fusion: not where the ReLU fused into it
 * sums it in its backward (bias_grad_by). */
bool fusion_own_bias_grad(const layer *l, const layer_fusion *f);

/* Fills fusion[n_layers]; with enable false every layer runs alone. The plan
 * must be the memory plan the backend allocates by (fusion needs in place). */
void fusion_plan_make(const network *net, const mem_plan *mp, bool enable, layer_fusion *fusion);

/* dst = src with the two inner groups of axes swapped: (n, c, h, w) to
 * (n, h, w, c) when to_nhwc, else back. Conv weights (K, C/g, R, S) and the
 * columns of an fc weight over a (c, h, w) input permute the same way. */
void permute_nchw_nhwc(const float *src, float *dst, int64_t n, int c, int h, int w,
                       bool to_nhwc);

/* A convolution's shape, everything cuDNN's choice of algorithm depends on. */
typedef struct {
    int n, c, h, w, k, r, s, pad, stride, groups, out_h, out_w;
    bool input_grad;    /* backward-data is searched too */
    bool bias_relu;     /* its forward adds a bias and applies a fused ReLU: cuDNN's
                           conv+bias+ReLU call may run it (--conv-bias) */
    precision prec;
} conv_shape;

/* Layer l's shape; f its fusion (NULL: none, as --no-fusion). */
conv_shape conv_shape_of(const layer *l, const layer_fusion *f, int batch, precision prec);
bool conv_shape_equal(const conv_shape *a, const conv_shape *b);

/* For each conv layer the first conv layer of the same shape (itself when
 * it is the first), -1 for other layers: algorithms are searched once per
 * distinct shape. fusion: per layer, or NULL. Returns the number of
 * distinct shapes. */
int conv_shape_groups(const network *net, const layer_fusion *fusion, int batch, precision prec,
                      int *first_of_shape);

/* One result of cuDNN's algorithm search, as the choice sees it. */
typedef struct {
    bool usable;          /* succeeded, within the workspace, in an allowed math type */
    float ms;             /* its time in the search */
    int64_t memory;       /* the workspace it needs */
} conv_algo_result;

/* How much slower than the fastest an algorithm may be and still be taken
 * for needing less workspace: the search times each algorithm once or twice,
 * and times that close trade places from one search to the next. A pass's
 * workspace is a region of the arena while it runs, and it adds to the
 * step's peak memory where that pass runs beside the most live memory. */
#define CONV_ALGO_TIME_TOLERANCE 0.02

/* Which of n results to run: among the usable ones within `tolerance` (a
 * share) of the fastest usable time, the one needing the least workspace
 * (the faster, then the first, of equals); -1 if none is usable. */
int conv_algo_pick(const conv_algo_result *r, int n, double tolerance);

/* Depthwise convolutions (one 1-channel filter per channel, groups =
 * channels = output channels) may run on the backend's own kernels
 * (cuda_depthwise.cu) instead of cuDNN's. The own kernels take square
 * filters of side 3 or 5 and tensors of fewer than 2^31 elements. */
bool conv_is_depthwise(const conv_shape *s);
bool depthwise_own_fits(const conv_shape *s);

/* The own backward-filter kernel sums each channel's taps over slices of the
 * (n, oh, ow) positions, one thread block per slice and group of channels,
 * into fp32 partial sums that a second kernel adds in a fixed order (no
 * atomics: the same bits every step). Enough blocks for every SM several
 * times over, at least 256 positions a slice. */
typedef struct {
    int slices;
    int channel_groups;       /* NHWC: 32 channels a block; NCHW: one */
    int64_t partial_bytes;    /* workspace: slices x channels x taps floats */
} depthwise_filter_plan;

depthwise_filter_plan depthwise_filter_plan_of(const conv_shape *s, bool nhwc, int sm_count);

/* How a depthwise pass is chosen under --depthwise auto: the own kernel when
 * it matched cuDNN's result on the same inputs and was faster, or when cuDNN
 * has no algorithm for it (cudnn_ms < 0) and it fits. A mismatch is never
 * chosen, however fast. */
typedef enum { DW_PICK_CUDNN, DW_PICK_OWN } depthwise_pick;

typedef struct {
    float cudnn_ms;       /* < 0: cuDNN found no algorithm within the workspace */
    float own_ms;         /* < 0: the own kernel does not fit this shape */
    bool verified;        /* own's result was compared with cuDNN's */
    bool matched;         /* ... and agreed within the precision's tolerance */
} depthwise_trial;

depthwise_pick depthwise_choose(const depthwise_trial *t);

/* The forward of a conv with bias under ReLU (conv_shape.bias_relu), both
 * ways on the same inputs at plan time: cuDNN's convolution then the own
 * bias+ReLU kernel, and cuDNN's fused conv+bias+ReLU call. */
typedef struct {
    float own_ms;         /* cuDNN's convolution + the own kernel; < 0: not timed */
    float fused_ms;       /* cuDNN's fused call; < 0: cuDNN refused it (or not tried) */
    bool verified;        /* the fused result was compared with the other */
    bool matched;         /* ... and agreed within the precision's tolerance */
    double difference;    /* max |fused - own| / max |own| where compared */
} conv_bias_trial;

/* Whether the forward runs cuDNN's fused call: under --conv-bias cudnn
 * whenever cuDNN takes it (a shape it refuses, say for its input's channels,
 * runs the own kernel, and the choices line counts and names the refusals:
 * the whole run is not lost for one layer), under auto only where its result
 * matched and it was faster, never under own. */
bool conv_bias_choose_fused(conv_bias_choice mode, const conv_bias_trial *t);

/* --conv-api: a pass (not depthwise) both ways on the same inputs at plan
 * time: cuDNN's legacy call with the algorithm its search chose, and the
 * fastest engine configuration of cuDNN's graph API, each timed the same
 * way (the best of 3 runs on the layer's buffers), the graph's result then
 * compared with the legacy one's. */
typedef struct {
    float legacy_ms;      /* < 0: not timed (no legacy algorithm within the workspace) */
    float graph_ms;       /* < 0: no engine configuration built and fitted */
    int offered, tried;   /* configurations the heuristics offered; timed */
    bool verified;        /* the graph's result was compared with the legacy one's */
    bool matched;         /* ... and agreed within the precision's tolerance */
    double difference;    /* max |graph - legacy| / max |legacy| where compared */
} conv_api_trial;

/* Whether the pass runs on the graph API: under --conv-api graph whenever
 * an engine configuration was built (a mismatch is then reported, as asked),
 * under auto where its result matched and it was faster, or where the legacy
 * calls had nothing within the workspace; never under legacy. */
bool conv_api_choose_graph(conv_api_choice mode, const conv_api_trial *t);

/* What one pass (forward, backward data, backward filter) of a convolution
 * shape runs, and what the choice was made on: cuda_conv keeps one per pass
 * (cuda_internal.h), the algorithm cache one per row (algo_cache.h), so a
 * choice moves between them, and between layers of one shape, whole. */
typedef struct {
    bool own;                 /* the backend's depthwise kernel, not cuDNN */
    int algo;                 /* cuDNN's algorithm of the pass (its enum's value) */
    int math;                 /* cudnnMathType_t */
    int64_t workspace_bytes;
    float find_ms;            /* the chosen algorithm's time in cuDNN's search */
    depthwise_trial trial;    /* --depthwise auto: both timed (< 0: not) and compared */
    double own_difference;    /* max |own - cuDNN| / max |cuDNN| where compared */
    /* forward of a bias_relu shape: cuDNN's fused conv+bias+ReLU runs it (algo
     * is then the fused call's), not cuDNN's convolution and the own kernel */
    bool fused;
    conv_bias_trial bias_trial; /* how that was chosen (--conv-bias auto, cudnn) */
    /* cuDNN's graph API runs the pass (not own, not fused): the engine of
     * global index `engine`, config_rank-th in heuristics mode A's list */
    bool graph;
    int engine, config_rank;
    conv_api_trial api_trial;   /* how that was chosen (--conv-api auto, graph) */
} conv_pass_choice;

/* The largest difference a plan-time trial allows between the way it tries
 * and cuDNN's (own depthwise kernel against cuDNN's convolution, cuDNN's fused
 * conv+bias+ReLU against its convolution and the own bias kernel), relative to
 * the largest |cuDNN|: both sum in fp32; the outputs are rounded to the
 * element type (and tf32 rounds cuDNN's inputs). An indexing error moves
 * results by far more. */
double trial_match_tolerance(const precision_plan *pp);
/* The fused conv+bias+ReLU trial's: two cuDNN ways of one convolution, whose
 * sums are short (at most C x R x S terms), so that in fp32 an engine that
 * took tf32 in FMA math is told from rounding (the depthwise trials' filter
 * gradients sum a whole batch's pixels, whose fp32 rounding needs
 * trial_match_tolerance's room). */
double fused_match_tolerance(const precision_plan *pp);

/* Blocks of `threads` for a grid-stride loop over n elements on sm_count
 * SMs: enough for n, at most 32 a SM (the loop does the rest). */
static inline unsigned cuda_grid_blocks(int64_t n, int threads, int sm_count)
{
    int64_t blocks = (n + threads - 1) / threads, cap = (int64_t)sm_count * 32;
    if (blocks > cap)
        blocks = cap;
    return (unsigned)(blocks > 0 ? blocks : 1);
}

/* The fp32 chunk through which host transfers of fp16/bf16 buffers go. */
enum { CUDA_STAGING_ELEMS = 1 << 22 };

/* The most workspace a fully connected layer's GEMM is given: what
 * cuBLASLt's documentation recommends for Hopper. */
enum { CUDA_FC_WORKSPACE = 32 << 20 };

/* The scratch each layer's operations need, for memplan_make: from the
 * bytes of workspace of each layer's passes (pass_bytes[3 i + p], p 0
 * forward, 1 backward data, 2 backward filter), the elements of
 * elem_bytes its forward ([2 i]) and its backward ([2 i + 1]: the larger
 * of its two passes, which run one after the other) need, rounded up. */
void cuda_scratch_elems(int n_layers, const int64_t *pass_bytes, int elem_bytes,
                        int64_t *scratch_elems);

/* Device bytes the backend allocates for a batch, before any workspace:
 * activations and gradient slabs of the memory plan, parameters with their
 * gradients, momentum and copies, batch norm buffers, masks, the input. */
int64_t cuda_planned_bytes(const network *net, int batch, const precision_plan *pp,
                           const mem_plan *mp);

#ifdef __cplusplus
}
#endif

#endif
