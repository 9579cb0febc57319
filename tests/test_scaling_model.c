/* The scaling model (analysis/scaling_model): the alpha-beta fit recovers a
 * link from a curve it generated, ring against tree, the hierarchical cost
 * over nodes, and the step: overlap hides all but the last bucket within the
 * backward's window, strong scaling divides the compute, efficiency at one
 * rank is 1. */
#include <criterion/criterion.h>
#include <math.h>

#include "../analysis/scaling_model.h"
#include "helpers.h"

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
        cr_assert_eq(sm_fit_allreduce(b, t, 12, ranks[k], 8 << 20, &f), 0);
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
    cr_expect_eq(sm_fit_allreduce(b, t, 1, 2, 0, &f), -1, "one point");
    cr_expect_eq(sm_fit_allreduce(b, t, 2, 1, 0, &f), -1, "one rank moves nothing");
    double flat[2] = {2e-5, 1e-5};
    cr_expect_eq(sm_fit_allreduce(b, flat, 2, 2, 0, &f), -1, "time falling with size");
    double unsorted[2] = {2048, 1024};
    cr_expect_eq(sm_fit_allreduce(unsorted, t, 2, 2, 0, &f), -1, "sizes out of order");
}

/* A CPU's curve: mid sizes from cache run faster than the line the large
 * ones follow; the bandwidth comes from the sizes of at least bw_min_bytes. */
Test(scaling_model, fit_takes_bandwidth_from_large_sizes)
{
    const sm_link truth = {.alpha_s = 1e-6, .busbw_Bps = 3e9};
    double b[12], t[12];
    ring_curve(&truth, 2, b, t, 12);
    for (int i = 3; i < 7; i++) /* 64 KiB .. 4 MiB twice as fast */
        t[i] = 2e-6 + (t[i] - 2e-6) / 2;
    sm_fit f;
    cr_assert_eq(sm_fit_allreduce(b, t, 12, 2, 8 << 20, &f), 0);
    cr_expect(fabs(f.link.busbw_Bps / 3e9 - 1) < 1e-6, "busbw %g", f.link.busbw_Bps);
    cr_expect(fabs(f.link.alpha_s / 1e-6 - 1) < 1e-6, "alpha %g", f.link.alpha_s);
    cr_expect_gt(f.max_rel_err, 0.4, "the cached sizes are off the line");
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

/* bin/scaling_model from a one-rank step given on the command line: 1 to 64
 * ranks on NVLink and InfiniBand, weak efficiency falling as nodes are
 * added, strong below weak. */
Test(scaling_model, the_program_predicts_to_64_ranks)
{
    char *dir = temp_dir();
    char args[512], out[16384];
    format_or_fail(args, sizeof args,
                   "scaling_model --model resnet50 --res 224 --batch 256 --step-ms 65.5 "
                   "--env h100 --out %s/p.csv", dir);
    cr_assert_eq(run_bin(args, 0, out, sizeof out), 0, "%s", out);
    char *csv = read_text(dir, "p.csv");
    cr_expect_eq(count_lines(csv), 1 + 2 * 7, "strong and weak at 1, 2, ..., 64:\n%s", csv);
    cr_expect(strstr(csv, "\nh100,resnet50,224,weak,cuda,links,1,1,8,256,256,65.5000,0.0000,") !=
                  NULL, "%s", csv);
    double prev = 2.0, weak64 = 0, strong64 = 0;
    for (const char *line = strstr(csv, "\nh100,resnet50,224,weak"); line;
         line = strstr(line + 1, "\nh100,resnet50,224,weak")) {
        const char *c = line + 1;
        for (int k = 0; k < 17; k++)
            c = strchr(c, ',') + 1;
        double eff = atof(c);
        cr_expect(eff <= prev + 1e-9 && eff > 0.5, "weak efficiency %g after %g", eff, prev);
        prev = weak64 = eff;
    }
    const char *s64 = strstr(csv, "\nh100,resnet50,224,strong,cuda,links,64,8,");
    cr_assert_not_null(s64, "%s", csv);
    const char *c = s64 + 1;
    for (int k = 0; k < 17; k++)
        c = strchr(c, ',') + 1;
    strong64 = atof(c);
    cr_expect_lt(strong64, weak64, "strong %g, weak %g at 64 ranks", strong64, weak64);
    remove_temp_dir(dir);
}

Test(scaling_model, bad_options)
{
    expect_usage_error("scaling_model", "give --scaling scaling.csv, or --model");
    expect_usage_error("scaling_model --model resnet50 --batch 8", "--model: give --batch and --step-ms");
    expect_usage_error("scaling_model --model resnet50 --batch 8 --step-ms 10 --overlap 2",
                       "--overlap: '2' is not a number in [0, 1]");
    expect_usage_error("scaling_model --model resnet50 --batch 8 --step-ms 10 --fit-max-ranks 0",
                       "--fit-max-ranks: '0' is not an integer in 1..65536");
}
