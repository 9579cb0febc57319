/* The CUDA backend: creation (memory plan, buffers, algorithm choice),
 * dispatch of the step's operations by layer type, errors, timers, graph
 * capture and statistics. Host transfers are in cuda_buffers.cu. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../peaks/cuda_driver_dl.h"
#include "cuda_internal.h"


/* ---- errors ------------------------------------------------------------------ */

/* "layer3.0.conv1 (conv 3x3/2 128->256, 28x28 -> 14x14)" */
static void describe_layer(const backend *b, int i, char *buf, size_t len)
{
    if (i == STEP_LOSS) {
        snprintf(buf, len, "the loss");
        return;
    }
    if (i == STEP_ALL_LAYERS) {
        snprintf(buf, len, "the update");
        return;
    }
    if (i < 0 || i >= b->net->n_layers) {
        snprintf(buf, len, "the backend");
        return;
    }
    const layer *l = &b->net->layers[i];
    if (l->type == LAYER_CONV)
        snprintf(buf, len, "layer %s (conv %dx%d/%d %d->%d%s, %dx%d -> %dx%d)", l->name,
                 l->kernel, l->kernel, l->stride, l->in_shape.c, l->out_channels,
                 l->groups > 1 ? (l->groups == l->in_shape.c ? " depthwise" : " grouped") : "",
                 l->in_shape.h, l->in_shape.w, l->out_shape.h, l->out_shape.w);
    else
        snprintf(buf, len, "layer %s (%s %dx%dx%d -> %dx%dx%d)", l->name,
                 layer_type_name(l->type), l->in_shape.c, l->in_shape.h, l->in_shape.w,
                 l->out_shape.c, l->out_shape.h, l->out_shape.w);
}

int cuda_fail(backend *b, const char *fmt, ...)
{
    char what[384], where[192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    describe_layer(b, b->current_layer, where, sizeof where);
    snprintf(b->err, sizeof b->err, "%s, batch %d, %s %s: %s", where, b->cfg.batch,
             precision_name(b->pp.prec), b->pp.layout == LAYOUT_NHWC ? "NHWC" : "NCHW", what);
    return -1;
}

int cuda_fail_call(backend *b, const char *file, int line, const char *call, const char *what)
{
    return cuda_fail(b, "%s:%d: %s: %s", file, line, call, what);
}

int cudnn_fail_call(backend *b, const char *file, int line, const char *call, cudnnStatus_t st)
{
    char detail[512] = "";
#if CUDNN_MAJOR >= 9
    cudnnGetLastErrorString(detail, sizeof detail);
#endif
    if (!detail[0])
        return cuda_fail_call(b, file, line, call, cudnnGetErrorString(st));
    return cuda_fail(b, "%s:%d: %s: %s (%s)", file, line, call, cudnnGetErrorString(st), detail);
}

extern "C" const char *cuda_error(const backend *b)
{
    return b->err;
}

extern "C" int cuda_device_count(char *why, size_t why_len)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
        cuda_no_device_why(err == cudaErrorInsufficientDriver, cudaGetErrorString(err),
                           CUDART_VERSION, why, why_len);
        return 0;
    }
    if (n == 0)
        snprintf(why, why_len, "no CUDA device found");
    return n;
}

/* ---- memory ------------------------------------------------------------------ */

int cuda_alloc(backend *b, void **p, size_t bytes, const char *what)
{
    *p = NULL;
    if (bytes == 0)
        return 0;
    if (b->n_allocs == b->cap_allocs) {
        int cap = b->cap_allocs ? 2 * b->cap_allocs : 256;
        void **grown = (void **)realloc(b->allocs, (size_t)cap * sizeof *grown);
        if (!grown)
            return cuda_fail(b, "out of host memory");
        b->allocs = grown;
        b->cap_allocs = cap;
    }
    cudaError_t err = cudaMalloc(p, bytes);
    if (err != cudaSuccess) {
        size_t free_bytes = 0, total = 0;
        cudaGetLastError(); /* the failed allocation is not sticky */
        cudaMemGetInfo(&free_bytes, &total);
        *p = NULL;
        return cuda_fail(b,
                         "out of device memory for %s (%.3f GiB) with %.2f GiB allocated; "
                         "%.2f GiB free of %.2f: use a smaller --batch",
                         what, bytes / 1073741824.0, b->device_bytes / 1073741824.0,
                         free_bytes / 1073741824.0, total / 1073741824.0);
    }
    b->allocs[b->n_allocs++] = *p;
    b->device_bytes += (int64_t)bytes;
    CUDA_TRY(b, cudaMemsetAsync(*p, 0, bytes, b->stream));
    return 0;
}

int cuda_release(backend *b, void *p, size_t bytes)
{
    for (int k = 0; p && k < b->n_allocs; k++)
        if (b->allocs[k] == p) {
            b->allocs[k] = b->allocs[--b->n_allocs];
            b->device_bytes -= (int64_t)bytes;
            CUDA_TRY(b, cudaFree(p));
            return 0;
        }
    return p ? cuda_fail(b, "freeing device memory the backend did not allocate") : 0;
}

cuda_workspace cuda_workspace_of(const backend *b, int i, bool backward)
{
    if (b->search_workspace)
        return cuda_workspace{b->search_workspace, b->search_workspace_bytes};
    int s = b->plan.scratch_buffer[2 * i + (backward ? 1 : 0)];
    if (s < 0)
        return cuda_workspace{NULL, 0};
    return cuda_workspace{b->buffers[s], (size_t)b->plan.buffer_elems[s] * b->pp.elem_bytes};
}

const void *cuda_input(const backend *b, int i, int k)
{
    int in = b->net->layers[i].inputs[k];
    return in == GRAPH_INPUT ? b->input : b->layers[in].out;
}

void *cuda_input_grad(const backend *b, int i, int k)
{
    int in = b->net->layers[i].inputs[k];
    return in == GRAPH_INPUT ? NULL : b->layers[in].grad;
}

int64_t cuda_elems(const backend *b, int i)
{
    return backend_buffer_elems(b->net, i, b->cfg.batch, BUF_OUTPUT);
}

/* ---- creation ---------------------------------------------------------------- */

static int allocate_layer(backend *b, int i)
{
    const network *net = b->net;
    const layer *l = &net->layers[i];
    cuda_layer *cl = &b->layers[i];
    int n = b->cfg.batch, eb = b->pp.elem_bytes;
    int64_t out = cuda_elems(b, i);
    size_t wts = (size_t)backend_buffer_elems(net, i, n, BUF_WEIGHT);
    size_t bias = (size_t)backend_buffer_elems(net, i, n, BUF_BIAS);
    b->current_layer = i;
    if (l->type == LAYER_BN) {
        size_t c = (size_t)l->in_shape.c * sizeof(float);
        void **f32[] = {(void **)&cl->w,    (void **)&cl->bias,    &cl->dw,
                        &cl->dbias,         (void **)&cl->vw,      (void **)&cl->vbias,
                        (void **)&cl->mean, (void **)&cl->rstd,    (void **)&cl->run_mean,
                        (void **)&cl->run_var};
        for (size_t k = 0; k < sizeof f32 / sizeof *f32; k++)
            if (cuda_alloc(b, f32[k], c, "batch norm parameters"))
                return -1;
        cl->w_copy = cl->w;
        cl->bias_copy = cl->bias;
    } else if (wts) {
        if (cuda_alloc(b, (void **)&cl->w, wts * 4, "weights") ||
            cuda_alloc(b, (void **)&cl->vw, wts * 4, "momentum") ||
            cuda_alloc(b, &cl->dw, wts * eb, "weight gradients"))
            return -1;
        if (b->pp.master_copy) {
            if (cuda_alloc(b, &cl->w_copy, wts * eb, "the weights' copy"))
                return -1;
        } else {
            cl->w_copy = cl->w;
        }
        if (bias) {
            if (cuda_alloc(b, (void **)&cl->bias, bias * 4, "biases") ||
                cuda_alloc(b, (void **)&cl->vbias, bias * 4, "momentum") ||
                cuda_alloc(b, &cl->dbias, bias * eb, "bias gradients"))
                return -1;
            if (b->pp.master_copy) {
                if (cuda_alloc(b, &cl->bias_copy, bias * eb, "the biases' copy"))
                    return -1;
            } else {
                cl->bias_copy = cl->bias;
            }
        }
    }
    if (l->type == LAYER_MAXPOOL || l->type == LAYER_DROPOUT)
        if (cuda_alloc(b, (void **)&cl->mask, (size_t)out, "a mask"))
            return -1;
    return 0;
}

/* Why the batch does not fit in the device's free memory, into why; false
 * where it fits. */
static bool memory_refused(const network *net, int batch, const precision_plan *pp,
                           const mem_plan *plan, size_t free_bytes, size_t total, char *why,
                           size_t why_len)
{
    int64_t need = cuda_planned_bytes(net, batch, pp, plan);
    if (need <= (int64_t)free_bytes)
        return false;
    snprintf(why, why_len,
             "a batch of %d needs %.2f GiB of device memory for activations, gradients and "
             "parameters; %.2f GiB is free of %.2f: use a smaller --batch",
             batch, need / 1073741824.0, free_bytes / 1073741824.0, total / 1073741824.0);
    return true;
}

/* Why a device of compute capability cc cannot compute in prec, into why;
 * false where it can. */
static bool precision_refused(precision prec, int cc, const char *device_name, char *why,
                              size_t why_len)
{
    bool ampere_type = prec == PREC_TF32 || prec == PREC_BF16;
    if (!ampere_type || cc >= 80)
        return false;
    snprintf(why, why_len, "%s needs compute capability 8.0 or newer; %s is %d.%d",
             precision_name(prec), device_name, cc / 10, cc % 10);
    return true;
}

/* Fails early, with what a batch needs, rather than in the middle of the
 * allocations. */
static int check_memory(backend *b)
{
    size_t free_bytes = 0, total = 0;
    CUDA_TRY(b, cudaMemGetInfo(&free_bytes, &total));
    char why[320];
    if (memory_refused(b->net, b->cfg.batch, &b->pp, &b->plan, free_bytes, total, why,
                       sizeof why))
        return cuda_fail(b, "%s", why);
    return 0;
}

static int check_device(backend *b)
{
    cudaDeviceProp prop;
    CUDA_TRY(b, cudaSetDevice(b->cfg.device));
    CUDA_TRY(b, cudaGetDeviceProperties(&prop, b->cfg.device));
    b->sm_count = prop.multiProcessorCount;
    int cc = 10 * prop.major + prop.minor;
    snprintf(b->device_name, sizeof b->device_name, "%s", prop.name);
    b->algo_ctx.cc = cc;
    char why[320];
    if (precision_refused(b->pp.prec, cc, prop.name, why, sizeof why))
        return cuda_fail(b, "%s", why);
    return 0;
}

/* What cuda_create refuses before it allocates anything, asked without a
 * backend: the device's compute capability for the precision, and its free
 * memory for the batch (the same checks, from the same plan). */
extern "C" int cuda_cannot_run(const network *net, const backend_config *cfg, char *why,
                               size_t why_len)
{
    cudaDeviceProp prop;
    size_t free_bytes = 0, total = 0;
    cudaError_t err = cudaSetDevice(cfg->device);
    if (err == cudaSuccess)
        err = cudaGetDeviceProperties(&prop, cfg->device);
    if (err == cudaSuccess)
        err = cudaMemGetInfo(&free_bytes, &total);
    if (err != cudaSuccess) {
        snprintf(why, why_len, "asking CUDA device %d what it can run: %s", cfg->device,
                 cudaGetErrorString(err));
        return -1;
    }
    if (precision_refused(cfg->prec, 10 * prop.major + prop.minor, prop.name, why, why_len))
        return 1;
    precision_plan pp = precision_plan_of(cfg->prec);
    memplan_rules rules = cuda_memplan_rules(!cfg->no_fusion);
    mem_plan plan;
    if (memplan_make(net, cfg->batch, &rules, NULL, &plan)) {
        snprintf(why, why_len, "out of host memory for the memory plan");
        return -1;
    }
    bool refused = memory_refused(net, cfg->batch, &pp, &plan, free_bytes, total, why, why_len);
    memplan_free(&plan);
    return refused ? 1 : 0;
}

static int open_libraries(backend *b)
{
    CUDA_TRY(b, cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking));
    CUDNN_TRY(b, cudnnCreate(&b->dnn));
    CUDNN_TRY(b, cudnnSetStream(b->dnn, b->stream));
    CUBLAS_TRY(b, cublasLtCreate(&b->lt));
    CUDA_TRY(b, cudaEventCreate(&b->timer[0]));
    CUDA_TRY(b, cudaEventCreate(&b->timer[1]));
    return 0;
}

/* The memory plan's buffers, regions of one arena; each layer's output and
 * gradient pointed into it. Again after the plan gains the workspaces: the
 * first arena goes first (what the search wrote there is not kept). */
static int place_buffers(backend *b, const char *what)
{
    size_t eb = (size_t)b->pp.elem_bytes;
    if (b->arena && cuda_release(b, b->arena, (size_t)b->arena_bytes))
        return -1;
    b->arena = NULL;
    free(b->buffers);
    b->buffers = (void **)calloc((size_t)b->plan.n_buffers + 1, sizeof *b->buffers);
    if (!b->buffers)
        return cuda_fail(b, "out of host memory");
    b->current_layer = CUDA_NO_LAYER;
    b->arena_bytes = b->plan.arena_elems * (int64_t)eb;
    if (cuda_alloc(b, &b->arena, (size_t)b->arena_bytes, what))
        return -1;
    for (int s = 0; s < b->plan.n_buffers; s++)
        b->buffers[s] = (char *)b->arena + (size_t)b->plan.buffer_offset[s] * eb;
    for (int i = 0; i < b->net->n_layers; i++) {
        int ob = b->plan.out_buffer[i], gb = b->plan.grad_buffer[i];
        b->layers[i].out = ob >= 0 ? b->buffers[ob] : NULL;
        b->layers[i].grad = gb >= 0 ? b->buffers[gb] : NULL;
    }
    return 0;
}

/* The backend-wide buffers: gradient slabs, the batch, staging, the loss,
 * the loss scale and the dropout counter. */
static int allocate_shared(backend *b)
{
    const network *net = b->net;
    int n = b->cfg.batch, eb = b->pp.elem_bytes;
    if (place_buffers(b, "activations and gradients"))
        return -1;
    int64_t input = (int64_t)n * shape_elems(net->input), largest = input;
    for (int i = 0; i < net->n_layers; i++)
        for (int k = 0; k < BUF_KIND_COUNT; k++) {
            int64_t e = backend_buffer_elems(net, i, n, (buffer_kind)k);
            largest = e > largest ? e : largest;
        }
    b->staging_elems = largest < (int64_t)CUDA_STAGING_ELEMS ? largest : (int64_t)CUDA_STAGING_ELEMS;
    b->bn_partials_elems = cuda_bn_partials_needed(b);
    loss_scale_state scale = loss_scale_initial();
    if (!b->pp.loss_scaling)
        scale.scale = 1.0f;
    else if (b->cfg.initial_loss_scale > 0.0f)
        scale.scale = b->cfg.initial_loss_scale;
    if (cuda_alloc(b, &b->input, (size_t)input * eb, "the batch") ||
        cuda_alloc(b, (void **)&b->labels, (size_t)n * sizeof(int32_t), "the labels") ||
        cuda_alloc(b, (void **)&b->staging, (size_t)b->staging_elems * 4, "staging") ||
        cuda_alloc(b, (void **)&b->loss_each, (size_t)n * 4, "the loss") ||
        cuda_alloc(b, (void **)&b->loss_dev, 4, "the loss") ||
        cuda_alloc(b, (void **)&b->scale_dev, sizeof(loss_scale_state), "the loss scale") ||
        cuda_alloc(b, (void **)&b->grad_scale, sizeof(float), "the loss scale") ||
        cuda_alloc(b, (void **)&b->forward_count, sizeof(uint64_t), "a counter") ||
        cuda_alloc(b, (void **)&b->bn_partials, (size_t)b->bn_partials_elems * 4,
                   "batch norm sums"))
        return -1;
    CUDA_TRY(b, cudaMallocHost((void **)&b->loss_host, sizeof(float)));
    CUDA_TRY(b, cudaMemcpyAsync(b->scale_dev, &scale, sizeof scale, cudaMemcpyHostToDevice,
                                b->stream));
    CUDA_TRY(b, cudaMemcpyAsync(b->grad_scale, &scale.scale, sizeof scale.scale,
                                cudaMemcpyHostToDevice, b->stream));
    /* the host values must outlive the copies */
    CUDA_TRY(b, cudaStreamSynchronize(b->stream));
    return 0;
}

/* The memory plan again, now with each operation's workspace as a region
 * of the arena living while it runs (memplan_make's scratch): a workspace
 * adds memory only where it comes on top of the most that is live then,
 * where one workspace kept for the whole step added the largest any pass
 * needs. */
static int plan_workspaces(backend *b)
{
    const network *net = b->net;
    int n = net->n_layers;
    int64_t *pass_bytes = (int64_t *)calloc((size_t)(3 * n), sizeof *pass_bytes);
    int64_t *scratch = (int64_t *)calloc((size_t)(2 * n), sizeof *scratch);
    if (!pass_bytes || !scratch) {
        free(pass_bytes), free(scratch);
        return cuda_fail(b, "out of host memory");
    }
    size_t largest = 0;
    for (int i = 0; i < n; i++)
        for (int p = 0; p < 3; p++) {
            const cuda_layer *cl = &b->layers[i];
            int64_t v = cl->conv ? cl->conv->choice[p].workspace_bytes
                        : cl->fc ? (int64_t)cl->fc->workspace[p]
                                 : 0;
            if (p == 1 && !net->layers[i].computes_input_grad)
                v = 0;
            pass_bytes[3 * i + p] = v;
            largest = (size_t)v > largest ? (size_t)v : largest;
        }
    cuda_scratch_elems(n, pass_bytes, b->pp.elem_bytes, scratch);
    int64_t before = b->arena_bytes;
    mem_plan with;
    memplan_rules rules = cuda_memplan_rules(!b->cfg.no_fusion);
    int rc = memplan_make(net, b->cfg.batch, &rules, scratch, &with);
    free(pass_bytes), free(scratch);
    if (rc)
        return cuda_fail(b, "out of host memory for the memory plan");
    memplan_free(&b->plan);
    b->plan = with;
    char what[160];
    snprintf(what, sizeof what,
             "activations, gradients and workspaces (the largest %.0f MiB: a smaller "
             "--workspace-mb may fit)",
             largest / 1048576.0);
    if (place_buffers(b, what))
        return -1;
    b->workspace_bytes = largest;
    /* two greedy placements: the one with workspaces could come out smaller */
    b->workspace_added = b->arena_bytes > before ? b->arena_bytes - before : 0;
    return 0;
}

/* cuDNN's algorithms, once per distinct convolution shape (cuda_conv.cu),
 * and the GEMMs' (cuda_fc.cu), in a search workspace of at most the limit;
 * then each operation's workspace is placed in the arena. */
static int choose_algorithms(backend *b)
{
    const network *net = b->net;
    int *first = (int *)malloc((size_t)net->n_layers * sizeof *first);
    if (!first)
        return cuda_fail(b, "out of host memory");
    conv_shape_groups(net, b->fusion, b->cfg.batch, b->pp.prec, first);
    const size_t asked = b->cfg.workspace_limit > 0 ? (size_t)b->cfg.workspace_limit
                                                    : (size_t)1 << 30; /* 1 GiB */
    size_t limit = asked, free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) == cudaSuccess && limit > free_bytes / 2)
        limit = free_bytes / 2;
    /* the search workspace: the limit, or as much of it as can be had */
    void *search = NULL;
    while (limit > 0 && cudaMalloc(&search, limit) != cudaSuccess) {
        cudaGetLastError();
        limit /= 2;
    }
    b->search_workspace = search;
    b->search_workspace_bytes = search ? limit : 0;
    int rc = 0;
    if (b->cfg.algo_cache) {
        b->algo_ctx.device = b->device_name;
        b->algo_ctx.cudnn_version = (int)cudnnGetVersion();
        b->algo_ctx.sm_count = b->sm_count;
        b->algo_ctx.workspace_limit = (int64_t)asked;
        b->algo_ctx.depthwise = b->cfg.depthwise;
        b->algo_ctx.own_depthwise = cuda_depthwise_source_id();
        b->algo_ctx.no_fusion = b->cfg.no_fusion;
        b->algo_ctx.conv_bias = b->cfg.conv_bias;
        b->algo_ctx.conv_api = b->cfg.conv_api;
        char why[CUDA_ERR_LEN];
        if (algo_cache_read(b->cfg.algo_cache, &b->algos, why, sizeof why))
            rc = cuda_fail(b, "--algo-cache: %s", why);
    }
    for (int i = 0; rc == 0 && i < net->n_layers; i++)
        if (net->layers[i].type == LAYER_CONV)
            rc = cuda_conv_choose(b, i, first[i]);
    for (int i = 0; rc == 0 && i < net->n_layers; i++) {
        b->current_layer = i;
        if (net->layers[i].type == LAYER_FC)
            rc = cuda_fc_setup(b, i);
    }
    algo_cache_free(&b->algos);
    free(first);
    /* the search buffer goes whatever happened; then the first failure */
    cudaError_t synced = cudaStreamSynchronize(b->stream);
    cudaError_t freed = search ? cudaFree(search) : cudaSuccess;
    b->search_workspace = NULL;
    b->search_workspace_bytes = 0;
    if (rc)
        return -1;
    b->current_layer = CUDA_NO_LAYER;
    CUDA_TRY(b, synced);
    CUDA_TRY(b, freed);
    if (plan_workspaces(b))
        return -1;
    cuda_conv_describe_choices(b, b->choices, sizeof b->choices);
    if (b->cfg.algo_cache) {
        size_t n = strlen(b->choices);
        snprintf(b->choices + n, sizeof b->choices - n,
                 "%sconvolution algorithms: %d of %d distinct shapes from %s, %d searched%s%s",
                 n ? "; " : "", b->shapes_cached, b->shapes_cached + b->shapes_searched,
                 b->cfg.algo_cache, b->shapes_searched,
                 b->algo_cache_unsaved[0] ? ", NOT SAVED: " : "", b->algo_cache_unsaved);
    }
    return 0;
}

extern "C" backend *cuda_create(const network *net, const backend_config *cfg, char *err,
                                size_t err_len)
{
    backend *b = (backend *)calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, err_len, "out of host memory creating the CUDA backend");
        return NULL;
    }
    b->net = net;
    b->cfg = *cfg;
    b->pp = precision_plan_of(cfg->prec);
    b->current_layer = CUDA_NO_LAYER;
    int rc = cuda_profile_setup(b);
    if (rc == 0 && (unsigned)cfg->depthwise > DEPTHWISE_OWN)
        rc = cuda_fail(b, "unknown depthwise choice %d", (int)cfg->depthwise);
    if (rc == 0 && (unsigned)cfg->conv_bias > CONV_BIAS_OWN)
        rc = cuda_fail(b, "unknown conv-bias choice %d", (int)cfg->conv_bias);
    if (rc == 0 && (unsigned)cfg->conv_api > CONV_API_GRAPH)
        rc = cuda_fail(b, "unknown conv-api choice %d", (int)cfg->conv_api);
    if (rc == 0)
        rc = check_device(b);
    memplan_rules rules = cuda_memplan_rules(!cfg->no_fusion);
    if (rc == 0 && memplan_make(net, cfg->batch, &rules, NULL, &b->plan))
        rc = cuda_fail(b, "out of host memory for the memory plan");
    b->fusion = (layer_fusion *)calloc((size_t)net->n_layers, sizeof *b->fusion);
    b->bias_in_call = (bool *)calloc((size_t)net->n_layers, sizeof *b->bias_in_call);
    b->layers = (cuda_layer *)calloc((size_t)net->n_layers, sizeof *b->layers);
    if (rc == 0 && (!b->fusion || !b->bias_in_call || !b->layers))
        rc = cuda_fail(b, "out of host memory");
    if (rc == 0)
        fusion_plan_make(net, &b->plan, !cfg->no_fusion, b->fusion);
    if (rc == 0)
        rc = check_memory(b);
    if (rc == 0)
        rc = open_libraries(b);
    if (rc == 0)
        rc = allocate_shared(b);
    for (int i = 0; rc == 0 && i < net->n_layers; i++)
        rc = allocate_layer(b, i);
    for (int i = 0; rc == 0 && i < net->n_layers; i++) {
        b->current_layer = i;
        if (net->layers[i].type == LAYER_CONV)
            rc = cuda_conv_setup(b, i);
    }
    b->current_layer = CUDA_NO_LAYER;
    if (rc == 0)
        rc = choose_algorithms(b);
    if (rc == 0)
        rc = cuda_sgd_setup(b);
    if (rc == 0 && cudaStreamSynchronize(b->stream) != cudaSuccess)
        rc = cuda_fail(b, "initialising device memory: %s", cudaGetErrorString(cudaGetLastError()));
    if (rc) {
        snprintf(err, err_len, "%s", b->err);
        cuda_destroy(b);
        return NULL;
    }
    return b;
}

extern "C" void cuda_destroy(backend *b)
{
    if (!b)
        return;
    if (b->stream)
        cudaStreamSynchronize(b->stream);
    if (b->graph_exec)
        cudaGraphExecDestroy(b->graph_exec);
    if (b->graph)
        cudaGraphDestroy(b->graph);
    if (b->layers) {
        for (int i = 0; i < b->net->n_layers; i++) {
            if (b->layers[i].conv) {
                cuda_conv_destroy(b->layers[i].conv);
                free(b->layers[i].conv);
            }
            if (b->layers[i].fc) {
                cuda_fc_destroy(b->layers[i].fc);
                free(b->layers[i].fc);
            }
        }
        free(b->layers);
    }
    for (int k = 0; k < b->n_allocs; k++)
        cudaFree(b->allocs[k]);
    free(b->allocs);
    if (b->loss_host)
        cudaFreeHost(b->loss_host);
    for (int k = 0; k < 2; k++)
        if (b->timer[k])
            cudaEventDestroy(b->timer[k]);
    if (b->lt)
        cublasLtDestroy(b->lt);
    if (b->dnn)
        cudnnDestroy(b->dnn);
    if (b->stream)
        cudaStreamDestroy(b->stream);
    free(b->buffers);
    free(b->fusion);
    free(b->bias_in_call);
    memplan_free(&b->plan);
    free(b);
}

/* ---- the step's operations ----------------------------------------------------- */

static void enter(backend *b, int layer, pass phase)
{
    b->current_layer = layer;
    b->current_pass = phase;
}

extern "C" int cuda_forward(backend *b, int i)
{
    enter(b, i, PASS_FWD);
    if (i == 0 && (cuda_profile_step_begin(b) || cuda_step_counter(b)))
        return -1;
    if (b->fusion[i].fwd_by >= 0)
        return 0; /* done by the kernel of the layer before it */
    switch (b->net->layers[i].type) {
    case LAYER_CONV: return cuda_conv_forward(b, i);
    case LAYER_FC: return cuda_fc_forward(b, i);
    case LAYER_BN: return cuda_bn_forward(b, i);
    case LAYER_MAXPOOL:
    case LAYER_AVGPOOL: return cuda_pool_forward(b, i);
    case LAYER_RELU:
    case LAYER_RELU6:
    case LAYER_DROPOUT: return cuda_pointwise_forward(b, i);
    case LAYER_ADD:
        if (b->fusion[i].add_bn >= 0)
            return cuda_bn_apply_add(b, i);
        return cuda_pointwise_forward(b, i);
    case LAYER_TYPE_COUNT: break;
    }
    return cuda_fail(b, "unknown layer type");
}

extern "C" int cuda_backward_data(backend *b, int i, const bool accumulate[LAYER_MAX_INPUTS])
{
    enter(b, i, PASS_BWD_DATA);
    if (b->fusion[i].bwd_by >= 0)
        return 0; /* the mask is applied by the backward of the layer before it */
    switch (b->net->layers[i].type) {
    case LAYER_CONV: return cuda_conv_backward_data(b, i, accumulate[0]);
    case LAYER_FC: return cuda_fc_backward_data(b, i, accumulate[0]);
    case LAYER_BN: return cuda_bn_backward_data(b, i, accumulate[0]);
    case LAYER_MAXPOOL:
    case LAYER_AVGPOOL: return cuda_pool_backward(b, i, accumulate[0]);
    case LAYER_RELU:
    case LAYER_RELU6:
    case LAYER_ADD:
    case LAYER_DROPOUT: return cuda_pointwise_backward(b, i, accumulate);
    case LAYER_TYPE_COUNT: break;
    }
    return cuda_fail(b, "unknown layer type");
}

extern "C" int cuda_backward_weights(backend *b, int i)
{
    enter(b, i, PASS_BWD_WEIGHTS);
    switch (b->net->layers[i].type) {
    case LAYER_CONV: return cuda_conv_backward_weights(b, i);
    case LAYER_FC: return cuda_fc_backward_weights(b, i);
    case LAYER_BN: return cuda_bn_backward_weights(b, i);
    default: return cuda_fail(b, "the layer has no weights");
    }
}

extern "C" int cuda_loss(backend *b)
{
    enter(b, STEP_LOSS, PASS_FWD);
    return cuda_loss_run(b);
}

extern "C" int cuda_read_loss(backend *b, float *loss)
{
    *loss = *b->loss_host; /* copied by the loss's own memcpy, complete after the sync */
    return 0;
}

extern "C" int cuda_update_all(backend *b, const sgd_params *sgd)
{
    enter(b, STEP_ALL_LAYERS, PASS_UPDATE);
    if (cuda_sgd_run(b, sgd))
        return -1;
    return cuda_profile_step_end(b);
}

/* The fused update covers every layer at once; the driver uses update_all,
 * so a per-layer update is an error, not a silent no-op. */
extern "C" int cuda_update(backend *b, int i, const sgd_params *sgd)
{
    (void)sgd;
    enter(b, i, PASS_UPDATE);
    return cuda_fail(b, "the CUDA backend updates every layer in one kernel (update_all)");
}

extern "C" int cuda_sync(backend *b)
{
    CUDA_TRY(b, cudaStreamSynchronize(b->stream));
    return 0;
}

extern "C" int cuda_fused_into(const backend *b, int i, pass phase)
{
    if (i < 0 || i >= b->net->n_layers)
        return -1;
    if (phase == PASS_FWD)
        return b->fusion[i].fwd_by;
    if (phase == PASS_BWD_DATA)
        return b->fusion[i].bwd_by;
    return -1;
}

extern "C" int cuda_bias_grad_by(const backend *b, int i)
{
    return i >= 0 && i < b->net->n_layers ? b->fusion[i].bias_grad_by : -1;
}

extern "C" int cuda_op_bytes(const backend *b, int layer, pass phase, int64_t *read,
                             int64_t *written)
{
    cuda_traffic_plan plan = {b->net, b->cfg.batch, &b->pp, b->fusion, &b->plan, b->bias_in_call};
    cuda_traffic t = cuda_op_traffic(&plan, layer, phase);
    *read = t.read;
    *written = t.written;
    return 0;
}

extern "C" void cuda_kernel_name(const backend *b, int i, pass phase, char *buf, size_t len)
{
    if (i == STEP_LOSS) {
        snprintf(buf, len, "cuda:softmax_xent");
        return;
    }
    if (i == STEP_ALL_LAYERS) {
        snprintf(buf, len, "cuda:sgd_momentum_multi_tensor%s",
                 b->pp.loss_scaling ? "+loss_scale" : "");
        return;
    }
    const layer *l = &b->net->layers[i];
    const layer_fusion *f = &b->fusion[i];
    static const char *const acts[] = {"", "_relu", "_relu6"};
    if ((phase == PASS_FWD && f->fwd_by >= 0) || (phase == PASS_BWD_DATA && f->bwd_by >= 0)) {
        snprintf(buf, len, "fused:%s",
                 b->net->layers[phase == PASS_FWD ? f->fwd_by : f->bwd_by].name);
        return;
    }
    switch (l->type) {
    case LAYER_CONV:
        cuda_conv_name(b, i, phase, buf, len);
        return;
    case LAYER_FC:
        snprintf(buf, len, "cublasLt:matmul_%s%s", pass_name(phase),
                 phase == PASS_FWD && b->bias_in_call[i] ? "+bias_epilogue" : "");
        return;
    case LAYER_BN:
        snprintf(buf, len, "cuda:bn_%s%s%s", pass_name(phase),
                 phase == PASS_FWD && f->bn_applied_by >= 0 ? "_stats" : "", acts[f->act]);
        return;
    case LAYER_ADD:
        snprintf(buf, len, "cuda:%sadd%s_%s",
                 phase != PASS_FWD || f->add_bn < 0 ? ""
                 : f->add_bn2 >= 0                  ? "bn_apply_bn_"
                                                    : "bn_apply_",
                 acts[f->act], pass_name(phase));
        return;
    default:
        snprintf(buf, len, "cuda:%s_%s%s", layer_type_name(l->type), pass_name(phase),
                 phase == PASS_BWD_DATA && f->sums_bias_of >= 0 ? "+bias_grad" : "");
        return;
    }
}

/* ---- timing, graphs, statistics ------------------------------------------------ */

extern "C" int cuda_timer_start(backend *b)
{
    CUDA_TRY(b, cudaEventRecord(b->timer[0], b->stream));
    return 0;
}

extern "C" int cuda_timer_stop(backend *b)
{
    CUDA_TRY(b, cudaEventRecord(b->timer[1], b->stream));
    return 0;
}

extern "C" int cuda_timer_read(backend *b, double *ms)
{
    float elapsed = 0.0f;
    CUDA_TRY(b, cudaEventElapsedTime(&elapsed, b->timer[0], b->timer[1]));
    *ms = elapsed;
    return 0;
}

extern "C" int cuda_capture_begin(backend *b)
{
    enter(b, CUDA_NO_LAYER, PASS_FWD);
    /* thread-local: only this thread's calls join the capture, and any
     * unsafe call it makes (an allocation) fails loudly */
    CUDA_TRY(b, cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal));
    b->capturing = true;
    b->err[0] = '\0';
    return 0;
}

extern "C" int cuda_capture_end(backend *b)
{
    b->capturing = false;
    cudaGraph_t graph = NULL;
    if (b->err[0]) {
        /* an operation failed while captured: end the capture, keep its error
         * (the layer, the call), which the end's own error would replace */
        if (cudaStreamEndCapture(b->stream, &graph) == cudaSuccess && graph)
            cudaGraphDestroy(graph);
        cudaGetLastError();
        return -1;
    }
    enter(b, CUDA_NO_LAYER, PASS_FWD);
    CUDA_TRY(b, cudaStreamEndCapture(b->stream, &graph));
    if (b->graph_exec)
        CUDA_TRY(b, cudaGraphExecDestroy(b->graph_exec));
    if (b->graph)
        CUDA_TRY(b, cudaGraphDestroy(b->graph));
    b->graph = graph;
    b->graph_exec = NULL;
    CUDA_TRY(b, cudaGraphInstantiate(&b->graph_exec, b->graph, 0));
    /* a graph never uploaded is uploaded by its first launch, inside the
     * first timed step: upload it here, outside the timers */
    CUDA_TRY(b, cudaGraphUpload(b->graph_exec, b->stream));
    CUDA_TRY(b, cudaStreamSynchronize(b->stream));
    return 0;
}

extern "C" int cuda_replay(backend *b)
{
    enter(b, CUDA_NO_LAYER, PASS_FWD);
    if (!b->graph_exec)
        return cuda_fail(b, "no step was captured");
    if (cuda_profile_step_begin(b))
        return -1;
    CUDA_TRY(b, cudaGraphLaunch(b->graph_exec, b->stream));
    return cuda_profile_step_end(b);
}

/* every operation of a step is queued on this one stream */
extern "C" void *cuda_stream(backend *b)
{
    return (void *)b->stream;
}

extern "C" int cuda_stats(backend *b, backend_stats *out)
{
    enter(b, CUDA_NO_LAYER, PASS_FWD);
    loss_scale_state s;
    CUDA_TRY(b, cudaMemcpyAsync(&s, b->scale_dev, sizeof s, cudaMemcpyDeviceToHost, b->stream));
    CUDA_TRY(b, cudaStreamSynchronize(b->stream));
    out->device_bytes = b->device_bytes;
    size_t free_bytes = 0, total_bytes = 0;
    CUDA_TRY(b, cudaMemGetInfo(&free_bytes, &total_bytes));
    out->device_used_bytes = (int64_t)(total_bytes - free_bytes);
    out->workspace_bytes = b->workspace_added;
    out->largest_workspace_bytes = (int64_t)b->workspace_bytes;
    out->skipped_steps = s.skipped_steps;
    out->loss_scale = s.scale;
    snprintf(out->choices, sizeof out->choices, "%s", b->choices);
    return 0;
}
