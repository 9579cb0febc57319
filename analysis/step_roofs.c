#include "step_roofs.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../models/cost.h"
#include "../models/cuda/cuda_plan.h"
#include "../models/cuda/cuda_traffic.h"
#include "../models/memplan.h"

/* The CUDA backend's plan of a step, as it makes it on a GPU: fused, every
 * conv's and fc's bias (and ReLU) taken in the library's call, its fewest
 * bytes (the backend picks the call or its own kernel per layer by time). */
typedef struct {
    precision_plan pp;
    mem_plan mp;
    layer_fusion *fusion;
    bool *bias_in_call;
    cuda_traffic_plan t;
} design;

static int design_open(design *d, const network *net, int batch, precision prec)
{
    *d = (design){.pp = precision_plan_of(prec)};
    memplan_rules rules = cuda_memplan_rules(true);
    if (memplan_make(net, batch, &rules, NULL, &d->mp))
        return -1;
    d->fusion = calloc((size_t)net->n_layers, sizeof *d->fusion);
    d->bias_in_call = calloc((size_t)net->n_layers, sizeof *d->bias_in_call);
    if (!d->fusion || !d->bias_in_call)
        return -1;
    fusion_plan_make(net, &d->mp, true, d->fusion);
    for (int i = 0; i < net->n_layers; i++)
        d->bias_in_call[i] = net->layers[i].has_bias;
    d->t = (cuda_traffic_plan){net, batch, &d->pp, d->fusion, &d->mp, d->bias_in_call};
    return 0;
}

static void design_close(design *d)
{
    free(d->fusion);
    free(d->bias_in_call);
    memplan_free(&d->mp);
}

typedef struct {
    const network *net;
    precision prec;
    const roofs *r;
    design *cuda; /* NULL: the cost model's bytes */
    step_roofs *out;
    char *err;
    size_t err_len;
} builder;

static int add_op(builder *b, const char *type, const char *phase, bool gemm, double flops,
                  double bytes)
{
    step_roofs *s = b->out;
    int j = 0;
    while (j < s->n && (strcmp(s->rows[j].layer_type, type) != 0 ||
                        strcmp(s->rows[j].phase, phase) != 0))
        j++;
    step_roof_row *row = &s->rows[j];
    if (j == s->n) {
        *row = (step_roof_row){.layer_type = type, .phase = phase};
        if (gemm)
            roofs_precision_ceiling(b->r, precision_name(b->prec), row->ceiling);
        else
            snprintf(row->ceiling, sizeof row->ceiling, "fp32_fma");
        s->n++;
    }
    double peak = roofs_peak(b->r, row->ceiling);
    if (flops > 0 && !(peak > 0)) {
        snprintf(b->err, b->err_len, "no %s ceiling in the roofs: the %s %s FLOPs have no roof",
                 row->ceiling[0] ? row->ceiling : precision_name(b->prec), type, phase);
        return STEP_ROOFS_NO_ROOF;
    }
    double compute_ns = flops > 0 ? flops / peak : 0, memory_ns = bytes / b->r->dram_gbs;
    row->flops += flops;
    row->bytes += bytes;
    if (compute_ns > memory_ns)
        row->compute_ns += compute_ns;
    else
        row->memory_ns += memory_ns;
    row->roof_ns += fmax(compute_ns, memory_ns);
    return 0;
}

static double op_bytes(const builder *b, int layer, pass p, const layer_cost *c)
{
    if (!b->cuda)
        return (double)c->bytes[p];
    cuda_traffic t = cuda_op_traffic(&b->cuda->t, layer, p);
    return (double)(t.read + t.written);
}

static int layer_pass(builder *b, int i, pass p, const layer_cost *costs)
{
    const layer *l = &b->net->layers[i];
    if ((p == PASS_BWD_DATA && !l->computes_input_grad) ||
        ((p == PASS_BWD_WEIGHTS || p == PASS_UPDATE) && l->params <= 0))
        return 0;
    bool gemm = l->type == LAYER_CONV || l->type == LAYER_FC;
    const char *type = p == PASS_UPDATE ? "sgd" : layer_type_name(l->type);
    return add_op(b, type, pass_name(p), gemm && p != PASS_UPDATE, (double)costs[i].flops[p],
                  op_bytes(b, i, p, &costs[i]));
}

/* Forward, the loss, backward in reverse, the update: the step's order. */
static int walk(builder *b, const layer_cost *costs, const step_cost *sc)
{
    int n = b->net->n_layers;
    int rc;
    for (int i = 0; i < n; i++)
        if ((rc = layer_pass(b, i, PASS_FWD, costs)))
            return rc;
    double loss_bytes = (double)sc->loss_bytes;
    if (b->cuda) {
        cuda_traffic t = cuda_op_traffic(&b->cuda->t, STEP_LOSS, PASS_FWD);
        loss_bytes = (double)(t.read + t.written);
    }
    if ((rc = add_op(b, "loss", "loss", false, (double)sc->loss_flops, loss_bytes)))
        return rc;
    for (int i = n - 1; i >= 0; i--)
        if ((rc = layer_pass(b, i, PASS_BWD_DATA, costs)) ||
            (rc = layer_pass(b, i, PASS_BWD_WEIGHTS, costs)))
            return rc;
    for (int i = 0; i < n; i++)
        if ((rc = layer_pass(b, i, PASS_UPDATE, costs)))
            return rc;
    return STEP_ROOFS_OK;
}

int step_roofs_build(const network *net, int batch, precision prec, step_bytes_source src,
                     const roofs *r, step_roofs *out, char *err, size_t err_len)
{
    *out = (step_roofs){.dram_gbs = r->dram_gbs};
    if (!(r->dram_gbs > 0)) {
        snprintf(err, err_len, "no DRAM or HBM bandwidth in the roofs (dram_copy, dram_triad, "
                               "dram_read, hbm_copy, hbm_triad or hbm_read)");
        return STEP_ROOFS_NO_ROOF;
    }
    /* at most one row per layer type and phase, the loss and the update */
    layer_cost *costs = calloc((size_t)net->n_layers + 1, sizeof *costs);
    out->rows = calloc((size_t)LAYER_TYPE_COUNT * PASS_COUNT + 2, sizeof *out->rows);
    design cuda = {.fusion = NULL}; /* closable whatever fails first */
    bool with_cuda = src == STEP_BYTES_CUDA;
    int rc = STEP_ROOFS_FAILED;
    if (!costs || !out->rows || (with_cuda && design_open(&cuda, net, batch, prec))) {
        snprintf(err, err_len, "step at the roofs: out of memory");
        goto done;
    }
    step_cost sc = cost_step(net, batch, prec, costs);
    if (sc.saturated) {
        snprintf(err, err_len, "batch %d is beyond what the cost model counts", batch);
        rc = STEP_ROOFS_NO_ROOF;
        goto done;
    }
    builder b = {net, prec, r, with_cuda ? &cuda : NULL, out, err, err_len};
    if ((rc = walk(&b, costs, &sc)))
        goto done;
    for (int j = 0; j < out->n; j++) {
        out->flops += out->rows[j].flops;
        out->bytes += out->rows[j].bytes;
        out->roof_ns += out->rows[j].roof_ns;
    }
done:
    if (with_cuda)
        design_close(&cuda);
    free(costs);
    if (rc)
        step_roofs_free(out);
    return rc;
}

void step_roofs_free(step_roofs *s)
{
    free(s->rows);
    *s = (step_roofs){0};
}
