/* Convolutions on cuDNN 9's convolution API (thin wrappers: descriptors once
 * per layer, one call per pass), on its graph API where a pass chose it
 * (cuda_conv_graph.cu), or for depthwise passes that chose them the own
 * kernels (cuda_depthwise.cu). The algorithms are chosen once per
 * distinct shape and precision by cuda_conv_choose.cu and then pinned: the
 * timed steps never search. fp32 runs without tensor cores: FMA math on the
 * descriptors. A forward with bias under a fused ReLU adds the bias with the
 * own kernel after the convolution, or where that was chosen in cuDNN's
 * fused conv+bias+ReLU (no pass over the output of its own): the legacy
 * API's call or the graph API's convolution with them in its epilogue. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_internal.h"

cudnnDataType_t cudnn_data_type(elem_type e)
{
    return e == ELEM_F16 ? CUDNN_DATA_HALF : e == ELEM_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

/* An activation tensor's descriptor. cuDNN refuses tensors of more than 2^31
 * elements (its descriptors index with int); where that is why, say so and
 * what to do rather than only CUDNN_STATUS_NOT_SUPPORTED. */
static int set_tensor(backend *b, cudnnTensorDescriptor_t d, cudnnTensorFormat_t fmt,
                      cudnnDataType_t dt, int n, int c, int h, int w, const char *what)
{
    cudnnStatus_t st = cudnnSetTensor4dDescriptor(d, fmt, dt, n, c, h, w);
    if (st == CUDNN_STATUS_SUCCESS)
        return 0;
    int64_t elems = (int64_t)n * c * h * w;
    if (elems > INT32_MAX)
        return cuda_fail(b, "the convolution's %s has %lld elements, more than cuDNN takes in "
                            "one tensor (2^31): use a smaller --batch",
                         what, (long long)elems);
    return cudnn_fail_call(b, __FILE__, __LINE__, "cudnnSetTensor4dDescriptor", st);
}

int cuda_conv_setup(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cuda_conv *c = (cuda_conv *)calloc(1, sizeof *c);
    if (!c)
        return cuda_fail(b, "out of host memory");
    b->layers[i].conv = c;
    cudnnTensorFormat_t fmt = b->pp.layout == LAYOUT_NHWC ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    cudnnDataType_t dt = cudnn_data_type(b->pp.elem);
    int n = b->cfg.batch;
    CUDNN_TRY(b, cudnnCreateTensorDescriptor(&c->x));
    CUDNN_TRY(b, cudnnCreateTensorDescriptor(&c->y));
    CUDNN_TRY(b, cudnnCreateFilterDescriptor(&c->w));
    if (set_tensor(b, c->x, fmt, dt, n, l->in_shape.c, l->in_shape.h, l->in_shape.w, "input") ||
        set_tensor(b, c->y, fmt, dt, n, l->out_channels, l->out_shape.h, l->out_shape.w,
                   "output"))
        return -1;
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
        /* nothing chosen or timed yet (cuda_conv_choose) */
        c->choice[p].math = math;
        c->choice[p].trial.cudnn_ms = c->choice[p].trial.own_ms = -1.0f;
    }
    if (conv_shape_of(l, &b->fusion[i], n, b->pp.prec).bias_relu) {
        /* cuDNN's fused call takes the bias in the output's type; its ReLU
         * maps NaN to 0, as the own kernel does. cuDNN's reference calls
         * coef ReLU's upper bound: DBL_MAX (as PyTorch passes), so that no
         * engine that reads it clips the output to 0 */
        CUDNN_TRY(b, cudnnCreateTensorDescriptor(&c->bias));
        CUDNN_TRY(b, cudnnSetTensor4dDescriptor(c->bias, fmt, dt, 1, l->out_channels, 1, 1));
        CUDNN_TRY(b, cudnnCreateActivationDescriptor(&c->relu));
        CUDNN_TRY(b, cudnnSetActivationDescriptor(c->relu, CUDNN_ACTIVATION_RELU,
                                                  CUDNN_NOT_PROPAGATE_NAN, DBL_MAX));
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
    if (c->bias)
        cudnnDestroyTensorDescriptor(c->bias);
    if (c->relu)
        cudnnDestroyActivationDescriptor(c->relu);
    for (int p = 0; p < 3; p++)
        cuda_conv_graph_destroy(&c->graph[p]);
}

static const float one = 1.0f, zero = 0.0f;

/* The cuDNN algorithms chosen for the three passes, as cuDNN's enums. */
static cudnnConvolutionFwdAlgo_t fwd_algo(const cuda_conv *c)
{
    return (cudnnConvolutionFwdAlgo_t)c->choice[0].algo;
}

static cudnnConvolutionBwdDataAlgo_t bwd_data_algo(const cuda_conv *c)
{
    return (cudnnConvolutionBwdDataAlgo_t)c->choice[1].algo;
}

static cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo(const cuda_conv *c)
{
    return (cudnnConvolutionBwdFilterAlgo_t)c->choice[2].algo;
}

cudnnStatus_t cuda_conv_fused_forward(backend *b, int i, int algo, void *ws, size_t bytes)
{
    cuda_layer *cl = &b->layers[i];
    cuda_conv *c = cl->conv;
    /* alpha2 = 0: z (the output itself) is not added */
    return cudnnConvolutionBiasActivationForward(
        b->dnn, &one, c->x, cuda_input(b, i, 0), c->w, cl->w_copy, c->conv[0],
        (cudnnConvolutionFwdAlgo_t)algo, ws, bytes, &zero, c->y, cl->out, c->bias,
        cl->bias_copy, c->relu, c->y, cl->out);
}

int cuda_conv_run_fused(backend *b, int i, int algo, void *ws, size_t bytes)
{
    cudnnStatus_t st = cuda_conv_fused_forward(b, i, algo, ws, bytes);
    return st == CUDNN_STATUS_SUCCESS
               ? 0
               : cudnn_fail_call(b, __FILE__, __LINE__, "cudnnConvolutionBiasActivationForward",
                                 st);
}

int cuda_conv_run_pass(backend *b, int i, int p, bool own, bool accumulate)
{
    cuda_layer *cl = &b->layers[i];
    cuda_conv *c = cl->conv;
    if (own)
        return p == 0   ? cuda_dw_forward(b, i)
               : p == 1 ? cuda_dw_backward_data(b, i, accumulate)
                        : cuda_dw_backward_weights(b, i);
    cuda_workspace ws = cuda_workspace_of(b, i, p != 0);
    if (c->choice[p].graph)
        return cuda_conv_graph_run(b, i, &c->graph[p], accumulate, ws.ptr, ws.bytes);
    if (p == 0)
        CUDNN_TRY(b, cudnnConvolutionForward(b->dnn, &one, c->x, cuda_input(b, i, 0), c->w,
                                             cl->w_copy, c->conv[0], fwd_algo(c), ws.ptr, ws.bytes,
                                             &zero, c->y, cl->out));
    else if (p == 1)
        CUDNN_TRY(b, cudnnConvolutionBackwardData(
                         b->dnn, &one, c->w, cl->w_copy, c->y, cl->grad, c->conv[1],
                         bwd_data_algo(c), ws.ptr, ws.bytes,
                         accumulate ? &one : &zero, c->x, cuda_input_grad(b, i, 0)));
    else
        CUDNN_TRY(b, cudnnConvolutionBackwardFilter(
                         b->dnn, &one, c->x, cuda_input(b, i, 0), c->y, cl->grad, c->conv[2],
                         bwd_filter_algo(c), ws.ptr, ws.bytes, &zero, c->w,
                         cl->dw));
    return 0;
}

int cuda_conv_forward(backend *b, int i)
{
    cuda_conv *c = b->layers[i].conv;
    const conv_pass_choice *ch = &c->choice[0];
    if (ch->fused) {
        cuda_workspace ws = cuda_workspace_of(b, i, false);
        /* on the graph API the plan's epilogue adds the bias and applies the ReLU */
        if (ch->graph)
            return cuda_conv_graph_run(b, i, &c->graph[0], false, ws.ptr, ws.bytes);
        return cuda_conv_run_fused(b, i, ch->algo, ws.ptr, ws.bytes);
    }
    if (cuda_conv_run_pass(b, i, 0, ch->own, false))
        return -1;
    if (b->net->layers[i].has_bias)
        return cuda_bias_act(b, i, b->fusion[i].act);
    return 0;
}

int cuda_conv_backward_data(backend *b, int i, bool accumulate)
{
    return cuda_conv_run_pass(b, i, 1, b->layers[i].conv->choice[1].own, accumulate);
}

int cuda_conv_backward_weights(backend *b, int i)
{
    cuda_layer *cl = &b->layers[i];
    if (cuda_conv_run_pass(b, i, 2, cl->conv->choice[2].own, false))
        return -1;
    if (fusion_own_bias_grad(&b->net->layers[i], &b->fusion[i]))
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
    const char *algo = phase == PASS_FWD        ? fwd_name(fwd_algo(c))
                       : phase == PASS_BWD_DATA ? bwd_data_name(bwd_data_algo(c))
                                                : bwd_filter_name(bwd_filter_algo(c));
    int p = phase == PASS_FWD ? 0 : phase == PASS_BWD_DATA ? 1 : 2;
    const layer *l = &b->net->layers[i];
    bool bias = phase == PASS_FWD           ? l->has_bias
                : phase == PASS_BWD_WEIGHTS ? fusion_own_bias_grad(l, &b->fusion[i])
                                            : false;
    if (c->choice[p].own) {
        snprintf(buf, len, "cuda:dwconv_%s%s", pass_name(phase), bias ? "+cuda:bias" : "");
        return;
    }
    if (c->choice[p].fused && c->choice[p].graph) {
        snprintf(buf, len, "cudnn:conv_bias_relu_%s[graph engine %d %s]", pass_name(phase),
                 c->choice[p].engine, c->graph[p].chosen.tensor_core ? "tensor_op" : "fma");
        return;
    }
    if (c->choice[p].fused) {
        snprintf(buf, len, "cudnn:conv_bias_relu_%s[%s %s]", pass_name(phase), algo,
                 math_name((cudnnMathType_t)c->choice[p].math));
        return;
    }
    if (c->choice[p].graph) {
        snprintf(buf, len, "cudnn:conv_%s[graph engine %d %s]%s", pass_name(phase),
                 c->choice[p].engine, c->graph[p].chosen.tensor_core ? "tensor_op" : "fma",
                 bias ? "+cuda:bias" : "");
        return;
    }
    snprintf(buf, len, "cudnn:conv_%s[%s %s]%s", pass_name(phase), algo,
             math_name((cudnnMathType_t)c->choice[p].math), bias ? "+cuda:bias" : "");
}
