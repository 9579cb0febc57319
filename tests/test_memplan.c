/* The memory plan both backends allocate by (models/memplan.c), checked by
 * running a step's reads and writes over its buffers: every value a layer
 * reads, in forward or backward, must still be in its buffer when it is read.
 * Buffers are regions of one arena: a write to one spoils every region that
 * overlaps it in memory. The planner's own lifetime arithmetic plays no part
 * in the check. Rules:
 * the CPU backend's (ReLU in place), and the CUDA backend's (also the add in
 * place over a batch norm, a second batch norm normalised by the add and
 * never stored, gradients passed on in place, dead activations lending their
 * buffers to gradients). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../models/backend.h"
#include "../models/memplan.h"
#include "helpers.h"

static const memplan_rules cpu_rules = {.add_in_place = false};
static const memplan_rules gpu_rules = {.add_in_place = true, .add_normalises_both = true,
                                        .grad_in_place = true, .reuse_dead_activations = true};

/* What a buffer holds: up to two values (an add passing its gradient to two
 * inputs in place writes one tensor that is both). A value is a layer's
 * activation (2 i) or the gradient of its output (2 i + 1). */
enum { EMPTY = -1 };
typedef struct {
    int v[2];
} contents;

enum { MAX_READS = 16 };

typedef struct {
    const network *net;
    const mem_plan *p;
    contents *buf;
    bool *grad_started;    /* a gradient already written once this step */
    int errors;
    const char *model;
    /* the buffers the running operation reads: a kernel reads and writes at
     * once, so none of them may overlap what it writes, but the buffer itself
     * (in place) */
    int reading[MAX_READS], n_reading, op;
} sim;

static void begin_op(sim *s, int layer)
{
    s->n_reading = 0;
    s->op = layer;
}

static bool overlap(const mem_plan *p, int a, int b)
{
    int64_t alo = p->buffer_offset[a], ahi = alo + p->buffer_elems[a];
    int64_t blo = p->buffer_offset[b], bhi = blo + p->buffer_elems[b];
    return alo < bhi && blo < ahi;
}

static bool holds(const sim *s, int b, int value)
{
    return b >= 0 && (s->buf[b].v[0] == value || s->buf[b].v[1] == value);
}

static void expect_read(sim *s, int b, int value, const char *what, int layer)
{
    if (b >= 0) {
        cr_assert(s->n_reading < MAX_READS, "%s: more reads in one operation than kept", s->model);
        s->reading[s->n_reading++] = b;
    }
    if (holds(s, b, value))
        return;
    if (s->errors++ < 5)
        cr_expect(false, "%s: %s of %s reads %s %s, but buffer %d holds %d/%d", s->model, what,
                  s->net->layers[layer].name, value % 2 ? "the gradient of" : "the output of",
                  s->net->layers[value / 2].name, b, b >= 0 ? s->buf[b].v[0] : -9,
                  b >= 0 ? s->buf[b].v[1] : -9);
}

/* Whatever the regions overlapping buffer b in the arena held is gone; and
 * none of them may be one the operation is reading. */
static void spoil_overlapping(sim *s, int b)
{
    const mem_plan *p = s->p;
    for (int k = 0; k < s->n_reading; k++)
        if (s->reading[k] != b && overlap(p, s->reading[k], b) && s->errors++ < 5)
            cr_expect(false, "%s: %s writes buffer %d over part of buffer %d, which it reads",
                      s->model, s->net->layers[s->op].name, b, s->reading[k]);
    for (int o = 0; o < p->n_buffers; o++)
        if (o != b && overlap(p, o, b))
            s->buf[o] = (contents){{EMPTY, EMPTY}};
}

static void write(sim *s, int b, int value)
{
    if (b < 0)
        return;
    spoil_overlapping(s, b);
    s->buf[b] = (contents){{value, EMPTY}};
}

/* The operation's scratch (a library's workspace), used while it reads its
 * inputs and writes its outputs: none of them may overlap it. Its value is
 * below EMPTY and read by nothing after. */
static void use_scratch(sim *s, int layer, int backward)
{
    int b = s->p->scratch_buffer[2 * layer + backward];
    if (b < 0)
        return;
    write(s, b, EMPTY - 1 - (2 * layer + backward));
    cr_assert(s->n_reading < MAX_READS, "%s: more reads in one operation than kept", s->model);
    s->reading[s->n_reading++] = b;
}

/* Where an input's value is read: a batch norm that is never stored is
 * read through its own input (the add normalises it). */
static void read_input(sim *s, int layer, int in)
{
    if (in == GRAPH_INPUT)
        return;
    if (s->p->out_buffer[in] < 0) {
        read_input(s, layer, s->net->layers[in].inputs[0]);
        return;
    }
    expect_read(s, s->p->out_buffer[in], 2 * in, "the forward", layer);
}

static void forward(sim *s)
{
    const network *net = s->net;
    for (int i = 0; i < net->n_layers; i++) {
        begin_op(s, i);
        for (int k = 0; k < net->layers[i].n_inputs; k++)
            read_input(s, i, net->layers[i].inputs[k]);
        use_scratch(s, i, 0);
        write(s, s->p->out_buffer[i], 2 * i);
    }
    /* the loss reads the logits and writes their gradient */
    int last = net->n_layers - 1;
    begin_op(s, last);
    expect_read(s, s->p->out_buffer[last], 2 * last, "the loss", last);
    write(s, s->p->grad_buffer[last], 2 * last + 1);
    s->grad_started[last] = true;
}

/* The last layer writing over layer i's output in place (i itself if none). */
static int last_in_place(const sim *s, int i)
{
    int last = i;
    for (int j = i + 1; j < s->net->n_layers; j++)
        if (s->p->out_owner[j] >= 0 && s->p->out_owner[j] == s->p->out_owner[i])
            last = j;
    return last;
}

/* A layer's backward: it reads its output's gradient, its input (conv, fc,
 * batch norm) or its own output (an activation's mask; an add's fused one),
 * then writes or adds to its inputs' gradients. */
static void backward(sim *s)
{
    const network *net = s->net;
    for (int i = net->n_layers - 1; i >= 0; i--) {
        const layer *l = &net->layers[i];
        if (s->p->grad_buffer[i] < 0)
            continue;
        begin_op(s, i);
        expect_read(s, s->p->grad_buffer[i], 2 * i + 1, "the backward", i);
        int in = l->inputs[0];
        bool reads_input = l->type == LAYER_CONV || l->type == LAYER_FC || l->type == LAYER_BN;
        if (reads_input && in != GRAPH_INPUT)
            read_input(s, i, in);
        bool reads_output = l->type == LAYER_RELU || l->type == LAYER_RELU6 ||
                            (l->type == LAYER_ADD && s->p->out_buffer[i] >= 0);
        if (reads_output) /* what the buffer ends with: a ReLU in place over it */
            expect_read(s, s->p->out_buffer[i], 2 * last_in_place(s, i), "the backward", i);
        use_scratch(s, i, 1);
        if (!l->computes_input_grad)
            continue;
        int written[LAYER_MAX_INPUTS] = {EMPTY, EMPTY};
        for (int k = 0; k < l->n_inputs; k++) {
            int x = l->inputs[k];
            if (x == GRAPH_INPUT)
                continue;
            int b = s->p->grad_buffer[x];
            cr_assert(b >= 0, "%s: %s has no gradient buffer", s->model, net->layers[x].name);
            if (s->grad_started[x])
                expect_read(s, b, 2 * x + 1, "the accumulation", i);
            s->grad_started[x] = true;
            written[k] = 2 * x + 1;
        }
        /* one tensor for both inputs where their buffers are one */
        for (int k = 0; k < l->n_inputs; k++) {
            int x = l->inputs[k];
            if (x == GRAPH_INPUT)
                continue;
            int b = s->p->grad_buffer[x];
            write(s, b, written[k]);
            for (int o = 0; o < l->n_inputs; o++)
                if (o != k && l->inputs[o] != GRAPH_INPUT && s->p->grad_buffer[l->inputs[o]] == b)
                    s->buf[b].v[1] = written[o];
        }
    }
}

/* Scratch for every convolution and fully connected layer, as the CUDA
 * backend asks for its workspaces: sizes that differ from layer to layer,
 * and one larger than any activation (it must go on top). */
static int64_t *scratch_of(const network *net)
{
    int n = net->n_layers;
    int64_t *scratch = calloc((size_t)(2 * n), sizeof *scratch), largest = 0;
    cr_assert(scratch);
    for (int i = 0; i < n; i++) {
        int64_t out = backend_buffer_elems(net, i, 2, BUF_OUTPUT);
        largest = out > largest ? out : largest;
        if (net->layers[i].type != LAYER_CONV && net->layers[i].type != LAYER_FC)
            continue;
        scratch[2 * i] = out * (i % 3) / 2;
        scratch[2 * i + 1] = out * (i % 4 + 1) / 3 + 7;
    }
    for (int i = n - 1; i >= 0; i--)
        if (net->layers[i].type == LAYER_CONV) {
            scratch[2 * i + 1] = 3 * largest;
            break;
        }
    return scratch;
}

static void simulate(const char *model, const memplan_rules *rules, bool with_scratch,
                     int64_t *elems_out)
{
    network net = build_or_fail(model, 64, 10);
    mem_plan p;
    int64_t *scratch = with_scratch ? scratch_of(&net) : NULL;
    cr_assert_eq(memplan_make(&net, 2, rules, scratch, &p), 0);
    sim s = {.net = &net, .p = &p, .buf = calloc((size_t)p.n_buffers + 1, sizeof(contents)),
             .grad_started = calloc((size_t)net.n_layers, sizeof(bool)), .model = model};
    cr_assert(s.buf && s.grad_started);
    for (int b = 0; b < p.n_buffers; b++)
        s.buf[b] = (contents){{EMPTY, EMPTY}};
    /* every region aligned and inside the arena, and the arena shared */
    int64_t regions = 0;
    for (int b = 0; b < p.n_buffers; b++) {
        cr_expect(p.buffer_offset[b] % MEMPLAN_ALIGN_ELEMS == 0, "%s: buffer %d", model, b);
        cr_expect(p.buffer_offset[b] >= 0 && p.buffer_offset[b] + p.buffer_elems[b] <= p.arena_elems,
                  "%s: buffer %d", model, b);
        regions += p.buffer_elems[b];
    }
    cr_expect(p.arena_elems < regions, "%s: arena %lld, regions %lld", model,
              (long long)p.arena_elems, (long long)regions);
    /* a buffer is large enough for everything placed in it */
    for (int i = 0; i < net.n_layers; i++) {
        int64_t need = backend_buffer_elems(&net, i, 2, BUF_OUTPUT);
        if (p.out_buffer[i] >= 0)
            cr_expect(p.buffer_elems[p.out_buffer[i]] >= need, "%s", net.layers[i].name);
        if (p.grad_buffer[i] >= 0)
            cr_expect(p.buffer_elems[p.grad_buffer[i]] >= need, "%s", net.layers[i].name);
        for (int d = 0; d < 2; d++) {
            int b = p.scratch_buffer[2 * i + d];
            int64_t asked = scratch ? scratch[2 * i + d] : 0;
            cr_expect(asked > 0 ? b >= 0 && p.buffer_elems[b] >= asked : b < 0,
                      "%s: scratch %d", net.layers[i].name, d);
        }
    }
    /* two steps: the second finds the first one's leftovers */
    for (int step = 0; step < 2; step++) {
        memset(s.grad_started, 0, (size_t)net.n_layers * sizeof(bool));
        forward(&s);
        backward(&s);
    }
    cr_expect_eq(s.errors, 0, "%s: %d reads of a value no longer there", model, s.errors);
    *elems_out = p.arena_elems;
    free(s.buf);
    free(s.grad_started);
    free(scratch);
    memplan_free(&p);
    net_free(&net);
}

static const char *const models[] = {"resnet18", "resnet50", "vgg16", "mobilenet_v2",
                                     "resnet18-cifar", "resnet50-cifar", "mobilenet_v2-cifar",
                                     "vgg16-cifar"};

Test(memplan, every_read_finds_its_value_cpu_rules)
{
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        int64_t elems;
        simulate(models[m], &cpu_rules, false, &elems);
    }
}

/* The GPU's plan is simulated, and never larger than the CPU's. */
Test(memplan, every_read_finds_its_value_gpu_rules)
{
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        int64_t cpu, gpu;
        simulate(models[m], &cpu_rules, false, &cpu);
        simulate(models[m], &gpu_rules, false, &gpu);
        cr_expect(gpu <= cpu, "%s: %lld elements with the GPU's rules, %lld with the CPU's",
                  models[m], (long long)gpu, (long long)cpu);
    }
}

/* With a scratch region per convolution and fully connected operation,
 * as the CUDA backend plans its workspaces: no workspace overlaps what its
 * operation reads or writes, or anything still to be read. */
Test(memplan, scratch_overlaps_nothing_its_operation_uses)
{
    for (size_t m = 0; m < sizeof models / sizeof *models; m++) {
        int64_t elems;
        simulate(models[m], &gpu_rules, true, &elems);
    }
}

/* A workspace adds to the arena only where it comes on top of the most
 * live memory: the stem convolution's (the step's ends, where little is
 * live) fits (all but 1% of it, the greedy placement's) in what is free
 * then; the classifier's forward, next to the
 * loss where every activation kept for backward is live, goes (almost
 * all of it) on top. */
Test(memplan, a_workspace_costs_memory_only_at_the_peak)
{
    network net = build_or_fail("resnet50", 64, 10);
    int n = net.n_layers;
    mem_plan p;
    cr_assert_eq(memplan_make(&net, 2, &gpu_rules, NULL, &p), 0);
    int64_t base = p.arena_elems, big = base / 4;
    memplan_free(&p);
    int64_t *scratch = calloc((size_t)(2 * n), sizeof *scratch);
    cr_assert(scratch);
    cr_assert_eq(net.layers[0].type, LAYER_CONV);
    scratch[0] = scratch[1] = big;
    cr_assert_eq(memplan_make(&net, 2, &gpu_rules, scratch, &p), 0);
    cr_expect(p.arena_elems <= base + big / 100, "the stem's workspaces: arena %lld, without %lld",
              (long long)p.arena_elems, (long long)base);
    memplan_free(&p);
    cr_assert_eq(net.layers[n - 1].type, LAYER_FC);
    scratch[2 * (n - 1)] = big;
    cr_assert_eq(memplan_make(&net, 2, &gpu_rules, scratch, &p), 0);
    cr_expect(p.arena_elems >= base + big * 9 / 10,
              "the classifier's forward workspace: arena %lld, without %lld, workspace %lld",
              (long long)p.arena_elems, (long long)base, (long long)big);
    memplan_free(&p);
    free(scratch);
    net_free(&net);
}

/* The savings are real: against every output and gradient stored apart,
 * the CPU's rules keep under 60%; on ResNet-50 the GPU's keep less again. */
Test(memplan, plans_save_memory)
{
    network net = build_or_fail("resnet50", 64, 10);
    int64_t all = 0;
    for (int i = 0; i < net.n_layers; i++)
        all += 2 * backend_buffer_elems(&net, i, 2, BUF_OUTPUT);
    net_free(&net);
    int64_t cpu, gpu;
    simulate("resnet50", &cpu_rules, false, &cpu);
    simulate("resnet50", &gpu_rules, false, &gpu);
    cr_expect(cpu < all * 6 / 10, "cpu rules keep %lld of %lld", (long long)cpu, (long long)all);
    cr_expect(gpu < cpu * 95 / 100, "gpu rules keep %lld, cpu rules %lld", (long long)gpu,
              (long long)cpu);
}

/* A ResNet-50 bottleneck ends bn3 -> add -> relu: with the GPU rules the
 * three write one buffer, the downsample's batch norm is never stored, and
 * the gradients are one buffer too; the CPU rules keep the add's own. */
Test(memplan, bottleneck_tail_is_one_buffer)
{
    network net = build_or_fail("resnet50", 64, 10);
    mem_plan plan;
    cr_assert_eq(memplan_make(&net, 2, &gpu_rules, NULL, &plan), 0);
    int tails = 0, elided = 0;
    for (int i = 0; i < net.n_layers; i++) {
        const layer *l = &net.layers[i];
        if (l->type != LAYER_ADD)
            continue;
        int relu = i + 1, bn = -1;
        for (int k = 0; k < 2; k++) {
            int in = l->inputs[k];
            if (net.layers[in].type == LAYER_BN && plan.out_owner[i] == in)
                bn = in;
            else if (net.layers[in].type == LAYER_BN && plan.out_owner[in] < 0)
                elided++;
        }
        cr_assert(bn >= 0, "%s runs in place over a batch norm", l->name);
        cr_expect_eq(net.layers[relu].type, LAYER_RELU);
        cr_expect_eq(plan.out_buffer[relu], plan.out_buffer[bn], "%s", net.layers[relu].name);
        cr_expect_eq(plan.grad_buffer[bn], plan.grad_buffer[relu], "%s", l->name);
        cr_expect_eq(plan.grad_buffer[i], plan.grad_buffer[relu], "%s", l->name);
        tails++;
    }
    cr_expect_eq(tails, 16, "16 bottlenecks");
    cr_expect_eq(elided, 4, "the 4 downsample batch norms are normalised by their add");
    mem_plan cpu;
    cr_assert_eq(memplan_make(&net, 2, &cpu_rules, NULL, &cpu), 0);
    for (int i = 0; i < net.n_layers; i++) {
        if (net.layers[i].type == LAYER_ADD)
            cr_expect_eq(cpu.out_owner[i], i);
        cr_expect(cpu.out_owner[i] >= 0, "the CPU stores every output");
    }
    memplan_free(&cpu);
    memplan_free(&plan);
    net_free(&net);
}
