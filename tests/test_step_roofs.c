/* The analytic step at a machine's roofs (analysis/step_roofs.h) and
 * bin/complexity --roofs: the cost model's totals held against hand-made
 * roofs, each operation alone, the ceiling each pass meets, the CUDA
 * backend's design bytes, and the refusals. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/roofs.h"
#include "../analysis/run_load.h"
#include "../analysis/step_roofs.h"
#include "../models/cost.h"
#include "../models/cuda/cuda_plan.h"
#include "../models/cuda/cuda_traffic.h"
#include "../models/memplan.h"
#include "helpers.h"

#define NEAR(a, b, rel) cr_expect(fabs((a) - (b)) <= (rel) * fabs(b), "%.9g vs %.9g", (a), (b))

enum { BATCH = 4, WIDE = 16 };

/* An H100-like machine, every roof a round number */
static const char *const h100_peaks =
    "env,device,ceiling,value,unit,method,spec_value,threads_or_sms,notes\n"
    "g,gpu,fp32_fma,50000,GFLOP/s,m,,132,\n"
    "g,gpu,bf16_tensor,800000,GFLOP/s,m,,132,\n"
    "g,gpu,tf32_tensor,400000,GFLOP/s,m,,132,\n"
    "g,gpu,hbm_copy,2500,GB/s,m,,132,\n"
    "g,gpu,hbm_triad,3000,GB/s,m,,132,\n";

typedef struct {
    char *dir;
    run_model m;
    roofs r;
} machine;

static void open_machine(machine *mc, const char *peaks)
{
    mc->dir = temp_dir();
    write_text(mc->dir, "peaks.csv", peaks);
    char err[512];
    cr_assert_eq(run_load(&mc->m, mc->dir, RUN_PEAKS, RUN_PEAKS, err, sizeof err), RUN_LOAD_OK,
                 "%s", err);
    roofs_init(&mc->r, mc->m.roofs, mc->m.n_roofs);
}

static void close_machine(machine *mc)
{
    run_free(&mc->m);
    remove_temp_dir(mc->dir);
}

static const step_roof_row *row_of(const step_roofs *s, const char *type, const char *phase)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->rows[i].layer_type, type) == 0 && strcmp(s->rows[i].phase, phase) == 0)
            return &s->rows[i];
    cr_assert_fail("no row %s %s", type, phase);
    return NULL;
}

/* With the cost model's bytes the step moves exactly the cost model's
 * FLOPs and bytes, and its time is the sum over every operation of
 * max(FLOPs / peak, bytes / bandwidth): worked out here layer by layer. */
Test(step_roofs, the_cost_model_step_operation_by_operation)
{
    machine mc;
    open_machine(&mc, h100_peaks);
    /* at 224 and batch 16 some convolutions are right of the ridge (267
     * FLOP/byte here), every batch norm left of it */
    network net = build_or_fail("resnet18", 224, 1000);
    layer_cost *costs = calloc((size_t)net.n_layers, sizeof *costs);
    cr_assert_not_null(costs);
    step_cost sc = cost_step(&net, WIDE, PREC_BF16, costs);
    step_roofs s;
    char err[256];
    cr_assert_eq(step_roofs_build(&net, WIDE, PREC_BF16, STEP_BYTES_MODEL, &mc.r, &s, err,
                                  sizeof err),
                 STEP_ROOFS_OK, "%s", err);
    cr_expect_eq(s.dram_gbs, 3000, "the best of copy and triad");
    NEAR(s.flops, (double)sc.step_flops, 1e-12);
    NEAR(s.bytes, (double)sc.step_bytes, 1e-12);

    double expect_ns = fmax(sc.loss_flops / 50000.0, sc.loss_bytes / 3000.0);
    for (int i = 0; i < net.n_layers; i++) {
        const layer *l = &net.layers[i];
        bool gemm = l->type == LAYER_CONV || l->type == LAYER_FC;
        for (int p = 0; p < PASS_COUNT; p++) {
            double peak = gemm && p != PASS_UPDATE ? 800000.0 : 50000.0;
            expect_ns += fmax(costs[i].flops[p] / peak, costs[i].bytes[p] / 3000.0);
        }
    }
    NEAR(s.roof_ns, expect_ns, 1e-9);
    /* and not the step's averaged point, which runs every FLOP at once */
    cr_expect(s.roof_ns > fmax(s.flops / 800000.0, s.bytes / 3000.0) * 1.01);
    cr_expect(row_of(&s, "conv", "fwd")->compute_ns > 0, "some convolutions compute-bound");

    const step_roof_row *conv = row_of(&s, "conv", "fwd"), *bn = row_of(&s, "bn", "fwd");
    cr_expect_str_eq(conv->ceiling, "bf16_tensor");
    cr_expect_str_eq(bn->ceiling, "fp32_fma");
    cr_expect_str_eq(row_of(&s, "sgd", "update")->ceiling, "fp32_fma");
    NEAR(bn->roof_ns, bn->memory_ns, 1e-12); /* a batch norm is memory-bound */
    cr_expect_eq(bn->compute_ns, 0);
    /* order: forward, the loss, backward, the update */
    cr_expect_str_eq(s.rows[0].layer_type, "conv");
    cr_expect_str_eq(s.rows[0].phase, "fwd");
    cr_expect_str_eq(s.rows[s.n - 1].layer_type, "sgd");
    int loss = -1, first_bwd = -1;
    for (int i = 0; i < s.n; i++) {
        if (strcmp(s.rows[i].layer_type, "loss") == 0)
            loss = i;
        if (first_bwd < 0 && strncmp(s.rows[i].phase, "bwd", 3) == 0)
            first_bwd = i;
    }
    cr_expect(loss > 0 && loss < first_bwd, "loss at %d, backward from %d", loss, first_bwd);
    step_roofs_free(&s);

    /* fp32: the convolutions meet fp32_fma */
    cr_assert_eq(step_roofs_build(&net, WIDE, PREC_FP32, STEP_BYTES_MODEL, &mc.r, &s, err,
                                  sizeof err),
                 STEP_ROOFS_OK, "%s", err);
    cr_expect_str_eq(row_of(&s, "conv", "bwd_weights")->ceiling, "fp32_fma");
    step_roofs_free(&s);
    free(costs);
    net_free(&net);
    close_machine(&mc);
}

/* With the CUDA backend's design bytes: every operation's as
 * models/cuda/cuda_traffic.h counts it, fewer than the cost model's over a
 * fused step, the fused activations moving none of their own. */
Test(step_roofs, the_cuda_design_bytes)
{
    machine mc;
    open_machine(&mc, h100_peaks);
    network net = build_or_fail("resnet18", 32, 10);
    step_roofs model, cuda;
    char err[256];
    cr_assert_eq(step_roofs_build(&net, BATCH, PREC_BF16, STEP_BYTES_MODEL, &mc.r, &model, err,
                                  sizeof err),
                 STEP_ROOFS_OK, "%s", err);
    cr_assert_eq(step_roofs_build(&net, BATCH, PREC_BF16, STEP_BYTES_CUDA, &mc.r, &cuda, err,
                                  sizeof err),
                 STEP_ROOFS_OK, "%s", err);
    NEAR(cuda.flops, model.flops, 1e-12);
    cr_expect(cuda.bytes < model.bytes, "%g vs %g", cuda.bytes, model.bytes);
    cr_expect_eq(row_of(&cuda, "relu", "fwd")->bytes, 0, "fused into the batch norms and adds");

    /* the same sums as the backend's own plan gives them */
    precision_plan pp = precision_plan_of(PREC_BF16);
    memplan_rules rules = cuda_memplan_rules(true);
    mem_plan mp;
    cr_assert_eq(memplan_make(&net, BATCH, &rules, NULL, &mp), 0);
    layer_fusion *fusion = calloc((size_t)net.n_layers, sizeof *fusion);
    bool *bias = calloc((size_t)net.n_layers, sizeof *bias);
    cr_assert(fusion && bias);
    fusion_plan_make(&net, &mp, true, fusion);
    for (int i = 0; i < net.n_layers; i++) /* the design's: every bias in the library's call */
        bias[i] = net.layers[i].has_bias;
    cuda_traffic_plan t = {&net, BATCH, &pp, fusion, &mp, bias};
    double bytes = 0;
    for (int i = 0; i < net.n_layers; i++)
        for (int p = 0; p < PASS_COUNT; p++) {
            cuda_traffic c = cuda_op_traffic(&t, i, (pass)p);
            bytes += (double)(c.read + c.written);
        }
    cuda_traffic loss = cuda_op_traffic(&t, STEP_LOSS, PASS_FWD);
    bytes += (double)(loss.read + loss.written);
    NEAR(cuda.bytes, bytes, 1e-12);
    free(fusion);
    free(bias);
    memplan_free(&mp);
    step_roofs_free(&model);
    step_roofs_free(&cuda);
    net_free(&net);
    close_machine(&mc);
}

Test(step_roofs, a_missing_roof_is_named)
{
    machine mc;
    open_machine(&mc, "ceiling,value,unit\nfp32_fma,100,GFLOP/s\nhbm_copy,3000,GB/s\n");
    network net = build_or_fail("resnet18", 32, 10);
    step_roofs s;
    char err[256];
    cr_expect_eq(step_roofs_build(&net, BATCH, PREC_BF16, STEP_BYTES_MODEL, &mc.r, &s, err,
                                  sizeof err),
                 STEP_ROOFS_NO_ROOF);
    cr_expect(strstr(err, "no bf16_tensor ceiling in the roofs: the conv fwd FLOPs have no roof"),
              "%s", err);
    cr_expect_null(s.rows);
    close_machine(&mc);
    open_machine(&mc, "ceiling,value,unit\nfp32_fma,100,GFLOP/s\nl2,3000,GB/s\n");
    cr_expect_eq(step_roofs_build(&net, BATCH, PREC_FP32, STEP_BYTES_MODEL, &mc.r, &s, err,
                                  sizeof err),
                 STEP_ROOFS_NO_ROOF);
    cr_expect(strstr(err, "no DRAM or HBM bandwidth"), "%s", err);
    net_free(&net);
    close_machine(&mc);
}

Test(step_roofs, bin_complexity_prints_the_step_at_the_roofs, .timeout = 60)
{
    char *dir = temp_dir(), args[1024];
    static char out[1 << 16]; /* the per-layer table comes first */
    write_text(dir, "peaks.csv", h100_peaks);
    format_or_fail(args, sizeof args,
                   "complexity --model resnet50 --batch 256 --precision bf16 --roofs %s/peaks.csv "
                   "--traffic cuda",
                   dir);
    cr_assert_eq(run_bin(args, 0, out, sizeof out), 0, "%s", out);
    cr_assert_lt(strlen(out), sizeof out - 1, "the output did not fit");
    cr_expect(strstr(out, "HBM 3000 GB/s, conv and fc against bf16_tensor 800 TFLOP/s, the rest "
                          "against fp32_fma 50.0 TFLOP/s"),
              "%s", out);
    cr_expect(strstr(out, "the CUDA backend's kernels by design"), "%s", out);
    cr_expect(strstr(out, "At these roofs the step takes at least "), "%s", out);
    cr_expect(strstr(out, "images/s at batch 256."), "%s", out);
    /* the folder works as its peaks.csv does */
    format_or_fail(args, sizeof args, "complexity --model resnet18 --roofs %s", dir);
    cr_assert_eq(run_bin(args, 0, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "the cost model's, each tensor once"), "%s", out);
    remove_temp_dir(dir);
}

Test(step_roofs, bin_complexity_refuses_what_it_cannot_hold_against_roofs, .timeout = 60)
{
    char *dir = temp_dir(), args[1024], out[4096];
    write_text(dir, "peaks.csv", "ceiling,value,unit\nfp32_fma,100,GFLOP/s\nhbm_copy,3000,GB/s\n");
    struct {
        const char *args, *says;
    } cases[] = {
        {"--traffic cuda", "--traffic: only with --roofs"},
        {"--roofs %s --traffic fast", "--traffic: 'fast' is not model or cuda"},
        {"--roofs %s --csv", "--roofs: prints a table, not with --csv"},
        {"--roofs %s/nothing", "does not exist (a run folder or its peaks.csv)"},
        {"--roofs ''", "--roofs: '' is not a file name"},
        {"--roofs %s --precision bf16", "no bf16_tensor ceiling in the roofs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char opts[512];
        format_or_fail(opts, sizeof opts, cases[i].args, dir);
        format_or_fail(args, sizeof args, "complexity --model resnet18 %s", opts);
        cr_expect_eq(run_bin(args, 1, out, sizeof out), 2, "%s: %s", args, out);
        cr_expect(strstr(out, cases[i].says), "%s: %s", args, out);
    }
    /* refused before the per-layer table is printed */
    format_or_fail(args, sizeof args, "complexity --model resnet18 --roofs %s --precision bf16",
                   dir);
    cr_expect_eq(run_bin(args, 0, out, sizeof out), 2, "%s", out);
    cr_expect_str_eq(out, "", "stdout");
    write_text(dir, "other.csv", "x\n");
    format_or_fail(args, sizeof args, "complexity --model resnet18 --roofs %s/other.csv", dir);
    cr_expect_eq(run_bin(args, 1, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "is neither a folder nor a file named peaks.csv"), "%s", out);
    char *empty = temp_dir();
    format_or_fail(args, sizeof args, "complexity --model resnet18 --roofs %s", empty);
    cr_expect_eq(run_bin(args, 1, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "peaks.csv"), "%s", out);
    remove_temp_dir(empty);
    remove_temp_dir(dir);
}
