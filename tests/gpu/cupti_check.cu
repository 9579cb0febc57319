/* make test-gpu: the suite's metric pass (counters/cupti_metrics.cu) counts
 * what is known to be there.
 * - A kernel of exactly n FFMA per thread: fp32 FLOPs = 2 n threads, exactly,
 *   and no other FLOP.
 * - A streaming kernel (triad over 256 MiB arrays): DRAM read and write bytes
 *   within 5% of 8 and 4 bytes per element.
 * - A cuBLAS bf16 GEMM: tensor FLOPs within 1% of 2MNK (the op_hgmma counters
 *   read exactly 2MNK on the H100, notes/cupti.md).
 * - Every conv layer of resnet18-cifar in fp32 (cuDNN, FMA math, the
 *   algorithm cuDNN's heuristics put first), fwd, bwd_data and bwd_weights:
 *   measured / analytic FLOPs (models/cost.c) in [0.9, 1.3], or outside it for
 *   an FFT or Winograd algorithm, which does fewer multiplications by design.
 * - Where Nsight Compute's ncu is on PATH: the same metrics for the kernels of a
 *   small workload (FFMA kernel, triad, bf16 GEMM, a conv) read by ncu and by
 *   the suite, FLOPs and DRAM bytes within 2% (or 256 KiB for kernels whose
 *   DRAM traffic is too small for a ratio to mean anything). ncu runs this very
 *   program with --ncu-workload, which launches the workload without CUPTI,
 *   once to set up and once between cudaProfilerStart and Stop:
 *     ncu --csv --page raw --profile-from-start off --cache-control none
 *         --clock-control none --metrics <the suite's metrics>
 *         build/tests/gpu/cupti_check --ncu-workload
 *   (no cache flush and no clock locking: CUPTI 13.0 does neither).
 * Skips (exit 0, one line) without a CUDA device or without CUPTI; a check
 * whose counters the machine refuses prints SKIP with the cause. */
#include "cupti_kernels.cuh"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_profiler_api.h>

extern "C" {
#include "../../models/cost.h"
#include "../../models/zoo.h"
}

static gpu_tally tally;

#define expect(ok, ...) gpu_expectf(&tally, ok, __VA_ARGS__)

/* ---- the workloads --------------------------------------------------------- */

enum { FFMA_BLOCKS = 264, FFMA_THREADS = 256, FFMA_N = 1000 };
static const size_t TRIAD_N = (size_t)64 << 20; /* 256 MiB per array */

struct buffers {
    float *ffma_out = nullptr;
    float *a = nullptr, *b = nullptr, *c = nullptr;
};

static void buffers_open(buffers *bf)
{
    CUDA_CHECK(cudaMalloc(&bf->ffma_out, sizeof(float) * FFMA_BLOCKS * FFMA_THREADS));
    CUDA_CHECK(cudaMalloc(&bf->a, TRIAD_N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&bf->b, TRIAD_N * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&bf->c, TRIAD_N * sizeof(float)));
    fill<<<1024, 256>>>(bf->b, TRIAD_N, 1.0f);
    fill<<<1024, 256>>>(bf->c, TRIAD_N, 2.0f);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
}

static void buffers_close(buffers *bf)
{
    CUDA_CHECK(cudaFree(bf->ffma_out));
    CUDA_CHECK(cudaFree(bf->a));
    CUDA_CHECK(cudaFree(bf->b));
    CUDA_CHECK(cudaFree(bf->c));
}

static void launch_ffma(const buffers &bf)
{
    ffma_loop<<<FFMA_BLOCKS, FFMA_THREADS>>>(bf.ffma_out, FFMA_N, 0.999f, 0.001f);
    CUDA_CHECK(cudaGetLastError());
}

static void launch_triad(const buffers &bf)
{
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    triad<<<sms * 8, 256>>>(bf.a, bf.b, bf.c, 3.0f, TRIAD_N);
    CUDA_CHECK(cudaGetLastError());
}

/* C = A B in bf16 with fp32 accumulation: 2MNK FLOPs on the tensor cores. */
struct gemm {
    int m, n, k;
    cublasHandle_t blas = nullptr;
    __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
};

static void gemm_open(gemm *g, int size)
{
    g->m = g->n = g->k = size;
    CUBLAS_CHECK(cublasCreate(&g->blas));
    size_t elems = (size_t)size * size;
    CUDA_CHECK(cudaMalloc(&g->a, elems * sizeof(__nv_bfloat16)));
    CUDA_CHECK(cudaMalloc(&g->b, elems * sizeof(__nv_bfloat16)));
    CUDA_CHECK(cudaMalloc(&g->c, elems * sizeof(__nv_bfloat16)));
    CUDA_CHECK(cudaMemset(g->a, 0, elems * sizeof(__nv_bfloat16)));
    CUDA_CHECK(cudaMemset(g->b, 0, elems * sizeof(__nv_bfloat16)));
    CUDA_CHECK(cudaDeviceSynchronize());
}

static void gemm_run(const gemm &g)
{
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasGemmEx(g.blas, CUBLAS_OP_N, CUBLAS_OP_N, g.m, g.n, g.k, &one, g.a,
                              CUDA_R_16BF, g.m, g.b, CUDA_R_16BF, g.k, &zero, g.c, CUDA_R_16BF,
                              g.m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static void gemm_close(gemm *g)
{
    CUBLAS_CHECK(cublasDestroy(g->blas));
    CUDA_CHECK(cudaFree(g->a));
    CUDA_CHECK(cudaFree(g->b));
    CUDA_CHECK(cudaFree(g->c));
}

/* One conv layer of a zoo network on cuDNN in fp32 without tensor cores. */
struct conv {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t op = nullptr;
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
};

static const size_t CONV_WORKSPACE = (size_t)512 << 20;

static void conv_open(cudnnHandle_t dnn, const network *net, int i, int batch, conv *c)
{
    const layer *l = &net->layers[i];
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&c->x));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&c->y));
    CUDNN_CHECK(cudnnCreateFilterDescriptor(&c->w));
    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&c->op));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(c->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, batch,
                                           l->in_shape.c, l->in_shape.h, l->in_shape.w));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(c->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, batch,
                                           l->out_shape.c, l->out_shape.h, l->out_shape.w));
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(c->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                           l->out_channels, l->in_shape.c / l->groups, l->kernel,
                                           l->kernel));
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(c->op, l->pad, l->pad, l->stride, l->stride, 1, 1,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_CHECK(cudnnSetConvolutionGroupCount(c->op, l->groups));
    CUDNN_CHECK(cudnnSetConvolutionMathType(c->op, CUDNN_FMA_MATH));

    /* the heuristics' first choice that runs without tensor cores in the workspace */
    enum { N_ALGOS = 16 };
    int got = 0;
    cudnnConvolutionFwdAlgoPerf_t fwd[N_ALGOS];
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(dnn, c->x, c->w, c->op, c->y, N_ALGOS, &got,
                                                       fwd));
    c->fwd = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    for (int a = got - 1; a >= 0; a--)
        if (fwd[a].status == CUDNN_STATUS_SUCCESS && fwd[a].memory <= CONV_WORKSPACE &&
            fwd[a].mathType != CUDNN_TENSOR_OP_MATH)
            c->fwd = fwd[a].algo;
    cudnnConvolutionBwdDataAlgoPerf_t data[N_ALGOS];
    CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(dnn, c->w, c->y, c->op, c->x, N_ALGOS,
                                                            &got, data));
    c->bwd_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    for (int a = got - 1; a >= 0; a--)
        if (data[a].status == CUDNN_STATUS_SUCCESS && data[a].memory <= CONV_WORKSPACE &&
            data[a].mathType != CUDNN_TENSOR_OP_MATH)
            c->bwd_data = data[a].algo;
    cudnnConvolutionBwdFilterAlgoPerf_t filter[N_ALGOS];
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(dnn, c->x, c->y, c->op, c->w,
                                                              N_ALGOS, &got, filter));
    c->bwd_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    for (int a = got - 1; a >= 0; a--)
        if (filter[a].status == CUDNN_STATUS_SUCCESS && filter[a].memory <= CONV_WORKSPACE &&
            filter[a].mathType != CUDNN_TENSOR_OP_MATH)
            c->bwd_filter = filter[a].algo;
}

static void conv_close(conv *c)
{
    CUDNN_CHECK(cudnnDestroyTensorDescriptor(c->x));
    CUDNN_CHECK(cudnnDestroyTensorDescriptor(c->y));
    CUDNN_CHECK(cudnnDestroyFilterDescriptor(c->w));
    CUDNN_CHECK(cudnnDestroyConvolutionDescriptor(c->op));
}

/* Device buffers big enough for every conv layer of a network at a batch. */
struct conv_buffers {
    float *x = nullptr, *dx = nullptr, *y = nullptr, *dy = nullptr, *w = nullptr, *dw = nullptr;
    void *workspace = nullptr;
};

static void conv_buffers_open(const network *net, int batch, conv_buffers *cb)
{
    size_t act = 0, weights = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const layer *l = &net->layers[i];
        if (l->type != LAYER_CONV)
            continue;
        act = std::max(act, (size_t)batch * shape_elems(l->in_shape));
        act = std::max(act, (size_t)batch * shape_elems(l->out_shape));
        weights = std::max(weights, (size_t)l->out_channels * (l->in_shape.c / l->groups) *
                                        l->kernel * l->kernel);
    }
    float **acts[] = {&cb->x, &cb->dx, &cb->y, &cb->dy};
    for (float **p : acts) {
        CUDA_CHECK(cudaMalloc(p, act * sizeof(float)));
        fill<<<256, 256>>>(*p, act, 0.01f);
    }
    CUDA_CHECK(cudaMalloc(&cb->w, weights * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&cb->dw, weights * sizeof(float)));
    fill<<<256, 256>>>(cb->w, weights, 0.02f);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMalloc(&cb->workspace, CONV_WORKSPACE));
    CUDA_CHECK(cudaDeviceSynchronize());
}

static void conv_buffers_close(conv_buffers *cb)
{
    float *all[] = {cb->x, cb->dx, cb->y, cb->dy, cb->w, cb->dw};
    for (float *p : all)
        CUDA_CHECK(cudaFree(p));
    CUDA_CHECK(cudaFree(cb->workspace));
}

static void conv_run(cudnnHandle_t dnn, const conv &c, const conv_buffers &cb, pass phase)
{
    const float one = 1.0f, zero = 0.0f;
    if (phase == PASS_FWD)
        CUDNN_CHECK(cudnnConvolutionForward(dnn, &one, c.x, cb.x, c.w, cb.w, c.op, c.fwd,
                                            cb.workspace, CONV_WORKSPACE, &zero, c.y, cb.y));
    else if (phase == PASS_BWD_DATA)
        CUDNN_CHECK(cudnnConvolutionBackwardData(dnn, &one, c.w, cb.w, c.y, cb.dy, c.op,
                                                 c.bwd_data, cb.workspace, CONV_WORKSPACE, &zero,
                                                 c.x, cb.dx));
    else
        CUDNN_CHECK(cudnnConvolutionBackwardFilter(dnn, &one, c.x, cb.x, c.y, cb.dy, c.op,
                                                   c.bwd_filter, cb.workspace, CONV_WORKSPACE,
                                                   &zero, c.w, cb.dw));
}

/* FFT and Winograd trade multiplications for transforms by design. */
static const char *reduced_flop_algo(const conv &c, pass phase)
{
    if (phase == PASS_FWD)
        switch (c.fwd) {
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
        default: return NULL;
        }
    if (phase == PASS_BWD_DATA)
        switch (c.bwd_data) {
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "FFT";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "FFT_TILING";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "WINOGRAD";
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
        default: return NULL;
        }
    switch (c.bwd_filter) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return NULL;
    }
}

static int algo_of(const conv &c, pass phase)
{
    return phase == PASS_FWD ? (int)c.fwd : phase == PASS_BWD_DATA ? (int)c.bwd_data
                                                                   : (int)c.bwd_filter;
}

#ifdef HAVE_CUPTI

/* ---- the checks ---------------------------------------------------------- */

static gpu_counts sum_counts(const gpu_metric_pass &p)
{
    gpu_counts s = {};
    for (int i = 0; i < p.n_ranges; i++) {
        s.flops_fp64 += p.counts[i].flops_fp64;
        s.flops_fp32 += p.counts[i].flops_fp32;
        s.flops_fp16 += p.counts[i].flops_fp16;
        s.flops_tensor += p.counts[i].flops_tensor;
        s.dram_read += p.counts[i].dram_read;
        s.dram_write += p.counts[i].dram_write;
    }
    return s;
}

static void check_ffma(const buffers &bf)
{
    launch_ffma(bf); /* loads the module outside the measurement */
    CUDA_CHECK(cudaDeviceSynchronize());
    gpu_metric_pass p = {};
    gpu_metric_plan plan;
    gpu_metric_info info;
    if (profile(&tally, "FFMA kernel", PREC_FP32, gpu_metric_options{}, 16,
                [&](cupti_metrics *) { launch_ffma(bf); }, &p, &plan, &info) != 1)
        return;
    printf("device chip %s: %d metrics in %d replay passes\n", info.chip, info.metrics,
           info.passes);
    expect(p.n_ranges == 1 && p.n_launches == 1, "FFMA kernel: 1 range for 1 launch (%d, %d)",
           p.n_ranges, p.n_launches);
    if (p.n_ranges == 1) {
        double want = 2.0 * FFMA_N * FFMA_BLOCKS * FFMA_THREADS;
        const gpu_counts &c = p.counts[0];
        expect(c.flops_fp32 == want,
               "FFMA kernel: fp32 FLOPs %.0f == 2 x %d FFMA x %d threads = %.0f", c.flops_fp32,
               FFMA_N, FFMA_BLOCKS * FFMA_THREADS, want);
        expect(c.flops_fp64 == 0 && c.flops_fp16 == 0 && c.flops_tensor == 0,
               "FFMA kernel: no other FLOP (fp64 %.0f, fp16 %.0f, tensor %.0f)", c.flops_fp64,
               c.flops_fp16, c.flops_tensor);
        char name[128];
        launch_name(&p, 0, name, sizeof name);
        expect(strstr(name, "ffma_loop") != NULL, "FFMA kernel: the launch is named %s", name);
    }
    gpu_metric_pass_free(&p);
}

static void check_triad(const buffers &bf)
{
    launch_triad(bf);
    CUDA_CHECK(cudaDeviceSynchronize());
    gpu_metric_pass p = {};
    gpu_metric_plan plan;
    gpu_metric_info info;
    if (profile(&tally, "triad", PREC_FP32, gpu_metric_options{}, 16,
                [&](cupti_metrics *) { launch_triad(bf); }, &p, &plan, &info) != 1)
        return;
    expect(p.n_ranges == 1, "triad: 1 range (%d)", p.n_ranges);
    if (p.n_ranges == 1) {
        const gpu_counts &c = p.counts[0];
        double read = 8.0 * TRIAD_N, written = 4.0 * TRIAD_N;
        expect(rel_diff(c.dram_read, read) <= 0.05,
               "triad: DRAM read %.4g B within 5%% of 8 B x %zu = %.4g (%.2f%%)", c.dram_read,
               TRIAD_N, read, 100 * rel_diff(c.dram_read, read));
        expect(rel_diff(c.dram_write, written) <= 0.05,
               "triad: DRAM written %.4g B within 5%% of 4 B x %zu = %.4g (%.2f%%)", c.dram_write,
               TRIAD_N, written, 100 * rel_diff(c.dram_write, written));
        expect(c.flops_fp32 == 2.0 * TRIAD_N, "triad: fp32 FLOPs %.0f == 2 x %zu", c.flops_fp32,
               TRIAD_N);
        printf("triad: L2 %.4g B, L1 %.4g B\n", c.l2, c.l1);
    }
    gpu_metric_pass_free(&p);
}

static void check_gemm(void)
{
    gemm g;
    gemm_open(&g, 4096);
    gemm_run(g); /* heuristics and module loading outside the measurement */
    CUDA_CHECK(cudaDeviceSynchronize());
    double want = 2.0 * g.m * g.n * g.k;
    gpu_metric_pass p = {};
    gpu_metric_plan plan;
    gpu_metric_info info;
    if (profile(&tally, "bf16 GEMM", PREC_BF16, gpu_metric_options{}, 16,
                [&](cupti_metrics *) { gemm_run(g); }, &p, &plan, &info) == 1) {
        gpu_counts s = sum_counts(p);
        for (int k = 0; k < p.n_ranges; k++) {
            char name[128];
            launch_name(&p, k, name, sizeof name);
            printf("bf16 GEMM kernel %d: %s: tensor %.6g FLOPs\n", k, name,
                   p.counts[k].flops_tensor);
        }
        std::string counters;
        for (int i = 0; i < plan.n; i++)
            if (plan.role[i] == GPU_METRIC_TENSOR)
                counters += std::string(counters.empty() ? "" : " + ") + plan.name[i];
        expect(rel_diff(s.flops_tensor, want) <= 0.01,
               "cuBLAS bf16 GEMM %dx%dx%d: tensor FLOPs %.6g within 1%% of 2MNK = %.6g (%s)",
               g.m, g.n, g.k, s.flops_tensor, want, counters.c_str());
        gpu_metric_pass_free(&p);

        /* whether the chip's aggregated counter says the same (one pass
         * fewer where per-class counters cost one each): information only */
        gpu_metric_options aggregate = {};
        aggregate.tensor_aggregate = true;
        if (profile(&tally, "bf16 GEMM, aggregated counters", PREC_BF16, aggregate, 16,
                    [&](cupti_metrics *) { gemm_run(g); }, &p, &plan, &info) == 1) {
            gpu_counts a = sum_counts(p);
            printf("NOTE: aggregated tensor counter: %.6g FLOPs, %.3f x the per-class sum, "
                   "%d passes\n",
                   a.flops_tensor, s.flops_tensor > 0 ? a.flops_tensor / s.flops_tensor : 0.0,
                   info.passes);
            gpu_metric_pass_free(&p);
        }
    }
    gemm_close(&g);
}

static void check_convs(void)
{
    const char *model = "resnet18-cifar";
    const int batch = 16;
    network net;
    if (zoo_build(&net, model, 32, 10) != NET_OK) {
        expect(false, "building %s: %s", model, net.err);
        return;
    }
    cudnnHandle_t dnn;
    CUDNN_CHECK(cudnnCreate(&dnn));
    conv_buffers cb;
    conv_buffers_open(&net, batch, &cb);
    std::vector<int> layers;
    std::vector<conv> convs(net.n_layers);
    for (int i = 0; i < net.n_layers; i++)
        if (net.layers[i].type == LAYER_CONV) {
            layers.push_back(i);
            conv_open(dnn, &net, i, batch, &convs[i]);
        }
    const pass phases[] = {PASS_FWD, PASS_BWD_DATA, PASS_BWD_WEIGHTS};
    auto run_all = [&](cupti_metrics *m) {
        for (int i : layers)
            for (pass ph : phases) {
                if (ph == PASS_BWD_DATA && !net.layers[i].computes_input_grad)
                    continue;
                if (m)
                    cupti_metrics_set_op(m, gpu_op_id(i, (gpu_phase)ph));
                conv_run(dnn, convs[i], cb, ph);
            }
        if (m)
            cupti_metrics_set_op(m, 0);
    };
    run_all(nullptr); /* cuDNN's lazy set-up outside the measurement */
    CUDA_CHECK(cudaDeviceSynchronize());

    gpu_metric_pass p = {};
    gpu_metric_plan plan;
    gpu_metric_info info;
    if (profile(&tally, "fp32 convolutions", PREC_FP32, gpu_metric_options{}, 4096, run_all, &p,
                &plan, &info) == 1) {
        expect(p.n_ranges == p.n_launches, "convolutions: %d ranges for %d launches",
               p.n_ranges, p.n_launches);
        for (int i : layers)
            for (pass ph : phases) {
                if (ph == PASS_BWD_DATA && !net.layers[i].computes_input_grad)
                    continue;
                uint64_t op = gpu_op_id(i, (gpu_phase)ph);
                double measured = 0;
                int kernels = 0;
                for (int k = 0; k < p.n_launches && k < p.n_ranges; k++)
                    if (p.launch[k].op == op) {
                        measured += p.counts[k].flops_fp32 + p.counts[k].flops_tensor;
                        kernels++;
                    }
                double analytic = (double)cost_layer(&net, i, batch, PREC_FP32).flops[ph];
                double ratio = analytic > 0 ? measured / analytic : 0;
                const char *reduced = reduced_flop_algo(convs[i], ph);
                bool in_band = ratio >= 0.9 && ratio <= 1.3;
                expect(in_band || reduced,
                       "%s %s %s: measured/analytic FLOPs %.3f (%.4g / %.4g, %d kernel(s), "
                       "algo %d%s%s)",
                       model, net.layers[i].name, pass_name(ph), ratio, measured, analytic,
                       kernels, algo_of(convs[i], ph), in_band || !reduced ? "" : ": explained by ",
                       in_band || !reduced ? "" : reduced);
            }
        gpu_metric_pass_free(&p);
    }
    for (int i : layers)
        conv_close(&convs[i]);
    conv_buffers_close(&cb);
    CUDNN_CHECK(cudnnDestroy(dnn));
    net_free(&net);
}

/* ---- Nsight Compute side by side ------------------------------------------- */

/* The small workload both tools measure, kernel by kernel. */
struct workload {
    buffers bf;
    gemm g;
    network net;
    cudnnHandle_t dnn = nullptr;
    conv_buffers cb;
    conv c;
    int conv_layer = -1;
};

static void workload_open(workload *w)
{
    buffers_open(&w->bf);
    gemm_open(&w->g, 2048);
    if (zoo_build(&w->net, "resnet18-cifar", 32, 10) != NET_OK) {
        fprintf(stderr, "cupti_check: building resnet18-cifar: %s\n", w->net.err);
        exit(EXIT_FAILURE);
    }
    for (int i = 0; i < w->net.n_layers && w->conv_layer < 0; i++)
        if (w->net.layers[i].type == LAYER_CONV && w->net.layers[i].in_shape.c == 64)
            w->conv_layer = i;
    CUDNN_CHECK(cudnnCreate(&w->dnn));
    conv_buffers_open(&w->net, 16, &w->cb);
    conv_open(w->dnn, &w->net, w->conv_layer, 16, &w->c);
}

static void workload_run(const workload &w)
{
    launch_ffma(w.bf);
    launch_triad(w.bf);
    gemm_run(w.g);
    conv_run(w.dnn, w.c, w.cb, PASS_FWD);
    CUDA_CHECK(cudaDeviceSynchronize());
}

static void workload_close(workload *w)
{
    conv_close(&w->c);
    conv_buffers_close(&w->cb);
    CUDNN_CHECK(cudnnDestroy(w->dnn));
    net_free(&w->net);
    gemm_close(&w->g);
    buffers_close(&w->bf);
}

/* One CSV record (RFC 4180 quoting), fields appended to out. */
static void split_csv(const std::string &line, std::vector<std::string> &out)
{
    out.clear();
    std::string field;
    bool quoted = false;
    for (size_t i = 0; i < line.size(); i++) {
        char ch = line[i];
        if (quoted) {
            if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"')
                field += '"', i++;
            else if (ch == '"')
                quoted = false;
            else
                field += ch;
        } else if (ch == '"') {
            quoted = true;
        } else if (ch == ',') {
            out.push_back(field);
            field.clear();
        } else if (ch != '\r' && ch != '\n') {
            field += ch;
        }
    }
    out.push_back(field);
}

/* A number as ncu prints it: thousands separators dropped. */
static bool parse_number(const std::string &s, double *v)
{
    std::string digits;
    for (char ch : s)
        if (ch != ',')
            digits += ch;
    char *end = nullptr;
    *v = strtod(digits.c_str(), &end);
    return !digits.empty() && end && *end == '\0';
}

/* The function's name: what ncu and the demangler agree on whatever their
 * spelling of parameters and return types. */
static std::string base_name(const std::string &name)
{
    std::string s = name;
    if (s.compare(0, 5, "void ") == 0)
        s = s.substr(5);
    size_t cut = s.find_first_of("(<");
    return cut == std::string::npos ? s : s.substr(0, cut);
}

struct ncu_kernel {
    std::string name;
    std::vector<double> values; /* in plan order */
};

static bool run_ncu(const gpu_metric_plan &plan, std::vector<ncu_kernel> &kernels,
                    std::string &why)
{
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        why = "cannot find this program's path";
        return false;
    }
    self[len] = '\0';
    std::string metrics;
    for (int i = 0; i < plan.n; i++)
        metrics += std::string(i ? "," : "") + plan.name[i];
    std::string cmd = "ncu --csv --page raw --profile-from-start off --cache-control none "
                      "--clock-control none --metrics " +
                      metrics + " '" + self + "' --ncu-workload 2>&1";
    printf("running: %s\n", cmd.c_str());
    fflush(stdout);
    FILE *f = popen(cmd.c_str(), "r");
    if (!f) {
        why = "popen failed";
        return false;
    }
    std::vector<std::string> lines;
    char buf[1 << 16];
    while (fgets(buf, sizeof buf, f))
        lines.push_back(buf);
    int status = pclose(f);
    std::vector<std::string> header, fields;
    std::vector<int> col(plan.n, -1);
    int name_col = -1;
    for (const std::string &line : lines) {
        if (line.empty() || line[0] != '"')
            continue;
        split_csv(line, fields);
        if (fields.size() > 0 && fields[0] == "ID") {
            header = fields;
            for (size_t c = 0; c < header.size(); c++) {
                if (header[c] == "Kernel Name")
                    name_col = (int)c;
                for (int i = 0; i < plan.n; i++)
                    if (header[c] == plan.name[i])
                        col[i] = (int)c;
            }
            continue;
        }
        double id;
        if (header.empty() || fields.size() != header.size() || !parse_number(fields[0], &id))
            continue; /* the units line, or anything else */
        ncu_kernel k;
        k.name = name_col >= 0 ? fields[name_col] : "?";
        for (int i = 0; i < plan.n; i++) {
            double v = NAN;
            if (col[i] >= 0)
                parse_number(fields[col[i]], &v);
            k.values.push_back(v);
        }
        kernels.push_back(k);
    }
    if (status != 0 || header.empty()) {
        why = "ncu exited with status " + std::to_string(status) + "; its last lines:";
        for (size_t i = lines.size() > 8 ? lines.size() - 8 : 0; i < lines.size(); i++)
            why += " " + lines[i];
        return false;
    }
    for (int i = 0; i < plan.n; i++)
        if (col[i] < 0) {
            why = std::string("ncu's CSV has no column ") + plan.name[i];
            return false;
        }
    return true;
}

static void check_against_ncu(void)
{
    if (system("command -v ncu >/dev/null 2>&1") != 0) {
        printf("SKIP: Nsight Compute side by side: ncu is not on PATH\n");
        return;
    }
    workload w;
    workload_open(&w);
    workload_run(w);
    gpu_metric_pass p = {};
    gpu_metric_plan plan;
    gpu_metric_info info;
    int got = profile(&tally, "workload for the ncu comparison", PREC_BF16, gpu_metric_options{},
                      64, [&](cupti_metrics *) { workload_run(w); }, &p, &plan, &info);
    workload_close(&w);
    if (got != 1)
        return;
    std::vector<ncu_kernel> theirs;
    std::string why;
    if (!run_ncu(plan, theirs, why)) {
        expect(false, "Nsight Compute read the same metrics: %s", why.c_str());
        gpu_metric_pass_free(&p);
        return;
    }
    expect((int)theirs.size() == p.n_ranges && p.n_ranges == p.n_launches,
           "ncu and the suite saw the same kernels: %zu and %d (%d launches)", theirs.size(),
           p.n_ranges, p.n_launches);
    int n = std::min((int)theirs.size(), p.n_ranges);
    for (int k = 0; k < n; k++) {
        char ours_name[128];
        launch_name(&p, k, ours_name, sizeof ours_name);
        if (base_name(ours_name) != base_name(theirs[k].name))
            printf("NOTE: kernel %d is %s here and %s in ncu\n", k, ours_name,
                   theirs[k].name.c_str());
        gpu_counts t = gpu_metric_counts(&plan, theirs[k].values.data());
        const gpu_counts &o = p.counts[k];
        double of = o.flops_fp64 + o.flops_fp32 + o.flops_fp16 + o.flops_tensor;
        double tf = t.flops_fp64 + t.flops_fp32 + t.flops_fp16 + t.flops_tensor;
        expect(rel_diff(of, tf) <= 0.02, "kernel %d (%s): FLOPs %.6g here, %.6g by ncu", k,
               base_name(ours_name).c_str(), of, tf);
        double ob = o.dram_read + o.dram_write, tb = t.dram_read + t.dram_write;
        expect(rel_diff(ob, tb) <= 0.02 || fabs(ob - tb) <= 256.0 * 1024,
               "kernel %d (%s): DRAM bytes %.6g here, %.6g by ncu (%.2f%%)", k,
               base_name(ours_name).c_str(), ob, tb, 100 * rel_diff(ob, tb));
    }
    gpu_metric_pass_free(&p);
}

#endif /* HAVE_CUPTI */

/* What ncu profiles: the workload alone, no CUPTI of ours. */
static int ncu_workload(void)
{
#ifdef HAVE_CUPTI
    workload w;
    workload_open(&w);
    workload_run(w); /* set-up, as the suite's check does before its pass */
    CUDA_CHECK(cudaProfilerStart());
    workload_run(w);
    CUDA_CHECK(cudaProfilerStop());
    workload_close(&w);
#endif
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--ncu-workload") == 0)
        return ncu_workload();
    if (gpu_test_skip())
        return 0;
#ifndef HAVE_CUPTI
    printf("skipped: built without CUPTI\n");
    return 0;
#else
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("device 0: %s, compute %d.%d\n", prop.name, prop.major, prop.minor);
    buffers bf;
    buffers_open(&bf);
    check_ffma(bf);
    check_triad(bf);
    buffers_close(&bf);
    check_gemm();
    check_convs();
    check_against_ncu();
    return gpu_test_finish(&tally);
#endif
}
