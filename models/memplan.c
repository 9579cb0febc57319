#include "memplan.h"

#include <stdlib.h>
#include <string.h>

#include "backend.h"

static bool is_activation(layer_type t)
{
    return t == LAYER_RELU || t == LAYER_RELU6;
}

/* Layers whose backward reads their input and saved statistics, never their
 * output: an add may overwrite that output. */
static bool backward_ignores_output(layer_type t)
{
    return t == LAYER_BN || t == LAYER_CONV || t == LAYER_FC;
}

/* Fills out_owner, and grad_parent[in] = i where layer i runs in place over
 * its input `in` (its input gradient may then live in i's gradient buffer). */
static void plan_in_place(const network *net, const memplan_rules *rules, int *out_owner,
                          int *grad_parent)
{
    int n = net->n_layers;
    int *consumers = calloc((size_t)n, sizeof *consumers);
    for (int i = 0; i < n; i++)
        out_owner[i] = i, grad_parent[i] = -1;
    if (!consumers)
        return; /* no in-place: correct, only larger */
    for (int i = 0; i < n; i++)
        for (int k = 0; k < net->layers[i].n_inputs; k++)
            if (net->layers[i].inputs[k] != GRAPH_INPUT)
                consumers[net->layers[i].inputs[k]]++;
    for (int i = 0; i < n; i++) {
        const layer *l = &net->layers[i];
        int over = -1;
        if (is_activation(l->type)) {
            int in = l->inputs[0];
            if (in != GRAPH_INPUT && consumers[in] == 1 && !is_activation(net->layers[in].type) &&
                net->layers[in].type != LAYER_DROPOUT && net->layers[in].type != LAYER_MAXPOOL)
                over = in;
        } else if (l->type == LAYER_ADD && rules->add_in_place && l->inputs[0] != l->inputs[1]) {
            for (int k = 0; k < 2 && over < 0; k++) {
                int in = l->inputs[k];
                if (in != GRAPH_INPUT && consumers[in] == 1 && out_owner[in] == in &&
                    backward_ignores_output(net->layers[in].type))
                    over = in;
            }
        }
        if (over < 0)
            continue;
        out_owner[i] = out_owner[over];
        if (rules->grad_in_place)
            grad_parent[over] = i;
    }
    free(consumers);
}

/* Backward time of layer i: the loss is -1, the last layer 0. */
static int backward_time(const network *net, int i)
{
    return net->n_layers - 1 - i;
}

static int root_of(const int *grad_parent, int i)
{
    while (grad_parent[i] >= 0)
        i = grad_parent[i];
    return i;
}

static int plan_gradients(const network *net, int batch, const int *grad_parent, mem_plan *p)
{
    int n = net->n_layers;
    int *start = malloc((size_t)n * sizeof *start), *end = malloc((size_t)n * sizeof *end);
    int *order = malloc((size_t)n * sizeof *order);
    int *slab_free_at = malloc((size_t)n * sizeof *slab_free_at);
    p->slab_elems = calloc((size_t)n, sizeof *p->slab_elems);
    if (!start || !end || !order || !slab_free_at || !p->slab_elems) {
        free(start), free(end), free(order), free(slab_free_at);
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
    /* a group of gradients sharing one buffer (in-place layers) lives from the
     * first write of any member to the backward of its earliest layer */
    for (int i = 0; i < n; i++)
        end[i] = -2;
    for (int i = 0; i < n; i++) {
        if (start[i] == n)
            continue;
        int r = root_of(grad_parent, i);
        if (start[i] < start[r])
            start[r] = start[i];
        if (backward_time(net, i) > end[r])
            end[r] = backward_time(net, i);
    }
    /* roots by start time; backward times are in reverse layer order */
    int n_order = 0;
    for (int t = -1; t < n; t++)
        for (int i = n - 1; i >= 0; i--)
            if (start[i] == t && grad_parent[i] < 0)
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
        slab_free_at[best] = end[i]; /* free after the group's last backward */
        p->grad_slab[i] = best;
    }
    for (int i = 0; i < n; i++)
        if (start[i] != n && grad_parent[i] >= 0)
            p->grad_slab[i] = p->grad_slab[root_of(grad_parent, i)];
    free(start), free(end), free(order), free(slab_free_at);
    return 0;
}

int memplan_make(const network *net, int batch, const memplan_rules *rules, mem_plan *p)
{
    int n = net->n_layers;
    memset(p, 0, sizeof *p);
    p->out_owner = malloc((size_t)n * sizeof *p->out_owner);
    p->grad_slab = malloc((size_t)n * sizeof *p->grad_slab);
    int *grad_parent = malloc((size_t)n * sizeof *grad_parent);
    if (!p->out_owner || !p->grad_slab || !grad_parent) {
        free(grad_parent);
        memplan_free(p);
        return -1;
    }
    for (int i = 0; i < n; i++)
        p->grad_slab[i] = -1;
    plan_in_place(net, rules, p->out_owner, grad_parent);
    int rc = plan_gradients(net, batch, grad_parent, p);
    free(grad_parent);
    if (rc) {
        memplan_free(p);
        return -1;
    }
    return 0;
}

int64_t memplan_elems(const mem_plan *p, const network *net, int batch)
{
    int64_t elems = 0;
    for (int i = 0; i < net->n_layers; i++)
        if (p->out_owner[i] == i)
            elems += backend_buffer_elems(net, i, batch, BUF_OUTPUT);
    for (int s = 0; s < p->n_slabs; s++)
        elems += p->slab_elems[s];
    return elems;
}

void memplan_free(mem_plan *p)
{
    free(p->out_owner);
    free(p->grad_slab);
    free(p->slab_elems);
    memset(p, 0, sizeof *p);
}
