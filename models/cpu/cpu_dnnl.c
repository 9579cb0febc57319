/* Convolution and fully connected layers on oneDNN 2.x's C API: forward
 * (training), backward-data and backward-weights primitives made once per
 * layer. The backend's weights are plain OIHW (GOIHW for groups) or, for
 * a convolution, the layout its primitives chose (keep_weights_layout), its
 * activations NCHW or blocked (below); convolutions let oneDNN choose its
 * layouts (format "any", in practice nChw16c and OIhw16i16o) because its
 * direct JIT kernels run several times faster there than its GEMM path runs
 * on NCHW. Where cpu_blocking.c keeps a convolution's input or output in the
 * layout its forward chose (nChw8c or nChw16c), the primitive works on the
 * tensor itself; elsewhere a reorder in and out around each call, as PyTorch
 * does with plain tensors. Blocked copies of activations live in three
 * scratch buffers shared by all layers; where the weights are plain, their
 * blocked copy is kept per layer between forward and backward-data.
 * oneDNN 3.x replaced this op-descriptor API: this file is the one to port. */
#include <stdio.h>
#include <string.h>

#include "../clock.h"
#include "../digest.h"
#include "cpu_internal.h"

static void destroy_memory(dnnl_memory_t *m)
{
    if (*m)
        dnnl_memory_destroy(*m);
    *m = NULL;
}

static void destroy_primitive(dnnl_primitive_t *p)
{
    if (*p)
        dnnl_primitive_destroy(*p);
    *p = NULL;
}

void cpu_dnnl_destroy(dnnl_layer *d)
{
    dnnl_primitive_t *prims[] = {&d->fwd,         &d->bwd_data,     &d->bwd_weights,
                                 &d->src_in,      &d->src_in_w,     &d->weights_in,
                                 &d->dst_out,     &d->diff_dst_in,  &d->diff_dst_in_d,
                                 &d->diff_src_out, &d->diff_src_add, &d->diff_weights_out,
                                 &d->weights_in_d, &d->weights_to_plain,
                                 &d->weights_from_plain};
    for (size_t i = 0; i < sizeof prims / sizeof prims[0]; i++)
        destroy_primitive(prims[i]);
    dnnl_memory_t *mems[] = {&d->src,          &d->weights,      &d->bias,     &d->dst,
                             &d->diff_dst,     &d->diff_src,     &d->diff_weights,
                             &d->diff_bias,    &d->src_blk,      &d->src_blk_w, &d->weights_blk,
                             &d->dst_blk,      &d->diff_dst_blk, &d->diff_dst_blk_d,
                             &d->diff_src_blk, &d->diff_weights_blk, &d->weights_blk_d,
                             &d->weights_plain};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        destroy_memory(mems[i]);
    for (int p = 0; p < PASS_UPDATE; p++)
        if (d->pd[p])
            dnnl_primitive_desc_destroy(d->pd[p]);
    memset(d->pd, 0, sizeof d->pd);
}

typedef struct {
    dnnl_memory_desc_t src, weights, bias, dst;  /* the backend's plain layouts */
    dnnl_memory_desc_t any_src, any_weights, any_dst;
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
        /* inner products are GEMMs already: plain layouts, no reorders */
        dnnl_dim_t in_features = shape_elems(l->in_shape);
        dnnl_dims_t src = {n, in_features}, wei = {l->out_channels, in_features},
                    dst = {n, l->out_channels};
        DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->src, 2, src, dnnl_f32, dnnl_nc));
        DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->weights, 2, wei, dnnl_f32, dnnl_oi));
        DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->dst, 2, dst, dnnl_f32, dnnl_nc));
        md->any_src = md->src;
        md->any_weights = md->weights;
        md->any_dst = md->dst;
        return 0;
    }
    dnnl_dims_t src = {n, l->in_shape.c, l->in_shape.h, l->in_shape.w};
    dnnl_dims_t dst = {n, l->out_shape.c, l->out_shape.h, l->out_shape.w};
    DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->src, 4, src, dnnl_f32, dnnl_nchw));
    DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->dst, 4, dst, dnnl_f32, dnnl_nchw));
    DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->any_src, 4, src, dnnl_f32, dnnl_format_tag_any));
    DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->any_dst, 4, dst, dnnl_f32, dnnl_format_tag_any));
    int g = l->groups;
    if (g == 1) {
        dnnl_dims_t wei = {l->out_channels, l->in_shape.c, l->kernel, l->kernel};
        DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->weights, 4, wei, dnnl_f32, dnnl_oihw));
        DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->any_weights, 4, wei, dnnl_f32,
                                                   dnnl_format_tag_any));
    } else {
        dnnl_dims_t wei = {g, l->out_channels / g, l->in_shape.c / g, l->kernel, l->kernel};
        DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->weights, 5, wei, dnnl_f32, dnnl_goihw));
        DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&md->any_weights, 5, wei, dnnl_f32,
                                                   dnnl_format_tag_any));
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

/* A reorder from one layout to another; none (NULL) when they are one layout.
 * With `add`, the destination keeps its contents and receives the sum. */
static int make_reorder(backend *b, dnnl_primitive_t *p, const dnnl_memory_desc_t *from,
                        const dnnl_memory_desc_t *to, bool add)
{
    *p = NULL;
    if (!add && dnnl_memory_desc_equal(from, to))
        return 0;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    if (add) {
        DNNL_CHECK(b, dnnl_primitive_attr_create(&attr));
        DNNL_CHECK(b, dnnl_post_ops_create(&ops));
        DNNL_CHECK(b, dnnl_post_ops_append_sum(ops, 1.0f));
        DNNL_CHECK(b, dnnl_primitive_attr_set_post_ops(attr, ops));
        dnnl_post_ops_destroy(ops);
    }
    dnnl_primitive_desc_t pd;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&pd, from, b->engine, to, b->engine, attr);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    DNNL_CHECK(b, st);
    st = dnnl_primitive_create(p, pd);
    dnnl_primitive_desc_destroy(pd);
    DNNL_CHECK(b, st);
    return 0;
}

static const dnnl_memory_desc_t *query_md(const_dnnl_primitive_desc_t pd, dnnl_query_t what)
{
    return dnnl_primitive_desc_query_md(pd, what, 0);
}

static void need_scratch(backend *b, int k, const dnnl_memory_desc_t *md)
{
    size_t bytes = dnnl_memory_desc_get_size(md);
    if (bytes > b->blk_bytes[k])
        b->blk_bytes[k] = bytes;
}

/* The blocked side of a tensor: a memory object on a shared scratch buffer (its
 * handle set before use), or, where oneDNN kept the plain layout, none. */
static int blocked_memory(backend *b, dnnl_memory_t *m, const dnnl_memory_desc_t *blk,
                          const dnnl_memory_desc_t *plain, int scratch)
{
    *m = NULL;
    if (dnnl_memory_desc_equal(blk, plain))
        return 0;
    need_scratch(b, scratch, blk);
    return make_memory(b, m, blk, DNNL_MEMORY_NONE);
}

/* The three primitives of a convolution, from format "any" descriptors. */
static int setup_conv(backend *b, int i, const layer_mds *md, dnnl_primitive_desc_t *pds)
{
    const layer *l = &b->net->layers[i];
    dnnl_layer *d = &b->layers[i].dnnl;
    const dnnl_memory_desc_t *bias_md = md->has_bias ? &md->bias : NULL;
    dnnl_dims_t strides = {l->stride, l->stride}, pad = {l->pad, l->pad};
    /* padding_r is what makes the last window end inside the padded input */
    dnnl_dims_t pad_r = {
        (l->out_shape.h - 1) * l->stride + l->kernel - l->in_shape.h - l->pad,
        (l->out_shape.w - 1) * l->stride + l->kernel - l->in_shape.w - l->pad,
    };
    dnnl_convolution_desc_t fwd, bwd_d, bwd_w;
    DNNL_CHECK(b, dnnl_convolution_forward_desc_init(&fwd, dnnl_forward_training,
                                                     dnnl_convolution_direct, &md->any_src,
                                                     &md->any_weights, bias_md, &md->any_dst,
                                                     strides, pad, pad_r));
    if (make_primitive(b, &d->fwd, d->impl[PASS_FWD], &fwd, NULL, &pds[PASS_FWD]))
        return -1;
    if (l->computes_input_grad) {
        if (dnnl_convolution_backward_data_desc_init(&bwd_d, dnnl_convolution_direct,
                                                     &md->any_src, &md->any_weights,
                                                     &md->any_dst, strides, pad,
                                                     pad_r) != dnnl_success)
            return cpu_fail(b, "layer %s: oneDNN has no backward-data convolution", l->name);
        if (make_primitive(b, &d->bwd_data, d->impl[PASS_BWD_DATA], &bwd_d, pds[PASS_FWD],
                           &pds[PASS_BWD_DATA]))
            return -1;
    }
    if (dnnl_convolution_backward_weights_desc_init(&bwd_w, dnnl_convolution_direct,
                                                    &md->any_src, &md->any_weights, bias_md,
                                                    &md->any_dst, strides, pad,
                                                    pad_r) != dnnl_success)
        return cpu_fail(b, "layer %s: oneDNN has no backward-weights convolution", l->name);
    return make_primitive(b, &d->bwd_weights, d->impl[PASS_BWD_WEIGHTS], &bwd_w, pds[PASS_FWD],
                          &pds[PASS_BWD_WEIGHTS]);
}

static int setup_inner_product(backend *b, int i, const layer_mds *md,
                               dnnl_primitive_desc_t *pds)
{
    const layer *l = &b->net->layers[i];
    dnnl_layer *d = &b->layers[i].dnnl;
    const dnnl_memory_desc_t *bias_md = md->has_bias ? &md->bias : NULL;
    dnnl_inner_product_desc_t fwd, bwd_d, bwd_w;
    DNNL_CHECK(b, dnnl_inner_product_forward_desc_init(&fwd, dnnl_forward_training, &md->src,
                                                       &md->weights, bias_md, &md->dst));
    if (make_primitive(b, &d->fwd, d->impl[PASS_FWD], &fwd, NULL, &pds[PASS_FWD]))
        return -1;
    if (l->computes_input_grad) {
        if (dnnl_inner_product_backward_data_desc_init(&bwd_d, &md->src, &md->weights,
                                                       &md->dst) != dnnl_success)
            return cpu_fail(b, "layer %s: oneDNN has no backward-data inner product", l->name);
        if (make_primitive(b, &d->bwd_data, d->impl[PASS_BWD_DATA], &bwd_d, pds[PASS_FWD],
                           &pds[PASS_BWD_DATA]))
            return -1;
    }
    if (dnnl_inner_product_backward_weights_desc_init(&bwd_w, &md->src, &md->weights, bias_md,
                                                      &md->dst) != dnnl_success)
        return cpu_fail(b, "layer %s: oneDNN has no backward-weights inner product", l->name);
    return make_primitive(b, &d->bwd_weights, d->impl[PASS_BWD_WEIGHTS], &bwd_w, pds[PASS_FWD],
                          &pds[PASS_BWD_WEIGHTS]);
}

/* Memory objects and reorders between the plain tensors and what each
 * primitive asked for. */
static int setup_layouts(backend *b, int i, const layer_mds *md, dnnl_primitive_desc_t *pds)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    dnnl_layer *d = &cl->dnnl;
    const dnnl_memory_desc_t *src = query_md(pds[PASS_FWD], dnnl_query_src_md);
    const dnnl_memory_desc_t *wei = query_md(pds[PASS_FWD], dnnl_query_weights_md);
    const dnnl_memory_desc_t *dst = query_md(pds[PASS_FWD], dnnl_query_dst_md);
    const dnnl_memory_desc_t *w_src = query_md(pds[PASS_BWD_WEIGHTS], dnnl_query_src_md);
    const dnnl_memory_desc_t *w_ddst = query_md(pds[PASS_BWD_WEIGHTS], dnnl_query_diff_dst_md);
    const dnnl_memory_desc_t *w_dwei =
        query_md(pds[PASS_BWD_WEIGHTS], dnnl_query_diff_weights_md);
    float *grad_target = l->computes_input_grad ? b->layers[l->inputs[0]].grad : NULL;

    if (make_memory(b, &d->src, &md->src, (void *)cpu_input(b, i, 0)) ||
        make_memory(b, &d->weights, &md->weights, cl->w) ||
        make_memory(b, &d->dst, &md->dst, cl->out) ||
        make_memory(b, &d->diff_dst, &md->dst, cl->grad) ||
        make_memory(b, &d->diff_weights, &md->weights, cl->dw) ||
        (grad_target && make_memory(b, &d->diff_src, &md->src, grad_target)))
        return -1;
    if (md->has_bias && (make_memory(b, &d->bias, &md->bias, cl->bias) ||
                         make_memory(b, &d->diff_bias, &md->bias, cl->dbias)))
        return -1;

    /* forward: src and dst on scratch 0 and 1; weights kept per layer */
    if (blocked_memory(b, &d->src_blk, src, &md->src, 0) ||
        blocked_memory(b, &d->dst_blk, dst, &md->dst, 1) ||
        make_reorder(b, &d->src_in, &md->src, src, false) ||
        make_reorder(b, &d->weights_in, &md->weights, wei, false) ||
        make_reorder(b, &d->dst_out, dst, &md->dst, false))
        return -1;
    if (d->weights_in)
        DNNL_CHECK(b, dnnl_memory_create(&d->weights_blk, wei, b->engine, DNNL_MEMORY_ALLOCATE));

    /* backward-weights: src on scratch 0, diff_dst on 1, diff_weights on 2 */
    if (blocked_memory(b, &d->src_blk_w, w_src, &md->src, 0) ||
        blocked_memory(b, &d->diff_dst_blk, w_ddst, &md->dst, 1) ||
        blocked_memory(b, &d->diff_weights_blk, w_dwei, &md->weights, 2) ||
        make_reorder(b, &d->src_in_w, &md->src, w_src, false) ||
        make_reorder(b, &d->diff_dst_in, &md->dst, w_ddst, false) ||
        make_reorder(b, &d->diff_weights_out, w_dwei, &md->weights, false))
        return -1;

    if (!l->computes_input_grad)
        return 0;
    /* backward-data: diff_dst on 1 (reused from backward-weights when the
     * layouts agree), diff_src on 0; weights as forward left them */
    const dnnl_memory_desc_t *d_ddst = query_md(pds[PASS_BWD_DATA], dnnl_query_diff_dst_md);
    const dnnl_memory_desc_t *d_wei = query_md(pds[PASS_BWD_DATA], dnnl_query_weights_md);
    const dnnl_memory_desc_t *d_dsrc = query_md(pds[PASS_BWD_DATA], dnnl_query_diff_src_md);
    /* where backward-data wants weights in another layout than forward, they
     * go to scratch 2, free again once backward-weights has reordered dW */
    if (!dnnl_memory_desc_equal(d_wei, wei) &&
        (blocked_memory(b, &d->weights_blk_d, d_wei, &md->weights, 2) ||
         make_reorder(b, &d->weights_in_d, &md->weights, d_wei, false)))
        return -1;
    /* (oneDNN 2.6 on AVX2 does this for 3 input channels: a GEMM backward-data
     * on plain tensors beside blocked JIT forward and backward-weights) */
    d->plain_weights_d = !dnnl_memory_desc_equal(d_wei, wei) &&
                         dnnl_memory_desc_equal(d_wei, &md->weights);
    d->diff_dst_shared = dnnl_memory_desc_equal(d_ddst, w_ddst);
    if (!d->diff_dst_shared &&
        (blocked_memory(b, &d->diff_dst_blk_d, d_ddst, &md->dst, 1) ||
         make_reorder(b, &d->diff_dst_in_d, &md->dst, d_ddst, false)))
        return -1;
    if (blocked_memory(b, &d->diff_src_blk, d_dsrc, &md->src, 0) ||
        make_reorder(b, &d->diff_src_out, d_dsrc, &md->src, false))
        return -1;
    if (d->diff_src_out && make_reorder(b, &d->diff_src_add, d_dsrc, &md->src, true))
        return -1;
    return 0;
}

/* The block (8 or 16) of a layout a primitive chose for a tensor of `dims`,
 * where it is oneDNN's nChw8c or nChw16c with nothing padded; else 0. */
static int chosen_block(backend *b, const dnnl_memory_desc_t *chosen, const dnnl_dims_t dims,
                        int *block)
{
    const int blocks[] = {8, 16};
    const dnnl_format_tag_t tags[] = {dnnl_nChw8c, dnnl_nChw16c};
    *block = 0;
    for (int k = 0; k < 2; k++) {
        if (dims[1] % blocks[k])
            continue;
        dnnl_memory_desc_t blocked;
        DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(&blocked, 4, dims, dnnl_f32, tags[k]));
        if (dnnl_memory_desc_equal(&blocked, chosen))
            *block = blocks[k];
    }
    return 0;
}

/* md's plain 4-d descriptor replaced by its nChw{block}c one (block 0: kept) */
static int block_md(backend *b, dnnl_memory_desc_t *md, int block)
{
    if (!block)
        return 0;
    dnnl_dims_t dims;
    memcpy(dims, md->dims, sizeof dims);
    DNNL_CHECK(b, dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32,
                                               block == 8 ? dnnl_nChw8c : dnnl_nChw16c));
    return 0;
}

/* A digest of what defines a blocked layout: the ranks of a data-parallel
 * run compare it, since their gradients are summed element by element. */
static uint64_t layout_digest(const dnnl_memory_desc_t *md)
{
    const dnnl_blocking_desc_t *blk = &md->format_desc.blocking;
    int64_t fields[1 + 4 * DNNL_MAX_NDIMS];
    int n = 0;
    fields[n++] = blk->inner_nblks;
    for (int k = 0; k < md->ndims; k++) {
        fields[n++] = md->padded_dims[k];
        fields[n++] = blk->strides[k];
    }
    for (int k = 0; k < blk->inner_nblks; k++) {
        fields[n++] = blk->inner_blks[k];
        fields[n++] = blk->inner_idxs[k];
    }
    return digest_bytes(DIGEST_START, fields, (size_t)n * sizeof fields[0]);
}

/* Where forward and backward-weights chose one blocked layout for the
 * weights and their gradient, padded nowhere, the backend keeps w, dw and vw
 * in it: md->weights becomes that layout, and read and write convert. */
static int keep_weights_layout(backend *b, int i, layer_mds *md)
{
    dnnl_layer *d = &b->layers[i].dnnl;
    const dnnl_memory_desc_t *wei = query_md(d->pd[PASS_FWD], dnnl_query_weights_md);
    const dnnl_memory_desc_t *dwei =
        query_md(d->pd[PASS_BWD_WEIGHTS], dnnl_query_diff_weights_md);
    if (dnnl_memory_desc_equal(wei, &md->weights) ||
        !dnnl_memory_desc_equal(wei, dwei) ||
        dnnl_memory_desc_get_size(wei) != dnnl_memory_desc_get_size(&md->weights))
        return 0;
    if (make_memory(b, &d->weights_plain, &md->weights, DNNL_MEMORY_NONE) ||
        make_reorder(b, &d->weights_to_plain, wei, &md->weights, false) ||
        make_reorder(b, &d->weights_from_plain, &md->weights, wei, false))
        return -1;
    d->kept_weights = true;
    d->weights_layout = layout_digest(wei);
    md->weights = *wei;
    return 0;
}

int cpu_dnnl_plan(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    dnnl_layer *d = &b->layers[i].dnnl;
    layer_mds md;
    if (describe(b, i, &md))
        return -1;
    if (l->type == LAYER_FC)
        return setup_inner_product(b, i, &md, d->pd);
    if (setup_conv(b, i, &md, d->pd))
        return -1;
    return chosen_block(b, query_md(d->pd[PASS_FWD], dnnl_query_src_md), md.src.dims,
                        &d->chosen_src_block) ||
           chosen_block(b, query_md(d->pd[PASS_FWD], dnnl_query_dst_md), md.dst.dims,
                        &d->chosen_dst_block);
}

/* A convolution's input or output that cpu_blocking.c left blocked is that
 * layout on the backend's side too: no reorder where the primitive chose it
 * (the fully connected layers read blocked inputs only over 1 x 1 planes,
 * the same bytes as NCHW). */
int cpu_dnnl_bind(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    dnnl_layer *d = &b->layers[i].dnnl;
    layer_mds md;
    int in = l->inputs[0];
    int rc = describe(b, i, &md);
    if (rc == 0 && l->type == LAYER_CONV)
        rc = block_md(b, &md.src, in == GRAPH_INPUT ? 0 : b->layers[in].block) ||
             block_md(b, &md.dst, b->layers[i].block) || keep_weights_layout(b, i, &md);
    if (rc == 0)
        rc = setup_layouts(b, i, &md, d->pd);
    for (int p = 0; p < PASS_UPDATE; p++)
        if (d->pd[p])
            dnnl_primitive_desc_destroy(d->pd[p]);
    memset(d->pd, 0, sizeof d->pd);
    return rc;
}

static int execute(backend *b, dnnl_primitive_t p, int nargs, const dnnl_exec_arg_t *args)
{
    DNNL_CHECK(b, dnnl_primitive_execute(p, b->stream, nargs, args));
    DNNL_CHECK(b, dnnl_stream_wait(b->stream));
    return 0;
}

static int64_t memory_bytes(const_dnnl_memory_t m)
{
    const dnnl_memory_desc_t *md;
    if (dnnl_memory_get_memory_desc(m, &md) != dnnl_success)
        return 0;
    return (int64_t)dnnl_memory_desc_get_size(md);
}

/* Timed and its bytes counted, always: a trace's row of its own, and the
 * clock costs nothing beside a reorder of a tensor (adds: `to` += `from`). */
static int reorder_into(backend *b, dnnl_primitive_t p, dnnl_memory_t from, dnnl_memory_t to,
                        bool adds)
{
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    double t0 = monotonic_seconds();
    if (execute(b, p, 2, args))
        return -1;
    layout_work *w = &b->reorders;
    w->count++;
    w->ns += (int64_t)((monotonic_seconds() - t0) * 1e9 + 0.5);
    int64_t to_bytes = memory_bytes(to);
    w->read_bytes += memory_bytes(from) + (adds ? to_bytes : 0);
    w->written_bytes += to_bytes;
    return 0;
}

static int reorder(backend *b, dnnl_primitive_t p, dnnl_memory_t from, dnnl_memory_t to)
{
    return reorder_into(b, p, from, to, false);
}

void cpu_dnnl_take_reorders(backend *b, layout_work *out, char *kernel, size_t len)
{
    *out = b->reorders;
    b->reorders = (layout_work){0};
    snprintf(kernel, len, "dnnl:reorder");
}

/* read and write of a convolution's kept weights or their gradient: the
 * plain OIHW array `plain` from or into the layout the backend keeps. */
int cpu_dnnl_copy_weights(backend *b, int i, bool grad, float *plain, bool to_plain)
{
    dnnl_layer *d = &b->layers[i].dnnl;
    dnnl_memory_t kept = grad ? d->diff_weights : d->weights;
    DNNL_CHECK(b, dnnl_memory_set_data_handle(d->weights_plain, plain));
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, to_plain ? kept : d->weights_plain},
                              {DNNL_ARG_TO, to_plain ? d->weights_plain : kept}};
    return execute(b, to_plain ? d->weights_to_plain : d->weights_from_plain, 2, args);
}

/* The memory a primitive runs on: the blocked copy on its scratch buffer, or
 * the plain tensor itself. */
static dnnl_memory_t on_scratch(backend *b, dnnl_memory_t blk, dnnl_memory_t plain, int k)
{
    if (!blk)
        return plain;
    if (dnnl_memory_set_data_handle(blk, b->blk[k]) != dnnl_success)
        return NULL;
    return blk;
}

int cpu_dnnl_forward(backend *b, int i)
{
    dnnl_layer *d = &b->layers[i].dnnl;
    b->diff_dst_blk_layer = -1; /* scratch 1 is overwritten */
    dnnl_memory_t src = on_scratch(b, d->src_blk, d->src, 0);
    dnnl_memory_t dst = on_scratch(b, d->dst_blk, d->dst, 1);
    dnnl_memory_t wei = d->weights_blk ? d->weights_blk : d->weights;
    if (!src || !dst)
        return cpu_fail(b, "oneDNN: cannot point a blocked tensor at its scratch buffer");
    if ((d->src_in && reorder(b, d->src_in, d->src, src)) ||
        (d->weights_in && reorder(b, d->weights_in, d->weights, wei)))
        return -1;
    dnnl_exec_arg_t args[] = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst},
        {DNNL_ARG_BIAS, d->bias},
    };
    if (execute(b, d->fwd, d->bias ? 4 : 3, args))
        return -1;
    return d->dst_out ? reorder(b, d->dst_out, dst, d->dst) : 0;
}

int cpu_dnnl_backward_weights(backend *b, int i)
{
    dnnl_layer *d = &b->layers[i].dnnl;
    dnnl_memory_t src = on_scratch(b, d->src_blk_w, d->src, 0);
    dnnl_memory_t ddst = on_scratch(b, d->diff_dst_blk, d->diff_dst, 1);
    dnnl_memory_t dwei = on_scratch(b, d->diff_weights_blk, d->diff_weights, 2);
    if (!src || !ddst || !dwei)
        return cpu_fail(b, "oneDNN: cannot point a blocked tensor at its scratch buffer");
    if ((d->src_in_w && reorder(b, d->src_in_w, d->src, src)) ||
        (d->diff_dst_in && reorder(b, d->diff_dst_in, d->diff_dst, ddst)))
        return -1;
    b->diff_dst_blk_layer = i;
    dnnl_exec_arg_t args[] = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, ddst},
        {DNNL_ARG_DIFF_WEIGHTS, dwei}, {DNNL_ARG_DIFF_BIAS, d->diff_bias},
    };
    if (execute(b, d->bwd_weights, d->diff_bias ? 4 : 3, args))
        return -1;
    return d->diff_weights_out ? reorder(b, d->diff_weights_out, dwei, d->diff_weights) : 0;
}

int cpu_dnnl_backward_data(backend *b, int i, bool accumulate)
{
    const layer *l = &b->net->layers[i];
    dnnl_layer *d = &b->layers[i].dnnl;
    float *target = b->layers[l->inputs[0]].grad;
    dnnl_memory_t ddst_blk = d->diff_dst_shared ? d->diff_dst_blk : d->diff_dst_blk_d;
    dnnl_primitive_t ddst_in = d->diff_dst_shared ? d->diff_dst_in : d->diff_dst_in_d;
    dnnl_memory_t ddst = on_scratch(b, ddst_blk, d->diff_dst, 1);
    dnnl_memory_t dsrc = on_scratch(b, d->diff_src_blk, d->diff_src, 0);
    dnnl_memory_t wei = d->weights_blk && !d->plain_weights_d ? d->weights_blk : d->weights;
    if (d->weights_in_d)
        wei = on_scratch(b, d->weights_blk_d, d->weights, 2);
    if (!ddst || !dsrc || !wei)
        return cpu_fail(b, "oneDNN: cannot point a blocked tensor at its scratch buffer");
    if (d->weights_in_d && reorder(b, d->weights_in_d, d->weights, wei))
        return -1;
    /* backward-weights of this layer has just put diff_dst on scratch 1 */
    bool have_ddst = d->diff_dst_shared && b->diff_dst_blk_layer == i;
    if (ddst_in && !have_ddst && reorder(b, ddst_in, d->diff_dst, ddst))
        return -1;
    b->diff_dst_blk_layer = -1;
    /* a plain diff_src that must be added goes through the scratch buffer */
    bool plain_add = accumulate && !d->diff_src_blk;
    if (plain_add)
        DNNL_CHECK(b, dnnl_memory_set_data_handle(d->diff_src, b->scratch));
    dnnl_exec_arg_t args[] = {
        {DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DIFF_SRC, dsrc},
    };
    int rc = execute(b, d->bwd_data, 3, args);
    if (plain_add) {
        DNNL_CHECK(b, dnnl_memory_set_data_handle(d->diff_src, target));
        if (rc == 0)
            cpu_store(target, b->scratch, backend_buffer_elems(b->net, l->inputs[0],
                                                               b->cfg.batch, BUF_OUTPUT), true);
        return rc;
    }
    if (rc || !d->diff_src_blk)
        return rc;
    return reorder_into(b, accumulate ? d->diff_src_add : d->diff_src_out, dsrc, d->diff_src,
                        accumulate);
}
