#include "memplan.h"

#include <limits.h>
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

int memplan_forward_time(const network *net, int layer)
{
    (void)net;
    return layer;
}

int memplan_backward_time(const network *net, int layer)
{
    return 2 * net->n_layers - layer;
}

static int loss_time(const network *net)
{
    return net->n_layers;
}

/* An add running in place over `over` passes its gradient to its other
 * input x in place too (PyTorch's autograd hands both inputs one tensor),
 * where that is safe: the add is the first writer of x's gradient (x's last
 * consumer), and every other consumer of x adds its part only after the
 * add's gradient was last read, at the backward of `over` (their index is
 * below it). The residual stream of a ResNet stage then keeps one gradient
 * buffer through its identity blocks. */
static void pass_gradient_on(const network *net, int add, int over, int *grad_parent)
{
    const layer *l = &net->layers[add];
    int x = l->inputs[0] == over ? l->inputs[1] : l->inputs[0];
    if (x == GRAPH_INPUT || grad_parent[x] >= 0)
        return;
    for (int j = 0; j < net->n_layers; j++) {
        const layer *c = &net->layers[j];
        for (int k = 0; k < c->n_inputs; k++)
            if (c->inputs[k] == x && j != add && (j > add || j >= over))
                return;
    }
    grad_parent[x] = add;
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
            if (in != GRAPH_INPUT && consumers[in] == 1 && out_owner[in] >= 0 &&
                !is_activation(net->layers[in].type) && net->layers[in].type != LAYER_DROPOUT &&
                net->layers[in].type != LAYER_MAXPOOL)
                over = in;
        } else if (l->type == LAYER_ADD && rules->add_in_place && l->inputs[0] != l->inputs[1]) {
            for (int k = 0; k < 2 && over < 0; k++) {
                int in = l->inputs[k];
                if (in != GRAPH_INPUT && consumers[in] == 1 && out_owner[in] == in &&
                    backward_ignores_output(net->layers[in].type))
                    over = in;
            }
            int other = over < 0 ? -1 : l->inputs[0] == over ? l->inputs[1] : l->inputs[0];
            if (rules->add_normalises_both && over >= 0 && net->layers[over].type == LAYER_BN &&
                other >= 0 && net->layers[other].type == LAYER_BN && consumers[other] == 1 &&
                out_owner[other] == other)
                out_owner[other] = -1;
        }
        if (over < 0)
            continue;
        out_owner[i] = out_owner[over];
        if (rules->grad_in_place)
            grad_parent[over] = i;
        if (rules->grad_in_place && l->type == LAYER_ADD)
            pass_gradient_on(net, i, over, grad_parent);
    }
    free(consumers);
}

static int root_of(const int *grad_parent, int i)
{
    while (grad_parent[i] >= 0)
        i = grad_parent[i];
    return i;
}

static void widen(int *last, int at)
{
    if (at > *last)
        *last = at;
}

/* The time after which nothing reads the activation buffer of owner o again
 * (INT_MAX when dead activations are not reused): its forward consumers, the
 * loss for the logits, and in backward the layers that read their input
 * (conv, fc, batch norm) or their own output (an activation's mask, and an
 * add an activation is fused into; a backend that reuses dead activations
 * takes the mask of an activation fused into a batch norm from the batch
 * norm's input). */
static void activation_deaths(const network *net, const int *out_owner, bool reuse, int *death)
{
    int n = net->n_layers;
    for (int i = 0; i < n; i++)
        death[i] = reuse ? memplan_forward_time(net, i) : INT_MAX;
    if (!reuse)
        return;
    widen(&death[out_owner[n - 1] >= 0 ? out_owner[n - 1] : n - 1], loss_time(net));
    for (int i = 0; i < n; i++) {
        const layer *l = &net->layers[i];
        for (int k = 0; k < l->n_inputs; k++) {
            int in = l->inputs[k];
            if (in != GRAPH_INPUT && out_owner[in] >= 0)
                widen(&death[out_owner[in]], memplan_forward_time(net, i));
        }
        int in = l->inputs[0];
        bool reads_input = l->type == LAYER_CONV || l->type == LAYER_FC || l->type == LAYER_BN;
        if (reads_input && in != GRAPH_INPUT && out_owner[in] >= 0)
            widen(&death[out_owner[in]], memplan_backward_time(net, i));
        bool reads_output = is_activation(l->type) || l->type == LAYER_ADD;
        if (reads_output && out_owner[i] >= 0)
            widen(&death[out_owner[i]], memplan_backward_time(net, i));
    }
}

/* Gradient groups (in place: one buffer), by their root: born at the first
 * write of any member's gradient, dead after the backward of its earliest
 * member; INT_MAX birth: never written. */
static void gradient_lives(const network *net, const int *grad_parent, int *birth, int *death)
{
    int n = net->n_layers;
    int *first = malloc((size_t)n * sizeof *first);
    for (int i = 0; i < n; i++)
        birth[i] = INT_MAX, death[i] = INT_MIN;
    if (!first)
        return;
    for (int i = 0; i < n; i++)
        first[i] = i == n - 1 ? loss_time(net) : INT_MAX;
    for (int i = 0; i < n; i++) {
        const layer *l = &net->layers[i];
        if (!l->computes_input_grad)
            continue;
        for (int k = 0; k < l->n_inputs; k++) {
            int in = l->inputs[k];
            if (in != GRAPH_INPUT && memplan_backward_time(net, i) < first[in])
                first[in] = memplan_backward_time(net, i);
        }
    }
    for (int i = 0; i < n; i++) {
        if (first[i] == INT_MAX)
            continue;
        int r = root_of(grad_parent, i);
        if (first[i] < birth[r])
            birth[r] = first[i];
        widen(&death[r], memplan_backward_time(net, i));
    }
    free(first);
}

/* What a region holds: layer i's output, its output's gradient, or the
 * scratch memory of its forward or of its backward. */
typedef enum {
    HOLDS_OUTPUT,
    HOLDS_GRADIENT,
    HOLDS_FORWARD_SCRATCH,
    HOLDS_BACKWARD_SCRATCH,
    HOLDS_KINDS
} holds;

typedef struct {
    int birth, death;
    int64_t elems;
    int layer;
    holds kind;
} interval;

/* Largest first; then by birth, activations before gradients before
 * scratch, by layer: a fixed order. */
static int by_size(const void *a, const void *b)
{
    const interval *x = a, *y = b;
    if (x->elems != y->elems)
        return (x->elems < y->elems) - (x->elems > y->elems);
    if (x->birth != y->birth)
        return (x->birth > y->birth) - (x->birth < y->birth);
    if (x->kind != y->kind)
        return (int)x->kind - (int)y->kind;
    return (x->layer > y->layer) - (x->layer < y->layer);
}

static bool lives_overlap(const interval *a, const interval *b)
{
    return !(a->death < b->birth || b->death < a->birth);
}

static int64_t aligned(int64_t elems)
{
    return (elems + MEMPLAN_ALIGN_ELEMS - 1) / MEMPLAN_ALIGN_ELEMS * MEMPLAN_ALIGN_ELEMS;
}

/* ids[0..m) in increasing offset (insertion: m is a few hundred at most) */
static void sort_by_offset(int *ids, int m, const int64_t *offset)
{
    for (int i = 1; i < m; i++) {
        int id = ids[i], j = i;
        for (; j > 0 && offset[ids[j - 1]] > offset[id]; j--)
            ids[j] = ids[j - 1];
        ids[j] = id;
    }
}

/* A region of the arena per interval (buffer k is interval k, largest
 * first): each takes the tightest gap, between the regions already placed
 * whose lives overlap its own, that holds it, else the end of the highest.
 * Placed largest first, this reaches the most that is live at one time for
 * every network of the zoo. */
static int assign(interval *iv, int count, mem_plan *p, int *buffer_of)
{
    size_t n = (size_t)(count > 0 ? count : 1);
    int *beside = malloc(n * sizeof *beside);
    p->buffer_elems = calloc(n, sizeof *p->buffer_elems);
    p->buffer_offset = calloc(n, sizeof *p->buffer_offset);
    if (!beside || !p->buffer_elems || !p->buffer_offset) {
        free(beside);
        return -1;
    }
    qsort(iv, (size_t)count, sizeof *iv, by_size);
    p->n_buffers = count;
    p->arena_elems = 0;
    for (int k = 0; k < count; k++) {
        int64_t size = aligned(iv[k].elems);
        int m = 0;
        for (int j = 0; j < k; j++)
            if (lives_overlap(&iv[j], &iv[k]))
                beside[m++] = j;
        sort_by_offset(beside, m, p->buffer_offset);
        int64_t end = 0, at = -1, tightest = INT64_MAX;
        for (int j = 0; j < m; j++) {
            int64_t gap = p->buffer_offset[beside[j]] - end;
            if (gap >= size && gap < tightest)
                tightest = gap, at = end;
            int64_t top = p->buffer_offset[beside[j]] + aligned(iv[beside[j]].elems);
            end = top > end ? top : end;
        }
        if (at < 0)
            at = end;
        p->buffer_offset[k] = at;
        p->buffer_elems[k] = iv[k].elems;
        if (at + size > p->arena_elems)
            p->arena_elems = at + size;
        buffer_of[HOLDS_KINDS * iv[k].layer + (int)iv[k].kind] = k;
    }
    free(beside);
    return 0;
}

static int plan_buffers(const network *net, int batch, const memplan_rules *rules,
                        const int64_t *scratch_elems, const int *grad_parent, mem_plan *p)
{
    int n = net->n_layers;
    int *act_death = malloc((size_t)n * sizeof *act_death);
    int *g_birth = malloc((size_t)n * sizeof *g_birth), *g_death = malloc((size_t)n * sizeof *g_death);
    interval *iv = malloc((size_t)(HOLDS_KINDS * n) * sizeof *iv);
    /* [HOLDS_KINDS i + kind]: the buffer holding that of layer i */
    int *buffer_of = malloc((size_t)(HOLDS_KINDS * n) * sizeof *buffer_of);
    int rc = -1;
    if (!act_death || !g_birth || !g_death || !iv || !buffer_of)
        goto done;
    activation_deaths(net, p->out_owner, rules->reuse_dead_activations, act_death);
    gradient_lives(net, grad_parent, g_birth, g_death);
    int count = 0;
    for (int i = 0; i < n; i++) {
        int64_t elems = backend_buffer_elems(net, i, batch, BUF_OUTPUT);
        if (p->out_owner[i] == i)
            iv[count++] = (interval){memplan_forward_time(net, i), act_death[i], elems, i,
                                     HOLDS_OUTPUT};
        if (g_birth[i] != INT_MAX && grad_parent[i] < 0)
            iv[count++] = (interval){g_birth[i], g_death[i], elems, i, HOLDS_GRADIENT};
        /* scratch lives at its one operation's time: it is placed apart
         * from everything live then, what the operation reads and writes
         * included */
        int at[2] = {memplan_forward_time(net, i), memplan_backward_time(net, i)};
        for (int d = 0; d < 2 && scratch_elems; d++)
            if (scratch_elems[2 * i + d] > 0)
                iv[count++] = (interval){at[d], at[d], scratch_elems[2 * i + d], i,
                                         d ? HOLDS_BACKWARD_SCRATCH : HOLDS_FORWARD_SCRATCH};
    }
    for (int k = 0; k < HOLDS_KINDS * n; k++)
        buffer_of[k] = -1;
    if (assign(iv, count, p, buffer_of))
        goto done;
    for (int i = 0; i < n; i++) {
        int r = root_of(grad_parent, i);
        p->out_buffer[i] =
            p->out_owner[i] >= 0 ? buffer_of[HOLDS_KINDS * p->out_owner[i] + HOLDS_OUTPUT] : -1;
        p->grad_buffer[i] =
            g_birth[r] != INT_MAX ? buffer_of[HOLDS_KINDS * r + HOLDS_GRADIENT] : -1;
        p->scratch_buffer[2 * i] = buffer_of[HOLDS_KINDS * i + HOLDS_FORWARD_SCRATCH];
        p->scratch_buffer[2 * i + 1] = buffer_of[HOLDS_KINDS * i + HOLDS_BACKWARD_SCRATCH];
    }
    rc = 0;
done:
    free(act_death), free(g_birth), free(g_death), free(iv), free(buffer_of);
    return rc;
}

int memplan_make(const network *net, int batch, const memplan_rules *rules,
                 const int64_t *scratch_elems, mem_plan *p)
{
    int n = net->n_layers;
    memset(p, 0, sizeof *p);
    p->out_owner = malloc((size_t)n * sizeof *p->out_owner);
    p->out_buffer = malloc((size_t)n * sizeof *p->out_buffer);
    p->grad_buffer = malloc((size_t)n * sizeof *p->grad_buffer);
    p->scratch_buffer = malloc((size_t)(2 * n) * sizeof *p->scratch_buffer);
    int *grad_parent = malloc((size_t)n * sizeof *grad_parent);
    if (!p->out_owner || !p->out_buffer || !p->grad_buffer || !p->scratch_buffer || !grad_parent) {
        free(grad_parent);
        memplan_free(p);
        return -1;
    }
    plan_in_place(net, rules, p->out_owner, grad_parent);
    int rc = plan_buffers(net, batch, rules, scratch_elems, grad_parent, p);
    free(grad_parent);
    if (rc) {
        memplan_free(p);
        return -1;
    }
    return 0;
}

void memplan_free(mem_plan *p)
{
    free(p->out_owner);
    free(p->out_buffer);
    free(p->grad_buffer);
    free(p->scratch_buffer);
    free(p->buffer_elems);
    free(p->buffer_offset);
    memset(p, 0, sizeof *p);
}
