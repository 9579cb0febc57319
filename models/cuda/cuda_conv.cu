/* Convolutions on cuDNN 9's convolution API (thin wrappers: descriptors once
 * per layer, one call per pass). Algorithms are searched with cuDNN's own
 * benchmark (cudnnFind*AlgorithmEx, on the layer's real buffers) once per
 * distinct shape and precision, within the workspace limit, and then pinned:
 * the timed steps never search. fp32 runs without tensor cores: FMA math on
 * the descriptors, and only algorithms cuDNN reports as FMA math are taken
 * (the default math type would allow TF32 on Ampere and newer). */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_internal.h"

static cudnnDataType_t dnn_type(elem_type e)
{
    return e == ELEM_F16 ? CUDNN_DATA_HALF : e == ELEM_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

int cuda_conv_setup(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cuda_conv *c = (cuda_conv *)calloc(1, sizeof *c);
    if (!c)
        return cuda_fail(b, "out of host memory");
    b->layers[i].conv = c;
    cudnnTensorFormat_t fmt = b->pp.layout == LAYOUT_NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    cudnnDataType_t dt = dnn_type(b->pp.elem);
    int n = b->cfg.batch;
    CUDNN_TRY(b, cudnnCreateTensorDescriptor(&c->x));
    CUDNN_TRY(b, cudnnCreateTensorDescriptor(&c->y));
    CUDNN_TRY(b, cudnnCreateFilterDescriptor(&c->w));
    CUDNN_TRY(b, cudnnSetTensor4dDescriptor(c->x, fmt, dt, n, l->in_shape.c, l->in_shape.h,
                                            l->in_shape.w));
    CUDNN_TRY(b, cudnnSetTensor4dDescriptor(c->y, fmt, dt, n, l->out_channels, l->out_shape.h,
                                            l->out_shape.w));
    CUDNN_TRY(b, cudnnSetFilter4dDescriptor(c->w, dt, fmt, l->out_channels,
                                            l->in_shape.c / l->groups, l->kernel, l->kernel));
    cudnnMathType_t math = b->pp.tensor_cores ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    for (int p = 0; p < 3; p++) {
        CUDNN_TRY(b, cudnnCreateConvolutionDescriptor(&c->conv[p]));
        CUDNN_TRY(b, cudnnSetConvolution2dDescriptor(c->conv[p], l->pad, l->pad, l->stride,
                                                     l->stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                                     CUDNN_DATA_FLOAT));
        CUDNN_TRY(b, cudnnSetConvolutionGroupCount(c->conv[p], l->groups));
        CUDNN_TRY(b, cudnnSetConvolutionMathType(c->conv[p], math));
        c->math[p] = math;
    }
    /* the graph's shapes and cuDNN's must agree */
    int on, oc, oh, ow;
    CUDNN_TRY(b, cudnnGetConvolution2dForwardOutputDim(c->conv[0], c->x, c->w, &on, &oc, &oh, &ow));
    if (on != n || oc != l->out_channels || oh != l->out_shape.h || ow != l->out_shape.w)
        return cuda_fail(b, "cuDNN computes an output of %dx%dx%dx%d, the graph %dx%dx%dx%d", on,
                         oc, oh, ow, n, l->out_channels, l->out_shape.h, l->out_shape.w);
    return 0;
}

void cuda_conv_destroy(cuda_conv *c)
{
    if (c->x)
        cudnnDestroyTensorDescriptor(c->x);
    if (c->y)
        cudnnDestroyTensorDescriptor(c->y);
    if (c->w)
        cudnnDestroyFilterDescriptor(c->w);
    for (int p = 0; p < 3; p++)
        if (c->conv[p])
            cudnnDestroyConvolutionDescriptor(c->conv[p]);
}

/* fp32 must not reach tensor cores: FMA math only. Other precisions take
 * what cuDNN found fastest, but never a down-conversion of their inputs. */
static bool math_allowed(const backend *b, cudnnMathType_t m)
{
    if (m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
        return false;
    if (!b->pp.tensor_cores)
        return m == CUDNN_FMA_MATH;
    return true;
}

/* The first (fastest) result that succeeded within the workspace. */
template <typename Perf>
static int pick(backend *b, const Perf *perf, int count, const char *pass_label)
{
    for (int k = 0; k < count; k++)
        if (perf[k].status == CUDNN_STATUS_SUCCESS && perf[k].memory <= b->workspace_bytes &&
            math_allowed(b, perf[k].mathType))
            return k;
    return cuda_fail(b, "cuDNN found no %s algorithm for this shape within a %.0f MiB workspace "
                        "(%d tried; raise --workspace-mb, or this precision is not supported "
                        "here)",
                     pass_label, b->workspace_bytes / 1048576.0, count);
}

enum { MAX_ALGOS = 16 };

static int find_forward(backend *b, int i, cuda_conv *c)
{
    cuda_layer *cl = &b->layers[i];
    cudnnConvolutionFwdAlgoPerf_t perf[MAX_ALGOS];
    int count = 0;
    CUDNN_TRY(b, cudnnFindConvolutionForwardAlgorithmEx(
                     b->dnn, c->x, cuda_input(b, i, 0), c->w, cl->w_copy, c->conv[0], c->y,
                     cl->out, MAX_ALGOS, &count, perf, b->workspace, b->workspace_bytes));
    int k = pick(b, perf, count, "forward");
    if (k < 0)
        return -1;
    c->fwd_algo = perf[k].algo;
    c->math[0] = perf[k].mathType;
    c->workspace[0] = perf[k].memory;
    c->find_ms[0] = perf[k].time;
    return 0;
}

static int find_backward_data(backend *b, int i, cuda_conv *c)
{
    cuda_layer *cl = &b->layers[i];
    cudnnConvolutionBwdDataAlgoPerf_t perf[MAX_ALGOS];
    int count = 0;
    CUDNN_TRY(b, cudnnFindConvolutionBackwardDataAlgorithmEx(
                     b->dnn, c->w, cl->w_copy, c->y, cl->grad, c->conv[1], c->x,
                     cuda_input_grad(b, i, 0), MAX_ALGOS, &count, perf, b->workspace,
                     b->workspace_bytes));
    int k = pick(b, perf, count, "backward-data");
    if (k < 0)
        return -1;
    c->bwd_data_algo = perf[k].algo;
    c->math[1] = perf[k].mathType;
    c->workspace[1] = perf[k].memory;
    c->find_ms[1] = perf[k].time;
    return 0;
}

static int find_backward_filter(backend *b, int i, cuda_conv *c)
{
    cuda_layer *cl = &b->layers[i];
    cudnnConvolutionBwdFilterAlgoPerf_t perf[MAX_ALGOS];
    int count = 0;
    CUDNN_TRY(b, cudnnFindConvolutionBackwardFilterAlgorithmEx(
                     b->dnn, c->x, cuda_input(b, i, 0), c->y, cl->grad, c->conv[2], c->w, cl->dw,
                     MAX_ALGOS, &count, perf, b->workspace, b->workspace_bytes));
    int k = pick(b, perf, count, "backward-filter");
    if (k < 0)
        return -1;
    c->bwd_filter_algo = perf[k].algo;
    c->math[2] = perf[k].mathType;
    c->workspace[2] = perf[k].memory;
    c->find_ms[2] = perf[k].time;
    return 0;
}

int cuda_conv_choose(backend *b, int i, int same_as)
{
    b->current_layer = i;
    cuda_conv *c = b->layers[i].conv;
    if (same_as != i) {
        const cuda_conv *s = b->layers[same_as].conv;
        c->fwd_algo = s->fwd_algo;
        c->bwd_data_algo = s->bwd_data_algo;
        c->bwd_filter_algo = s->bwd_filter_algo;
        for (int p = 0; p < 3; p++) {
            c->math[p] = s->math[p];
            c->workspace[p] = s->workspace[p];
            c->find_ms[p] = s->find_ms[p];
        }
    } else {
        if (find_forward(b, i, c) || find_backward_filter(b, i, c))
            return -1;
        if (b->net->layers[i].computes_input_grad && find_backward_data(b, i, c))
            return -1;
    }
    for (int p = 0; p < 3; p++)
        CUDNN_TRY(b, cudnnSetConvolutionMathType(c->conv[p], c->math[p]));
    return 0;
}

static const float one = 1.0f, zero = 0.0f;

int cuda_conv_forward(backend *b, int i)
{
    cuda_layer *cl = &b->layers[i];
    cuda_conv *c = cl->conv;
    CUDNN_TRY(b, cudnnConvolutionForward(b->dnn, &one, c->x, cuda_input(b, i, 0), c->w,
                                         cl->w_copy, c->conv[0], c->fwd_algo, b->workspace,
                                         b->workspace_bytes, &zero, c->y, cl->out));
    if (b->net->layers[i].has_bias)
        return cuda_bias_act(b, i, b->fusion[i].act);
    return 0;
}

int cuda_conv_backward_data(backend *b, int i, bool accumulate)
{
    cuda_layer *cl = &b->layers[i];
    cuda_conv *c = cl->conv;
    CUDNN_TRY(b, cudnnConvolutionBackwardData(b->dnn, &one, c->w, cl->w_copy, c->y, cl->grad,
                                              c->conv[1], c->bwd_data_algo, b->workspace,
                                              b->workspace_bytes, accumulate ? &one : &zero,
                                              c->x, cuda_input_grad(b, i, 0)));
    return 0;
}

int cuda_conv_backward_weights(backend *b, int i)
{
    cuda_layer *cl = &b->layers[i];
    cuda_conv *c = cl->conv;
    CUDNN_TRY(b, cudnnConvolutionBackwardFilter(b->dnn, &one, c->x, cuda_input(b, i, 0), c->y,
                                                cl->grad, c->conv[2], c->bwd_filter_algo,
                                                b->workspace, b->workspace_bytes, &zero, c->w,
                                                cl->dw));
    if (b->net->layers[i].has_bias)
        return cuda_bias_grad(b, i, cl->dbias, b->pp.elem);
    return 0;
}

static const char *fwd_name(cudnnConvolutionFwdAlgo_t a)
{
    static const char *const names[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm",
                                        "direct", "fft", "fft_tiling", "winograd",
                                        "winograd_nonfused"};
    return (unsigned)a < sizeof names / sizeof *names ? names[a] : "?";
}

static const char *bwd_data_name(cudnnConvolutionBwdDataAlgo_t a)
{
    static const char *const names[] = {"algo0", "algo1", "fft", "fft_tiling", "winograd",
                                        "winograd_nonfused"};
    return (unsigned)a < sizeof names / sizeof *names ? names[a] : "?";
}

static const char *bwd_filter_name(cudnnConvolutionBwdFilterAlgo_t a)
{
    static const char *const names[] = {"algo0", "algo1", "fft", "algo3", "winograd",
                                        "winograd_nonfused", "fft_tiling"};
    return (unsigned)a < sizeof names / sizeof *names ? names[a] : "?";
}

static const char *math_name(cudnnMathType_t m)
{
    switch (m) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor_op_conversion";
    case CUDNN_FMA_MATH: return "fma";
    }
    return "?";
}

void cuda_conv_name(const backend *b, int i, pass phase, char *buf, size_t len)
{
    const cuda_conv *c = b->layers[i].conv;
    const char *algo = phase == PASS_FWD        ? fwd_name(c->fwd_algo)
                       : phase == PASS_BWD_DATA ? bwd_data_name(c->bwd_data_algo)
                                                : bwd_filter_name(c->bwd_filter_algo);
    int p = phase == PASS_FWD ? 0 : phase == PASS_BWD_DATA ? 1 : 2;
    bool bias = b->net->layers[i].has_bias && phase != PASS_BWD_DATA;
    snprintf(buf, len, "cudnn:conv_%s[%s %s]%s", pass_name(phase), algo, math_name(c->math[p]),
             bias ? "+cuda:bias" : "");
}
