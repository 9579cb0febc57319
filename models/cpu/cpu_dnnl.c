/* Convolution and fully connected layers on oneDNN 2.x's C API: forward
 * (training), backward-data and backward-weights primitives made once per
 * layer, on plain NCHW / OIHW (GOIHW for groups) memory owned by the backend.
 * oneDNN 3.x replaced this op-descriptor API: this file is the one to port. */
#include <string.h>

#include "cpu_internal.h"

static void destroy_memory(dnnl_memory_t *m)
{
    if (*m)
        dnnl_memory_destroy(*m);
    *m = NULL;
}

void cpu_dnnl_destroy(dnnl_layer *d)
{
    dnnl_primitive_t *prims[] = {&d->fwd, &d->bwd_data, &d->bwd_weights};
    for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++) {
        if (*prims[i])
            dnnl_primitive_destroy(*prims[i]);
        *prims[i] = NULL;
    }
    dnnl_memory_t *mems[] = {&d->src,      &d->weights,  &d->bias,         &d->dst,
                             &d->diff_dst, &d->diff_src, &d->diff_weights, &d->diff_bias};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        destroy_memory(mems[i]);
}

typedef struct {
    dnnl_memory_desc_t src, weights, bias, dst;
    bool has_bias;
} layer_mds;

static int describe(backend *b, int i, layer_mds *md)
{
    const layer *l = &b->net->layers[i];
    dnnl_dim_t n = b->cfg.batch;
    memset(md, 0, sizeof *md);
    md->has_bias = l->has_bias;
    dnnl_dims_t bias_dims = {l->out_channels};
    if (l->has_bias)
        DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->bias, 1, bias_dims, dnnl_f32, dnnl_x));
    if (l->type == LAYER_FC) {
        dnnl_dim_t in_features = shape_elems(l->in_shape);
        dnnl_dims_t src = {n, in_features}, wei = {l->out_channels, in_features},
                    dst = {n, l->out_channels};
        DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->src, 2, src, dnnl_f32, dnnl_nc));
        DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->weights, 2, wei, dnnl_f32, dnnl_oi));
        DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->dst, 2, dst, dnnl_f32, dnnl_nc));
        return 0;
    }
    dnnl_dims_t src = {n, l->in_shape.c, l->in_shape.h, l->in_shape.w};
    dnnl_dims_t dst = {n, l->out_shape.c, l->out_shape.h, l->out_shape.w};
    DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->src, 4, src, dnnl_f32, dnnl_nchw));
    DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->dst, 4, dst, dnnl_f32, dnnl_nchw));
    int g = l->groups;
    if (g == 1) {
        dnnl_dims_t wei = {l->out_channels, l->in_shape.c, l->kernel, l->kernel};
        DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->weights, 4, wei, dnnl_f32, dnnl_oihw));
    } else {
        dnnl_dims_t wei = {g, l->out_channels / g, l->in_shape.c / g, l->kernel, l->kernel};
        DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->weights, 5, wei, dnnl_f32, dnnl_goihw));
    }
    return 0;
}

static int make_memory(backend *b, dnnl_memory_t *m, const dnnl_memory_desc_t *md, void *data)
{
    DNNL_CHECK(b, dnnl_memory_create(m, md, b->engine, data));
    return 0;
}

/* Also keeps the name of the implementation oneDNN picked (e.g.
 * "jit:avx512_core"): the trace's kernel column. */
static int make_primitive(backend *b, dnnl_primitive_t *p, char impl[DNNL_IMPL_LEN],
                          const void *op_desc, const_dnnl_primitive_desc_t hint,
                          dnnl_primitive_desc_t *keep_pd)
{
    dnnl_primitive_desc_t pd;
    DNNL_CHECK(b, dnnl_primitive_desc_create(&pd, op_desc, NULL, b->engine, hint));
    const char *info = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &info) != dnnl_success ||
        !info)
        info = "unknown";
    snprintf(impl, DNNL_IMPL_LEN, "%s", info);
    dnnl_status_t st = dnnl_primitive_create(p, pd);
    if (keep_pd && st == dnnl_success)
        *keep_pd = pd;
    else
        dnnl_primitive_desc_destroy(pd);
    DNNL_CHECK(b, st);
    return 0;
}

int cpu_dnnl_setup(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    dnnl_layer *d = &cl->dnnl;
    layer_mds md;
    if (describe(b, i, &md))
        return -1;
    const dnnl_memory_desc_t *bias_md = md.has_bias ? &md.bias : NULL;
    dnnl_dims_t strides = {l->stride, l->stride}, pad = {l->pad, l->pad};

    /* padding_r is what makes the last window end inside the padded input */
    dnnl_dims_t pad_r = {0, 0};
    if (l->type == LAYER_CONV) {
        pad_r[0] = (l->out_shape.h - 1) * l->stride + l->kernel - l->in_shape.h - l->pad;
        pad_r[1] = (l->out_shape.w - 1) * l->stride + l->kernel - l->in_shape.w - l->pad;
    }

    dnnl_primitive_desc_t fwd_pd = NULL;
    if (l->type == LAYER_CONV) {
        dnnl_convolution_desc_t fwd, bwd_d, bwd_w;
        DNNL_CHECK(b, dnnl_convolution_forward_desc_init(&fwd, dnnl_forward_training,
                                                         dnnl_convolution_direct, &md.src,
                                                         &md.weights, bias_md, &md.dst, strides,
                                                         pad, pad_r));
        if (make_primitive(b, &d->fwd, d->impl[PASS_FWD], &fwd, NULL, &fwd_pd))
            return -1;
        int rc = 0;
        if (l->computes_input_grad) {
            if (dnnl_convolution_backward_data_desc_init(&bwd_d, dnnl_convolution_direct, &md.src,
                                                         &md.weights, &md.dst, strides, pad,
                                                         pad_r) != dnnl_success)
                rc = cpu_fail(b, "layer %s: oneDNN has no backward-data convolution", l->name);
            else
                rc = make_primitive(b, &d->bwd_data, d->impl[PASS_BWD_DATA], &bwd_d, fwd_pd,
                                    NULL);
        }
        if (rc == 0) {
            if (dnnl_convolution_backward_weights_desc_init(&bwd_w, dnnl_convolution_direct,
                                                            &md.src, &md.weights, bias_md, &md.dst,
                                                            strides, pad, pad_r) != dnnl_success)
                rc = cpu_fail(b, "layer %s: oneDNN has no backward-weights convolution", l->name);
            else
                rc = make_primitive(b, &d->bwd_weights, d->impl[PASS_BWD_WEIGHTS],
                                    &bwd_w, fwd_pd, NULL);
        }
        dnnl_primitive_desc_destroy(fwd_pd);
        if (rc)
            return -1;
    } else {
        dnnl_inner_product_desc_t fwd, bwd_d, bwd_w;
        DNNL_CHECK(b, dnnl_inner_product_forward_desc_init(&fwd, dnnl_forward_training, &md.src,
                                                           &md.weights, bias_md, &md.dst));
        if (make_primitive(b, &d->fwd, d->impl[PASS_FWD], &fwd, NULL, &fwd_pd))
            return -1;
        int rc = 0;
        if (l->computes_input_grad) {
            if (dnnl_inner_product_backward_data_desc_init(&bwd_d, &md.src, &md.weights,
                                                           &md.dst) != dnnl_success)
                rc = cpu_fail(b, "layer %s: oneDNN has no backward-data inner product", l->name);
            else
                rc = make_primitive(b, &d->bwd_data, d->impl[PASS_BWD_DATA], &bwd_d, fwd_pd,
                                    NULL);
        }
        if (rc == 0) {
            if (dnnl_inner_product_backward_weights_desc_init(&bwd_w, &md.src, &md.weights,
                                                              bias_md, &md.dst) != dnnl_success)
                rc = cpu_fail(b, "layer %s: oneDNN has no backward-weights inner product",
                              l->name);
            else
                rc = make_primitive(b, &d->bwd_weights, d->impl[PASS_BWD_WEIGHTS],
                                    &bwd_w, fwd_pd, NULL);
        }
        dnnl_primitive_desc_destroy(fwd_pd);
        if (rc)
            return -1;
    }

    float *grad_target = l->computes_input_grad ? b->layers[l->inputs[0]].grad : NULL;
    if (make_memory(b, &d->src, &md.src, (void *)cpu_input(b, i, 0)) ||
        make_memory(b, &d->weights, &md.weights, cl->w) ||
        make_memory(b, &d->dst, &md.dst, cl->out) ||
        make_memory(b, &d->diff_dst, &md.dst, cl->grad) ||
        make_memory(b, &d->diff_weights, &md.weights, cl->dw) ||
        (grad_target && make_memory(b, &d->diff_src, &md.src, grad_target)))
        return -1;
    if (md.has_bias &&
        (make_memory(b, &d->bias, &md.bias, cl->bias) ||
         make_memory(b, &d->diff_bias, &md.bias, cl->dbias)))
        return -1;
    return 0;
}

static int execute(backend *b, dnnl_primitive_t p, int nargs, const dnnl_exec_arg_t *args)
{
    DNNL_CHECK(b, dnnl_primitive_execute(p, b->stream, nargs, args));
    DNNL_CHECK(b, dnnl_stream_wait(b->stream));
    return 0;
}

int cpu_dnnl_forward(backend *b, int i)
{
    dnnl_layer *d = &b->layers[i].dnnl;
    dnnl_exec_arg_t args[] = {
        {DNNL_ARG_SRC, d->src}, {DNNL_ARG_WEIGHTS, d->weights}, {DNNL_ARG_DST, d->dst},
        {DNNL_ARG_BIAS, d->bias},
    };
    return execute(b, d->fwd, d->bias ? 4 : 3, args);
}

int cpu_dnnl_backward_data(backend *b, int i, bool accumulate)
{
    const layer *l = &b->net->layers[i];
    dnnl_layer *d = &b->layers[i].dnnl;
    float *target = b->layers[l->inputs[0]].grad;
    if (accumulate)
        DNNL_CHECK(b, dnnl_memory_set_data_handle(d->diff_src, b->scratch));
    dnnl_exec_arg_t args[] = {
        {DNNL_ARG_DIFF_DST, d->diff_dst}, {DNNL_ARG_WEIGHTS, d->weights},
        {DNNL_ARG_DIFF_SRC, d->diff_src},
    };
    int rc = execute(b, d->bwd_data, 3, args);
    if (accumulate) {
        DNNL_CHECK(b, dnnl_memory_set_data_handle(d->diff_src, target));
        if (rc == 0)
            cpu_store(target, b->scratch, backend_buffer_elems(b->net, l->inputs[0],
                                                               b->cfg.batch, BUF_OUTPUT), true);
    }
    return rc;
}

int cpu_dnnl_backward_weights(backend *b, int i)
{
    dnnl_layer *d = &b->layers[i].dnnl;
    dnnl_exec_arg_t args[] = {
        {DNNL_ARG_SRC, d->src}, {DNNL_ARG_DIFF_DST, d->diff_dst},
        {DNNL_ARG_DIFF_WEIGHTS, d->diff_weights}, {DNNL_ARG_DIFF_BIAS, d->diff_bias},
    };
    return execute(b, d->bwd_weights, d->diff_bias ? 4 : 3, args);
}
