/* The scaling model (analysis/scaling_model): the alpha-beta fit recovers a
 * link from a curve it generated, ring against tree, the hierarchical cost
 * over nodes, and the step: overlap hides all but the last bucket within the
 * backward's window, strong scaling divides the compute, efficiency at one
 * rank is 1. */
#include <criterion/criterion.h>
#include <math.h>

#include "../analysis/scaling_model.h"

static void ring_curve(const sm_link *l, int n, double *bytes, double *t, int points)
{
    for (int i = 0; i < points; i++) {
        bytes[i] = 1024.0 * pow(4.0, i);
        t[i] = 2.0 * (n - 1) * l->alpha_s + 2.0 * (n - 1) / n * bytes[i] / l->busbw_Bps;
    }
}

Test(scaling_model, fit_recovers_the_link)
{
    const sm_link truth = {.alpha_s = 3e-6, .busbw_Bps = 2.5e9};
    int ranks[] = {2, 8};
    for (int k = 0; k < 2; k++) {
        double b[12], t[12];
        ring_curve(&truth, ranks[k], b, t, 12);
        sm_fit f;
        cr_assert_eq(sm_fit_allreduce(b, t, 12, ranks[k], &f), 0);
        cr_expect(fabs(f.link.alpha_s / truth.alpha_s - 1) < 1e-6, "alpha %g", f.link.alpha_s);
        cr_expect(fabs(f.link.busbw_Bps / truth.busbw_Bps - 1) < 1e-6, "busbw %g",
                  f.link.busbw_Bps);
        cr_expect_lt(f.max_rel_err, 1e-9);
        cr_expect_eq(f.points, 12);
    }
}

Test(scaling_model, fit_refuses_what_it_cannot_fit)
{
    double b[2] = {1024, 2048}, t[2] = {1e-5, 2e-5};
    sm_fit f;
    cr_expect_eq(sm_fit_allreduce(b, t, 1, 2, &f), -1, "one point");
    cr_expect_eq(sm_fit_allreduce(b, t, 2, 1, &f), -1, "one rank moves nothing");
    double flat[2] = {2e-5, 1e-5};
    cr_expect_eq(sm_fit_allreduce(b, flat, 2, 2, &f), -1, "time falling with size");
}

Test(scaling_model, ring_or_tree)
{
    sm_link l = {.alpha_s = 5e-6, .busbw_Bps = 50e9};
    cr_expect_eq(sm_allreduce_flat(&l, 1, 1e9), 0.0);
    /* 2 ranks: the ring (2 alpha + S/B) */
    cr_expect_float_eq(sm_allreduce_flat(&l, 2, 1e6), 2 * 5e-6 + 1e6 / 50e9, 1e-15);
    /* 64 ranks, 1 KiB: latency-bound, the tree's 2 log2(64) = 12 steps */
    cr_expect_float_eq(sm_allreduce_flat(&l, 64, 1024), 12 * 5e-6 + 2 * 1024 / 50e9, 1e-15);
    /* 64 ranks, 1 GB: bandwidth-bound, the ring */
    double ring = 2 * 63 * 5e-6 + 2.0 * 63 / 64 * 1e9 / 50e9;
    cr_expect_float_eq(sm_allreduce_flat(&l, 64, 1e9), ring, 1e-12);
}

Test(scaling_model, hierarchical_over_nodes)
{
    sm_topology t = {.intra = {.alpha_s = 1e-6, .busbw_Bps = 450e9},
                     .inter = {.alpha_s = 5e-6, .busbw_Bps = 50e9}, .ranks_per_node = 8};
    double s = 100e6;
    /* within a node: flat on NVLink */
    cr_expect_float_eq(sm_allreduce(&t, 8, s), sm_allreduce_flat(&t.intra, 8, s), 1e-15);
    /* 64 ranks on 8 nodes: the node's reduce-scatter + all-gather, then 1/8 of
     * the bytes across 8 nodes on every rank's own port */
    double intra = 2 * 7 * 1e-6 + 2.0 * 7 / 8 * s / 450e9;
    double inter = sm_allreduce_flat(&t.inter, 8, s / 8);
    cr_expect_float_eq(sm_allreduce(&t, 64, s), intra + inter, 1e-15);
    /* crossing nodes costs more than staying in one */
    cr_expect_gt(sm_allreduce(&t, 16, s), sm_allreduce(&t, 8, s));
}

Test(scaling_model, step_overlap_and_efficiency)
{
    sm_topology t = {.intra = {.alpha_s = 0, .busbw_Bps = 1e9}, .ranks_per_node = 8};
    double buckets[3] = {1e6, 25e6, 20e6}; /* ms on 2 ranks: 1, 25, 20 */
    sm_step_inputs in = {.compute1_ms = 100, .step1_ms = 100, .backward_share = 2.0 / 3,
                         .bucket_bytes = buckets, .n_buckets = 3, .overlap_efficiency = 1};
    sm_prediction one = sm_predict(&t, &in, 1);
    cr_expect_float_eq(one.step_ms, 100, 1e-9);
    cr_expect_float_eq(one.efficiency, 1, 1e-12);
    /* weak, 2 ranks: 46 ms of allreduce, all but the last bucket's 20 ms
     * hidden in a 66.7 ms backward */
    sm_prediction two = sm_predict(&t, &in, 2);
    cr_expect_float_eq(two.allreduce_ms, 46, 1e-9);
    cr_expect_float_eq(two.overlap_ms, 26, 1e-9);
    cr_expect_float_eq(two.step_ms, 120, 1e-9);
    cr_expect_float_eq(two.efficiency, 100.0 / 120, 1e-12);
    /* no overlap (CPU ranks): everything exposed, plus the packing */
    in.overlap_efficiency = 0;
    in.host_copy_ms = 10;
    sm_prediction cpu = sm_predict(&t, &in, 2);
    cr_expect_float_eq(cpu.exposed_ms, 46 + 10, 1e-9);
    /* strong: the compute halves, the window with it (60 -> 30 ms, a 20 ms
     * backward: less than the 26 ms that could hide) */
    in.overlap_efficiency = 1;
    in.host_copy_ms = 0;
    in.strong = true;
    in.compute1_ms = in.step1_ms = 60;
    sm_prediction strong = sm_predict(&t, &in, 2);
    cr_expect_float_eq(strong.compute_ms, 30, 1e-9);
    cr_expect_float_eq(strong.overlap_ms, 20, 1e-9);
    cr_expect_float_eq(strong.step_ms, 30 + 46 - 20, 1e-9);
    cr_expect_float_eq(strong.efficiency, 60.0 / (2 * 56), 1e-12);
}
