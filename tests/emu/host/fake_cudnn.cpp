/* The cuDNN 9 calls of the CUDA backend (legacy convolution API), on the
 * host: descriptors keep what they were given; Find offers a few algorithms
 * per pass as cuDNN lists them (fastest first, in the descriptor's math
 * type, with the workspace each needs, one not supported at the end; their
 * times are made up) and the passes run no other, nor one given less
 * workspace than it needs (CUDNN_STATUS_BAD_PARAM, as cuDNN), and they leave
 * NaNs over the workspace they need; the three convolution passes are
 * direct loops in double over the descriptors' layouts (NCHW,
 * NHWC; filters KCRS or KRSC), groups, strides, padding and dilation, with
 * alpha and beta as cuDNN defines them (beta = 0 never reads the output).
 * The values are cuDNN's, up to rounding; its speed and its algorithms
 * are not modelled. Work goes to the handle's stream (fake_cuda.cpp). */
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cudnn.h>

#include "host_elements.h"
#include "host_launch.h"

struct cudnnContext {
    cudaStream_t stream = nullptr;
};
struct cudnnTensorStruct {
    cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    int n = 0, c = 0, h = 0, w = 0;
};
struct cudnnFilterStruct {
    cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    int k = 0, c = 0, r = 0, s = 0;
};
struct cudnnConvolutionStruct {
    int pad_h = 0, pad_w = 0, u = 1, v = 1, dil_h = 1, dil_w = 1, groups = 1;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};
struct cudnnActivationStruct {
    cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
    cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
    double coef = 0.0;
};

namespace {

using emu_host::element;
using emu_host::load_element;
using emu_host::store_element;

element element_of(cudnnDataType_t t)
{
    return t == CUDNN_DATA_HALF       ? element::f16
           : t == CUDNN_DATA_BFLOAT16 ? element::bf16
                                      : element::f32;
}

size_t tensor_at(const cudnnTensorStruct &d, int n, int c, int y, int x)
{
    if (d.format == CUDNN_TENSOR_NHWC)
        return (((size_t)n * d.h + y) * d.w + x) * d.c + c;
    return (((size_t)n * d.c + c) * d.h + y) * d.w + x;
}

size_t filter_at(const cudnnFilterStruct &f, int k, int c, int r, int s)
{
    if (f.format == CUDNN_TENSOR_NHWC)
        return (((size_t)k * f.r + r) * f.s + s) * f.c + c;
    return (((size_t)k * f.c + c) * f.r + r) * f.s + s;
}

size_t tensor_elems(const cudnnTensorStruct &d) { return (size_t)d.n * d.c * d.h * d.w; }
size_t filter_elems(const cudnnFilterStruct &f) { return (size_t)f.k * f.c * f.r * f.s; }

/* A tensor in double, NCHW whatever its layout (and back), so that the
 * loops below run over contiguous rows: the emulated training steps of make
 * test spend most of their time here. */
std::vector<double> tensor_in(const cudnnTensorStruct &d, const void *p)
{
    std::vector<double> v(tensor_elems(d));
    size_t i = 0;
    for (int n = 0; n < d.n; n++)
        for (int c = 0; c < d.c; c++)
            for (int y = 0; y < d.h; y++)
                for (int x = 0; x < d.w; x++)
                    v[i++] = load_element(element_of(d.type), p, tensor_at(d, n, c, y, x));
    return v;
}
std::vector<double> filter_in(const cudnnFilterStruct &f, const void *p)
{
    std::vector<double> v(filter_elems(f));
    size_t i = 0;
    for (int k = 0; k < f.k; k++)
        for (int c = 0; c < f.c; c++)
            for (int r = 0; r < f.r; r++)
                for (int s = 0; s < f.s; s++)
                    v[i++] = load_element(element_of(f.type), p, filter_at(f, k, c, r, s));
    return v;
}

/* out = alpha sums + beta out (sums in NCHW or KCRS order, indexed by `at`
 * from that order to the stored one); out read only where beta is not 0,
 * as cuDNN: what it held may be anything, NaN included. */
template <typename At>
void blend(cudnnDataType_t t, void *out, const std::vector<double> &sums, float alpha,
           float beta, At at)
{
    element e = element_of(t);
    for (size_t i = 0; i < sums.size(); i++) {
        size_t o = at(i);
        store_element(e, out, o,
                      alpha * sums[i] + (beta != 0.0f ? beta * load_element(e, out, o) : 0.0));
    }
}

size_t tensor_index_of(const cudnnTensorStruct &d, size_t i)
{
    int x = (int)(i % d.w), y = (int)(i / d.w % d.h), c = (int)(i / ((size_t)d.w * d.h) % d.c);
    int n = (int)(i / ((size_t)d.w * d.h * d.c));
    return tensor_at(d, n, c, y, x);
}
size_t filter_index_of(const cudnnFilterStruct &f, size_t i)
{
    int s = (int)(i % f.s), r = (int)(i / f.s % f.r), c = (int)(i / ((size_t)f.s * f.r) % f.c);
    int k = (int)(i / ((size_t)f.s * f.r * f.c));
    return filter_at(f, k, c, r, s);
}

enum pass { FORWARD, BACKWARD_DATA, BACKWARD_FILTER };

/* What Find offers per pass, in its order: the algorithm (the enum's
 * value), its time relative to the fastest (0: not supported), the
 * workspace Find reports for it and the workspace it needs, which
 * cudnnGet*WorkspaceSize reports. Within 2% of the fastest the backend
 * takes the least workspace (cuda_plan.c's conv_algo_pick): forward the
 * 0.5% slower IMPLICIT_GEMM with none, backward data the fastest (the one
 * without workspace is 3% slower), backward filter the 1.5% slower one,
 * whose Find figure (2 MiB) is below its need (3 MiB): frameworks query the
 * chosen algorithm's workspace again rather than trust Find's, and so must
 * the backend. */
struct offered {
    int algo;
    float relative_time;
    size_t workspace;
    size_t needs;
};
const offered FWD_OFFERED[] = {
    {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, 1.0f, 4 << 20, 4 << 20},
    {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, 1.005f, 0, 0},
    {CUDNN_CONVOLUTION_FWD_ALGO_FFT, 1.5f, 256 << 20, 256 << 20},
    {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, 0.0f, 0, 0},
};
const offered BWD_DATA_OFFERED[] = {
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, 1.0f, 8 << 20, 8 << 20},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, 1.03f, 0, 0},
    {CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD, 0.0f, 0, 0},
};
const offered BWD_FILTER_OFFERED[] = {
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, 1.0f, 16 << 20, 16 << 20},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, 1.015f, 2 << 20, 3 << 20},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, 1.1f, 0, 0},
    {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, 0.0f, 0, 0},
};

/* Find's results for one pass: at most `requested` of `offered` in its
 * order; one needing more than the given workspace is not timed and
 * reported failed (CUDNN_STATUS_ALLOC_FAILED here). */
template <typename Perf, typename Algo, size_t N>
cudnnStatus_t find(const offered (&list)[N], const cudnnConvolutionStruct &cv, int requested,
                   int *returned, Perf *perf, size_t workspace)
{
    if (requested < 1)
        return CUDNN_STATUS_BAD_PARAM;
    int n = (int)N < requested ? (int)N : requested;
    for (int k = 0; k < n; k++) {
        memset(&perf[k], 0, sizeof perf[k]);
        perf[k].algo = (Algo)list[k].algo;
        bool supported = list[k].relative_time > 0.0f;
        bool fits = list[k].needs <= workspace;
        perf[k].status = !supported ? CUDNN_STATUS_NOT_SUPPORTED
                         : !fits    ? CUDNN_STATUS_ALLOC_FAILED
                                    : CUDNN_STATUS_SUCCESS;
        perf[k].time = supported && fits ? 0.01f * list[k].relative_time : -1.0f;
        perf[k].memory = list[k].workspace;
        perf[k].determinism = CUDNN_DETERMINISTIC;
        perf[k].mathType = cv.math;
    }
    *returned = n;
    return CUDNN_STATUS_SUCCESS;
}

/* Whether a pass may run `algo` with `workspace` bytes: one that Find offers
 * as supported (else CUDNN_STATUS_NOT_SUPPORTED), given at least what it
 * needs (else CUDNN_STATUS_BAD_PARAM); *needs: what it needs. */
template <size_t N>
cudnnStatus_t runnable(const offered (&list)[N], int algo, size_t workspace, size_t *needs)
{
    for (const offered &o : list)
        if (o.algo == algo && o.relative_time > 0.0f) {
            *needs = o.needs;
            return workspace >= o.needs ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
        }
    return CUDNN_STATUS_NOT_SUPPORTED;
}

/* cudnnGet*WorkspaceSize: what `algo` needs (CUDNN_STATUS_BAD_PARAM for
 * descriptors that disagree, CUDNN_STATUS_NOT_SUPPORTED for an algorithm
 * Find does not offer). FAKE_CUDNN_REFUSE_WORKSPACE_QUERY=1: "not supported"
 * also for every algorithm whose Find figure is what it needs (a query
 * refusing an algorithm Find ran, which the backend must survive). */
template <size_t N>
cudnnStatus_t workspace_size(bool shapes_ok, const offered (&list)[N], int algo, size_t *bytes)
{
    if (!shapes_ok)
        return CUDNN_STATUS_BAD_PARAM;
    const char *refuse = getenv("FAKE_CUDNN_REFUSE_WORKSPACE_QUERY");
    for (const offered &o : list)
        if (o.algo == algo && o.relative_time > 0.0f) {
            if (refuse && strcmp(refuse, "1") == 0 && o.workspace == o.needs)
                return CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
            *bytes = o.needs;
            return CUDNN_STATUS_SUCCESS;
        }
    return CUDNN_STATUS_NOT_SUPPORTED;
}


/* The convolution's products in NCHW / KCRS doubles: Y += X W (forward),
 * X += Y W (backward data: X is dx, Y is dy), W += X Y (backward filter). */
template <pass P>
void convolve(const cudnnTensorStruct &x, const cudnnFilterStruct &w,
              const cudnnConvolutionStruct &cv, const cudnnTensorStruct &y, double *X, double *W,
              double *Y)
{
    int k_per_group = w.k / cv.groups;
    size_t x_plane = (size_t)x.h * x.w, y_plane = (size_t)y.h * y.w;
    for (int n = 0; n < y.n; n++)
        for (int k = 0; k < y.c; k++) {
            int group = k / k_per_group;
            double *yk = Y + ((size_t)n * y.c + k) * y_plane;
            for (int c = 0; c < w.c; c++) {
                double *xc = X + ((size_t)n * x.c + group * w.c + c) * x_plane;
                double *wkc = W + ((size_t)k * w.c + c) * w.r * w.s;
                for (int r = 0; r < w.r; r++)
                    for (int s = 0; s < w.s; s++) {
                        double *tap = wkc + r * w.s + s, sum = 0.0;
                        for (int oy = 0; oy < y.h; oy++) {
                            int iy = oy * cv.u - cv.pad_h + r * cv.dil_h;
                            if (iy < 0 || iy >= x.h)
                                continue;
                            double *xrow = xc + (size_t)iy * x.w, *yrow = yk + (size_t)oy * y.w;
                            for (int ox = 0; ox < y.w; ox++) {
                                int ix = ox * cv.v - cv.pad_w + s * cv.dil_w;
                                if (ix < 0 || ix >= x.w)
                                    continue;
                                if (P == FORWARD)
                                    yrow[ox] += xrow[ix] * *tap;
                                else if (P == BACKWARD_DATA)
                                    xrow[ix] += yrow[ox] * *tap;
                                else
                                    sum += xrow[ix] * yrow[ox];
                            }
                        }
                        if (P == BACKWARD_FILTER)
                            *tap += sum;
                    }
            }
        }
}

bool shapes_agree(const cudnnTensorStruct &x, const cudnnFilterStruct &w,
                  const cudnnConvolutionStruct &cv, const cudnnTensorStruct &y)
{
    return x.n == y.n && w.k == y.c && w.c * cv.groups == x.c && w.k % cv.groups == 0 &&
           x.type == w.type && x.type == y.type;
}

/* The pass as a GPU's implicit GEMM runs it, for CUPTI's metric pass: one
 * multiply-add per output element, input channel of its group and filter
 * tap (padding taps included), as FFMA for float in FMA math, else on the
 * tensor cores (float as TF32; fp16 and bf16 always, as the backend asks
 * for tensor-op math there); its operands read once, the output written
 * once (and read where beta is not 0). */
template <pass P>
emu_host::kernel_work work_of(const cudnnTensorStruct &x, const cudnnFilterStruct &w,
                              const cudnnConvolutionStruct &cv, const cudnnTensorStruct &y,
                              float beta)
{
    emu_host::kernel_work k;
    double macs = (double)tensor_elems(y) * w.c * w.r * w.s;
    if (x.type == CUDNN_DATA_FLOAT && cv.math == CUDNN_FMA_MATH)
        k.ffma = macs;
    else {
        k.tensor_ops = 2 * macs;
        k.tensor_src = emu_host::tensor_source(element_of(x.type));
    }
    double size = emu_host::element_bytes(element_of(x.type));
    double xb = size * tensor_elems(x), wb = size * filter_elems(w), yb = size * tensor_elems(y);
    double out = P == FORWARD ? yb : P == BACKWARD_DATA ? xb : wb;
    k.bytes_read = xb + wb + yb - out + (beta != 0.0f ? out : 0.0);
    k.bytes_written = out;
    return k;
}

/* Pass P on the handle's stream with `algo` (one of `offered`, given
 * `workspace` bytes at `scratch`). x, w and y are in the forward's roles;
 * the pass's output (y, x or w) is `out`, and its input in that role is
 * unused. The descriptors are copied: a graph may replay the work after
 * they change. */
template <pass P, size_t N>
cudnnStatus_t run_pass(const offered (&offered_list)[N], int algo, void *scratch,
                       size_t workspace, cudnnHandle_t h, const void *alpha, const void *beta,
                       const cudnnTensorStruct &xs, const void *x, const cudnnFilterStruct &ws,
                       const void *w, const cudnnConvolutionStruct &cv,
                       const cudnnTensorStruct &ys, const void *y, void *out)
{
    size_t scratch_bytes = 0;
    if (cudnnStatus_t st = runnable(offered_list, algo, workspace, &scratch_bytes))
        return st;
    if (!shapes_agree(xs, ws, cv, ys))
        return CUDNN_STATUS_BAD_PARAM;
    float a = *(const float *)alpha, b = *(const float *)beta;
    static const char *const kernel_names[] = {"fake_cudnn_fprop", "fake_cudnn_dgrad",
                                               "fake_cudnn_wgrad"};
    emu_host::run_kernel(h->stream, kernel_names[P], dim3(1), dim3(1), [=]() {
        emu_host::leave_nans(scratch, scratch_bytes);
        std::vector<double> X = P == BACKWARD_DATA ? std::vector<double>(tensor_elems(xs), 0.0)
                                                   : tensor_in(xs, x);
        std::vector<double> W = P == BACKWARD_FILTER ? std::vector<double>(filter_elems(ws), 0.0)
                                                     : filter_in(ws, w);
        std::vector<double> Y = P == FORWARD ? std::vector<double>(tensor_elems(ys), 0.0)
                                             : tensor_in(ys, y);
        convolve<P>(xs, ws, cv, ys, X.data(), W.data(), Y.data());
        if (P == FORWARD)
            blend(ys.type, out, Y, a, b, [&](size_t i) { return tensor_index_of(ys, i); });
        else if (P == BACKWARD_DATA)
            blend(xs.type, out, X, a, b, [&](size_t i) { return tensor_index_of(xs, i); });
        else
            blend(ws.type, out, W, a, b, [&](size_t i) { return filter_index_of(ws, i); });
    }, work_of<P>(xs, ws, cv, ys, b));
    return CUDNN_STATUS_SUCCESS;
}

/* The fused conv+bias+ReLU forward, y = act(alpha1 conv(x) + alpha2 z +
 * bias), as the backend calls it: ReLU or identity (identity only with
 * IMPLICIT_PRECOMP_GEMM, as cuDNN documents), the bias (1, K, 1, 1) in the
 * output's type, z read only where alpha2 is not 0. It takes the call with
 * IMPLICIT_PRECOMP_GEMM alone (CUDNN_STATUS_NOT_SUPPORTED for the others), so
 * that the backend's fallback from the searched algorithm is what the
 * emulated steps run; FAKE_CUDNN_FUSED_MIN_CHANNELS=C refuses it outright
 * where the input has fewer than C channels (a GPU's cuDNN may refuse some
 * shapes: the tests make VGG-16's 3-channel first layer one). */
cudnnStatus_t fused_forward(cudnnHandle_t h, const void *alpha1, const cudnnTensorStruct &xs,
                            const void *x, const cudnnFilterStruct &ws, const void *w,
                            const cudnnConvolutionStruct &cv, int algo, void *scratch,
                            size_t workspace, const void *alpha2, const cudnnTensorStruct &zs,
                            const void *z, const cudnnTensorStruct &bs, const void *bias,
                            const cudnnActivationStruct &act, const cudnnTensorStruct &ys,
                            void *y, bool legacy_call = true)
{
    if (legacy_call && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
        return CUDNN_STATUS_NOT_SUPPORTED;
    const char *min_channels = getenv("FAKE_CUDNN_FUSED_MIN_CHANNELS");
    if (legacy_call && min_channels && xs.c < atoi(min_channels))
        return CUDNN_STATUS_NOT_SUPPORTED;
    if (act.mode != CUDNN_ACTIVATION_RELU && act.mode != CUDNN_ACTIVATION_IDENTITY)
        return CUDNN_STATUS_NOT_SUPPORTED;
    size_t scratch_bytes = 0;
    if (cudnnStatus_t st = runnable(FWD_OFFERED, algo, workspace, &scratch_bytes))
        return st;
    if (!shapes_agree(xs, ws, cv, ys) || bs.n != 1 || bs.c != ys.c || bs.h != 1 || bs.w != 1 ||
        bs.type != ys.type || zs.n != ys.n || zs.c != ys.c || zs.h != ys.h || zs.w != ys.w ||
        zs.type != ys.type || zs.format != ys.format)
        return CUDNN_STATUS_BAD_PARAM;
    float a1 = *(const float *)alpha1, a2 = *(const float *)alpha2;
    bool relu = act.mode == CUDNN_ACTIVATION_RELU;
    emu_host::kernel_work work = work_of<FORWARD>(xs, ws, cv, ys, 0.0f);
    work.bytes_read += emu_host::element_bytes(element_of(bs.type)) * bs.c +
                       (a2 != 0.0f ? emu_host::element_bytes(element_of(zs.type)) *
                                         tensor_elems(zs)
                                   : 0.0);
    emu_host::run_kernel(h->stream, "fake_cudnn_fprop_bias_relu", dim3(1), dim3(1), [=]() {
        emu_host::leave_nans(scratch, scratch_bytes);
        std::vector<double> X = tensor_in(xs, x), W = filter_in(ws, w);
        std::vector<double> Y(tensor_elems(ys), 0.0);
        convolve<FORWARD>(xs, ws, cv, ys, X.data(), W.data(), Y.data());
        std::vector<double> B = tensor_in(bs, bias);
        std::vector<double> Z = a2 != 0.0f ? tensor_in(zs, z) : std::vector<double>();
        size_t plane = (size_t)ys.h * ys.w;
        for (size_t i = 0; i < Y.size(); i++) {
            double v = a1 * Y[i] + (a2 != 0.0f ? a2 * Z[i] : 0.0) + B[i / plane % ys.c];
            Y[i] = relu && !(v > 0.0) ? 0.0 : v; /* NaN to 0: CUDNN_NOT_PROPAGATE_NAN */
        }
        blend(ys.type, y, Y, 1.0f, 0.0f, [&](size_t i) { return tensor_index_of(ys, i); });
    }, work);
    return CUDNN_STATUS_SUCCESS;
}

} // namespace

/* The handle's stream, for the graph API's stand-in (fake_cudnn_graph.cpp). */
cudaStream_t fake_cudnn_stream(cudnnHandle_t h)
{
    return h->stream;
}

/* The graph API's convolution with bias and ReLU in its epilogue
 * (fake_cudnn_graph.cpp), computed as the fused call computes it (in
 * double, rounded once), with the engine's algorithm and without the legacy
 * call's refusals. */
cudnnStatus_t fake_cudnn_graph_bias_relu(cudnnHandle_t h, cudnnTensorDescriptor_t xd,
                                         const void *x, cudnnFilterDescriptor_t wd, const void *w,
                                         cudnnConvolutionDescriptor_t cvd, int algo, void *scratch,
                                         size_t workspace, cudnnTensorDescriptor_t bd,
                                         const void *bias, cudnnTensorDescriptor_t yd, void *y)
{
    static const float one = 1.0f, zero = 0.0f;
    const cudnnActivationStruct relu;
    return fused_forward(h, &one, *xd, x, *wd, w, *cvd, algo, scratch, workspace, &zero, *yd, y,
                         *bd, bias, relu, *yd, y, false);
}

extern "C" {

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t *d)
{
    *d = new cudnnActivationStruct;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t d)
{
    delete d;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d,
                                           cudnnActivationMode_t mode,
                                           cudnnNanPropagation_t nan, double coef)
{
    d->mode = mode, d->nan = nan, d->coef = coef;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t h, const void *alpha1, const cudnnTensorDescriptor_t xd, const void *x,
    const cudnnFilterDescriptor_t wd, const void *w, const cudnnConvolutionDescriptor_t cvd,
    cudnnConvolutionFwdAlgo_t algo, void *scratch, size_t workspace, const void *alpha2,
    const cudnnTensorDescriptor_t zd, const void *z, const cudnnTensorDescriptor_t bd,
    const void *bias, const cudnnActivationDescriptor_t ad, const cudnnTensorDescriptor_t yd,
    void *y)
{
    return fused_forward(h, alpha1, *xd, x, *wd, w, *cvd, algo, scratch, workspace, alpha2, *zd,
                         z, *bd, bias, *ad, *yd, y);
}

const char *cudnnGetErrorString(cudnnStatus_t status)
{
    static char text[64];
    snprintf(text, sizeof text, "CUDNN_STATUS %d (host emulator)", (int)status);
    return text;
}
void cudnnGetLastErrorString(char *message, size_t max_size)
{
    if (max_size)
        message[0] = '\0';
}
/* the headers' version: the one the backend was compiled against */
size_t cudnnGetVersion(void) { return CUDNN_VERSION; }
cudnnStatus_t cudnnCreate(cudnnHandle_t *handle)
{
    *handle = new cudnnContext;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle)
{
    delete handle;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream)
{
    handle->stream = stream;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *d)
{
    *d = new cudnnTensorStruct;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d)
{
    delete d;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                                         cudnnDataType_t type, int n, int c, int h, int w)
{
    if (n <= 0 || c <= 0 || h <= 0 || w <= 0 || (int64_t)n * c * h * w > INT32_MAX)
        return CUDNN_STATUS_BAD_PARAM;
    *d = cudnnTensorStruct{format, type, n, c, h, w};
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *d)
{
    *d = new cudnnFilterStruct;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d)
{
    delete d;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w)
{
    if (k <= 0 || c <= 0 || h <= 0 || w <= 0)
        return CUDNN_STATUS_BAD_PARAM;
    *d = cudnnFilterStruct{format, type, k, c, h, w};
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *d)
{
    *d = new cudnnConvolutionStruct;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d)
{
    delete d;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h,
                                              int pad_w, int u, int v, int dil_h, int dil_w,
                                              cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute)
{
    if (mode != CUDNN_CROSS_CORRELATION || compute != CUDNN_DATA_FLOAT || u <= 0 || v <= 0 ||
        dil_h <= 0 || dil_w <= 0 || pad_h < 0 || pad_w < 0)
        return CUDNN_STATUS_NOT_SUPPORTED; /* the backend asks for these only */
    d->pad_h = pad_h, d->pad_w = pad_w, d->u = u, d->v = v, d->dil_h = dil_h, d->dil_w = dil_w;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups)
{
    if (groups <= 0)
        return CUDNN_STATUS_BAD_PARAM;
    d->groups = groups;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t math)
{
    d->math = math;
    return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t cv,
                                                    const cudnnTensorDescriptor_t x,
                                                    const cudnnFilterDescriptor_t w, int *n,
                                                    int *c, int *h, int *wd)
{
    *n = x->n;
    *c = w->k;
    *h = (x->h + 2 * cv->pad_h - cv->dil_h * (w->r - 1) - 1) / cv->u + 1;
    *wd = (x->w + 2 * cv->pad_w - cv->dil_w * (w->s - 1) - 1) / cv->v + 1;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t, const cudnnTensorDescriptor_t x, const void *, const cudnnFilterDescriptor_t w,
    const void *, const cudnnConvolutionDescriptor_t cv, const cudnnTensorDescriptor_t y, void *,
    const int requested, int *returned, cudnnConvolutionFwdAlgoPerf_t *perf, void *,
    size_t workspace)
{
    if (!shapes_agree(*x, *w, *cv, *y))
        return CUDNN_STATUS_BAD_PARAM;
    return find<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
        FWD_OFFERED, *cv, requested, returned, perf, workspace);
}
cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t, const cudnnFilterDescriptor_t w, const void *,
    const cudnnTensorDescriptor_t dy, const void *, const cudnnConvolutionDescriptor_t cv,
    const cudnnTensorDescriptor_t dx, void *, const int requested, int *returned,
    cudnnConvolutionBwdDataAlgoPerf_t *perf, void *, size_t workspace)
{
    if (!shapes_agree(*dx, *w, *cv, *dy))
        return CUDNN_STATUS_BAD_PARAM;
    return find<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
        BWD_DATA_OFFERED, *cv, requested, returned, perf, workspace);
}
cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t, const cudnnTensorDescriptor_t x, const void *,
    const cudnnTensorDescriptor_t dy, const void *, const cudnnConvolutionDescriptor_t cv,
    const cudnnFilterDescriptor_t dw, void *, const int requested, int *returned,
    cudnnConvolutionBwdFilterAlgoPerf_t *perf, void *, size_t workspace)
{
    if (!shapes_agree(*x, *dw, *cv, *dy))
        return CUDNN_STATUS_BAD_PARAM;
    return find<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
        BWD_FILTER_OFFERED, *cv, requested, returned, perf, workspace);
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t,
                                                      const cudnnTensorDescriptor_t x,
                                                      const cudnnFilterDescriptor_t w,
                                                      const cudnnConvolutionDescriptor_t cv,
                                                      const cudnnTensorDescriptor_t y,
                                                      cudnnConvolutionFwdAlgo_t algo,
                                                      size_t *bytes)
{
    return workspace_size(shapes_agree(*x, *w, *cv, *y), FWD_OFFERED, algo, bytes);
}
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t cv, const cudnnTensorDescriptor_t dx,
    cudnnConvolutionBwdDataAlgo_t algo, size_t *bytes)
{
    return workspace_size(shapes_agree(*dx, *w, *cv, *dy), BWD_DATA_OFFERED, algo, bytes);
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t cv, const cudnnFilterDescriptor_t dw,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t *bytes)
{
    return workspace_size(shapes_agree(*x, *dw, *cv, *dy), BWD_FILTER_OFFERED, algo, bytes);
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha,
                                      const cudnnTensorDescriptor_t xd, const void *x,
                                      const cudnnFilterDescriptor_t wd, const void *w,
                                      const cudnnConvolutionDescriptor_t cvd,
                                      cudnnConvolutionFwdAlgo_t algo, void *scratch,
                                      size_t workspace, const void *beta,
                                      const cudnnTensorDescriptor_t yd, void *y)
{
    return run_pass<FORWARD>(FWD_OFFERED, algo, scratch, workspace, h, alpha, beta, *xd, x, *wd,
                             w, *cvd, *yd, nullptr, y);
}
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha,
                                           const cudnnFilterDescriptor_t wd, const void *w,
                                           const cudnnTensorDescriptor_t dyd, const void *dy,
                                           const cudnnConvolutionDescriptor_t cvd,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *scratch,
                                           size_t workspace, const void *beta,
                                           const cudnnTensorDescriptor_t dxd, void *dx)
{
    return run_pass<BACKWARD_DATA>(BWD_DATA_OFFERED, algo, scratch, workspace, h, alpha, beta,
                                   *dxd, nullptr, *wd, w, *cvd, *dyd, dy, dx);
}
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha,
                                             const cudnnTensorDescriptor_t xd, const void *x,
                                             const cudnnTensorDescriptor_t dyd, const void *dy,
                                             const cudnnConvolutionDescriptor_t cvd,
                                             cudnnConvolutionBwdFilterAlgo_t algo,
                                             void *scratch, size_t workspace, const void *beta,
                                             const cudnnFilterDescriptor_t dwd, void *dw)
{
    return run_pass<BACKWARD_FILTER>(BWD_FILTER_OFFERED, algo, scratch, workspace, h, alpha, beta,
                                     *xd, x, *dwd, nullptr, *cvd, *dyd, dy, dw);
}

} // extern "C"
