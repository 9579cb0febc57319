/* The CPU backend's memory plan. Two savings, both as PyTorch makes them:
 * - ReLU and ReLU6 run in place over their input when they are its only
 *   consumer and its layer's backward does not need it (conv, batch norm, fc
 *   and add read their inputs, not their outputs);
 * - a gradient lives only from the backward of its first writer (the highest
 *   numbered consumer, since backward runs in reverse) to the backward of its
 *   own layer, so gradients whose lifetimes do not overlap share one slab. */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

static bool is_activation(layer_type t)
{
    return t == LAYER_RELU || t == LAYER_RELU6;
}

static void plan_in_place(const network *net, int *out_owner)
{
    int n = net->n_layers;
    int *consumers = calloc((size_t)n, sizeof *consumers);
    for (int i = 0; i < n; i++)
        out_owner[i] = i;
    if (!consumers)
        return; /* no in-place: correct, only larger */
    for (int i = 0; i < n; i++)
        for (int k = 0; k < net->layers[i].n_inputs; k++)
            if (net->layers[i].inputs[k] != GRAPH_INPUT)
                consumers[net->layers[i].inputs[k]]++;
    for (int i = 0; i < n; i++) {
        const layer *l = &net->layers[i];
        int in = l->inputs[0];
        if (!is_activation(l->type) || in == GRAPH_INPUT || consumers[in] != 1 ||
            is_activation(net->layers[in].type) || net->layers[in].type == LAYER_DROPOUT ||
            net->layers[in].type == LAYER_MAXPOOL)
            continue;
        out_owner[i] = out_owner[in];
    }
    free(consumers);
}

/* Backward time of layer i: the loss is -1, the last layer 0. */
static int backward_time(const network *net, int i)
{
    return net->n_layers - 1 - i;
}

static int plan_gradients(const network *net, int batch, cpu_plan *p)
{
    int n = net->n_layers;
    int *start = malloc((size_t)n * sizeof *start), *order = malloc((size_t)n * sizeof *order);
    int *slab_free_at = malloc((size_t)n * sizeof *slab_free_at);
    p->slab_elems = calloc((size_t)n, sizeof *p->slab_elems);
    if (!start || !order || !slab_free_at || !p->slab_elems) {
        free(start), free(order), free(slab_free_at);
        return -1;
    }
    /* a gradient starts when its first writer runs: the loss for the logits */
    for (int i = 0; i < n; i++)
        start[i] = i == n - 1 ? -1 : n; /* n: never written, needs no gradient */
    for (int i = 0; i < n; i++) {
        const layer *l = &net->layers[i];
        if (!l->computes_input_grad)
            continue;
        for (int k = 0; k < l->n_inputs; k++) {
            int in = l->inputs[k];
            if (in != GRAPH_INPUT && backward_time(net, i) < start[in])
                start[in] = backward_time(net, i);
        }
    }
    /* backward times are in reverse layer order: walk layers from the last */
    int n_order = 0;
    for (int t = -1; t < n; t++)
        for (int i = n - 1; i >= 0; i--)
            if (start[i] == t)
                order[n_order++] = i;
    p->n_slabs = 0;
    for (int o = 0; o < n_order; o++) {
        int i = order[o];
        int64_t need = backend_buffer_elems(net, i, batch, BUF_OUTPUT);
        /* the free slab closest in size, preferring one large enough */
        int best = -1;
        for (int s = 0; s < p->n_slabs; s++) {
            if (slab_free_at[s] >= start[i])
                continue;
            if (best < 0)
                best = s;
            bool fits = p->slab_elems[s] >= need, best_fits = p->slab_elems[best] >= need;
            if ((fits && (!best_fits || p->slab_elems[s] < p->slab_elems[best])) ||
                (!fits && !best_fits && p->slab_elems[s] > p->slab_elems[best]))
                best = s;
        }
        if (best < 0)
            best = p->n_slabs++;
        if (p->slab_elems[best] < need)
            p->slab_elems[best] = need;
        slab_free_at[best] = backward_time(net, i); /* free after its own backward */
        p->grad_slab[i] = best;
    }
    free(start), free(order), free(slab_free_at);
    return 0;
}

int cpu_plan_make(const network *net, int batch, cpu_plan *p)
{
    int n = net->n_layers;
    memset(p, 0, sizeof *p);
    p->out_owner = malloc((size_t)n * sizeof *p->out_owner);
    p->grad_slab = malloc((size_t)n * sizeof *p->grad_slab);
    if (!p->out_owner || !p->grad_slab) {
        cpu_plan_free(p);
        return -1;
    }
    for (int i = 0; i < n; i++)
        p->grad_slab[i] = -1;
    plan_in_place(net, p->out_owner);
    if (plan_gradients(net, batch, p)) {
        cpu_plan_free(p);
        return -1;
    }
    return 0;
}

int64_t cpu_plan_floats(const cpu_plan *p, const network *net, int batch)
{
    int64_t floats = 0;
    for (int i = 0; i < net->n_layers; i++)
        if (p->out_owner[i] == i)
            floats += backend_buffer_elems(net, i, batch, BUF_OUTPUT);
    for (int s = 0; s < p->n_slabs; s++)
        floats += p->slab_elems[s];
    return floats;
}

void cpu_plan_free(cpu_plan *p)
{
    free(p->out_owner);
    free(p->grad_slab);
    free(p->slab_elems);
    memset(p, 0, sizeof *p);
}
