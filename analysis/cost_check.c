#include "cost_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../models/cost.h"
#include "../models/zoo.h"
#include "kernel_groups.h"
#include "trace_gpu.h"

/* The phases of kernels.csv that are passes of a layer, in cost.h's order. */
static const char *const pass_names[COST_PASSES] = {"fwd", "bwd_data", "bwd_weights"};

const char *cost_check_pass_name(int pass)
{
    return pass >= 0 && pass < COST_PASSES ? pass_names[pass] : "all passes";
}

double cost_check_ratio(double measured, double analytic, double kernels)
{
    return kernels > 0 && isfinite(measured) && analytic > 0 ? measured / analytic : NAN;
}

static bool outside(double ratio, double factor)
{
    return isfinite(ratio) && (ratio > factor || ratio < 1 / factor);
}

bool cost_counts_outside(const cost_counts *c, double factor)
{
    return outside(c->flops_ratio, factor) || outside(c->bytes_ratio, factor);
}

const cost_counts *cost_check_scope(const cost_check_row *r, int s)
{
    return s >= 0 && s < COST_PASSES ? &r->pass[s] : &r->all;
}

static cost_counts counts_empty(void)
{
    return (cost_counts){.measured_flops = NAN, .measured_bytes = NAN};
}

static cost_check_row row_named(const char *name, const char *layer_type)
{
    cost_check_row r = {.layer_type = layer_type, .all = counts_empty()};
    for (int p = 0; p < COST_PASSES; p++)
        r.pass[p] = counts_empty();
    snprintf(r.name, sizeof r.name, "%s", name);
    return r;
}

static void add_counts(cost_counts *to, const cost_counts *c)
{
    to->kernels += c->kernels;
    nan_add(&to->measured_flops, c->measured_flops);
    nan_add(&to->measured_bytes, c->measured_bytes);
    to->analytic_flops += c->analytic_flops;
    to->analytic_bytes += c->analytic_bytes;
}

static void add_row(cost_check_row *to, const cost_check_row *r)
{
    add_counts(&to->all, &r->all);
    for (int p = 0; p < COST_PASSES; p++)
        add_counts(&to->pass[p], &r->pass[p]);
}

static void finish_counts(cost_counts *c)
{
    c->flops_ratio = cost_check_ratio(c->measured_flops, c->analytic_flops, c->kernels);
    c->bytes_ratio = cost_check_ratio(c->measured_bytes, c->analytic_bytes, c->kernels);
}

static void finish(cost_check_row *r)
{
    finish_counts(&r->all);
    for (int p = 0; p < COST_PASSES; p++)
        finish_counts(&r->pass[p]);
}

/* One row per layer of the network, then loss and update, with the analytic
 * figures. Layers that share a name share a row. */
static int analytic_rows(cost_check *c, const network *net, int batch, precision prec)
{
    c->layers = calloc((size_t)net->n_layers + 3, sizeof *c->layers);
    if (!c->layers)
        return -1;
    for (int i = 0; i < net->n_layers; i++) {
        const layer *l = &net->layers[i];
        cost_check_row *r = NULL;
        for (int j = 0; j < c->n_layers && !r; j++)
            if (strcmp(c->layers[j].name, l->name) == 0)
                r = &c->layers[j];
        if (!r) {
            r = &c->layers[c->n_layers++];
            *r = row_named(l->name, layer_type_name(l->type));
        }
        layer_cost lc = cost_layer(net, i, batch, prec);
        /* cost.h's passes fwd, bwd_data, bwd_weights are 0, 1, 2 as here */
        for (int p = 0; p < COST_PASSES; p++) {
            r->pass[p].analytic_flops += (double)lc.flops[p];
            r->pass[p].analytic_bytes += (double)lc.bytes[p];
            r->all.analytic_flops += (double)lc.flops[p];
            r->all.analytic_bytes += (double)lc.bytes[p];
        }
    }
    step_cost whole = cost_step(net, batch, prec, NULL);
    cost_check_row *loss = &c->layers[c->n_layers++];
    *loss = row_named("loss", "loss");
    loss->all.analytic_flops = (double)whole.loss_flops;
    loss->all.analytic_bytes = (double)whole.loss_bytes;
    cost_check_row *update = &c->layers[c->n_layers++];
    *update = row_named("update", "sgd");
    update->all.analytic_flops = (double)whole.flops[PASS_UPDATE];
    update->all.analytic_bytes = (double)whole.bytes[PASS_UPDATE];
    return 0;
}

/* The row a counted kernel belongs to and its pass (COST_PASSES: none), or
 * NULL (communication, none, a layer the network lacks). */
static cost_check_row *row_of(cost_check *c, const run_kernel *k, int *pass)
{
    *pass = COST_PASSES;
    if (strcmp(k->phase, "loss") == 0)
        return &c->layers[c->n_layers - 2];
    if (strcmp(k->phase, "update") == 0)
        return &c->layers[c->n_layers - 1];
    int p = 0;
    while (p < COST_PASSES && strcmp(k->phase, pass_names[p]) != 0)
        p++;
    if (p == COST_PASSES)
        return NULL;
    *pass = p;
    for (int j = 0; j < c->n_layers - 2; j++)
        if (strcmp(c->layers[j].name, k->layer) == 0)
            return &c->layers[j];
    return NULL;
}

static void measured_rows(cost_check *c, const run_trace *t)
{
    double per = 1.0 / trace_repeats(t);
    for (int i = 0; i < t->n; i++) {
        const run_kernel *k = &t->rows[i];
        if (strcmp(k->source, "cupti") != 0)
            continue;
        int pass;
        cost_check_row *r = row_of(c, k, &pass);
        if (!r) {
            c->other_kernels += per;
            continue;
        }
        double flops = NAN, bytes = NAN;
        nan_add(&flops, k->flops_fp64);
        nan_add(&flops, k->flops_fp32);
        nan_add(&flops, k->flops_fp16);
        nan_add(&flops, k->flops_tensor);
        nan_add(&bytes, k->dram_read_bytes);
        nan_add(&bytes, k->dram_write_bytes);
        cost_counts one = {.kernels = per, .measured_flops = flops * per,
                           .measured_bytes = bytes * per};
        add_counts(&r->all, &one);
        if (pass < COST_PASSES)
            add_counts(&r->pass[pass], &one);
    }
}

/* Sums per layer type (first appearance) and over the step. */
static int sum_rows(cost_check *c)
{
    c->types = calloc((size_t)c->n_layers + 1, sizeof *c->types);
    if (!c->types)
        return -1;
    c->step = row_named("step", "");
    for (int i = 0; i < c->n_layers; i++) {
        cost_check_row *l = &c->layers[i];
        cost_check_row *ty = NULL;
        for (int j = 0; j < c->n_types && !ty; j++)
            if (strcmp(c->types[j].layer_type, l->layer_type) == 0)
                ty = &c->types[j];
        if (!ty) {
            ty = &c->types[c->n_types++];
            *ty = row_named(l->layer_type, l->layer_type);
        }
        finish(l);
        add_row(ty, l);
        add_row(&c->step, l);
    }
    for (int j = 0; j < c->n_types; j++)
        finish(&c->types[j]);
    finish(&c->step);
    return 0;
}

int cost_check_build(const run_trace *t, cost_check *out)
{
    *out = (cost_check){.env = t->env, .model = t->model, .precision = t->precision,
                        .res = t->res, .batch = t->batch};
    const model_info *info = zoo_find(t->model);
    precision prec;
    if (!trace_has_counters(t)) {
        snprintf(out->why, sizeof out->why,
                 "no kernel was counted (source cupti): the FLOPs and bytes are the cost "
                 "model's own");
        return 0;
    }
    /* the programs' own bounds, as for the summary's analytic FLOPs */
    if (!info || !precision_parse(t->precision, &prec) || t->res < zoo_min_res(t->model) ||
        t->res > ZOO_MAX_RES) {
        snprintf(out->why, sizeof out->why, "the cost model does not know %s @%d in %s",
                 t->model, t->res, t->precision);
        return 0;
    }
    network net;
    if (zoo_build(&net, t->model, t->res, info->default_classes) != NET_OK) {
        snprintf(out->why, sizeof out->why, "the cost model cannot build %s @%d", t->model,
                 t->res);
        return 0;
    }
    if (t->batch > cost_max_batch(&net, prec)) {
        snprintf(out->why, sizeof out->why, "batch %d is beyond the cost model's counts",
                 t->batch);
        net_free(&net);
        return 0;
    }
    int rc = analytic_rows(out, &net, t->batch, prec);
    net_free(&net);
    if (rc == 0) {
        measured_rows(out, t);
        rc = sum_rows(out);
    }
    if (rc)
        cost_check_free(out);
    return rc;
}

void cost_check_free(cost_check *c)
{
    free(c->layers);
    free(c->types);
    c->layers = c->types = NULL;
    c->n_layers = c->n_types = 0;
}

typedef struct {
    cost_check_entry e;
    double weight;
} ranked;

static int by_weight(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    if (a->weight != b->weight)
        return a->weight < b->weight ? 1 : -1;
    /* qsort is not stable: the network's order, then the passes' */
    if (a->e.layer != b->e.layer)
        return a->e.layer < b->e.layer ? -1 : 1;
    return (a->e.scope > b->e.scope) - (a->e.scope < b->e.scope);
}

/* How much a disagreement weighs: the difference between counted and
 * analytic, as a share of the step's analytic figure, of each quantity that
 * is outside the factor (the larger); a tiny kernel far off weighs little. */
static double weight(const cost_counts *k, const cost_check_row *step, double factor)
{
    double w = 0;
    if (outside(k->flops_ratio, factor) && step->all.analytic_flops > 0)
        w = fabs(k->measured_flops - k->analytic_flops) / step->all.analytic_flops;
    if (outside(k->bytes_ratio, factor) && step->all.analytic_bytes > 0)
        w = fmax(w, fabs(k->measured_bytes - k->analytic_bytes) / step->all.analytic_bytes);
    return w;
}

cost_check_entry *cost_check_outside_list(const cost_check *c, double factor, int *n)
{
    *n = 0;
    ranked *r = malloc(((size_t)c->n_layers * (COST_PASSES + 1) + 1) * sizeof *r);
    cost_check_entry *out = malloc(((size_t)c->n_layers * (COST_PASSES + 1) + 1) * sizeof *out);
    if (!r || !out) {
        free(r);
        free(out);
        return NULL;
    }
    for (int i = 0; i < c->n_layers; i++) {
        const cost_check_row *row = &c->layers[i];
        int passes = 0;
        for (int p = 0; p < COST_PASSES; p++)
            if (cost_counts_outside(&row->pass[p], factor)) {
                r[(*n)++] = (ranked){{i, p}, weight(&row->pass[p], &c->step, factor)};
                passes++;
            }
        if (!passes && cost_counts_outside(&row->all, factor))
            r[(*n)++] = (ranked){{i, COST_PASSES}, weight(&row->all, &c->step, factor)};
    }
    qsort(r, (size_t)*n, sizeof *r, by_weight);
    for (int i = 0; i < *n; i++)
        out[i] = r[i].e;
    free(r);
    return out;
}
