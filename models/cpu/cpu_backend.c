/* The CPU backend: buffers, dispatch by layer type, and the ops table. */
#include "cpu_backend.h"

#include <omp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_blocking.h"
#include "cpu_internal.h"

const memplan_rules cpu_memplan_rules = {.add_in_place = false};

int cpu_fail(backend *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, sizeof b->err, fmt, ap);
    va_end(ap);
    return -1;
}

const float *cpu_input(const backend *b, int layer, int k)
{
    int in = b->net->layers[layer].inputs[k];
    return in == GRAPH_INPUT ? b->input : b->layers[in].out;
}

/* The copy is an OpenMP loop too, not memcpy: one thread alone reaches about
 * half of what the cores together draw from DRAM. */
void cpu_store(float *dst, const float *src, int64_t n, bool accumulate)
{
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        dst[i] = accumulate ? dst[i] + src[i] : src[i];
}

/* 64-byte aligned, zeroed; counts what it hands out so create() can say how
 * much a batch needed when memory runs out. */
static void *alloc_zeroed(size_t bytes, size_t *total)
{
    void *p = NULL;
    *total += bytes;
    if (bytes == 0 || posix_memalign(&p, 64, bytes))
        return NULL;
    memset(p, 0, bytes);
    return p;
}

static int64_t available_memory_bytes(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return -1;
    char line[256];
    long long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1)
            break;
    fclose(f);
    return kib < 0 ? -1 : kib * 1024;
}

/* Bytes create() will allocate, so that a batch too large is reported as such
 * before anything is touched. */
static int64_t planned_bytes(const network *net, int batch, const mem_plan *plan)
{
    int64_t floats = (int64_t)batch * shape_elems(net->input), largest = 0;
    floats += plan->arena_elems;
    for (int i = 0; i < net->n_layers; i++) {
        const layer *l = &net->layers[i];
        int64_t out = backend_buffer_elems(net, i, batch, BUF_OUTPUT);
        floats += 3 * l->params;
        largest = out > largest ? out : largest;
        if (l->type == LAYER_BN)
            floats += 4 * (int64_t)l->in_shape.c;
    }
    return 4 * (floats + largest);
}

static void destroy(backend *b)
{
    if (!b)
        return;
    if (b->layers) {
        for (int i = 0; i < b->net->n_layers; i++) {
            cpu_layer *cl = &b->layers[i];
            cpu_dnnl_destroy(&cl->dnnl);
            void *bufs[] = {cl->w,        cl->dw,      cl->vw,     cl->bias,
                            cl->dbias,    cl->vbias,   cl->mean,   cl->rstd,
                            cl->scale,    cl->shift,   cl->run_mean, cl->run_var,
                            cl->argmax,   cl->keep};
            for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
                free(bufs[k]);
        }
        free(b->layers);
    }
    free(b->buffers);
    free(b->arena);
    memplan_free(&b->plan);
    free(b->input);
    free(b->labels);
    free(b->scratch);
    free(b->bn_partials);
    free(b->bn_coef);
    for (int k = 0; k < 3; k++)
        free(b->blk[k]);
    if (b->stream)
        dnnl_stream_destroy(b->stream);
    if (b->engine)
        dnnl_engine_destroy(b->engine);
    free(b);
}

static int allocate_layer(backend *b, int i, size_t *total)
{
    const network *net = b->net;
    const layer *l = &net->layers[i];
    cpu_layer *cl = &b->layers[i];
    int n = b->cfg.batch;
    size_t out = (size_t)backend_buffer_elems(net, i, n, BUF_OUTPUT) * sizeof(float);
    int ob = b->plan.out_buffer[i], gb = b->plan.grad_buffer[i];
    size_t wts = (size_t)backend_buffer_elems(net, i, n, BUF_WEIGHT) * sizeof(float);
    size_t bias = (size_t)backend_buffer_elems(net, i, n, BUF_BIAS) * sizeof(float);
    size_t ch = (size_t)l->in_shape.c * sizeof(float);
    bool ok = true;
    cl->act_layer = cl->fused_into = -1;
    cl->out = ob >= 0 ? b->buffers[ob] : NULL;
    cl->grad = gb >= 0 ? b->buffers[gb] : NULL;
    if (ok && wts)
        ok = (cl->w = alloc_zeroed(wts, total)) && (cl->dw = alloc_zeroed(wts, total)) &&
             (cl->vw = alloc_zeroed(wts, total));
    if (ok && bias)
        ok = (cl->bias = alloc_zeroed(bias, total)) && (cl->dbias = alloc_zeroed(bias, total)) &&
             (cl->vbias = alloc_zeroed(bias, total));
    if (ok && l->type == LAYER_BN)
        ok = (cl->mean = alloc_zeroed(ch, total)) && (cl->rstd = alloc_zeroed(ch, total)) &&
             (cl->scale = alloc_zeroed(ch, total)) && (cl->shift = alloc_zeroed(ch, total)) &&
             (cl->run_mean = alloc_zeroed(ch, total)) && (cl->run_var = alloc_zeroed(ch, total));
    if (ok && l->type == LAYER_MAXPOOL)
        ok = (cl->argmax = alloc_zeroed(out / sizeof(float) * sizeof(int32_t), total));
    if (ok && l->type == LAYER_DROPOUT)
        ok = (cl->keep = alloc_zeroed(out / sizeof(float), total));
    if (!ok)
        return cpu_fail(b, "out of memory at layer %s after %.2f GiB", l->name,
                        *total / 1073741824.0);
    return 0;
}

/* The partial sums of the batch norms over a blocked input
 * (cpu_blocking.c), sized for the widest of them. */
static int allocate_blocked_norms(backend *b, size_t *total)
{
    int widest = 0;
    for (int i = 0; i < b->net->n_layers; i++) {
        const layer *l = &b->net->layers[i];
        if (l->type == LAYER_BN && l->inputs[0] != GRAPH_INPUT &&
            b->layers[l->inputs[0]].block && l->in_shape.c > widest)
            widest = l->in_shape.c;
    }
    if (widest == 0)
        return 0;
    size_t images = (size_t)b->cfg.batch;
    if (!(b->bn_partials = alloc_zeroed(2 * images * widest * sizeof(double), total)) ||
        !(b->bn_coef = alloc_zeroed(3 * (size_t)widest * sizeof(float), total)))
        return cpu_fail(b, "out of memory for the batch norms' partial sums (%.2f GiB so far)",
                        *total / 1073741824.0);
    return 0;
}

static bool uses_dnnl(const network *net, int i)
{
    return net->layers[i].type == LAYER_CONV || net->layers[i].type == LAYER_FC;
}

/* every layer's block (cpu_blocking.c), from the layouts the convolutions chose */
static int decide_blocks(backend *b)
{
    int n = b->net->n_layers;
    int *chosen = calloc(3 * (size_t)n, sizeof *chosen);
    if (!chosen)
        return cpu_fail(b, "out of memory planning the layouts");
    int *src = chosen, *dst = chosen + n, *block = chosen + 2 * n;
    for (int i = 0; i < n; i++) {
        src[i] = b->layers[i].dnnl.chosen_src_block;
        dst[i] = b->layers[i].dnnl.chosen_dst_block;
    }
    cpu_decide_blocks(b->net, src, dst, block);
    for (int i = 0; i < n; i++)
        b->layers[i].block = block[i];
    free(chosen);
    return 0;
}

/* A ReLU or ReLU6 running in place over a batch norm's or a residual add's
 * output, its only consumer, is done by that layer's own loops (cpu_norm.c,
 * cpu_pointwise.c): forward writes the activated output, backward masks the
 * activation's gradient as it reads it. That is two passes over the tensor
 * fewer in forward, two or three in backward, and the same numbers bit for
 * bit. Not with --no-fusion. */
static void plan_fusion(backend *b)
{
    const network *net = b->net;
    for (int a = 0; !b->cfg.no_fusion && a < net->n_layers; a++) {
        const layer *l = &net->layers[a];
        int by = l->inputs[0], consumer;
        if ((l->type != LAYER_RELU && l->type != LAYER_RELU6) || by == GRAPH_INPUT ||
            (net->layers[by].type != LAYER_BN && net->layers[by].type != LAYER_ADD) ||
            net_consumers(net, by, &consumer, 1) != 1 ||
            b->plan.out_buffer[a] != b->plan.out_buffer[by])
            continue;
        b->layers[by].act_layer = a;
        b->layers[a].fused_into = by;
    }
}

static backend *create(const network *net, const backend_config *cfg, char *err, size_t err_len)
{
    if (cfg->prec != PREC_FP32) {
        snprintf(err, err_len, "the cpu backend computes in fp32 only, not %s",
                 precision_name(cfg->prec));
        return NULL;
    }
    backend *b = calloc(1, sizeof *b);
    if (!b || memplan_make(net, cfg->batch, &cpu_memplan_rules, NULL, &b->plan)) {
        free(b);
        snprintf(err, err_len, "out of memory creating the CPU backend");
        return NULL;
    }
    int64_t need = planned_bytes(net, cfg->batch, &b->plan), have = available_memory_bytes();
    if (have > 0 && need > have) {
        snprintf(err, err_len,
                 "batch %d of %s needs %.2f GiB of memory for activations, gradients and "
                 "parameters; %.2f GiB is available: use a smaller --batch",
                 cfg->batch, net->model, need / 1073741824.0, have / 1073741824.0);
        memplan_free(&b->plan);
        free(b);
        return NULL;
    }
    b->net = net;
    b->cfg = *cfg;
    if (cfg->threads > 0)
        omp_set_num_threads(cfg->threads);
    size_t total = 0;
    int64_t largest = 0;
    for (int i = 0; i < net->n_layers; i++) {
        int64_t out = backend_buffer_elems(net, i, cfg->batch, BUF_OUTPUT);
        largest = out > largest ? out : largest;
    }
    int rc = 0;
    b->layers = calloc((size_t)net->n_layers, sizeof *b->layers);
    b->input = alloc_zeroed((size_t)cfg->batch * shape_elems(net->input) * sizeof(float), &total);
    b->labels = alloc_zeroed((size_t)cfg->batch * sizeof(int32_t), &total);
    b->scratch = alloc_zeroed((size_t)largest * sizeof(float), &total);
    b->buffers = calloc((size_t)b->plan.n_buffers + 1, sizeof *b->buffers);
    /* the plan's buffers: regions of one arena */
    b->arena = alloc_zeroed((size_t)b->plan.arena_elems * sizeof(float), &total);
    if (!b->arena && b->plan.arena_elems > 0)
        rc = -1;
    for (int s = 0; b->buffers && b->arena && s < b->plan.n_buffers; s++)
        b->buffers[s] = b->arena + b->plan.buffer_offset[s];
    if (rc || !b->layers || !b->input || !b->labels || !b->scratch || !b->buffers)
        rc = cpu_fail(b, "out of memory for the batch (%.2f GiB so far)", total / 1073741824.0);
    if (rc == 0 && dnnl_engine_create(&b->engine, dnnl_cpu, 0) != dnnl_success)
        rc = cpu_fail(b, "oneDNN: cannot create a CPU engine");
    if (rc == 0 && dnnl_stream_create(&b->stream, b->engine, dnnl_stream_default_flags) != dnnl_success)
        rc = cpu_fail(b, "oneDNN: cannot create a stream");
    for (int i = 0; rc == 0 && i < net->n_layers; i++)
        rc = allocate_layer(b, i, &total);
    for (int i = 0; rc == 0 && i < net->n_layers; i++)
        if (uses_dnnl(net, i))
            rc = cpu_dnnl_plan(b, i);
    if (rc == 0)
        rc = decide_blocks(b);
    for (int i = 0; rc == 0 && i < net->n_layers; i++)
        if (uses_dnnl(net, i))
            rc = cpu_dnnl_bind(b, i);
    for (int k = 0; rc == 0 && k < 3; k++)
        if (b->blk_bytes[k] && !(b->blk[k] = alloc_zeroed(b->blk_bytes[k], &total)))
            rc = cpu_fail(b, "out of memory for oneDNN's blocked tensors (%.2f GiB so far)",
                          total / 1073741824.0);
    if (rc == 0)
        rc = allocate_blocked_norms(b, &total);
    if (rc == 0)
        plan_fusion(b);
    b->diff_dst_blk_layer = -1;
    if (rc) {
        snprintf(err, err_len, "%s", b->err);
        destroy(b);
        return NULL;
    }
    return b;
}

static const char *error(const backend *b)
{
    return b->err;
}

/* The host array behind a buffer kind, or NULL. */
static float *buffer(backend *b, int i, buffer_kind kind)
{
    cpu_layer *cl = &b->layers[i];
    switch (kind) {
    case BUF_OUTPUT: return cl->out;
    case BUF_OUTPUT_GRAD: return cl->grad;
    case BUF_WEIGHT: return cl->w;
    case BUF_WEIGHT_GRAD: return cl->dw;
    case BUF_BIAS: return cl->bias;
    case BUF_BIAS_GRAD: return cl->dbias;
    case BUF_RUNNING_MEAN: return cl->run_mean;
    case BUF_RUNNING_VAR: return cl->run_var;
    case BUF_KIND_COUNT: break;
    }
    return NULL;
}

static int copy_buffer(backend *b, int i, buffer_kind kind, float *dst, const float *src)
{
    if (i < 0 || i >= b->net->n_layers)
        return cpu_fail(b, "no layer %d", i);
    float *buf = buffer(b, i, kind);
    int64_t n = backend_buffer_elems(b->net, i, b->cfg.batch, kind);
    if (!buf || n == 0)
        return cpu_fail(b, "layer %s has no buffer of kind %d", b->net->layers[i].name, kind);
    if (b->layers[i].dnnl.kept_weights && (kind == BUF_WEIGHT || kind == BUF_WEIGHT_GRAD))
        return cpu_dnnl_copy_weights(b, i, kind == BUF_WEIGHT_GRAD, dst ? dst : (float *)src,
                                     dst != NULL);
    int block = b->layers[i].block;
    if (block && (kind == BUF_OUTPUT || kind == BUF_OUTPUT_GRAD)) {
        tensor_shape s = b->net->layers[i].out_shape;
        cpu_layout_copy(dst ? dst : buf, dst ? buf : src, b->cfg.batch, s.c,
                        (int64_t)s.h * s.w, block, !dst);
        return 0;
    }
    memcpy(dst ? dst : buf, dst ? buf : src, (size_t)n * sizeof(float));
    return 0;
}

static int read_buffer(backend *b, int i, buffer_kind kind, float *dst)
{
    return copy_buffer(b, i, kind, dst, NULL);
}

static int write_buffer(backend *b, int i, buffer_kind kind, const float *src)
{
    return copy_buffer(b, i, kind, NULL, src);
}

static int set_batch(backend *b, const float *images, const int32_t *labels)
{
    int n = b->cfg.batch;
    for (int i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= b->net->classes)
            return cpu_fail(b, "label %d of image %d is outside 0..%d", labels[i], i,
                            b->net->classes - 1);
    memcpy(b->input, images, (size_t)n * shape_elems(b->net->input) * sizeof(float));
    memcpy(b->labels, labels, (size_t)n * sizeof(int32_t));
    return 0;
}

static int forward(backend *b, int i)
{
    if (i == 0)
        b->forward_count++;
    switch (b->net->layers[i].type) {
    case LAYER_CONV:
    case LAYER_FC: return cpu_dnnl_forward(b, i);
    case LAYER_BN: return cpu_bn_forward(b, i);
    case LAYER_MAXPOOL:
    case LAYER_AVGPOOL: return cpu_pool_forward(b, i);
    case LAYER_RELU:
    case LAYER_RELU6:
    case LAYER_ADD:
    case LAYER_DROPOUT: return cpu_pointwise_forward(b, i);
    case LAYER_TYPE_COUNT: break;
    }
    return cpu_fail(b, "unknown layer type");
}

static int backward_data(backend *b, int i, const bool accumulate[LAYER_MAX_INPUTS])
{
    switch (b->net->layers[i].type) {
    case LAYER_CONV:
    case LAYER_FC: return cpu_dnnl_backward_data(b, i, accumulate[0]);
    case LAYER_BN: return cpu_bn_backward_data(b, i, accumulate[0]);
    case LAYER_MAXPOOL:
    case LAYER_AVGPOOL: return cpu_pool_backward(b, i, accumulate[0]);
    case LAYER_RELU:
    case LAYER_RELU6:
    case LAYER_ADD:
    case LAYER_DROPOUT: return cpu_pointwise_backward(b, i, accumulate);
    case LAYER_TYPE_COUNT: break;
    }
    return cpu_fail(b, "unknown layer type");
}

static int backward_weights(backend *b, int i)
{
    switch (b->net->layers[i].type) {
    case LAYER_CONV:
    case LAYER_FC: return cpu_dnnl_backward_weights(b, i);
    case LAYER_BN: return cpu_bn_backward_weights(b, i);
    default: return cpu_fail(b, "layer %s has no weights", b->net->layers[i].name);
    }
}

static int sync(backend *b)
{
    (void)b; /* every CPU operation has completed when it returns */
    return 0;
}

static int fused_into(const backend *b, int i, pass phase)
{
    if (i < 0 || i >= b->net->n_layers || phase == PASS_BWD_WEIGHTS || phase == PASS_UPDATE)
        return -1;
    return b->layers[i].fused_into;
}

/* A layer with its activation moves what the layer alone moves: the
 * activation's passes over the tensor are gone. The add's backward reads its
 * output besides, for the mask. Otherwise the cost model's bytes stand. */
static int op_bytes(const backend *b, int i, pass phase, int64_t *read, int64_t *written)
{
    if (i < 0 || i >= b->net->n_layers || b->layers[i].act_layer < 0)
        return -1;
    layer_cost c = cost_layer(b->net, i, b->cfg.batch, PREC_FP32);
    *written = c.written[phase];
    *read = c.bytes[phase] - c.written[phase];
    if (b->net->layers[i].type == LAYER_ADD && phase == PASS_BWD_DATA)
        *read += (int64_t)sizeof(float) * backend_buffer_elems(b->net, i, b->cfg.batch, BUF_OUTPUT);
    return 0;
}

static void kernel_name(const backend *b, int i, pass phase, char *buf, size_t len)
{
    if (i == STEP_LOSS) {
        snprintf(buf, len, "omp:softmax_xent");
        return;
    }
    const layer *l = &b->net->layers[i];
    if (phase == PASS_UPDATE) {
        snprintf(buf, len, "omp:sgd_momentum");
        return;
    }
    if (l->type == LAYER_CONV || l->type == LAYER_FC) {
        snprintf(buf, len, "dnnl:%s_%s[%s]", l->type == LAYER_CONV ? "conv" : "inner_product",
                 pass_name(phase), b->layers[i].dnnl.impl[phase]);
        for (char *c = buf; *c; c++)
            if (*c == ',') /* a CSV field */
                *c = ';';
        return;
    }
    int act = b->layers[i].act_layer;
    if (act >= 0 && phase != PASS_UPDATE) { /* the activation it applies, named */
        snprintf(buf, len, "omp:%s_%s_%s", layer_type_name(l->type),
                 layer_type_name(b->net->layers[act].type), pass_name(phase));
        return;
    }
    snprintf(buf, len, "omp:%s_%s", layer_type_name(l->type), pass_name(phase));
}

const backend_ops cpu_backend_ops = {
    .name = "cpu",
    .create = create,
    .destroy = destroy,
    .error = error,
    .read = read_buffer,
    .write = write_buffer,
    .set_batch = set_batch,
    .forward = forward,
    .loss = cpu_loss,
    .read_loss = cpu_read_loss,
    .backward_data = backward_data,
    .backward_weights = backward_weights,
    .update = cpu_update,
    .sync = sync,
    .kernel_name = kernel_name,
    .fused_into = fused_into,
    .op_bytes = op_bytes,
    .take_layout_work = cpu_dnnl_take_reorders,
    .grad_storage = cpu_grad_storage,
};
