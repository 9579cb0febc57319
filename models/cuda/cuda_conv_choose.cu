/* Choosing each convolution's algorithms, once per distinct shape and
 * precision, outside the timed steps (cuda_conv.cu runs them): cuDNN's own
 * benchmark (cudnnFind*AlgorithmEx, on the layer's real buffers) within the
 * workspace limit, the least workspace within 2% of the fastest (a pass's
 * workspace adds to the arena where it runs beside the step's most live
 * memory), then pinned. fp32 runs without
 * tensor cores: only algorithms cuDNN reports as FMA math are taken (the
 * default math type would allow TF32 on Ampere and newer). Depthwise layers
 * under --depthwise auto also try the own kernels (cuda_depthwise.cu) on the
 * same inputs and keep, per pass, whichever was faster once its result
 * matched cuDNN's. The forward of a conv with bias under ReLU tries cuDNN's
 * fused conv+bias+ReLU call against the convolution followed by the own
 * bias+ReLU kernel the same way (--conv-bias). Every other pass also tries
 * the engine configurations of cuDNN's graph API against the legacy call's
 * algorithm (--conv-api). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
extern "C" {
#include "../step.h"
}

enum { MAX_ALGOS = 16, CONV_PASSES = 3 };

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

/* The result to run (conv_algo_pick: the least workspace among those within
 * 2% of the fastest that succeeded within the workspace), or -1. */
template <typename Perf>
static int pick(const backend *b, const Perf *perf, int count)
{
    conv_algo_result r[MAX_ALGOS];
    int n = count < MAX_ALGOS ? count : MAX_ALGOS;
    for (int k = 0; k < n; k++) {
        r[k].usable = perf[k].status == CUDNN_STATUS_SUCCESS &&
                      perf[k].memory <= b->search_workspace_bytes &&
                      math_allowed(b, perf[k].mathType);
        r[k].ms = perf[k].time;
        r[k].memory = (int64_t)perf[k].memory;
    }
    return conv_algo_pick(r, n, CONV_ALGO_TIME_TOLERANCE);
}

enum { FOUND = 0, NONE_FOUND = 1 };
static const char *const pass_labels[CONV_PASSES] = {"forward", "backward-data",
                                                    "backward-filter"};

/* cuDNN's benchmark of one pass (0 fwd, 1 bwd_data, 2 bwd_filter) on the
 * layer's buffers: FOUND with the choice recorded, NONE_FOUND where nothing
 * fits and `quiet` (a depthwise layer with own kernels to fall back on),
 * else -1 with the error. */
static int find_pass(backend *b, int i, cuda_conv *c, int p, bool quiet)
{
    cuda_layer *cl = &b->layers[i];
    int count = 0, k = -1, algo = 0;
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    const char *call = "";
    float ms = 0.0f;
    size_t memory = 0;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    if (p == 0) {
        cudnnConvolutionFwdAlgoPerf_t perf[MAX_ALGOS];
        call = "cudnnFindConvolutionForwardAlgorithmEx";
        st = cudnnFindConvolutionForwardAlgorithmEx(
            b->dnn, c->x, cuda_input(b, i, 0), c->w, cl->w_copy, c->conv[0], c->y, cl->out,
            MAX_ALGOS, &count, perf, b->search_workspace, b->search_workspace_bytes);
        if (st == CUDNN_STATUS_SUCCESS && (k = pick(b, perf, count)) >= 0)
            algo = perf[k].algo, ms = perf[k].time, memory = perf[k].memory,
            math = perf[k].mathType;
    } else if (p == 1) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[MAX_ALGOS];
        call = "cudnnFindConvolutionBackwardDataAlgorithmEx";
        st = cudnnFindConvolutionBackwardDataAlgorithmEx(
            b->dnn, c->w, cl->w_copy, c->y, cl->grad, c->conv[1], c->x,
            cuda_input_grad(b, i, 0), MAX_ALGOS, &count, perf, b->search_workspace,
            b->search_workspace_bytes);
        if (st == CUDNN_STATUS_SUCCESS && (k = pick(b, perf, count)) >= 0)
            algo = perf[k].algo, ms = perf[k].time, memory = perf[k].memory,
            math = perf[k].mathType;
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[MAX_ALGOS];
        call = "cudnnFindConvolutionBackwardFilterAlgorithmEx";
        st = cudnnFindConvolutionBackwardFilterAlgorithmEx(
            b->dnn, c->x, cuda_input(b, i, 0), c->y, cl->grad, c->conv[2], c->w, cl->dw,
            MAX_ALGOS, &count, perf, b->search_workspace, b->search_workspace_bytes);
        if (st == CUDNN_STATUS_SUCCESS && (k = pick(b, perf, count)) >= 0)
            algo = perf[k].algo, ms = perf[k].time, memory = perf[k].memory,
            math = perf[k].mathType;
    }
    if (st == CUDNN_STATUS_SUCCESS && k >= 0) {
        /* the trial against the own kernel runs cuDNN as the step will */
        CUDNN_TRY(b, cudnnSetConvolutionMathType(c->conv[p], math));
        conv_pass_choice *ch = &c->choice[p];
        ch->algo = algo;
        ch->math = math;
        ch->workspace_bytes = (int64_t)memory;
        ch->find_ms = ms;
        return FOUND;
    }
    /* nothing within the workspace, or a shape cuDNN does not take: the own
     * kernel may run it; any other failure is one. cuDNN 9 refines its codes
     * (CUDNN_STATUS_NOT_SUPPORTED_SHAPE, _DATA_TYPE, _LAYOUT, ...): compare
     * the category, not the code. */
    if (quiet && (st == CUDNN_STATUS_SUCCESS ||
                  CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED))
        return NONE_FOUND;
    if (st != CUDNN_STATUS_SUCCESS)
        return cudnn_fail_call(b, __FILE__, __LINE__, call, st);
    return cuda_fail(b, "cuDNN found no %s algorithm for this shape within a %.0f MiB workspace "
                        "(%d tried; raise --workspace-mb, or this precision is not supported "
                        "here)",
                     pass_labels[p], b->search_workspace_bytes / 1048576.0, count);
}

/* run()'s time on the GPU: the best of 3 runs after one to warm up. */
template <typename Run>
static int time_best(backend *b, Run run, float *ms)
{
    float best = -1.0f;
    for (int t = 0; t < 4; t++) {
        CUDA_TRY(b, cudaEventRecord(b->timer[0], b->stream));
        if (run())
            return -1;
        CUDA_TRY(b, cudaEventRecord(b->timer[1], b->stream));
        CUDA_TRY(b, cudaEventSynchronize(b->timer[1]));
        float v = 0.0f;
        CUDA_TRY(b, cudaEventElapsedTime(&v, b->timer[0], b->timer[1]));
        if (t > 0 && (best < 0.0f || v < best))
            best = v;
    }
    *ms = best;
    return 0;
}

/* One pass alone: without a conv bias (the same on both sides), the input
 * gradient overwritten. */
static int time_pass(backend *b, int i, int p, bool own, float *ms)
{
    return time_best(b, [&] { return cuda_conv_run_pass(b, i, p, own, false); }, ms);
}

static size_t align_up(size_t v)
{
    return (v + 255) & ~(size_t)255;
}

/* What pass p reads and writes, and their element counts. */
struct pass_tensors {
    void *in[2];
    int64_t in_elems[2];
    void *out;
    int64_t out_elems;
};

static pass_tensors tensors_of(backend *b, int i, int p)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    int64_t n = b->cfg.batch, x = n * shape_elems(l->in_shape), y = n * shape_elems(l->out_shape);
    int64_t w = (int64_t)l->out_channels * (l->in_shape.c / l->groups) * l->kernel * l->kernel;
    void *input = (void *)cuda_input(b, i, 0);
    if (p == 0)
        return pass_tensors{{input, cl->w_copy}, {x, w}, cl->out, y};
    if (p == 1)
        return pass_tensors{{cl->grad, cl->w_copy}, {y, w}, cuda_input_grad(b, i, 0), x};
    return pass_tensors{{input, cl->grad}, {x, y}, cl->dw, w};
}

/* --depthwise auto, one pass of a depthwise layer: both implementations on
 * the same inputs (values in [-1, 1]; nothing is live at plan time, and the
 * weights are written after create), cuDNN's result kept in the search
 * workspace beside the own kernel's partial sums, then compared. */
static int try_both(backend *b, int i, cuda_conv *c, int p, bool have_cudnn)
{
    conv_pass_choice *ch = &c->choice[p];
    depthwise_trial *t = &ch->trial;
    pass_tensors io = tensors_of(b, i, p);
    size_t own_ws = p == 2 ? cuda_dw_filter_workspace(b, i) : 0;
    size_t out_bytes = (size_t)io.out_elems * b->pp.elem_bytes;
    size_t copy_at = align_up(own_ws), maxima_at = align_up(copy_at + out_bytes);
    bool own_room = own_ws <= b->search_workspace_bytes;
    bool compare_room = have_cudnn && maxima_at + 2 * sizeof(unsigned) <= b->search_workspace_bytes;
    char *ws = (char *)b->search_workspace;
    for (int k = 0; k < 2; k++)
        if (cuda_trial_fill_random(b, io.in[k], io.in_elems[k],
                                   0x9e3779b9u * (uint32_t)(p * 2 + k + 1)))
            return -1;
    if (have_cudnn && time_pass(b, i, p, false, &t->cudnn_ms))
        return -1;
    if (own_room) {
        if (compare_room)
            CUDA_TRY(b, cudaMemcpyAsync(ws + copy_at, io.out, out_bytes, cudaMemcpyDeviceToDevice,
                                        b->stream));
        /* the own filter kernel sums its partials into the workspace's start.
         * A launch that fails leaves cuDNN to the pass (and the error to the
         * choices line), unless it broke the context for good. */
        if (time_pass(b, i, p, true, &t->own_ms)) {
            cudaGetLastError();
            cudaError_t still = cudaStreamSynchronize(b->stream);
            if (still != cudaSuccess || !have_cudnn)
                return -1;
            if (!b->own_failures++)
                snprintf(b->own_failure, sizeof b->own_failure, "%s", b->err);
            b->err[0] = '\0';
            t->own_ms = -1.0f;
            compare_room = false;
        }
        if (compare_room) {
            double rel = 0.0;
            if (cuda_trial_compare(b, io.out, ws + copy_at, io.out_elems,
                                   (unsigned *)(ws + maxima_at), &rel))
                return -1;
            t->verified = true;
            t->matched = rel <= trial_match_tolerance(&b->pp);
            ch->own_difference = rel;
        }
    }
    ch->own = depthwise_choose(t) == DW_PICK_OWN;
    if (ch->own) {
        ch->workspace_bytes = (int64_t)own_ws;
    } else if (!have_cudnn) {
        return cuda_fail(b, "neither cuDNN nor the own kernel can run this depthwise %s pass "
                            "within a %.0f MiB workspace (raise --workspace-mb)",
                         pass_labels[p], b->search_workspace_bytes / 1048576.0);
    }
    return 0;
}

/* cuDNN's fused forward with `algo`, given as much of the search workspace
 * as the step will give it (*bytes: what cuDNN says the algorithm's plain
 * convolution needs; there is no query for the fused call), if that fits in
 * `room`: *ran true, or false with why (cuDNN's refusal, kept as the trial's
 * answer; a broken stream fails the run). */
static int try_fused_call(backend *b, int i, cuda_conv *c, int algo, size_t room,
                          size_t *bytes, bool *ran, char *why, size_t why_len)
{
    cudnnStatus_t st = cudnnGetConvolutionForwardWorkspaceSize(
        b->dnn, c->x, c->w, c->conv[0], c->y, (cudnnConvolutionFwdAlgo_t)algo, bytes);
    *ran = false;
    if (st == CUDNN_STATUS_SUCCESS && *bytes > room) {
        snprintf(why, why_len, "algorithm %d needs %.0f MiB of workspace, %.0f MiB left", algo,
                 *bytes / 1048576.0, room / 1048576.0);
        return 0;
    }
    if (st == CUDNN_STATUS_SUCCESS)
        st = cuda_conv_fused_forward(b, i, algo, b->search_workspace, *bytes);
    if (st == CUDNN_STATUS_SUCCESS) {
        *ran = true;
        return 0;
    }
    snprintf(why, why_len, "algorithm %d: %s", algo, cudnnGetErrorString(st));
    CUDA_TRY(b, cudaStreamSynchronize(b->stream));
    return 0;
}

enum { GRAPH_TRIED = 8 };
/* seconds a pass's graph plans may take to build (a runtime-compiled engine
 * compiles its kernels then) before the ones built so far are the choice */
static const double graph_build_budget_s = 1.0;
/* elements of a result compared: the first images' whole, 4 Mi at most */
static const int64_t graph_compare_elems = 1 << 22;

/* A failure another way survives: counted in *count, the first one's error
 * kept in first (CUDA_ERR_LEN bytes) for the choices line, the error
 * cleared; -1 where the stream broke (nothing can run then). */
static int survive_failure(backend *b, int *count, char *first)
{
    cudaGetLastError();
    if (cudaStreamSynchronize(b->stream) != cudaSuccess)
        return -1;
    if (!(*count)++)
        snprintf(first, CUDA_ERR_LEN, "%s", b->err);
    b->err[0] = '\0';
    return 0;
}

/* A graph-API plan that failed to build where the legacy call can run the
 * pass. */
static int graph_fallback(backend *b)
{
    return survive_failure(b, &b->graph_failures, b->graph_failure);
}

static const uint32_t graph_start_seed = 0x165667b1u;

/* Where the pass adds to its output (backward data under a branch), the
 * values it adds to, the same each time: a result that ignored them, or
 * overwrote them, differs from one that added. */
static int fresh_start(backend *b, bool accumulate, const pass_tensors &io)
{
    return accumulate ? cuda_trial_fill_random(b, io.out, io.out_elems, graph_start_seed) : 0;
}

/* The pass as the step runs it, from fresh_start's values where it adds to
 * its output. */
static int run_fresh(backend *b, int i, int p, bool accumulate, const pass_tensors &io)
{
    if (fresh_start(b, accumulate, io))
        return -1;
    return cuda_conv_run_pass(b, i, p, false, accumulate);
}

/* Each of g's n plans timed on the layer's buffers as the step runs it (a
 * configuration that cuDNN builds but then refuses to run is passed over),
 * the fastest (the least workspace within CONV_ALGO_TIME_TOLERANCE of it)
 * left in g->chosen with its time in *ms; g->chosen empty where none ran.
 * The other plans are destroyed. -1: the context broke. */
static int pick_plan(backend *b, int i, conv_graph *g, conv_graph_plan *plans, int n,
                     bool accumulate, size_t room, float *ms)
{
    conv_algo_result r[GRAPH_TRIED] = {};
    int rc = 0;
    n = n < GRAPH_TRIED ? n : GRAPH_TRIED;
    auto run_graph = [&] {
        return cuda_conv_graph_run(b, i, g, accumulate, b->search_workspace, room);
    };
    for (int k = 0; k < n && !rc; k++) {
        float t = -1.0f;
        g->chosen = plans[k];
        if (time_best(b, run_graph, &t)) {
            cudaGetLastError();
            if (cudaStreamSynchronize(b->stream) != cudaSuccess)
                rc = -1; /* the error stays the backend's */
            else
                b->err[0] = '\0';
            t = -1.0f;
        }
        r[k] = conv_algo_result{t >= 0.0f, t, plans[k].workspace};
    }
    g->chosen = conv_graph_plan{};
    int pick = rc ? -1 : conv_algo_pick(r, n, CONV_ALGO_TIME_TOLERANCE);
    if (pick >= 0) {
        *ms = r[pick].ms;
        g->chosen = plans[pick];
        plans[pick] = conv_graph_plan{};
    }
    for (int k = 0; k < n; k++)
        cuda_conv_graph_plan_destroy(&plans[k]);
    return rc;
}

/* --conv-api auto or graph, pass p of a layer that is not depthwise, after
 * cuDNN's legacy search: the legacy call with the algorithm found, timed on
 * the layer's buffers (values in [-1, 1]), its result's first
 * graph_compare_elems elements kept at the end of the search workspace (all
 * channels of the first images: a layout or indexing error shows there);
 * then up to GRAPH_TRIED of the engine configurations that heuristics mode A
 * offers and that fit in what is left (those built within
 * graph_build_budget_s), each timed the same way, the fastest
 * (the least workspace within 2% of it) run once more and compared. A
 * configuration that cuDNN builds but then refuses to run is passed over. */
static int try_graph(backend *b, int i, cuda_conv *c, int p, conv_api_choice mode)
{
    conv_pass_choice *ch = &c->choice[p];
    conv_api_trial *t = &ch->api_trial;
    *t = conv_api_trial{-1.0f, -1.0f, 0, 0, false, false, 0.0};
    ch->graph = false;
    bool accumulate = p == 1 && step_grad_accumulates(b->net, i, 0);
    pass_tensors io = tensors_of(b, i, p);
    for (int k = 0; k < 2; k++)
        if (cuda_trial_fill_random(b, io.in[k], io.in_elems[k],
                                   0x27d4eb2fu * (uint32_t)(p * 2 + k + 1)))
            return -1;
    /* timed as the step runs it (adding to whatever is there) */
    if (time_best(b, [&] { return cuda_conv_run_pass(b, i, p, false, accumulate); },
                  &t->legacy_ms))
        return -1;
    int64_t compare_elems = io.out_elems < graph_compare_elems ? io.out_elems
                                                               : graph_compare_elems;
    size_t compare_bytes = (size_t)compare_elems * b->pp.elem_bytes;
    size_t keep = align_up(compare_bytes) + 256; /* the legacy result, then the maxima */
    bool compare = keep <= b->search_workspace_bytes;
    size_t room = compare ? (b->search_workspace_bytes - keep) & ~(size_t)255
                          : b->search_workspace_bytes;
    char *copy = (char *)b->search_workspace + room;
    if (compare) {
        if (run_fresh(b, i, p, accumulate, io))
            return -1;
        CUDA_TRY(b, cudaMemcpyAsync(copy, io.out, compare_bytes, cudaMemcpyDeviceToDevice,
                                    b->stream));
    }
    conv_graph g;
    conv_graph_plan plans[GRAPH_TRIED];
    int n = 0;
    if (cuda_conv_graph_build(b, i, p, accumulate, false, &g) ||
        cuda_conv_graph_plans(b, &g, (int64_t)room, -1, graph_build_budget_s, plans, GRAPH_TRIED,
                              &n, &t->offered)) {
        /* under auto the legacy call has the pass: a graph the heuristics
         * refuse (a shape of cuDNN's, or a defect here) costs no run */
        cuda_conv_graph_destroy(&g);
        return mode == CONV_API_AUTO ? graph_fallback(b) : -1;
    }
    t->tried = n;
    if (pick_plan(b, i, &g, plans, n, accumulate, room, &t->graph_ms)) {
        cuda_conv_graph_destroy(&g);
        return -1;
    }
    if (g.chosen.plan && compare) {
        double tolerance = p == 2 ? trial_match_tolerance(&b->pp) : fused_match_tolerance(&b->pp);
        if (fresh_start(b, accumulate, io) ||
            cuda_conv_graph_run(b, i, &g, accumulate, b->search_workspace, room) ||
            cuda_trial_compare(b, io.out, copy, compare_elems,
                               (unsigned *)(copy + align_up(compare_bytes)), &t->difference)) {
            cuda_conv_graph_destroy(&g);
            return -1;
        }
        t->verified = true;
        t->matched = t->difference <= tolerance;
    }
    ch->graph = conv_api_choose_graph(mode, t);
    if (!ch->graph) {
        cuda_conv_graph_destroy(&g);
        return 0;
    }
    ch->engine = g.chosen.engine;
    ch->config_rank = g.chosen.config_rank;
    ch->workspace_bytes = g.chosen.workspace;
    c->graph[p] = g;
    return 0;
}

/* --conv-api auto or graph, the forward of a bias_relu shape: the
 * convolution with the bias and the ReLU in its epilogue on the graph API
 * (g), up to GRAPH_TRIED configurations timed, the fastest run once more and
 * its output compared with the own result at `copy`. g->chosen empty where
 * no plan was built or ran: the heuristics refusing the graph (cuDNN has no
 * fusion engine for it) is counted, not an error, the other ways remain. */
static int try_graph_fused(backend *b, int i, size_t room, char *copy, const pass_tensors &io,
                           conv_graph *g, float *ms, double *difference)
{
    conv_graph_plan plans[GRAPH_TRIED];
    int n = 0, offered = 0;
    if (cuda_conv_graph_build(b, i, 0, false, true, g) ||
        cuda_conv_graph_plans(b, g, (int64_t)room, -1, graph_build_budget_s, plans, GRAPH_TRIED,
                              &n, &offered)) {
        cuda_conv_graph_destroy(g);
        return survive_failure(b, &b->graph_fused_none, b->graph_fused_why);
    }
    if (pick_plan(b, i, g, plans, n, false, room, ms)) {
        cuda_conv_graph_destroy(g);
        return -1;
    }
    if (!g->chosen.plan) {
        cuda_conv_graph_destroy(g);
        if (!b->graph_fused_none++)
            snprintf(b->graph_fused_why, sizeof b->graph_fused_why,
                     "%s: %d configurations offered, none built and ran within %.0f MiB",
                     b->net->layers[i].name, offered, room / 1048576.0);
        return 0;
    }
    size_t out_bytes = (size_t)io.out_elems * b->pp.elem_bytes;
    if (cuda_conv_graph_run(b, i, g, false, b->search_workspace, room) ||
        cuda_trial_compare(b, io.out, copy, io.out_elems,
                           (unsigned *)(copy + align_up(out_bytes)), difference)) {
        cuda_conv_graph_destroy(g);
        return -1;
    }
    return 0;
}

/* --conv-bias auto or cudnn, the forward of a bias_relu shape: the own way
 * (cuDNN's convolution, on whichever API its search chose, then the own
 * bias+ReLU kernel) and cuDNN's fused conv+bias+ReLU on the same inputs
 * (values in [-1, 1]; nothing is live at plan time, and the parameters are
 * written after create), the first's output kept at the end of the search
 * workspace and compared with each fused one's. Fused two ways: the legacy
 * API's call, with the searched algorithm or, where cuDNN refuses it, the
 * implicit precomputed GEMM, the algorithm cuDNN documents for every
 * activation the call takes; and (--conv-api auto or graph) the graph API's
 * convolution with the bias and ReLU in its epilogue. The fused way that
 * stands for the trial: under --conv-api graph the graph API's where it
 * built one, else the faster of those whose result matched (of both, where
 * neither matched: a mismatch is then reported). */
static int try_fused(backend *b, int i, cuda_conv *c, conv_bias_choice mode)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    conv_pass_choice *ch = &c->choice[0];
    conv_bias_trial *t = &ch->bias_trial;
    *t = conv_bias_trial{-1.0f, -1.0f, false, false, 0.0};
    pass_tensors io = tensors_of(b, i, 0);
    for (int k = 0; k < 2; k++)
        if (cuda_trial_fill_random(b, io.in[k], io.in_elems[k], 0x85ebca6bu * (uint32_t)(k + 1)))
            return -1;
    if (cuda_trial_fill_random(b, cl->bias_copy, l->out_channels, 0xc2b2ae35u))
        return -1;
    size_t out_bytes = (size_t)io.out_elems * b->pp.elem_bytes;
    size_t keep = align_up(out_bytes) + 256; /* the own output, then the maxima */
    ch->fused = false;
    if (time_best(b, [&] { return cuda_conv_forward(b, i); }, &t->own_ms))
        return -1;
    char why[96] = "no room to compare in the search workspace";
    size_t room = 0, bytes = 0;
    int algo = -1;
    const cudnnMathType_t searched_math = (cudnnMathType_t)ch->math,
                          base_math = b->pp.tensor_cores ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    cudnnMathType_t math = searched_math;
    float legacy_ms = -1.0f, graph_ms = -1.0f;
    double legacy_difference = 0.0, graph_difference = 0.0;
    conv_graph fused_graph = {};
    if (keep <= b->search_workspace_bytes) {
        room = (b->search_workspace_bytes - keep) & ~(size_t)255;
        char *copy = (char *)b->search_workspace + room;
        CUDA_TRY(b, cudaMemcpyAsync(copy, cl->out, out_bytes, cudaMemcpyDeviceToDevice,
                                    b->stream));
        /* the fallback in the precision's own math type, not the one Find
         * reported for the searched algorithm (which may be the default) */
        const int precomp = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
        int algos[2] = {ch->algo, precomp};
        cudnnMathType_t maths[2] = {searched_math, base_math};
        for (int k = 0; k < (ch->algo == precomp ? 1 : 2) && algo < 0; k++) {
            bool ran = false;
            CUDNN_TRY(b, cudnnSetConvolutionMathType(c->conv[0], maths[k]));
            if (try_fused_call(b, i, c, algos[k], room, &bytes, &ran, why, sizeof why))
                return -1;
            if (ran) {
                algo = algos[k];
                math = maths[k];
            }
        }
        if (algo >= 0) {
            auto fused = [&] {
                return cuda_conv_run_fused(b, i, algo, b->search_workspace, bytes);
            };
            if (time_best(b, fused, &legacy_ms) ||
                cuda_trial_compare(b, cl->out, copy, io.out_elems,
                                   (unsigned *)(copy + align_up(out_bytes)), &legacy_difference))
                return -1;
        }
        CUDNN_TRY(b, cudnnSetConvolutionMathType(c->conv[0], searched_math));
        if (b->cfg.conv_api != CONV_API_LEGACY &&
            try_graph_fused(b, i, room, copy, io, &fused_graph, &graph_ms, &graph_difference))
            return -1;
    }
    if (algo < 0 && !b->fused_refusals++)
        snprintf(b->fused_refusal, sizeof b->fused_refusal, "%s, %s", l->name, why);
    /* the fused way that stands for the trial */
    double tolerance = fused_match_tolerance(&b->pp);
    bool legacy_ok = algo >= 0 && legacy_difference <= tolerance,
         graph_ok = fused_graph.chosen.plan && graph_difference <= tolerance;
    bool use_graph = fused_graph.chosen.plan &&
                     (b->cfg.conv_api == CONV_API_GRAPH || algo < 0 || (graph_ok && !legacy_ok) ||
                      (graph_ok == legacy_ok && graph_ms < legacy_ms));
    if (algo >= 0 || use_graph) {
        t->fused_ms = use_graph ? graph_ms : legacy_ms;
        t->difference = use_graph ? graph_difference : legacy_difference;
        t->verified = true;
        t->matched = t->difference <= tolerance;
    }
    ch->fused = conv_bias_choose_fused(mode, t);
    if (!ch->fused) {
        cuda_conv_graph_destroy(&fused_graph);
        return 0;
    }
    /* the fused way replaces the forward's plain graph-API plan, if any */
    if (ch->graph)
        cuda_conv_graph_destroy(&c->graph[0]);
    ch->graph = use_graph;
    if (use_graph) {
        ch->engine = fused_graph.chosen.engine;
        ch->config_rank = fused_graph.chosen.config_rank;
        ch->workspace_bytes = fused_graph.chosen.workspace;
        c->graph[0] = fused_graph;
        return 0;
    }
    cuda_conv_graph_destroy(&fused_graph);
    ch->algo = algo;
    ch->math = math;
    ch->workspace_bytes = (int64_t)bytes;
    CUDNN_TRY(b, cudnnSetConvolutionMathType(c->conv[0], math));
    return 0;
}

static int choose_pass(backend *b, int i, cuda_conv *c, int p, depthwise_choice mode)
{
    if (mode == DEPTHWISE_OWN) {
        c->choice[p].own = true;
        c->choice[p].workspace_bytes = p == 2 ? (int64_t)cuda_dw_filter_workspace(b, i) : 0;
        return 0;
    }
    int found = find_pass(b, i, c, p, mode == DEPTHWISE_AUTO);
    if (found < 0)
        return -1;
    if (mode == DEPTHWISE_CUDNN)
        return 0;
    return try_both(b, i, c, p, found == FOUND);
}

/* The shape's choice from --algo-cache: true with c filled when every pass it
 * needs has a row whose workspace fits this process's search workspace. */
static bool from_cache(const backend *b, const char *key, bool input_grad, cuda_conv *c)
{
    const algo_choice *row[CONV_PASSES] = {NULL, NULL, NULL};
    for (int p = 0; p < CONV_PASSES; p++) {
        if (p == 1 && !input_grad)
            continue;
        row[p] = algo_cache_find(&b->algos, key, p);
        if (!row[p] || row[p]->choice.workspace_bytes > (int64_t)b->search_workspace_bytes)
            return false;
    }
    for (int p = 0; p < CONV_PASSES; p++)
        if (row[p])
            c->choice[p] = row[p]->choice;
    return true;
}

/* The shape's searched choice, appended to --algo-cache's file; where it
 * cannot be written the run goes on (the choices line says why). */
static void to_cache(backend *b, const char *key, bool input_grad, const cuda_conv *c)
{
    algo_choice rows[CONV_PASSES];
    int n = 0;
    for (int p = 0; p < CONV_PASSES; p++) {
        if (p == 1 && !input_grad)
            continue;
        algo_choice *r = &rows[n++];
        snprintf(r->key, sizeof r->key, "%s", key);
        r->pass = p;
        r->choice = c->choice[p];
    }
    char why[CUDA_ERR_LEN];
    if (algo_cache_append(b->cfg.algo_cache, &b->algos, rows, n, why, sizeof why) &&
        !b->algo_cache_unsaved[0])
        snprintf(b->algo_cache_unsaved, sizeof b->algo_cache_unsaved, "%s", why);
}

/* cuDNN's search (and the own kernels' trial) for every pass of a shape. */
static int search_shape(backend *b, int i, cuda_conv *c, const conv_shape *shape)
{
    const layer *l = &b->net->layers[i];
    depthwise_choice mode = depthwise_own_fits(shape) ? b->cfg.depthwise : DEPTHWISE_CUDNN;
    for (int p = 0; p < CONV_PASSES; p++) {
        if (p == 1 && !l->computes_input_grad)
            continue;
        if (choose_pass(b, i, c, p, mode))
            return -1;
        if (l->groups == 1 && b->cfg.conv_api != CONV_API_LEGACY &&
            try_graph(b, i, c, p, b->cfg.conv_api))
            return -1;
    }
    if (shape->bias_relu && !c->choice[0].own && b->cfg.conv_bias != CONV_BIAS_OWN)
        return try_fused(b, i, c, b->cfg.conv_bias);
    return 0;
}

/* The graph-API plans of the passes that chose it, where the choice came
 * from --algo-cache or from an earlier layer of the same shape (same_as):
 * that layer's plan where its backward-data adds to its input gradient as
 * this one's does, else the same engine's plan built for this layer. */
static int plan_graph_passes(backend *b, int i, cuda_conv *c, int same_as)
{
    for (int p = 0; p < CONV_PASSES; p++) {
        const conv_pass_choice *ch = &c->choice[p];
        if (!ch->graph || c->graph[p].chosen.plan)
            continue;
        const conv_graph *other = same_as != i ? &b->layers[same_as].conv->graph[p] : NULL;
        bool accumulates = p == 1 && step_grad_accumulates(b->net, i, 0);
        if (other && other->chosen.plan && other->accumulates == accumulates) {
            c->graph[p] = *other;
            c->graph[p].owns = false;
            c->graph[p].pack = NULL;
            c->graph[p].flipped = NULL;
            continue;
        }
        if (cuda_conv_graph_build(b, i, p, accumulates, p == 0 && ch->fused, &c->graph[p]) ||
            cuda_conv_graph_plan_again(b, &c->graph[p], ch->engine, ch->config_rank,
                                       (int64_t)b->search_workspace_bytes)) {
            /* a layer of a searched shape whose backward-data adds where the
             * searched one's overwrote (or the reverse), or any under auto:
             * the legacy call, which the search chose too, runs the pass; a
             * row of --algo-cache asked for under graph stops the run */
            cuda_conv_graph_destroy(&c->graph[p]);
            if (c->from_cache && same_as == i && b->cfg.conv_api == CONV_API_GRAPH)
                return -1;
            c->choice[p].graph = false;
            /* a fused forward of the graph API's: the convolution and the
             * own bias kernel (the legacy fused call was not what the trial
             * chose, and may refuse the searched algorithm) */
            if (p == 0)
                c->choice[0].fused = false;
            if (graph_fallback(b))
                return -1;
        }
    }
    return 0;
}

/* What the chosen algorithm of pass p needs, as cuDNN's query for it says,
 * where that is more than the figure its search reported: established
 * frameworks query the chosen algorithm's workspace again rather than trust
 * Find's, and the memory plan gives each pass exactly what it asked for.
 * A query that answers "not supported" for an algorithm Find has just run
 * keeps Find's figure, with which it ran (1); any other refusal, or one for
 * a row of --algo-cache (a stale row: nothing here ran it), is an error. */
static int query_workspace(backend *b, cuda_conv *c, int p)
{
    conv_pass_choice *ch = &c->choice[p];
    size_t bytes = 0;
    if (ch->own)
        return 0;
    if (ch->graph) {
        /* the plan states what it needs: the plan of this process's */
        if (c->graph[p].chosen.workspace > ch->workspace_bytes)
            ch->workspace_bytes = c->graph[p].chosen.workspace;
        return 0;
    }
    cudnnStatus_t st;
    const char *call;
    if (p == 0) {
        call = "cudnnGetConvolutionForwardWorkspaceSize";
        st = cudnnGetConvolutionForwardWorkspaceSize(b->dnn, c->x, c->w, c->conv[0], c->y,
                                                     (cudnnConvolutionFwdAlgo_t)ch->algo, &bytes);
    } else if (p == 1) {
        call = "cudnnGetConvolutionBackwardDataWorkspaceSize";
        st = cudnnGetConvolutionBackwardDataWorkspaceSize(
            b->dnn, c->w, c->y, c->conv[1], c->x, (cudnnConvolutionBwdDataAlgo_t)ch->algo, &bytes);
    } else {
        call = "cudnnGetConvolutionBackwardFilterWorkspaceSize";
        st = cudnnGetConvolutionBackwardFilterWorkspaceSize(
            b->dnn, c->x, c->y, c->conv[2], c->w, (cudnnConvolutionBwdFilterAlgo_t)ch->algo,
            &bytes);
    }
    if (CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED && !c->from_cache)
        return 1;
    if (st != CUDNN_STATUS_SUCCESS)
        return cudnn_fail_call(b, __FILE__, __LINE__, call, st);
    if ((int64_t)bytes > ch->workspace_bytes)
        ch->workspace_bytes = (int64_t)bytes;
    return 0;
}

int cuda_conv_choose(backend *b, int i, int same_as)
{
    b->current_layer = i;
    cuda_conv *c = b->layers[i].conv;
    const layer *l = &b->net->layers[i];
    conv_shape shape = conv_shape_of(l, &b->fusion[i], b->cfg.batch, b->pp.prec);
    char key[ALGO_KEY_LEN] = "";
    bool searched = false;
    if (same_as != i) {
        for (int p = 0; p < CONV_PASSES; p++)
            c->choice[p] = b->layers[same_as].conv->choice[p];
        c->from_cache = b->layers[same_as].conv->from_cache;
    } else {
        if (b->cfg.algo_cache && algo_cache_key(&b->algo_ctx, &shape, key, sizeof key))
            return cuda_fail(b, "--algo-cache: the key of this shape is too long");
        c->from_cache = b->cfg.algo_cache && from_cache(b, key, shape.input_grad, c);
        if (c->from_cache) {
            b->shapes_cached++;
        } else {
            if (search_shape(b, i, c, &shape))
                return -1;
            searched = true;
            b->shapes_searched++;
        }
    }
    if (plan_graph_passes(b, i, c, same_as))
        return -1;
    b->bias_in_call[i] = c->choice[0].fused;
    bool refused = false;
    for (int p = 0; p < CONV_PASSES; p++) {
        CUDNN_TRY(b, cudnnSetConvolutionMathType(c->conv[p], (cudnnMathType_t)c->choice[p].math));
        int q = p != 1 || l->computes_input_grad ? query_workspace(b, c, p) : 0;
        if (q < 0)
            return -1;
        refused = refused || q > 0;
    }
    /* a choice whose workspace cuDNN would not state is not offered to later
     * processes: they would have the row alone, and refuse it as stale */
    if (searched && b->cfg.algo_cache && !refused)
        to_cache(b, key, shape.input_grad, c);
    return 0;
}

/* What the plan-time trials of one kind found, each of two ways run on the
 * same inputs (a reference, and an alternative compared with it), summed
 * over the passes that had one. */
struct trial_sums {
    int compared = 0, mismatched = 0;
    double reference_ms = 0.0, alternative_ms = 0.0, chosen_ms = 0.0, worst = 0.0;
    bool timed = true; /* both ways timed in every pass */

    void add(bool verified, bool matched, double difference, float reference,
             float alternative, bool took_alternative)
    {
        compared += verified;
        if (verified && !matched) {
            mismatched++;
            worst = difference > worst ? difference : worst;
        }
        if (reference >= 0.0f && alternative >= 0.0f) {
            reference_ms += reference;
            alternative_ms += alternative;
            chosen_ms += took_alternative ? alternative : reference;
        } else {
            timed = false;
        }
    }
};

/* printf onto the end of buf's string, cut to len. */
static void appendf(char *buf, size_t len, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t len, const char *format, ...)
{
    size_t n = strlen(buf);
    if (n + 1 >= len)
        return;
    va_list args;
    va_start(args, format);
    vsnprintf(buf + n, len - n, format, args);
    va_end(args);
}

static void describe_depthwise(const backend *b, char *buf, size_t len)
{
    int layers = 0, own[CONV_PASSES] = {0, 0, 0}, passes[CONV_PASSES] = {0, 0, 0}, total = 0;
    trial_sums sums; /* reference cuDNN, alternative the own kernel */
    buf[0] = '\0';
    for (int i = 0; i < b->net->n_layers; i++) {
        const layer *l = &b->net->layers[i];
        const cuda_conv *c = b->layers[i].conv;
        if (!c || l->groups <= 1 || l->groups != l->in_shape.c || l->out_channels != l->groups)
            continue;
        layers++;
        for (int p = 0; p < CONV_PASSES; p++) {
            if (p == 1 && !l->computes_input_grad)
                continue;
            const conv_pass_choice *ch = &c->choice[p];
            const depthwise_trial *t = &ch->trial;
            passes[p]++;
            total++;
            own[p] += ch->own;
            sums.add(t->verified, t->matched, ch->own_difference, t->cudnn_ms, t->own_ms,
                     ch->own);
        }
    }
    if (!layers || (unsigned)b->cfg.depthwise > DEPTHWISE_OWN)
        return;
    appendf(buf, len,
            "depthwise convolutions (--depthwise %s, %d layers): own kernels in fwd %d/%d, "
            "bwd_data %d/%d, bwd_filter %d/%d passes, cuDNN in the rest",
            depthwise_choice_name(b->cfg.depthwise), layers, own[0], passes[0], own[1],
            passes[1], own[2], passes[2]);
    if (b->cfg.depthwise == DEPTHWISE_AUTO)
        appendf(buf, len, "; own results compared with cuDNN's in %d/%d", sums.compared, total);
    if (b->cfg.depthwise == DEPTHWISE_AUTO && sums.timed)
        appendf(buf, len, "; timed at plan time, per step: cuDNN %.2f ms, own %.2f ms, chosen "
                          "%.2f ms",
                sums.reference_ms, sums.alternative_ms, sums.chosen_ms);
    if (sums.mismatched)
        appendf(buf, len,
                "; OWN KERNEL DISAGREED WITH cuDNN in %d passes (worst relative difference "
                "%.3g): not used there, a defect to report",
                sums.mismatched, sums.worst);
    if (b->own_failures)
        appendf(buf, len, "; OWN KERNEL FAILED in %d passes (cuDNN used), the first: %s",
                b->own_failures, b->own_failure);
}

/* The forwards with bias under ReLU: who adds the bias, and what the trial
 * measured ("" where no layer has one). */
static void describe_conv_bias(const backend *b, char *buf, size_t len)
{
    int layers = 0, fused = 0, fused_graph = 0, refused = 0;
    trial_sums sums; /* reference the own bias kernel, alternative cuDNN's fused call */
    buf[0] = '\0';
    for (int i = 0; i < b->net->n_layers; i++) {
        const layer *l = &b->net->layers[i];
        const cuda_conv *c = b->layers[i].conv;
        if (!c || !conv_shape_of(l, &b->fusion[i], b->cfg.batch, b->pp.prec).bias_relu ||
            c->choice[0].own)
            continue;
        const conv_pass_choice *ch = &c->choice[0];
        const conv_bias_trial *t = &ch->bias_trial;
        layers++;
        fused += ch->fused;
        fused_graph += ch->fused && ch->graph;
        refused += t->fused_ms < 0.0f;
        sums.add(t->verified, t->matched, t->difference, t->own_ms, t->fused_ms, ch->fused);
    }
    if (!layers || (unsigned)b->cfg.conv_bias > CONV_BIAS_OWN)
        return;
    appendf(buf, len,
            "convolutions with bias under ReLU (--conv-bias %s, %d layers): cuDNN's fused "
            "conv+bias+ReLU in %d (on its graph API in %d), cuDNN's convolution + the own "
            "bias+ReLU kernel in %d",
            conv_bias_choice_name(b->cfg.conv_bias), layers, fused, fused_graph, layers - fused);
    if (b->cfg.conv_bias == CONV_BIAS_OWN)
        return;
    appendf(buf, len, "; fused results compared in %d/%d", sums.compared, layers);
    if (sums.timed)
        appendf(buf, len, "; timed at plan time, per step: own %.2f ms, fused %.2f ms, chosen "
                          "%.2f ms",
                sums.reference_ms, sums.alternative_ms, sums.chosen_ms);
    if (refused)
        appendf(buf, len, "; cuDNN refused the fused call in %d%s%s", refused,
                b->fused_refusals ? ", the first: " : "", b->fused_refusal);
    if (b->graph_fused_none)
        appendf(buf, len, "; the graph API built no conv+bias+ReLU plan in %d shapes, the first: %s",
                b->graph_fused_none, b->graph_fused_why);
    if (sums.mismatched)
        appendf(buf, len,
                "; FUSED RESULT DISAGREED in %d (worst relative difference %.3g): %s, a "
                "defect to report",
                sums.mismatched, sums.worst,
                b->cfg.conv_bias == CONV_BIAS_AUTO ? "not used there" : "used as asked");
}

/* The passes that are not depthwise: which of cuDNN's interfaces runs them,
 * and what the trial measured. */
static void describe_conv_api(const backend *b, char *buf, size_t len)
{
    int graph[CONV_PASSES] = {0, 0, 0}, passes[CONV_PASSES] = {0, 0, 0}, total = 0, none = 0;
    long offered = 0, tried = 0;
    trial_sums sums; /* reference the legacy call, alternative the graph API */
    buf[0] = '\0';
    for (int i = 0; i < b->net->n_layers; i++) {
        const layer *l = &b->net->layers[i];
        const cuda_conv *c = b->layers[i].conv;
        if (!c || l->groups != 1)
            continue;
        for (int p = 0; p < CONV_PASSES; p++) {
            if (p == 1 && !l->computes_input_grad)
                continue;
            const conv_pass_choice *ch = &c->choice[p];
            const conv_api_trial *t = &ch->api_trial;
            if (ch->fused)
                continue;
            passes[p]++;
            total++;
            graph[p] += ch->graph;
            none += t->graph_ms < 0.0f;
            offered += t->offered, tried += t->tried;
            sums.add(t->verified, t->matched, t->difference, t->legacy_ms, t->graph_ms,
                     ch->graph);
        }
    }
    if (!total || (unsigned)b->cfg.conv_api > CONV_API_GRAPH)
        return;
    appendf(buf, len,
            "convolution passes (--conv-api %s): cuDNN's graph API in fwd %d/%d, bwd_data "
            "%d/%d, bwd_filter %d/%d, its legacy calls in the rest",
            conv_api_choice_name(b->cfg.conv_api), graph[0], passes[0], graph[1], passes[1],
            graph[2], passes[2]);
    if (b->cfg.conv_api == CONV_API_LEGACY)
        return;
    appendf(buf, len,
            "; engine configurations timed: %ld of the %ld the heuristics offered; graph "
            "results compared with the legacy ones in %d/%d",
            tried, offered, sums.compared, total);
    if (sums.timed)
        appendf(buf, len, "; timed at plan time, per step: legacy %.2f ms, graph %.2f ms, "
                          "chosen %.2f ms",
                sums.reference_ms, sums.alternative_ms, sums.chosen_ms);
    if (none)
        appendf(buf, len, "; no graph engine built and fitted in %d", none);
    if (b->graph_failures)
        appendf(buf, len, "; GRAPH PLAN FAILED in %d (the legacy call runs them), the first: %s",
                b->graph_failures, b->graph_failure);
    if (b->graph_rank_moves)
        appendf(buf, len,
                "; %d plans built from another configuration of their engine than the one "
                "timed (the heuristics ranked it elsewhere: another cuDNN or device?)",
                b->graph_rank_moves);
    if (sums.mismatched)
        appendf(buf, len,
                "; GRAPH RESULT DISAGREED in %d (worst relative difference %.3g): %s, a defect "
                "to report",
                sums.mismatched, sums.worst,
                b->cfg.conv_api == CONV_API_AUTO ? "not used there" : "used as asked");
}

void cuda_conv_describe_choices(const backend *b, char *buf, size_t len)
{
    char more[1024];
    describe_depthwise(b, buf, len);
    describe_conv_bias(b, more, sizeof more);
    if (more[0])
        appendf(buf, len, "%s%s", buf[0] ? "; " : "", more);
    describe_conv_api(b, more, sizeof more);
    if (more[0])
        appendf(buf, len, "%s%s", buf[0] ? "; " : "", more);
}
