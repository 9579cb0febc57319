/* The memory plan both backends allocate by (models/memplan.c): what runs in
 * place, and gradients that share a slab only where their lifetimes are
 * disjoint. The CPU backend's rules (ReLU in place) and the CUDA backend's
 * (also the residual add over a batch norm output, and gradients passed on in
 * place through in-place layers). */
#include <criterion/criterion.h>

#include "../models/backend.h"
#include "../models/memplan.h"
#include "helpers.h"

static const memplan_rules cpu_rules = {.add_in_place = false, .grad_in_place = false};
static const memplan_rules gpu_rules = {.add_in_place = true, .grad_in_place = true};

/* A gradient group is the layers writing one activation buffer: with
 * grad_in_place they share one gradient too. It lives from the first
 * backward that writes any member's gradient to the backward of its earliest
 * member; groups sharing a slab must not overlap. */
static void expect_disjoint_lifetimes(const network *net, const mem_plan *plan, bool grouped)
{
    int n = net->n_layers;
    int first[n], last[n];
    for (int i = 0; i < n; i++)
        first[i] = i == n - 1 ? -1 : n, last[i] = n - 1 - i;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < net->layers[i].n_inputs && net->layers[i].computes_input_grad; k++) {
            int in = net->layers[i].inputs[k];
            if (in >= 0 && n - 1 - i < first[in])
                first[in] = n - 1 - i;
        }
    int group_first[n], group_last[n];
    for (int i = 0; i < n; i++)
        group_first[i] = n, group_last[i] = -2;
    for (int i = 0; i < n; i++) {
        if (first[i] == n)
            continue;
        int g = grouped ? plan->out_owner[i] : i;
        group_first[g] = first[i] < group_first[g] ? first[i] : group_first[g];
        group_last[g] = last[i] > group_last[g] ? last[i] : group_last[g];
    }
    for (int i = 0; i < n; i++) {
        cr_expect((plan->grad_slab[i] >= 0) == (first[i] < n), "%s %s", net->model,
                  net->layers[i].name);
        for (int j = i + 1; j < n; j++) {
            int gi = grouped ? plan->out_owner[i] : i, gj = grouped ? plan->out_owner[j] : j;
            if (plan->grad_slab[i] < 0 || plan->grad_slab[i] != plan->grad_slab[j] || gi == gj)
                continue;
            bool apart = group_first[gi] > group_last[gj] || group_first[gj] > group_last[gi];
            cr_expect(apart, "%s: %s and %s overlap in slab %d", net->model, net->layers[i].name,
                      net->layers[j].name, plan->grad_slab[i]);
        }
    }
}

static void check_model(const char *model, const memplan_rules *rules, bool grouped)
{
    network net = build_or_fail(model, 64, 10);
    mem_plan plan;
    cr_assert_eq(memplan_make(&net, 2, rules, &plan), 0);
    int n = net.n_layers, in_place = 0;
    int64_t all = 0;
    for (int i = 0; i < n; i++) {
        all += 2 * backend_buffer_elems(&net, i, 2, BUF_OUTPUT);
        if (plan.out_owner[i] == i)
            continue;
        in_place++;
        layer_type t = net.layers[i].type;
        cr_expect(t == LAYER_RELU || t == LAYER_RELU6 || (rules->add_in_place && t == LAYER_ADD),
                  "%s: %s may not run in place", model, net.layers[i].name);
    }
    expect_disjoint_lifetimes(&net, &plan, grouped);
    cr_expect(in_place > 0, "%s has in-place layers", model);
    cr_expect(memplan_elems(&plan, &net, 2) < all * 6 / 10, "%s: the plan keeps %lld of %lld",
              model, (long long)memplan_elems(&plan, &net, 2), (long long)all);
    memplan_free(&plan);
    net_free(&net);
}

static const char *const models[] = {"resnet18", "resnet50", "vgg16", "mobilenet_v2",
                                     "resnet18-cifar", "mobilenet_v2-cifar", "vgg16-cifar"};

Test(memplan, cpu_rules_share_only_disjoint_lifetimes)
{
    for (size_t m = 0; m < sizeof models / sizeof *models; m++)
        check_model(models[m], &cpu_rules, false);
}

Test(memplan, gpu_rules_share_only_disjoint_lifetimes)
{
    for (size_t m = 0; m < sizeof models / sizeof *models; m++)
        check_model(models[m], &gpu_rules, true);
}

/* A ResNet-50 bottleneck ends bn3 -> add -> relu: with the GPU rules the
 * three write one buffer, and their gradients are one buffer too. */
Test(memplan, bottleneck_tail_is_one_buffer)
{
    network net = build_or_fail("resnet50", 64, 10);
    mem_plan plan;
    cr_assert_eq(memplan_make(&net, 2, &gpu_rules, &plan), 0);
    int tails = 0;
    for (int i = 0; i < net.n_layers; i++) {
        const layer *l = &net.layers[i];
        if (l->type != LAYER_ADD)
            continue;
        int relu = i + 1, bn = -1;
        for (int k = 0; k < 2; k++)
            if (net.layers[l->inputs[k]].type == LAYER_BN && plan.out_owner[i] == l->inputs[k])
                bn = l->inputs[k];
        cr_assert(bn >= 0, "%s runs in place over a batch norm", l->name);
        cr_expect_eq(net.layers[relu].type, LAYER_RELU);
        cr_expect_eq(plan.out_owner[relu], bn, "%s", net.layers[relu].name);
        cr_expect_eq(plan.grad_slab[bn], plan.grad_slab[relu], "%s", l->name);
        cr_expect_eq(plan.grad_slab[i], plan.grad_slab[relu], "%s", l->name);
        tails++;
    }
    cr_expect_eq(tails, 16, "16 bottlenecks");
    /* the CPU rules keep the add's own buffer */
    mem_plan cpu;
    cr_assert_eq(memplan_make(&net, 2, &cpu_rules, &cpu), 0);
    for (int i = 0; i < net.n_layers; i++)
        if (net.layers[i].type == LAYER_ADD)
            cr_expect_eq(cpu.out_owner[i], i);
    memplan_free(&cpu);
    memplan_free(&plan);
    net_free(&net);
}
