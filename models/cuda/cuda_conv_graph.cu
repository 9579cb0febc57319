/* Convolution passes on cuDNN's graph API (--conv-api; the choice between it
 * and the legacy calls is cuda_conv_choose.cu's). The legacy calls reach the
 * engines their algorithm enums name; the graph API reaches every engine this
 * cuDNN has for the device, the runtime-compiled ones too, which is what
 * PyTorch's cudnn.benchmark searches. One operation graph per layer and
 * pass (a forward with bias under ReLU may carry both in the convolution's
 * epilogue: VGG's conv+bias+ReLU without a pass over the output of its own),
 * the engine configurations heuristics mode A ranks for it, each
 * finalized into an execution plan; the variant pack (the pointers) is built
 * once and again only where a pointer moved. Thin wrappers: the descriptors
 * and their attributes as cudnn_graph_v9.h names them, every call checked. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_internal.h"

/* the tensors' unique ids: the pass's, the bias, and the epilogue's virtual
 * intermediates (the convolution's sum, the sum plus bias) */
enum { UID_X = 'x', UID_W = 'w', UID_Y = 'y', UID_BIAS = 'b', UID_SUM = 's', UID_BIASED = 'a' };

static int make(backend *b, cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t *d)
{
    CUDNN_TRY(b, cudnnBackendCreateDescriptor(type, d));
    return 0;
}

#define SET(b, d, name, type, count, value)                                                        \
    CUDNN_TRY((b), cudnnBackendSetAttribute((d), (name), (type), (count), (value)))

/* A 4-d tensor (N, C, H, W) in the backend's layout, through its strides:
 * NHWC's innermost dimension is C. A filter (K, C, R, S) likewise (KRSC).
 * A virtual one (an intermediate of the graph, in no buffer) holds fp32. */
static int make_tensor_of(backend *b, cudnnBackendDescriptor_t *d, int64_t uid, int64_t n,
                          int64_t c, int64_t h, int64_t w, bool is_virtual)
{
    int64_t dims[4] = {n, c, h, w};
    int64_t nchw[4] = {c * h * w, h * w, w, 1}, nhwc[4] = {c * h * w, 1, w * c, c};
    const int64_t *strides = b->pp.layout == LAYOUT_NHWC ? nhwc : nchw;
    cudnnDataType_t type = is_virtual ? CUDNN_DATA_FLOAT : cudnn_data_type(b->pp.elem);
    int64_t alignment = 16;
    if (make(b, CUDNN_BACKEND_TENSOR_DESCRIPTOR, d))
        return -1;
    SET(b, *d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    SET(b, *d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    SET(b, *d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    SET(b, *d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    SET(b, *d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    if (is_virtual)
        SET(b, *d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    CUDNN_TRY(b, cudnnBackendFinalize(*d));
    return 0;
}

static int make_tensor(backend *b, cudnnBackendDescriptor_t *d, int64_t uid, int64_t n, int64_t c,
                       int64_t h, int64_t w)
{
    return make_tensor_of(b, d, uid, n, c, h, w, false);
}

static int make_conv(backend *b, const layer *l, cudnnBackendDescriptor_t *d)
{
    cudnnDataType_t comp = CUDNN_DATA_FLOAT; /* fp32 accumulation in every precision */
    cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    int64_t dims = 2, dilation[2] = {1, 1}, stride[2] = {l->stride, l->stride},
            pad[2] = {l->pad, l->pad};
    if (make(b, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, d))
        return -1;
    SET(b, *d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    SET(b, *d, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    SET(b, *d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims);
    SET(b, *d, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation);
    SET(b, *d, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride);
    SET(b, *d, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
    SET(b, *d, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
    CUDNN_TRY(b, cudnnBackendFinalize(*d));
    return 0;
}

/* The operation of pass p over io: x, w, y in the forward's roles. */
static int make_op(backend *b, int p, float beta, const cudnnBackendDescriptor_t io[3],
                   conv_graph *g)
{
    static const cudnnBackendDescriptorType_t types[3] = {
        CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
        CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR};
    /* x, w, y, conv, alpha, beta of each operation */
    static const cudnnBackendAttributeName_t names[3][6] = {
        {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
        {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA}};
    float alpha = 1.0f;
    const cudnnBackendAttributeName_t *a = names[p];
    if (make(b, types[p], &g->op))
        return -1;
    for (int k = 0; k < 3; k++)
        SET(b, g->op, a[k], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &io[k]);
    SET(b, g->op, a[3], CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->conv);
    SET(b, g->op, a[4], CUDNN_TYPE_FLOAT, 1, &alpha);
    SET(b, g->op, a[5], CUDNN_TYPE_FLOAT, 1, &beta);
    CUDNN_TRY(b, cudnnBackendFinalize(g->op));
    return 0;
}

/* One pointwise operation of the epilogue, x (+ bias where given) into y,
 * computed in fp32. */
static int make_pointwise(backend *b, cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                          cudnnBackendDescriptor_t bias, cudnnBackendDescriptor_t y,
                          cudnnBackendDescriptor_t *pw, cudnnBackendDescriptor_t *op)
{
    cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    if (make(b, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, pw))
        return -1;
    SET(b, *pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    SET(b, *pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    CUDNN_TRY(b, cudnnBackendFinalize(*pw));
    if (make(b, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op))
        return -1;
    SET(b, *op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, pw);
    SET(b, *op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (bias)
        SET(b, *op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bias);
    SET(b, *op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    CUDNN_TRY(b, cudnnBackendFinalize(*op));
    return 0;
}

int cuda_conv_graph_build(backend *b, int i, int p, bool accumulates, bool bias_relu,
                          conv_graph *g)
{
    const layer *l = &b->net->layers[i];
    int64_t n = b->cfg.batch, k = l->out_channels, oh = l->out_shape.h, ow = l->out_shape.w;
    *g = conv_graph{};
    g->owns = true;
    g->pass = p;
    g->accumulates = p == 1 && accumulates;
    g->bias_relu = p == 0 && bias_relu;
    if (make_tensor(b, &g->tensors[0], UID_X, n, l->in_shape.c, l->in_shape.h, l->in_shape.w) ||
        make_tensor(b, &g->tensors[1], UID_W, k, l->in_shape.c, l->kernel, l->kernel) ||
        make_tensor(b, &g->tensors[2], UID_Y, n, k, oh, ow) ||
        (g->bias_relu && (make_tensor(b, &g->tensors[3], UID_BIAS, 1, k, 1, 1) ||
                          make_tensor_of(b, &g->tensors[4], UID_SUM, n, k, oh, ow, true) ||
                          make_tensor_of(b, &g->tensors[5], UID_BIASED, n, k, oh, ow, true))))
        return -1;
    /* with the epilogue the convolution writes the virtual sum, the ReLU y */
    const cudnnBackendDescriptor_t io[3] = {g->tensors[0], g->tensors[1],
                                            g->tensors[g->bias_relu ? 4 : 2]};
    if (make_conv(b, l, &g->conv) || make_op(b, p, g->accumulates ? 1.0f : 0.0f, io, g))
        return -1;
    if (g->bias_relu &&
        (make_pointwise(b, CUDNN_POINTWISE_ADD, g->tensors[4], g->tensors[3], g->tensors[5],
                        &g->pointwise[0], &g->epilogue[0]) ||
         make_pointwise(b, CUDNN_POINTWISE_RELU_FWD, g->tensors[5], NULL, g->tensors[2],
                        &g->pointwise[1], &g->epilogue[1])))
        return -1;
    cudnnBackendDescriptor_t ops[3] = {g->op, g->epilogue[0], g->epilogue[1]};
    if (make(b, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->graph))
        return -1;
    SET(b, g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &b->dnn);
    SET(b, g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        g->bias_relu ? 3 : 1, ops);
    CUDNN_TRY(b, cudnnBackendFinalize(g->graph));
    return 0;
}

static void destroy(cudnnBackendDescriptor_t *d)
{
    if (*d)
        cudnnBackendDestroyDescriptor(*d);
    *d = NULL;
}

void cuda_conv_graph_plan_destroy(conv_graph_plan *c)
{
    destroy(&c->plan);
    destroy(&c->config);
}

void cuda_conv_graph_destroy(conv_graph *g)
{
    if (g->flipped) {
        cuda_conv_graph_destroy(g->flipped);
        free(g->flipped);
    }
    destroy(&g->pack);
    if (g->owns) {
        cuda_conv_graph_plan_destroy(&g->chosen);
        destroy(&g->graph);
        destroy(&g->op);
        destroy(&g->conv);
        for (int k = 0; k < 2; k++) {
            destroy(&g->epilogue[k]);
            destroy(&g->pointwise[k]);
        }
        for (int k = 0; k < 6; k++)
            destroy(&g->tensors[k]);
    }
    *g = conv_graph{};
}

/* What the engine of config says of itself: its global index, and whether
 * the precision may run it. A precision runs on
 * the engines of its math: fp32 on none with the TENSOR_CORE note (that is
 * TF32 on fp32 data), tf32, fp16 and bf16 on those with it (the legacy
 * calls ask for tensor-op math there), so that a row measures the
 * precision it names; none takes an engine that down-converts its inputs
 * or reduces in reduced precision: the precision plan accumulates in fp32,
 * as the legacy calls' FLOAT compute type does. */
static int engine_of(backend *b, cudnnBackendDescriptor_t config, conv_graph_plan *c, bool *allowed)
{
    cudnnBackendDescriptor_t engine = NULL;
    if (make(b, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine))
        return -1;
    int64_t got = 0, index = -1;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t n_notes = 0;
    cudnnStatus_t st = cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &engine);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                                      &got, &index);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                      CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                      &n_notes, notes);
    cudnnBackendDestroyDescriptor(engine);
    if (st != CUDNN_STATUS_SUCCESS)
        return cudnn_fail_call(b, __FILE__, __LINE__, "cudnnBackendGetAttribute(engine)", st);
    c->engine = (int)index;
    c->tensor_core = false;
    *allowed = true;
    for (int64_t k = 0; k < n_notes && k < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; k++) {
        if (notes[k] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE)
            c->tensor_core = true;
        if (notes[k] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
            notes[k] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)
            *allowed = false;
    }
    if (c->tensor_core != b->pp.tensor_cores)
        *allowed = false;
    return 0;
}

/* config finalized into an execution plan in c: 0 (c->plan NULL where cuDNN
 * cannot build it for this graph: not an error, another engine may) or -1,
 * the plan destroyed. */
static int finalize_plan(backend *b, cudnnBackendDescriptor_t config, conv_graph_plan *c)
{
    if (make(b, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &c->plan))
        return -1;
    int64_t got = 0;
    cudnnStatus_t st = cudnnBackendSetAttribute(c->plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                                CUDNN_TYPE_HANDLE, 1, &b->dnn);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(c->plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config);
    if (st != CUDNN_STATUS_SUCCESS) {
        destroy(&c->plan);
        return cudnn_fail_call(b, __FILE__, __LINE__, "cudnnBackendSetAttribute(plan)", st);
    }
    if (cudnnBackendFinalize(c->plan) != CUDNN_STATUS_SUCCESS) {
        destroy(&c->plan);
        return 0;
    }
    st = cudnnBackendGetAttribute(c->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                  CUDNN_TYPE_INT64, 1, &got, &c->workspace);
    if (st != CUDNN_STATUS_SUCCESS) {
        destroy(&c->plan);
        return cudnn_fail_call(b, __FILE__, __LINE__, "cudnnBackendGetAttribute(plan workspace)",
                               st);
    }
    return 0;
}

/* What config says it needs before a plan is built from it (building may
 * compile kernels): -1 where this cuDNN does not say (before 9.2). */
static int64_t config_workspace(cudnnBackendDescriptor_t config)
{
    int64_t got = 0, bytes = -1;
    if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                 &got, &bytes) != CUDNN_STATUS_SUCCESS ||
        got != 1)
        return -1;
    return bytes;
}

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int cuda_conv_graph_plans(backend *b, conv_graph *g, int64_t max_workspace, int only_engine,
                          double budget_s, conv_graph_plan *out, int max, int *n, int *offered)
{
    cudnnBackendDescriptor_t heur = NULL, configs[CONV_GRAPH_MAX_OFFERED] = {NULL};
    int64_t count = 0;
    int rc = -1;
    double start = 0.0;
    *n = *offered = 0;
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    if (make(b, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur))
        return -1;
    cudnnStatus_t st = cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->graph);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                                      &mode);
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendFinalize(heur);
    /* how many configurations there are, then as many as are kept */
    if (st == CUDNN_STATUS_SUCCESS)
        st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL);
    if (st != CUDNN_STATUS_SUCCESS) {
        rc = cudnn_fail_call(b, __FILE__, __LINE__, "cuDNN's engine heuristics (mode A)", st);
        goto done;
    }
    if (count > CONV_GRAPH_MAX_OFFERED)
        count = CONV_GRAPH_MAX_OFFERED;
    for (int64_t k = 0; k < count; k++)
        if (make(b, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &configs[k]))
            goto done;
    if (count > 0) {
        int64_t got = 0;
        st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, configs);
        if (st != CUDNN_STATUS_SUCCESS) {
            rc = cudnn_fail_call(b, __FILE__, __LINE__, "cuDNN's engine heuristics (results)", st);
            goto done;
        }
        count = got < count ? got : count;
    }
    *offered = (int)count;
    start = seconds_now();
    for (int64_t k = 0; k < count && *n < max; k++) {
        /* building a plan may compile its kernels (runtime-compiled
         * engines): past the budget, the plans built so far are the choice */
        if (budget_s >= 0.0 && *n > 0 && seconds_now() - start > budget_s)
            break;
        conv_graph_plan c = {};
        bool allowed = false;
        c.config_rank = (int)k;
        if (engine_of(b, configs[k], &c, &allowed))
            goto done;
        if (!allowed || (only_engine >= 0 && c.engine != only_engine) ||
            config_workspace(configs[k]) > max_workspace)
            continue;
        if (finalize_plan(b, configs[k], &c))
            goto done;
        if (c.plan && c.workspace <= max_workspace) {
            c.config = configs[k];
            configs[k] = NULL; /* the plan's now */
            out[(*n)++] = c;
        } else {
            destroy(&c.plan);
        }
    }
    rc = 0;
done:
    for (int k = 0; k < CONV_GRAPH_MAX_OFFERED; k++)
        destroy(&configs[k]);
    destroy(&heur);
    if (rc)
        for (int k = 0; k < *n; k++)
            cuda_conv_graph_plan_destroy(&out[k]);
    return rc;
}

int cuda_conv_graph_plan_again(backend *b, conv_graph *g, int engine, int config_rank,
                               int64_t max_workspace)
{
    conv_graph_plan found[CONV_GRAPH_MAX_OFFERED];
    int n = 0, offered = 0, pick = -1;
    if (cuda_conv_graph_plans(b, g, max_workspace, engine, -1.0, found, CONV_GRAPH_MAX_OFFERED,
                              &n, &offered))
        return -1;
    /* the same rank where it still holds the engine, else the engine's
     * first configuration */
    for (int k = 0; k < n && pick < 0; k++)
        if (found[k].engine == engine && found[k].config_rank == config_rank)
            pick = k;
    bool same_rank = pick >= 0;
    for (int k = 0; k < n && pick < 0; k++)
        if (found[k].engine == engine)
            pick = k;
    for (int k = 0; k < n; k++)
        if (k != pick)
            cuda_conv_graph_plan_destroy(&found[k]);
    if (pick < 0)
        return cuda_fail(b,
                         "cuDNN's graph API no longer offers engine %d for this %s pass "
                         "within a %.0f MiB workspace (%d configurations offered; an "
                         "--algo-cache row from another cuDNN? delete the file to search "
                         "again)",
                         engine,
                         g->pass == 0   ? "forward"
                         : g->pass == 1 ? "backward-data"
                                        : "backward-filter",
                         max_workspace / 1048576.0, offered);
    /* the knobs may differ from the configuration that was timed: counted
     * on the choices line */
    if (!same_rank)
        b->graph_rank_moves++;
    g->chosen = found[pick];
    return 0;
}

int cuda_conv_graph_run(backend *b, int i, conv_graph *g, bool accumulate, void *ws,
                        size_t ws_bytes)
{
    cuda_layer *cl = &b->layers[i];
    int p = g->pass;
    if (!g->chosen.plan)
        return cuda_fail(b, "the graph API's plan of this pass was never built");
    if (accumulate != g->accumulates) {
        /* a caller outside the step (a layer check) asks for the other
         * beta: the same engine's plan for it, built once, outside a capture */
        if (!g->flipped) {
            if (b->capturing)
                return cuda_fail(b, "the backward-data plan was built to %s the input "
                                    "gradient, the captured step asks to %s it",
                                 g->accumulates ? "add to" : "overwrite",
                                 accumulate ? "add to" : "overwrite");
            conv_graph *f = (conv_graph *)calloc(1, sizeof *f);
            if (!f)
                return cuda_fail(b, "out of host memory");
            if (cuda_conv_graph_build(b, i, p, accumulate, false, f) ||
                cuda_conv_graph_plan_again(b, f, g->chosen.engine, g->chosen.config_rank,
                                           INT64_MAX)) {
                cuda_conv_graph_destroy(f);
                free(f);
                return -1;
            }
            g->flipped = f;
        }
        return cuda_conv_graph_run(b, i, g->flipped, accumulate, ws, ws_bytes);
    }
    if ((int64_t)ws_bytes < g->chosen.workspace)
        return cuda_fail(b, "the graph API's plan needs %lld bytes of workspace, the pass has %zu",
                         (long long)g->chosen.workspace, ws_bytes);
    void *x = p == 1 ? cuda_input_grad(b, i, 0) : (void *)cuda_input(b, i, 0);
    void *w = p == 2 ? cl->dw : cl->w_copy;
    void *y = p == 0 ? cl->out : cl->grad;
    /* the workspace last: the tensors' pointers are the first n */
    void *ptrs[5] = {x, w, y, g->bias_relu ? cl->bias_copy : NULL,
                     g->chosen.workspace > 0 ? ws : NULL};
    if (!g->pack || memcmp(ptrs, g->packed, sizeof ptrs) != 0) {
        int64_t uids[4] = {UID_X, UID_W, UID_Y, UID_BIAS};
        int64_t n = g->bias_relu ? 4 : 3;
        void *data[4] = {x, w, y, ptrs[3]};
        destroy(&g->pack);
        if (make(b, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &g->pack))
            return -1;
        SET(b, g->pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
        SET(b, g->pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, data);
        SET(b, g->pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ptrs[4]);
        CUDNN_TRY(b, cudnnBackendFinalize(g->pack));
        memcpy(g->packed, ptrs, sizeof ptrs);
    }
    CUDNN_TRY(b, cudnnBackendExecute(b->dnn, g->chosen.plan, g->pack));
    return 0;
}
