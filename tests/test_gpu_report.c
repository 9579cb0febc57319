/* The GPU report (issue 14): the hierarchical roofline of a GPU trace
 * (analysis/hier_roofline), its time by layer type and phase
 * (analysis/time_breakdown), the counters against the cost model
 * (analysis/cost_check), their figures' data (analysis/plot/) and their
 * sections in the report (analysis/report/report_gpu_*.c). Two fixtures: a
 * small hand-made GPU trace with answers worked out below, and the synthetic
 * GPU run folder tests/golden-gpu/run (tests/golden-gpu/make_run.sh says what
 * it holds), rendered by the programs. A CPU run's report must not change:
 * tests/test_golden.c holds it byte for byte. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/cost_check.h"
#include "../analysis/hier_roofline.h"
#include "../analysis/roofline.h"
#include "../analysis/roofs.h"
#include "../analysis/run_load.h"
#include "../analysis/time_breakdown.h"
#include "../analysis/trace_gpu.h"
#include "helpers.h"

#define NEAR(got, want, tol)                                                                     \
    cr_expect(fabs((got) - (want)) <= (tol), "%s = %.12g, want %.12g", #got, (double)(got),     \
              (double)(want))

#define GOLDEN_GPU ROOFLINE_SOURCE_DIR "/tests/golden-gpu/run"

/* ---- the hand-made GPU trace ----------------------------------------------
 * Roofs: HBM 2500 GB/s (hbm_read; hbm_write's 3000 is never a roof), L2 8000,
 * L1 20000 GB/s; fp32_fma 50 TFLOP/s, bf16_tensor 500 TFLOP/s; no fp16_fma.
 * One bf16 step of five kernels (per kernel: FLOPs, HBM/L2/L1 bytes, ns):
 *   conv  tensor 1e9 + fp32 1e6, 4e6 / 1e7 / 4e7 B, 1e4 ns:
 *         AI 250.25 / 100.1 / 25.025, 100.1 TFLOP/s; every level's roof is above
 *         the 500 TFLOP/s peak: limited by compute, 20.02% of it
 *   bn    fp32 2e6, 8e6 / 1.2e7 / 1.6e7 B, 5e3 ns:
 *         AI 0.25 / 0.1667 / 0.125, 400 GFLOP/s; roofs 625 / 1333 / 2500:
 *         limited by HBM, 64%
 *   gemv  fp32 1e8, 1e6 / 5e7 / 6e7 B, 1e4 ns:
 *         AI 100 / 2 / 1.667, 10 TFLOP/s; roofs 50000 (peak) / 16000 / 33333:
 *         limited by L2, 62.5%
 *   cast  fp16 4e6, 1e6 / 2e6 / 2e6 B, 2e3 ns: its ceiling fp16_fma is not in
 *         peaks.csv: limit unknown
 *   nccl  no FLOPs, no bytes, 3e3 ns (phase comm, source analytic): not drawn
 * Kernel time 3e4 ns: conv 1/3, bn 1/6, gemv 1/3, cast 1/15, nccl 1/10. */

static const char *const toy_peaks =
    "env,device,ceiling,value,unit,method,spec_value,threads_or_sms,notes\n"
    "toy,GPU,fp32_fma,50000,GFLOP/s,t,,1,\n"
    "toy,GPU,bf16_tensor,500000,GFLOP/s,t,,1,\n"
    "toy,GPU,hbm_copy,2000,GB/s,t,,1,\n"
    "toy,GPU,hbm_read,2500,GB/s,t,,1,\n"
    "toy,GPU,hbm_write,3000,GB/s,t,,1,\n"
    "toy,GPU,l2,8000,GB/s,t,,1,\n"
    "toy,GPU,l1,20000,GB/s,t,,1,\n";

#define TOY_HEAD "env,model,res,batch,precision,repeat,seq,kernel,layer,layer_type,phase,duration_ns," \
                 "flops_fp64,flops_fp32,flops_fp16,flops_tensor,dram_read_bytes,dram_write_bytes,"  \
                 "l2_bytes,l1_bytes,source\n"
#define TOY_KEY "toy,resnet18-cifar,32,8,bf16,0,"

static const char *const toy_kernels =
    TOY_HEAD
    TOY_KEY "0,xmma_fprop,conv1,conv,fwd,10000,0,1000000,0,1000000000,3000000,1000000,10000000,40000000,cupti\n"
    TOY_KEY "1,bn_fwd,bn1,bn,fwd,5000,0,2000000,0,0,6000000,2000000,12000000,16000000,cupti\n"
    TOY_KEY "2,gemv,fc,fc,fwd,10000,0,100000000,0,0,500000,500000,50000000,60000000,cupti\n"
    TOY_KEY "3,cast_fp16,fc,fc,fwd,2000,0,0,4000000,0,500000,500000,2000000,2000000,cupti\n"
    TOY_KEY "4,ncclDevKernel_AllReduce,all,comm,comm,3000,0,0,0,0,,,,,analytic\n";

static char *toy_dir(void)
{
    char *dir = temp_dir();
    write_text(dir, "peaks.csv", toy_peaks);
    write_text(dir, "kernels.csv", toy_kernels);
    return dir;
}

static run_model load_ok(const char *dir, unsigned want)
{
    run_model m;
    char err[512];
    cr_assert_eq(run_load(&m, dir, want, 0, err, sizeof err), RUN_LOAD_OK, "%s", err);
    return m;
}

static const hier_point *kernel_named(const hier_config *c, const char *name)
{
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->kernels[i].kernel, name) == 0)
            return &c->kernels[i];
    cr_assert_fail("no kernel %s", name);
    return NULL;
}

Test(hier_roofline, three_intensities_of_a_kernel_and_its_limit)
{
    char *dir = toy_dir();
    run_model m = load_ok(dir, RUN_PEAKS | RUN_KERNELS);
    cr_assert_eq(m.n_traces, 1);
    cr_expect(trace_is_gpu(&m, &m.traces[0]), "counted rows with L2/L1 bytes: a GPU trace");
    roofs r;
    roofs_init(&r, m.roofs, m.n_roofs);
    NEAR(r.dram_gbs, 2500, 0);
    NEAR(r.l2_gbs, 8000, 0);
    NEAR(r.l1_gbs, 20000, 0);
    hier_config c;
    cr_assert_eq(hier_config_build(&m.traces[0], &r, &c), 0);
    cr_assert_eq(c.n, 5);

    const hier_point *conv = kernel_named(&c, "xmma_fprop");
    NEAR(conv->flops, 1.001e9, 0);
    NEAR(conv->level[HIER_HBM].ai, 1.001e9 / 4e6, 1e-9);
    NEAR(conv->level[HIER_L2].ai, 1.001e9 / 1e7, 1e-9);
    NEAR(conv->level[HIER_L1].ai, 1.001e9 / 4e7, 1e-9);
    NEAR(conv->achieved_gflops, 1.001e9 / 1e4, 1e-6);
    cr_expect_str_eq(conv->ceiling, "bf16_tensor");
    cr_expect(conv->tensor);
    NEAR(conv->peak_gflops, 500000, 0);
    cr_expect_eq(conv->limit, HIER_COMPUTE);
    NEAR(conv->pct_of_attainable, 20.02, 1e-9);
    NEAR(conv->time_share, 1.0 / 3, 1e-12);

    const hier_point *bn = kernel_named(&c, "bn_fwd");
    NEAR(bn->level[HIER_HBM].ai, 0.25, 1e-12);
    NEAR(bn->level[HIER_L2].ai, 2e6 / 1.2e7, 1e-12);
    NEAR(bn->level[HIER_L1].ai, 0.125, 1e-12);
    cr_expect_str_eq(bn->ceiling, "fp32_fma");
    cr_expect(!bn->tensor);
    NEAR(bn->level[HIER_HBM].attainable, 625, 1e-9);
    NEAR(bn->level[HIER_L1].attainable, 2500, 1e-9);
    cr_expect_eq(bn->limit, HIER_HBM);
    NEAR(bn->pct_of_attainable, 64, 1e-9);

    const hier_point *gemv = kernel_named(&c, "gemv");
    NEAR(gemv->level[HIER_HBM].attainable, 50000, 1e-9); /* 100 x 2500, capped by the peak */
    NEAR(gemv->level[HIER_L2].attainable, 16000, 1e-9);
    cr_expect_eq(gemv->limit, HIER_L2);
    NEAR(gemv->pct_of_attainable, 62.5, 1e-9);

    const hier_point *cast = kernel_named(&c, "cast_fp16");
    cr_expect_str_eq(cast->ceiling, "fp16_fma");
    cr_expect(isnan(cast->peak_gflops), "peaks.csv has no fp16_fma");
    cr_expect_eq(cast->limit, -1, "FLOPs without a compute roof: unknown");

    const hier_point *nccl = kernel_named(&c, "ncclDevKernel_AllReduce");
    for (int l = 0; l < HIER_LEVELS; l++)
        cr_expect(!hier_drawable(nccl, l), "no FLOPs: no place on log axes");
    cr_expect_eq(nccl->limit, -1);
    NEAR(nccl->time_share, 0.1, 1e-12);

    /* the step: every kernel summed per level; most FLOPs ran on tensor cores */
    const hier_point *s = &c.step;
    double flops = 1.001e9 + 2e6 + 1e8 + 4e6;
    NEAR(s->flops, flops, 0);
    NEAR(s->duration_ns, 3e4, 0);
    NEAR(s->level[HIER_HBM].bytes, 4e6 + 8e6 + 1e6 + 1e6, 0);
    NEAR(s->level[HIER_L2].ai, flops / (1e7 + 1.2e7 + 5e7 + 2e6), 1e-9);
    NEAR(s->level[HIER_L1].ai, flops / (4e7 + 1.6e7 + 6e7 + 2e6), 1e-9);
    cr_expect_str_eq(s->ceiling, "bf16_tensor");
    cr_expect_str_eq(s->source, "cupti", "the timed-only NCCL kernel adds no FLOPs or bytes");
    NEAR(s->count, 5, 0);
    hier_config_free(&c);
    run_free(&m);
    remove_temp_dir(dir);
}

Test(hier_roofline, compute_roof_by_precision_and_unit)
{
    char buf[ROOF_CEILING_LEN];
    /* tensor cores: the precision's tensor roof; an fp32 step's ran as tf32 */
    cr_expect_str_eq(roof_kernel_ceiling("bf16", 0, 5, 0, 1, buf), "bf16_tensor");
    cr_expect_str_eq(roof_kernel_ceiling("fp16", 0, 5, 0, 1, buf), "fp16_tensor");
    cr_expect_str_eq(roof_kernel_ceiling("tf32", 0, 5, 0, 1, buf), "tf32_tensor");
    cr_expect_str_eq(roof_kernel_ceiling("fp32", 0, 5, 0, 1, buf), "tf32_tensor");
    /* CUDA cores: the FMA roof of the precision that did most of the FLOPs */
    cr_expect_str_eq(roof_kernel_ceiling("bf16", 0, 5, 1, 0, buf), "fp32_fma");
    cr_expect_str_eq(roof_kernel_ceiling("bf16", 0, 1, 5, 0, buf), "fp16_fma");
    cr_expect_str_eq(roof_kernel_ceiling("fp32", 7, 5, 0, 0, buf), "fp64_fma");
    cr_expect_str_eq(roof_kernel_ceiling("bf16", 0, 0, 0, 0, buf), "", "no FLOPs, no roof");
    cr_expect_str_eq(roof_kernel_ceiling("bf16", NAN, NAN, NAN, NAN, buf), "");

    /* and the point takes that roof's peak from peaks.csv */
    char *dir = toy_dir();
    run_model m = load_ok(dir, RUN_PEAKS);
    roofs r;
    roofs_init(&r, m.roofs, m.n_roofs);
    hier_point p = {.flops = 1e9, .duration_ns = 1e6,
                    .level = {{.bytes = 1e6}, {.bytes = NAN}, {.bytes = NAN}}};
    snprintf(p.ceiling, sizeof p.ceiling, "bf16_tensor");
    hier_point_eval(&p, &r);
    cr_expect(p.tensor);
    NEAR(p.peak_gflops, 500000, 0);
    NEAR(p.level[HIER_HBM].ai, 1000, 0);
    NEAR(p.level[HIER_HBM].attainable, 500000, 0); /* 1000 x 2500, capped by the peak */
    cr_expect_eq(p.limit, HIER_COMPUTE, "AI 1000 on HBM reaches the tensor peak");
    cr_expect(isnan(p.level[HIER_L2].ai), "no L2 bytes: no L2 intensity");
    snprintf(p.ceiling, sizeof p.ceiling, "fp32_fma");
    hier_point_eval(&p, &r);
    cr_expect(!p.tensor);
    NEAR(p.peak_gflops, 50000, 0);
    NEAR(p.attainable, 50000, 0);
    run_free(&m);
    remove_temp_dir(dir);
}

/* ---- the synthetic GPU run folder ------------------------------------------ */

static const run_trace *trace_of(const run_model *m, const char *precision)
{
    for (int k = 0; k < m->n_traces; k++)
        if (strcmp(m->traces[k].precision, precision) == 0)
            return &m->traces[k];
    cr_assert_fail("no %s trace", precision);
    return NULL;
}

Test(time_breakdown, shares_of_types_and_phases_sum_to_100_percent)
{
    run_model m = load_ok(GOLDEN_GPU, RUN_KERNELS | RUN_STEPS);
    cr_assert_eq(m.n_traces, 2);
    for (int k = 0; k < m.n_traces; k++) {
        const run_trace *t = &m.traces[k];
        time_breakdown b;
        time_breakdown_of(t, &b);
        double total = 0, comm = 0, sum = 0;
        for (int i = 0; i < t->n; i++) {
            total += t->rows[i].duration_ns;
            if (strcmp(t->rows[i].phase, "comm") == 0)
                comm += t->rows[i].duration_ns;
        }
        NEAR(b.total_ns, total, 1e-6);
        NEAR(b.kernels, t->n, 0);
        for (int ty = 0; ty < b.n_types; ty++)
            for (int p = 0; p < b.n_phases; p++)
                sum += time_breakdown_share(&b, ty, p);
        NEAR(sum, 1, 1e-12);
        NEAR(time_breakdown_share(&b, -1, -1), 1, 0);
        double phases = 0, types = 0;
        for (int p = 0; p < b.n_phases; p++)
            phases += time_breakdown_share(&b, -1, p);
        for (int ty = 0; ty < b.n_types; ty++)
            types += time_breakdown_share(&b, ty, -1);
        NEAR(phases, 1, 1e-12);
        NEAR(types, 1, 1e-12);
        /* the phases in the order a step runs them; the types costliest first */
        static const char *const order[] = {"fwd", "bwd_data", "bwd_weights", "update", "loss",
                                            "comm"};
        cr_assert_eq(b.n_phases, 6);
        for (int p = 0; p < 6; p++)
            cr_expect_str_eq(b.phases[p], order[p]);
        NEAR(time_breakdown_share(&b, -1, 5), comm / total, 1e-12);
        cr_expect_str_eq(b.types[0], "conv");
        for (int ty = 1; ty < b.n_types; ty++)
            cr_expect_geq(b.type_ns[ty - 1], b.type_ns[ty]);
    }
    run_free(&m);
}

static const cost_check_row *layer_row(const cost_check *c, const char *name)
{
    for (int i = 0; i < c->n_layers; i++)
        if (strcmp(c->layers[i].name, name) == 0)
            return &c->layers[i];
    cr_assert_fail("no layer %s", name);
    return NULL;
}

Test(cost_check, counted_against_analytic_per_layer_and_pass)
{
    run_model m = load_ok(GOLDEN_GPU, RUN_KERNELS | RUN_STEPS);
    cost_check c;
    /* bf16: conv1's 3 input channels padded to 8 on tensor cores; DRAM bytes 0.6
     * of the minimal ones (convolutions), 0.55 (the rest) */
    cr_assert_eq(cost_check_build(trace_of(&m, "bf16"), &c), 0);
    cr_assert_str_empty(c.why);
    const cost_check_row *conv1 = layer_row(&c, "conv1");
    NEAR(conv1->pass[0].flops_ratio, 8.0 / 3 + 0.002, 1e-8); /* and the fp32 epilogue */
    NEAR(conv1->pass[2].flops_ratio, 8.0 / 3 + 0.002, 1e-8);
    cr_expect(isnan(conv1->pass[1].flops_ratio), "conv1 has no backward-data");
    NEAR(conv1->all.bytes_ratio, 0.6, 1e-6);
    const cost_check_row *conv = layer_row(&c, "layer2.0.conv1");
    NEAR(conv->all.flops_ratio, 1.002, 1e-8);
    /* a ReLU fused into its batch norm has no kernel of its own: no ratio */
    const cost_check_row *relu = layer_row(&c, "layer1.0.relu1");
    NEAR(relu->all.kernels, 0, 0);
    cr_expect(relu->all.analytic_flops > 0);
    cr_expect(isnan(relu->all.flops_ratio));
    /* the update: three fused kernels for every layer's update */
    const cost_check_row *update = layer_row(&c, "update");
    NEAR(update->all.kernels, 3, 0);
    NEAR(update->all.flops_ratio, 1, 1e-6);
    /* the step: every counted FLOP against every analytic one */
    NEAR(c.step.all.measured_flops / c.step.all.analytic_flops, c.step.all.flops_ratio, 1e-12);
    cr_expect(c.step.all.flops_ratio > 0.95 && c.step.all.flops_ratio < 1.05,
              "step FLOPs ratio %g", c.step.all.flops_ratio);
    NEAR(c.other_kernels, 0, 0); /* the NCCL kernels are timed only: not counted */
    int n;
    cost_check_entry *e = cost_check_outside_list(&c, COST_CHECK_FACTOR, &n);
    cr_assert_not_null(e);
    cr_assert_eq(n, 3, "conv1 fwd, conv1 bwd_weights, the loss's bytes: %d", n);
    cr_expect_str_eq(c.layers[e[0].layer].name, "conv1");
    cr_expect_eq(e[0].scope, 0);
    cr_expect_str_eq(c.layers[e[2].layer].name, "loss", "a few KB off weighs least");
    free(e);
    cost_check_free(&c);

    /* fp32: the layer3 convolutions' forward runs Winograd: 0.45 x 1.04 */
    cr_assert_eq(cost_check_build(trace_of(&m, "fp32"), &c), 0);
    const cost_check_row *wino = layer_row(&c, "layer3.0.conv1");
    NEAR(wino->pass[0].flops_ratio, 0.45 * 1.04, 1e-8);
    NEAR(wino->pass[1].flops_ratio, 1.04, 1e-8);
    cr_expect(!cost_counts_outside(&wino->all, COST_CHECK_FACTOR),
              "the passes together hide it: %g", wino->all.flops_ratio);
    e = cost_check_outside_list(&c, COST_CHECK_FACTOR, &n);
    cr_assert_not_null(e);
    cr_expect_eq(n, 5, "four layer3 forwards and the loss: %d", n);
    for (int i = 0; i < 4 && i < n; i++) {
        cr_expect(strncmp(c.layers[e[i].layer].name, "layer3.", 7) == 0);
        cr_expect_eq(e[i].scope, 0);
    }
    free(e);
    cost_check_free(&c);
    run_free(&m);
}

Test(cost_check, ratio_needs_kernels_and_an_analytic_figure)
{
    NEAR(cost_check_ratio(3, 2, 1), 1.5, 0);
    cr_expect(isnan(cost_check_ratio(3, 2, 0)), "no kernel of its own");
    cr_expect(isnan(cost_check_ratio(3, 0, 1)), "nothing analytic");
    cr_expect(isnan(cost_check_ratio(NAN, 2, 1)), "not measured");
    cost_counts in = {.kernels = 1, .flops_ratio = 1.9, .bytes_ratio = 0.51};
    cost_counts out = {.kernels = 1, .flops_ratio = 1, .bytes_ratio = 0.49};
    cr_expect(!cost_counts_outside(&in, 2));
    cr_expect(cost_counts_outside(&out, 2));
}

Test(cost_check, a_trace_without_counters_is_a_gpu_trace_but_not_compared)
{
    /* the GPU trace's fallback: analytic FLOPs and bytes, no L2/L1; the cuda
     * backend of its steps tells it from a CPU trace */
    char *dir = temp_dir();
    write_text(dir, "kernels.csv",
               TOY_HEAD TOY_KEY "0,xmma_fprop,conv1,conv,fwd,10000,0,0,0,1000,500,500,,,analytic\n");
    write_text(dir, "steps.csv",
               "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,"
               "images_per_s,loss\ntoy,cuda,resnet18-cifar,32,8,bf16,1,0,1,0,1.5,5333,2.3\n");
    run_model m = load_ok(dir, RUN_KERNELS | RUN_STEPS);
    cr_expect(trace_is_gpu(&m, &m.traces[0]));
    cr_expect(!trace_has_counters(&m.traces[0]));
    cost_check c;
    cr_assert_eq(cost_check_build(&m.traces[0], &c), 0);
    cr_expect(strstr(c.why, "no kernel was counted") != NULL, "%s", c.why);
    cr_expect_eq(c.n_layers, 0);
    cost_check_free(&c);
    run_free(&m);
    /* the same rows timed on the CPU backend: not a GPU trace */
    write_text(dir, "steps.csv",
               "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,"
               "images_per_s,loss\ntoy,cpu,resnet18-cifar,32,8,bf16,1,0,1,0,1.5,5333,2.3\n");
    m = load_ok(dir, RUN_KERNELS | RUN_STEPS);
    cr_expect(!trace_is_gpu(&m, &m.traces[0]));
    cr_expect(!run_has_gpu_trace(&m));
    run_free(&m);
    remove_temp_dir(dir);
}

Test(cost_check, the_golden_cpu_run_has_no_gpu_trace)
{
    run_model m = load_ok(ROOFLINE_SOURCE_DIR "/tests/golden/run", RUN_KERNELS | RUN_STEPS);
    cr_expect(m.n_traces > 0);
    cr_expect(!run_has_gpu_trace(&m), "the GPU sections must not appear in a CPU report");
    run_free(&m);
}

/* ---- the programs on the synthetic GPU run ---------------------------------- */

#define GPU_INPUTS "env.json peaks.csv steps.csv kernels.csv configs.csv"

/* A copy of the synthetic GPU run's inputs, analysed and with its figures'
 * data (bin/analyze, bin/plotdata). */
static char *rendered_copy(void)
{
    char *dir = temp_dir();
    cr_assert_eq(sh("for f in " GPU_INPUTS "; do cp '%s'/$f '%s/' || exit 1; done", GOLDEN_GPU,
                    dir),
                 0, "cannot copy the synthetic GPU run");
    cr_assert_eq(sh("'%s/analyze' '%s' >/dev/null && '%s/plotdata' '%s' >/dev/null",
                    ROOFLINE_BIN_DIR, dir, ROOFLINE_BIN_DIR, dir),
                 0, "bin/analyze or bin/plotdata failed on the synthetic GPU run");
    return dir;
}

static void expect_contains(const char *text, const char *what, const char *file)
{
    cr_expect(strstr(text, what) != NULL, "%s lacks \"%s\"", file, what);
}

static int blocks_of(const char *text)
{
    int n = 1;
    for (const char *p = strstr(text, "\n\n\n"); p; p = strstr(p + 3, "\n\n\n"))
        n++;
    return n;
}

Test(gpu_figures, figures_and_their_data_files, .timeout = 60)
{
    char *dir = rendered_copy();
    char *manifest = read_text(dir, "figures/figures.tsv");
    static const char *const kinds[][2] = {{"roofline_hier.gp", "roofline_hier"},
                                           {"time_breakdown.gp", "time_breakdown"},
                                           {"cost_check.gp", "cost_check"}};
    for (size_t k = 0; k < 3; k++)
        for (int p = 0; p < 2; p++) {
            char line[256];
            snprintf(line, sizeof line, "%s\t%s_resnet18-cifar_32_b64_%s\t", kinds[k][0],
                     kinds[k][1], p ? "fp32" : "bf16");
            expect_contains(manifest, line, "figures.tsv");
        }

    /* hierarchical roofline: 3 levels x 2 units of kernels, the step per level
     * and joined, the three roofs in the levels' colours */
    char *kernels = read_text(dir, "figures/data/roofline_hier_resnet18-cifar_32_b64_bf16.kernels");
    cr_expect_eq(blocks_of(kernels), 6);
    expect_contains(kernels, "# HBM, tensor-core kernels: ai_hbm", "the .kernels file");
    expect_contains(kernels, "# L1, CUDA-core kernels: ai_l1", "the .kernels file");
    char *step = read_text(dir, "figures/data/roofline_hier_resnet18-cifar_32_b64_bf16.step");
    cr_expect_eq(blocks_of(step), 4);
    char *vars = read_text(dir, "figures/data/roofline_hier_resnet18-cifar_32_b64_bf16.vars");
    expect_contains(vars, "nmem = 3", "the .vars file");
    expect_contains(vars, "mem_label_1 = \"HBM 3200 GB/s\"", "the .vars file (hbm_read, not hbm_write)");
    expect_contains(vars, "mem_color_3 = \"#2471a3\"", "the .vars file");
    expect_contains(vars, "ncomp = 2", "the .vars file (bf16_tensor and fp32_fma only)");
    expect_contains(vars, "bf16 tensor", "the .vars file");
    expect_contains(vars, "level_name_2 = \"L2\"", "the .vars file");
    free(kernels);
    free(step);
    free(vars);

    /* the per-model roofline draws the ceilings its kernels ran against: of the
     * run's six, a bf16 step's tensor-core and CUDA-core ones, an fp32 step's
     * CUDA-core one */
    vars = read_text(dir, "figures/data/roofline_resnet18-cifar_32_b64_bf16.vars");
    expect_contains(vars, "ncomp = 2\n", "the bf16 roofline's .vars file");
    expect_contains(vars, "comp_label_1 = \"bf16 tensor  700 TFLOP/s\"", "the bf16 roofline's .vars");
    expect_contains(vars, "comp_label_2 = \"fp32 FMA  60.0 TFLOP/s\"", "the bf16 roofline's .vars");
    free(vars);
    vars = read_text(dir, "figures/data/roofline_resnet18-cifar_32_b64_fp32.vars");
    expect_contains(vars, "ncomp = 1\n", "the fp32 roofline's .vars file");
    free(vars);

    /* time breakdown: one row per phase, the totals add up to 100% */
    char *dat = read_text(dir, "figures/data/time_breakdown_resnet18-cifar_32_b64_fp32.dat");
    double total = 0;
    int rows = 0;
    for (char *line = strtok(dat, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#')
            continue;
        rows++;
        total += atof(strrchr(line, ' ') + 1);
    }
    cr_expect_eq(rows, 6);
    NEAR(total, 100, 1e-3);
    free(dat);

    /* cost check: the Winograd forwards are named, within the band nothing is */
    char *cost = read_text(dir, "figures/data/cost_check_resnet18-cifar_32_b64_fp32.dat");
    expect_contains(cost, "\"layer3.0.conv1 fwd\"", "the cost check's data");
    cr_expect(strstr(cost, "\"layer2.0.conv1 fwd\"") == NULL, "layer2 agrees within 2x");
    free(cost);
    free(manifest);
    remove_temp_dir(dir);
}

Test(gpu_report, sections_figures_and_findings, .timeout = 60)
{
    char *dir = rendered_copy();
    cr_assert_eq(sh("cd '%s' && for s in $(cut -f2 figures/figures.tsv); do printf x > figures/$s.png; "
                    "done && '%s/report' . >/dev/null",
                    dir, ROOFLINE_BIN_DIR),
                 0, "bin/report failed on the synthetic GPU run");
    char *md = read_text(dir, "report.md");
    static const char *const sections[] = {"## GPU: hierarchical roofline",
                                           "## GPU: step time by layer type and phase",
                                           "## GPU: counters against the cost model"};
    for (int i = 0; i < 3; i++)
        expect_contains(md, sections[i], "report.md");
    static const char *const figures[] = {
        "figures/roofline_hier_resnet18-cifar_32_b64_bf16.png",
        "figures/time_breakdown_resnet18-cifar_32_b64_bf16.png",
        "figures/cost_check_resnet18-cifar_32_b64_fp32.png"};
    for (int i = 0; i < 3; i++)
        expect_contains(md, figures[i], "report.md");
    /* the roofs as chosen, the units' roofs, the limits */
    expect_contains(md, "Roofs: HBM 3200 GB/s", "report.md");
    expect_contains(md, "| tensor core | bf16_tensor | 700 TFLOP/s |", "report.md");
    expect_contains(md, "| CUDA core | fp32_fma | 60.0 TFLOP/s |", "report.md");
    expect_contains(md, "| all types | ", "report.md");
    expect_contains(md, "| comm |", "report.md");
    /* the findings: the disagreements beyond 2x, named */
    expect_contains(md, "resnet18-cifar @32 b64 bf16: the counters and the cost model disagree by "
                        "more than 2x in 3 layer passes (conv1 fwd FLOPs 2.67x",
                    "report.md");
    expect_contains(md, "layer3.0.conv2 fwd FLOPs 0.468x", "report.md");
    /* the roofs far below their spec, in one sentence */
    expect_contains(md, "- Measured below 80% of the spec: tf32_tensor 350 TFLOP/s (71% of 495 "
                        "TFLOP/s), bf16_tensor 700 TFLOP/s (71% of 989 TFLOP/s), fp16_tensor 700 "
                        "TFLOP/s (71% of 989 TFLOP/s), pcie_h2d 50.0 GB/s (78% of 64.0 GB/s). The "
                        "roofs above use the measured values.",
                    "report.md");
    /* its two configurations' steps vary alike: one figure, not "from 0.8% to 0.8%" */
    expect_contains(md, "Step to step: cv of all timed steps 0.8% in every configuration: stable",
                    "report.md");
    expect_contains(md, "resnet18-cifar @32 b64 bf16 on the GPU (FLOPs and bytes: cupti)",
                    "report.md");
    /* the GPU figures sit in their sections, not twice */
    const char *gpu = strstr(md, "## GPU: hierarchical roofline");
    const char *fig = strstr(md, "roofline_hier_resnet18-cifar_32_b64_bf16.png");
    cr_expect(gpu && fig && fig > gpu, "the hierarchical roofline is shown in its section");
    cr_expect(strstr(fig + 1, "roofline_hier_resnet18-cifar_32_b64_bf16.png)") == NULL);
    char *html = read_text(dir, "report.html");
    expect_contains(html, "GPU: hierarchical roofline</h2>", "report.html");
    expect_contains(html, "GPU: counters against the cost model</h2>", "report.html");
    cr_expect_eq(sh("test $(grep -o 'src=\"data:image/png;base64,' '%s/report.html' | wc -l) -eq "
                    "$(wc -l < '%s/figures/figures.tsv')",
                    dir, dir),
                 0, "report.html embeds every figure, the GPU ones included");
    free(html);
    free(md);
    remove_temp_dir(dir);
}

/* dir/figures/STEM_resnet18-cifar_32_b64_PREC.png (a figure of the golden
 * GPU run) was drawn at the suite's size. */
static void expect_golden_figure(const char *dir, const char *stem, const char *prec)
{
    char png[1024];
    format_or_fail(png, sizeof png, "%s/figures/%s_resnet18-cifar_32_b64_%s.png", dir, stem,
                   prec);
    uint32_t w, h;
    png_size(png, &w, &h);
    cr_expect(w == 1200 && h == 800, "%s is %ux%u", png, w, h);
}

Test(gpu_figures, gnuplot_draws_the_gpu_figures, .timeout = 120)
{
    if (!have_gnuplot())
        cr_skip_test("gnuplot is not installed (apt-get install gnuplot-nox): render test skipped");
    char *dir = temp_dir();
    cr_assert_eq(sh("for f in " GPU_INPUTS "; do cp '%s'/$f '%s/' || exit 1; done && "
                    "BIN='%s' '%s/scripts/render.sh' '%s' >/dev/null 2>&1",
                    GOLDEN_GPU, dir, ROOFLINE_BIN_DIR, ROOFLINE_SOURCE_DIR, dir),
                 0, "scripts/render.sh failed on the synthetic GPU run");
    static const char *const stems[] = {"roofline_hier", "time_breakdown", "cost_check"};
    for (int i = 0; i < 3; i++)
        for (int p = 0; p < 2; p++)
            expect_golden_figure(dir, stems[i], p ? "fp32" : "bf16");
    char *log = read_text(dir, "figures/gnuplot.log");
    cr_expect_str_empty(log, "gnuplot warned: %s", log);
    free(log);
    remove_temp_dir(dir);
}

/* The GPU run of a machine that refused the counters and measured no roofs
 * (peaks off, or bin/peaks failed): kernels timed, FLOPs and bytes analytic
 * (DRAM only). Every figure is still drawn, the hierarchical roofline without
 * ceilings, and the findings claim no disagreement with the cost model that
 * nothing was counted to show. */
Test(gpu_report, no_roofs_and_no_counters, .timeout = 120)
{
    if (!have_gnuplot())
        cr_skip_test("gnuplot is not installed (apt-get install gnuplot-nox): render test skipped");
    char *dir = temp_dir();
    cr_assert_eq(sh("for f in env.json steps.csv configs.csv; do cp '%s'/$f '%s/' || exit 1; "
                    "done && awk -F, -v OFS=, 'NR > 1 { $19 = \"\"; $20 = \"\"; $21 = \"analytic\" } "
                    "{ print }' '%s/kernels.csv' > '%s/kernels.csv' && "
                    "BIN='%s' '%s/scripts/render.sh' '%s' >'%s/render.out' 2>&1",
                    GOLDEN_GPU, dir, GOLDEN_GPU, dir, ROOFLINE_BIN_DIR, ROOFLINE_SOURCE_DIR, dir,
                    dir),
                 0, "scripts/render.sh failed: %s", read_text(dir, "render.out"));
    char *log = read_text(dir, "figures/gnuplot.log");
    cr_expect_str_empty(log, "gnuplot: %s", log);
    for (int p = 0; p < 2; p++)
        expect_golden_figure(dir, "roofline_hier", p ? "fp32" : "bf16");
    char *md = read_text(dir, "report.md");
    expect_contains(md, "Not compared: no kernel was counted", "report.md");
    cr_expect(strstr(md, "disagree by more than") == NULL, "a disagreement without counters");
    free(md);
    free(log);
    remove_temp_dir(dir);
}
