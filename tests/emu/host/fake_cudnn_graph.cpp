/* cuDNN 9's graph (backend) API for the CUDA backend's convolution passes,
 * on the host: descriptors keep their attributes as set (each checked for
 * its type, and refused once the descriptor is finalized), Finalize checks
 * that what the descriptor type needs was set (descriptors given as
 * attributes must be finalized and of the right type), and the heuristics
 * offer three engines for a convolution, in this order: 2, noted
 * TENSOR_CORE and DOWN_CONVERT_INPUTS, whose results are NaN (the backend
 * must never take it); 1, noted TENSOR_CORE, with the workspace of the
 * legacy fake's fastest algorithm; 0, without notes or workspace. Engines 0
 * and 1 run the legacy fake's passes (fake_cudnn.cpp) with the tensors the
 * strides describe (NCHW or NHWC; filters KCRS or KRSC), alpha and beta as
 * set on the operation, the pointers of the variant pack by unique id.
 * A graph holds one convolution or, for a forward, the convolution into a
 * virtual sum, a pointwise ADD of a (1, K, 1, 1) bias into a second virtual
 * tensor and a pointwise RELU_FWD into the output: run as the legacy fake's
 * fused conv+bias+ReLU computes it; any other graph does not finalize.
 * FAKE_CUDNN_GRAPH_REFUSE=1: no execution plan finalizes (a cuDNN with no
 * engine for the graph); FAKE_CUDNN_GRAPH_HEUR_FAIL=C: the heuristics refuse
 * every graph whose input has C channels (CUDNN_STATUS_NOT_SUPPORTED);
 * FAKE_CUDNN_GRAPH_NO_FUSION=1: they refuse every graph of more than one
 * operation. */
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include <cudnn.h>

#include "host_elements.h"
#include "host_launch.h"

/* fake_cudnn.cpp */
cudaStream_t fake_cudnn_stream(cudnnHandle_t h);
cudnnStatus_t fake_cudnn_graph_bias_relu(cudnnHandle_t h, cudnnTensorDescriptor_t xd,
                                         const void *x, cudnnFilterDescriptor_t wd, const void *w,
                                         cudnnConvolutionDescriptor_t cvd, int algo, void *scratch,
                                         size_t workspace, cudnnTensorDescriptor_t bd,
                                         const void *bias, cudnnTensorDescriptor_t yd, void *y);

namespace
{

struct attribute {
    cudnnBackendAttributeType_t type;
    std::vector<char> bytes;
    int64_t count;
};

struct desc {
    cudnnBackendDescriptorType_t type;
    std::map<int, attribute> attrs;
    bool finalized = false;
    int engine = -1;       /* engine and engine config: the engine's index */
    desc *graph = nullptr; /* engine and engine config: the operation graph */
};

constexpr int64_t ENGINES = 3;

size_t size_of(cudnnBackendAttributeType_t t)
{
    switch (t) {
    case CUDNN_TYPE_HANDLE: return sizeof(cudnnHandle_t);
    case CUDNN_TYPE_DATA_TYPE: return sizeof(cudnnDataType_t);
    case CUDNN_TYPE_BOOLEAN: return sizeof(bool);
    case CUDNN_TYPE_INT64: return sizeof(int64_t);
    case CUDNN_TYPE_FLOAT: return sizeof(float);
    case CUDNN_TYPE_DOUBLE: return sizeof(double);
    case CUDNN_TYPE_VOID_PTR: return sizeof(void *);
    case CUDNN_TYPE_CONVOLUTION_MODE: return sizeof(cudnnConvolutionMode_t);
    case CUDNN_TYPE_POINTWISE_MODE: return sizeof(cudnnPointwiseMode_t);
    case CUDNN_TYPE_HEUR_MODE: return sizeof(cudnnBackendHeurMode_t);
    case CUDNN_TYPE_NUMERICAL_NOTE: return sizeof(cudnnBackendNumericalNote_t);
    case CUDNN_TYPE_BACKEND_DESCRIPTOR: return sizeof(cudnnBackendDescriptor_t);
    default: return 0;
    }
}

/* The type each attribute the backend sets must have. */
cudnnBackendAttributeType_t type_of(int name)
{
    switch (name) {
    case CUDNN_ATTR_TENSOR_DATA_TYPE:
    case CUDNN_ATTR_POINTWISE_MATH_PREC:
    case CUDNN_ATTR_CONVOLUTION_COMP_TYPE: return CUDNN_TYPE_DATA_TYPE;
    case CUDNN_ATTR_TENSOR_IS_VIRTUAL: return CUDNN_TYPE_BOOLEAN;
    case CUDNN_ATTR_POINTWISE_MODE: return CUDNN_TYPE_POINTWISE_MODE;
    case CUDNN_ATTR_CONVOLUTION_CONV_MODE: return CUDNN_TYPE_CONVOLUTION_MODE;
    case CUDNN_ATTR_ENGINEHEUR_MODE: return CUDNN_TYPE_HEUR_MODE;
    case CUDNN_ATTR_OPERATIONGRAPH_HANDLE:
    case CUDNN_ATTR_EXECUTION_PLAN_HANDLE: return CUDNN_TYPE_HANDLE;
    case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA:
    case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA: return CUDNN_TYPE_FLOAT;
    case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
    case CUDNN_ATTR_VARIANT_PACK_WORKSPACE: return CUDNN_TYPE_VOID_PTR;
    case CUDNN_ATTR_TENSOR_DIMENSIONS:
    case CUDNN_ATTR_TENSOR_STRIDES:
    case CUDNN_ATTR_TENSOR_UNIQUE_ID:
    case CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT:
    case CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS:
    case CUDNN_ATTR_CONVOLUTION_DILATIONS:
    case CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES:
    case CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS:
    case CUDNN_ATTR_CONVOLUTION_POST_PADDINGS:
    case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS: return CUDNN_TYPE_INT64;
    default: return CUDNN_TYPE_BACKEND_DESCRIPTOR;
    }
}

/* The attributes of each operation: x, w, y, conv, alpha, beta. */
const int OPERATION_ATTRS[3][6] = {
    {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA}};

int pass_of(cudnnBackendDescriptorType_t t)
{
    return t == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR           ? 0
           : t == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR   ? 1
           : t == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR ? 2
                                                                                 : -1;
}

const attribute *find(const desc *d, int name)
{
    auto it = d->attrs.find(name);
    return it == d->attrs.end() ? nullptr : &it->second;
}

template <typename T> T get(const desc *d, int name, int64_t k = 0)
{
    T v;
    memcpy(&v, find(d, name)->bytes.data() + k * sizeof(T), sizeof(T));
    return v;
}

/* An attribute holding one finalized descriptor of `type`, or null. */
desc *child(const desc *d, int name, cudnnBackendDescriptorType_t type)
{
    const attribute *a = find(d, name);
    if (!a || a->count != 1)
        return nullptr;
    desc *c = get<desc *>(d, name);
    return c && c->finalized && c->type == type ? c : nullptr;
}

bool has(const desc *d, std::initializer_list<int> names, int64_t count = 1)
{
    for (int n : names) {
        const attribute *a = find(d, n);
        if (!a || (count > 0 && a->count != count))
            return false;
    }
    return true;
}

bool is_virtual(const desc *t)
{
    return find(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL) && get<bool>(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL);
}

int64_t dim(const desc *t, int k)
{
    return get<int64_t>(t, CUDNN_ATTR_TENSOR_DIMENSIONS, k);
}

bool same_dims(const desc *a, const desc *b)
{
    for (int k = 0; k < 4; k++)
        if (dim(a, k) != dim(b, k))
            return false;
    return true;
}

cudnnPointwiseMode_t pointwise_mode(const desc *op)
{
    return get<cudnnPointwiseMode_t>(get<desc *>(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR),
                                     CUDNN_ATTR_POINTWISE_MODE);
}

const desc *tensor(const desc *op, int name)
{
    return child(op, name, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
}

/* The operations of a graph the stand-in runs: the convolution, and for a
 * forward with bias under ReLU its epilogue's ADD and RELU_FWD (else null). */
struct graph_parts {
    const desc *conv = nullptr, *add = nullptr, *relu = nullptr;
};

/* The graph's parts where it is one the stand-in runs: a convolution writing
 * a tensor of memory, or a forward writing a virtual sum that the ADD takes
 * as x with a (1, K, 1, 1) bias of memory as b, into a virtual tensor the
 * RELU_FWD takes into a tensor of memory of the sum's dimensions. */
bool parts_of(const desc *graph, graph_parts *g)
{
    const attribute *ops = find(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS);
    if (!ops || ops->count < 1 || ops->count > 3)
        return false;
    for (int64_t k = 0; k < ops->count; k++) {
        const desc *op = get<desc *>(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, k);
        if (!op || !op->finalized)
            return false;
        if (pass_of(op->type) >= 0 && !g->conv)
            g->conv = op;
        else if (op->type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR &&
                 pointwise_mode(op) == CUDNN_POINTWISE_ADD && !g->add)
            g->add = op;
        else if (op->type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR &&
                 pointwise_mode(op) == CUDNN_POINTWISE_RELU_FWD && !g->relu)
            g->relu = op;
        else
            return false;
    }
    if (!g->conv)
        return false;
    int p = pass_of(g->conv->type);
    const desc *out = tensor(g->conv, OPERATION_ATTRS[p][p == 0 ? 2 : p == 1 ? 0 : 1]);
    if (ops->count == 1)
        return !is_virtual(out);
    if (p != 0 || !g->add || !g->relu || !is_virtual(out))
        return false;
    const desc *bias = tensor(g->add, CUDNN_ATTR_OPERATION_POINTWISE_BDESC),
               *biased = tensor(g->add, CUDNN_ATTR_OPERATION_POINTWISE_YDESC),
               *y = tensor(g->relu, CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
    return tensor(g->add, CUDNN_ATTR_OPERATION_POINTWISE_XDESC) == out && bias &&
           !is_virtual(bias) && dim(bias, 0) == 1 && dim(bias, 1) == dim(out, 1) &&
           dim(bias, 2) == 1 && dim(bias, 3) == 1 && is_virtual(biased) &&
           tensor(g->relu, CUDNN_ATTR_OPERATION_POINTWISE_XDESC) == biased && y &&
           !is_virtual(y) && same_dims(y, out);
}

bool pointwise_complete(const desc *d)
{
    const desc *pw = child(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                           CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    if (!pw || !tensor(d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC) ||
        !tensor(d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC))
        return false;
    bool binary = get<cudnnPointwiseMode_t>(pw, CUDNN_ATTR_POINTWISE_MODE) == CUDNN_POINTWISE_ADD;
    return binary == (tensor(d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC) != nullptr);
}

bool op_complete(const desc *d)
{
    int p = pass_of(d->type);
    for (int k = 0; k < 3; k++)
        if (!child(d, OPERATION_ATTRS[p][k], CUDNN_BACKEND_TENSOR_DESCRIPTOR))
            return false;
    return child(d, OPERATION_ATTRS[p][3], CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR) &&
           has(d, {OPERATION_ATTRS[p][4], OPERATION_ATTRS[p][5]});
}

bool complete(const desc *d)
{
    switch (d->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
        return has(d, {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                       CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT}) &&
               has(d, {CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_ATTR_TENSOR_STRIDES}, 4);
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
        return has(d, {CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                       CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS}) &&
               get<int64_t>(d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS) == 2 &&
               has(d,
                   {CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                    CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS},
                   2);
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: return op_complete(d);
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR: {
        if (!has(d, {CUDNN_ATTR_POINTWISE_MODE, CUDNN_ATTR_POINTWISE_MATH_PREC}))
            return false;
        cudnnPointwiseMode_t mode = get<cudnnPointwiseMode_t>(d, CUDNN_ATTR_POINTWISE_MODE);
        return mode == CUDNN_POINTWISE_ADD || mode == CUDNN_POINTWISE_RELU_FWD;
    }
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: return pointwise_complete(d);
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR: {
        graph_parts g;
        return has(d, {CUDNN_ATTR_OPERATIONGRAPH_HANDLE}) && parts_of(d, &g);
    }
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
        return child(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                     CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) &&
               has(d, {CUDNN_ATTR_ENGINEHEUR_MODE});
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
        return has(d, {CUDNN_ATTR_EXECUTION_PLAN_HANDLE}) &&
               child(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                     CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: {
        const attribute *ids = find(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS),
                        *ptrs = find(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
        return ids && ptrs && ids->count == ptrs->count;
    }
    default: return false;
    }
}

/* The legacy fake's algorithm of each engine and pass: 0 the one without
 * workspace, 1 the fastest (engine 2 none: it poisons). */
int legacy_algo(int engine, int p)
{
    static const int algos[2][3] = {
        {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0},
        {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3}};
    return algos[engine][p];
}

int64_t workspace_of(int engine, int p)
{
    static const int64_t bytes[3] = {4 << 20, 8 << 20, 16 << 20};
    return engine == 1 ? bytes[p] : 0;
}

/* The graph's convolution (a finalized graph has one). */
const desc *op_of_graph(const desc *graph)
{
    graph_parts g;
    parts_of(graph, &g);
    return g.conv;
}

/* A tensor's dimensions, and whether its strides are NHWC's (else NCHW's);
 * false where they are neither. */
bool layout_of(const desc *t, int dims[4], bool *nhwc)
{
    int64_t d[4], s[4];
    for (int k = 0; k < 4; k++) {
        d[k] = get<int64_t>(t, CUDNN_ATTR_TENSOR_DIMENSIONS, k);
        s[k] = get<int64_t>(t, CUDNN_ATTR_TENSOR_STRIDES, k);
        dims[k] = (int)d[k];
    }
    int64_t chw = d[1] * d[2] * d[3];
    bool nchw_strides = s[0] == chw && s[1] == d[2] * d[3] && s[2] == d[3] && s[3] == 1;
    bool nhwc_strides = s[0] == chw && s[1] == 1 && s[2] == d[3] * d[1] && s[3] == d[1];
    *nhwc = nhwc_strides && !(nchw_strides && d[1] == 1);
    return nchw_strides || nhwc_strides;
}

void poison(const desc *t, void *p)
{
    int dims[4];
    bool nhwc;
    layout_of(t, dims, &nhwc);
    size_t n = (size_t)dims[0] * dims[1] * dims[2] * dims[3];
    cudnnDataType_t type = get<cudnnDataType_t>(t, CUDNN_ATTR_TENSOR_DATA_TYPE);
    size_t size = type == CUDNN_DATA_FLOAT ? 4 : 2;
    memset(p, 0xff, n * size); /* NaN in fp32, fp16 and bf16 */
}

/* The pass of plan's graph through the legacy fake's calls. */
cudnnStatus_t execute(cudnnHandle_t h, const desc *plan, const desc *pack)
{
    const desc *config =
        child(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    graph_parts parts;
    parts_of(config->graph, &parts);
    const desc *op = parts.conv;
    int p = pass_of(op->type);
    bool fused = parts.relu != nullptr;
    const attribute *ids = find(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
    /* x, w, y in the forward's roles (y: the ReLU's output where fused), the bias */
    const desc *tensors[4] = {
        tensor(op, OPERATION_ATTRS[p][0]), tensor(op, OPERATION_ATTRS[p][1]),
        fused ? tensor(parts.relu, CUDNN_ATTR_OPERATION_POINTWISE_YDESC)
              : tensor(op, OPERATION_ATTRS[p][2]),
        fused ? tensor(parts.add, CUDNN_ATTR_OPERATION_POINTWISE_BDESC) : nullptr};
    void *ptrs[4] = {nullptr, nullptr, nullptr, nullptr};
    for (int k = 0; k < (fused ? 4 : 3); k++) {
        int64_t uid = get<int64_t>(tensors[k], CUDNN_ATTR_TENSOR_UNIQUE_ID);
        for (int64_t j = 0; j < ids->count; j++)
            if (get<int64_t>(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, j) == uid)
                ptrs[k] = get<void *>(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, j);
        if (!ptrs[k])
            return CUDNN_STATUS_BAD_PARAM;
    }
    /* a virtual tensor has no memory: the pack names none */
    if (ids->count != (fused ? 4 : 3))
        return CUDNN_STATUS_BAD_PARAM;
    int64_t needs = workspace_of(config->engine, p);
    const attribute *ws_attr = find(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
    void *ws = ws_attr ? get<void *>(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE) : nullptr;
    if (needs > 0 && !ws)
        return CUDNN_STATUS_BAD_PARAM;
    if (config->engine == 2) {
        const desc *out = tensors[p == 0 ? 2 : p == 1 ? 0 : 1];
        void *target = ptrs[p == 0 ? 2 : p == 1 ? 0 : 1];
        emu_host::run_kernel(
            fake_cudnn_stream(h), "fake_cudnn_graph_down_convert", dim3(1), dim3(1),
            [=]() { poison(out, target); }, emu_host::kernel_work{});
        return CUDNN_STATUS_SUCCESS;
    }
    int dims[3][4];
    bool nhwc[3];
    for (int k = 0; k < 3; k++)
        if (!layout_of(tensors[k], dims[k], &nhwc[k]) || nhwc[k] != nhwc[0])
            return CUDNN_STATUS_BAD_PARAM;
    cudnnDataType_t type = get<cudnnDataType_t>(tensors[0], CUDNN_ATTR_TENSOR_DATA_TYPE);
    cudnnTensorFormat_t format = nhwc[0] ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    const desc *cv = child(op, OPERATION_ATTRS[p][3], CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnCreateTensorDescriptor(&x);
    cudnnCreateTensorDescriptor(&y);
    cudnnCreateFilterDescriptor(&w);
    cudnnCreateConvolutionDescriptor(&conv);
    cudnnSetTensor4dDescriptor(x, format, type, dims[0][0], dims[0][1], dims[0][2], dims[0][3]);
    cudnnSetTensor4dDescriptor(y, format, type, dims[2][0], dims[2][1], dims[2][2], dims[2][3]);
    cudnnSetFilter4dDescriptor(w, type, format, dims[1][0], dims[1][1], dims[1][2], dims[1][3]);
    cudnnSetConvolution2dDescriptor(conv,
                                    (int)get<int64_t>(cv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, 0),
                                    (int)get<int64_t>(cv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, 1),
                                    (int)get<int64_t>(cv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, 0),
                                    (int)get<int64_t>(cv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, 1),
                                    (int)get<int64_t>(cv, CUDNN_ATTR_CONVOLUTION_DILATIONS, 0),
                                    (int)get<int64_t>(cv, CUDNN_ATTR_CONVOLUTION_DILATIONS, 1),
                                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    cudnnSetConvolutionMathType(conv, config->engine == 1 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH);
    float alpha = get<float>(op, OPERATION_ATTRS[p][4]),
          beta = get<float>(op, OPERATION_ATTRS[p][5]);
    int algo = legacy_algo(config->engine, p);
    size_t bytes = (size_t)needs;
    cudnnTensorDescriptor_t bias = nullptr;
    if (fused) {
        cudnnCreateTensorDescriptor(&bias);
        cudnnSetTensor4dDescriptor(bias, format,
                                   get<cudnnDataType_t>(tensors[3], CUDNN_ATTR_TENSOR_DATA_TYPE),
                                   1, dims[2][1], 1, 1);
    }
    cudnnStatus_t st =
        fused ? fake_cudnn_graph_bias_relu(h, x, ptrs[0], w, ptrs[1], conv, algo, ws, bytes, bias,
                                           ptrs[3], y, ptrs[2])
        : p == 0
            ? cudnnConvolutionForward(h, &alpha, x, ptrs[0], w, ptrs[1], conv,
                                      (cudnnConvolutionFwdAlgo_t)algo, ws, bytes, &beta, y, ptrs[2])
        : p == 1 ? cudnnConvolutionBackwardData(h, &alpha, w, ptrs[1], y, ptrs[2], conv,
                                                (cudnnConvolutionBwdDataAlgo_t)algo, ws, bytes,
                                                &beta, x, ptrs[0])
                 : cudnnConvolutionBackwardFilter(h, &alpha, x, ptrs[0], y, ptrs[2], conv,
                                                  (cudnnConvolutionBwdFilterAlgo_t)algo, ws, bytes,
                                                  &beta, w, ptrs[1]);
    if (bias)
        cudnnDestroyTensorDescriptor(bias);
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(conv);
    return st;
}

} // namespace

extern "C" {

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t *d)
{
    desc *n = new desc;
    n->type = type;
    *d = n;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t d)
{
    delete (desc *)d;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count,
                                       const void *values)
{
    desc *e = (desc *)d;
    if (!e || e->finalized || count < 1 || !values || type != type_of(name) || !size_of(type))
        return CUDNN_STATUS_BAD_PARAM;
    attribute a{type, std::vector<char>((size_t)count * size_of(type)), count};
    memcpy(a.bytes.data(), values, a.bytes.size());
    e->attrs[name] = a;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t d)
{
    desc *e = (desc *)d;
    if (!e || e->finalized || !complete(e))
        return CUDNN_STATUS_BAD_PARAM;
    if (e->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) {
        const char *refuse = getenv("FAKE_CUDNN_GRAPH_REFUSE");
        if (refuse && strcmp(refuse, "1") == 0)
            return CUDNN_STATUS_NOT_SUPPORTED;
    }
    const char *heur_fail = getenv("FAKE_CUDNN_GRAPH_HEUR_FAIL"),
               *no_fusion = getenv("FAKE_CUDNN_GRAPH_NO_FUSION");
    if (e->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR) {
        const desc *graph = get<desc *>(e, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
        const desc *op = op_of_graph(graph);
        const desc *x = get<desc *>(op, OPERATION_ATTRS[pass_of(op->type)][0]);
        if (heur_fail && get<int64_t>(x, CUDNN_ATTR_TENSOR_DIMENSIONS, 1) == atoll(heur_fail))
            return CUDNN_STATUS_NOT_SUPPORTED;
        if (no_fusion && strcmp(no_fusion, "1") == 0 &&
            find(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS)->count > 1)
            return CUDNN_STATUS_NOT_SUPPORTED;
    }
    e->finalized = true;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const d,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested,
                                       int64_t *count, void *values)
{
    const desc *e = (const desc *)d;
    if (!e || !e->finalized || !count)
        return CUDNN_STATUS_BAD_PARAM;
    switch (name) {
    case CUDNN_ATTR_ENGINEHEUR_RESULTS: {
        if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR || e->type != CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)
            return CUDNN_STATUS_BAD_PARAM;
        int64_t n = requested < ENGINES ? requested : ENGINES;
        *count = requested == 0 ? ENGINES : n;
        for (int64_t k = 0; k < n; k++) {
            desc *c = ((desc **)values)[k];
            if (!c || c->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)
                return CUDNN_STATUS_BAD_PARAM;
            c->engine = (int)(ENGINES - 1 - k); /* 2, 1, 0 */
            c->graph = get<desc *>(e, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
            c->finalized = true;
        }
        return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_ENGINECFG_ENGINE: {
        desc *engine = requested == 1 && values ? *(desc **)values : nullptr;
        if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR || !engine ||
            engine->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR)
            return CUDNN_STATUS_BAD_PARAM;
        engine->engine = e->engine, engine->graph = e->graph, engine->finalized = true;
        *count = 1;
        return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_ENGINE_GLOBAL_INDEX:
        if (type != CUDNN_TYPE_INT64 || requested < 1 || e->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR)
            return CUDNN_STATUS_BAD_PARAM;
        *(int64_t *)values = e->engine;
        *count = 1;
        return CUDNN_STATUS_SUCCESS;
    case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE: {
        if (type != CUDNN_TYPE_NUMERICAL_NOTE || e->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR)
            return CUDNN_STATUS_BAD_PARAM;
        std::vector<cudnnBackendNumericalNote_t> notes;
        if (e->engine >= 1)
            notes.push_back(CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
        if (e->engine == 2)
            notes.push_back(CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS);
        *count = (int64_t)notes.size();
        for (int64_t k = 0; k < *count && k < requested; k++)
            ((cudnnBackendNumericalNote_t *)values)[k] = notes[k];
        return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
        if (type != CUDNN_TYPE_INT64 || requested < 1 ||
            e->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)
            return CUDNN_STATUS_BAD_PARAM;
        *(int64_t *)values = workspace_of(e->engine, pass_of(op_of_graph(e->graph)->type));
        *count = 1;
        return CUDNN_STATUS_SUCCESS;
    case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE: {
        if (type != CUDNN_TYPE_INT64 || requested < 1 ||
            e->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)
            return CUDNN_STATUS_BAD_PARAM;
        const desc *config = get<desc *>(e, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
        *(int64_t *)values =
            workspace_of(config->engine, pass_of(op_of_graph(config->graph)->type));
        *count = 1;
        return CUDNN_STATUS_SUCCESS;
    }
    default: return CUDNN_STATUS_NOT_SUPPORTED;
    }
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t h, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t pack)
{
    const desc *p = (const desc *)plan, *v = (const desc *)pack;
    if (!h || !p || !v || !p->finalized || !v->finalized ||
        p->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ||
        v->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
        return CUDNN_STATUS_BAD_PARAM;
    return execute(h, p, v);
}

} // extern "C"
