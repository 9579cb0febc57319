/* bin/train --backend cuda as a GPU machine runs it, on the host emulator
 * (tests/emu/host/: the Makefile's $(EMU_TRAIN), the very bin/train linked
 * against stand-ins for the CUDA runtime, cuDNN, cuBLASLt, CUPTI and NCCL):
 * the options, steps.csv, --graph, the trace pass with its attribution, the
 * metric pass joined to it and the counters' fallback, out of device memory,
 * and data-parallel training over the NCCL transport with two ranks, which
 * the one-GPU machines cannot run. Speed, the vendor libraries' numerics and
 * real counter values are make test-gpu's. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/cost_check.h"
#include "../analysis/csv.h"
#include "../analysis/run_load.h"
#include "helpers.h"

#ifdef ROOFLINE_CUDA_TRAIN

/* resnet18-cifar in bf16 at 16x16: every layer type but depthwise, tensor
 * core precision (NHWC), about 0.5 s a step on the emulator */
#define SMALL "--model resnet18-cifar --res 16 --batch 4 --precision bf16"

/* Runs the emulated bin/train with ARGS in dir (environment ENV first),
 * stdout to NAME.out and stderr to NAME.err; its exit status. */
static int emulated_train(const char *dir, const char *env, const char *name, const char *args)
{
    return sh("cd '%s' && %s timeout 600 '%s' %s >%s.out 2>%s.err", dir, env,
              ROOFLINE_CUDA_TRAIN, args, name, name);
}

/* Runs it as emulated_train does, expecting it to fail before any step:
 * exit non-zero, one line on stderr (returned), no `csv` written. */
static char *one_line_failure(const char *dir, const char *env, const char *name,
                              const char *args, const char *csv)
{
    int status = emulated_train(dir, env, name, args);
    char file[64];
    format_or_fail(file, sizeof file, "%s.err", name);
    char *err = read_text(dir, file);
    cr_expect_neq(status, 0, "%s: exit 0", name);
    cr_expect_eq(count_lines(err), 1, "%s", err);
    cr_expect_neq(sh("test -e '%s/%s'", dir, csv), 0, "%s: a %s without a step", name, csv);
    return err;
}

/* A number column of steps.csv dir/file, rank 0's rows, in file order. */
static int read_rank0(const char *dir, const char *file, const char *column, double *v, int max)
{
    char path[1024], err[512];
    format_or_fail(path, sizeof path, "%s/%s", dir, file);
    csv_table *t = csv_read(path, err, sizeof err);
    cr_assert_not_null(t, "%s", err);
    int col = csv_col(t, column), rank = csv_col(t, "rank"), backend = csv_col(t, "backend");
    cr_assert(col >= 0 && rank >= 0 && backend >= 0, "%s: no %s, rank or backend column", path,
              column);
    int n = 0;
    for (int r = 0; r < csv_rows(t) && n < max; r++) {
        cr_expect_str_eq(csv_cell(t, r, backend), "cuda", "%s row %d", path, r + 1);
        if (strcmp(csv_cell(t, r, rank), "0") != 0)
            continue;
        bool ok = false;
        v[n++] = csv_num(t, r, col, &ok);
        cr_assert(ok, "%s row %d: %s '%s'", path, r + 1, column, csv_cell(t, r, col));
    }
    csv_free(t);
    return n;
}

static int read_losses(const char *dir, const char *file, double *loss, int max)
{
    return read_rank0(dir, file, "loss", loss, max);
}

Test(cuda_train_emu, auto_takes_the_gpu_and_graph_replays_the_eager_losses, .timeout = 600)
{
    char *dir = temp_dir();
    /* one warm-up step: the one that --graph captures */
    cr_assert_eq(emulated_train(dir, "", "eager", SMALL " --warmup 1 --iters 3 --out eager.csv"),
                 0, "%s", read_text(dir, "eager.err"));
    /* steps: the eager warm-up, then three replays (the capture runs
     * nothing): the 3rd step is the 2nd replay, bracketed for a profiler */
    cr_assert_eq(emulated_train(dir, "ROOFLINE_PROFILE_STEP=3 FAKE_CUDA_SAY_PROFILER=1", "graph",
                                SMALL " --warmup 1 --iters 3 --backend cuda --graph "
                                      "--out graph.csv"),
                 0, "%s", read_text(dir, "graph.err"));
    char *eager = read_text(dir, "eager.out"), *graph = read_text(dir, "graph.out");
    char *graph_err = read_text(dir, "graph.err");
    cr_expect_eq(count_of(graph_err, "fake cuda: cudaProfilerStart"), 1, "%s", graph_err);
    cr_expect_eq(count_of(graph_err, "fake cuda: cudaProfilerStop"), 1, "%s", graph_err);
    /* four steps in all: a 5th is never bracketed (it would be, were the
     * capture counted as a step) */
    cr_assert_eq(emulated_train(dir, "ROOFLINE_PROFILE_STEP=5 FAKE_CUDA_SAY_PROFILER=1", "graph5",
                                SMALL " --warmup 1 --iters 3 --backend cuda --graph"),
                 0, "%s", read_text(dir, "graph5.err"));
    char *graph5_err = read_text(dir, "graph5.err");
    cr_expect_eq(count_of(graph5_err, "fake cuda: cudaProfiler"), 0, "%s", graph5_err);
    /* --backend auto (the default) on a machine with a device */
    cr_expect(strstr(eager, "bf16 on cuda: median step") != NULL, "%s", eager);
    cr_expect(strstr(graph, "on cuda (CUDA graph): median step") != NULL, "%s", graph);
    cr_expect(strstr(eager, "device memory ") != NULL, "%s", eager);
    cr_expect(strstr(eager, "the GPU's memory in use ") != NULL, "%s", eager);

    /* the step reads nothing before its stream has run it: with the work
     * left on the stream until the host waits for it (fake_cuda.cpp), the
     * same losses */
    cr_assert_eq(emulated_train(dir, "FAKE_CUDA_DEFER=all", "deferred",
                                SMALL " --warmup 1 --iters 3 --out deferred.csv"),
                 0, "%s", read_text(dir, "deferred.err"));

    double a[8], b[8], c[8];
    int n = read_losses(dir, "eager.csv", a, 8), m = read_losses(dir, "graph.csv", b, 8);
    cr_assert_eq(n, 3, "eager: %d rows", n);
    cr_assert_eq(m, 3, "graph: %d rows", m);
    cr_assert_eq(read_losses(dir, "deferred.csv", c, 8), 3);
    for (int i = 0; i < n; i++) {
        cr_expect(isfinite(a[i]) && a[i] > 0, "step %d: loss %g", i, a[i]);
        cr_expect_eq(a[i], b[i], "step %d: eager %.9g, graph %.9g", i, a[i], b[i]);
        cr_expect_eq(a[i], c[i], "step %d: eager %.9g, deferred %.9g", i, a[i], c[i]);
    }
    cr_expect(a[2] < a[0], "the loss did not fall: %g then %g", a[0], a[2]);

    /* steps.csv's peak device memory: what the backend allocated, > 0 */
    /* with the graph's rows beside them: two configurations, the graph marked */
    run_model model;
    char err[512];
    sh("cd '%s' && { cat eager.csv; tail -n +2 graph.csv; } > steps.csv", dir);
    cr_assert_eq(run_load(&model, dir, RUN_STEPS, RUN_STEPS, err, sizeof err), RUN_LOAD_OK,
                 "%s", err);
    cr_assert_eq(model.n_steps, 2);
    cr_expect(!model.steps[0].key.graph && model.steps[1].key.graph);
    cr_expect(model.steps[0].peak_mem_bytes > 1e6, "peak memory %g bytes",
              model.steps[0].peak_mem_bytes);
    cr_expect_str_eq(model.steps[0].key.backend, "cuda");
    run_free(&model);

    /* a graph configuration traced (make bench's where the row has no eager
     * twin): the replayed steps timed, the traced step eager */
    cr_assert_eq(emulated_train(dir, "", "graphtrace",
                                SMALL " --warmup 1 --iters 1 --backend cuda --graph --trace "
                                      "graphtrace.csv --counters analytic"),
                 0, "%s", read_text(dir, "graphtrace.err"));
    char *traced = read_text(dir, "graphtrace.out");
    cr_expect(strstr(traced, "against the median untraced step (a CUDA graph's replay") != NULL,
              "%s", traced);
    cr_expect_gt(count_lines(read_text(dir, "graphtrace.csv")), 100, "kernels of the traced step");
    remove_temp_dir(dir);
}

/* The one trace of the kernels.csv in dir (model freed by the caller). */
static const run_trace *load_the_trace(const char *dir, run_model *model)
{
    char why[512];
    cr_assert_eq(run_load(model, dir, RUN_KERNELS, RUN_KERNELS, why, sizeof why), RUN_LOAD_OK,
                 "%s", why);
    cr_assert_eq(model->n_traces, 1);
    return &model->traces[0];
}

static bool has_phase(const run_trace *t, const char *phase)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->rows[i].phase, phase) == 0)
            return true;
    return false;
}

/* The trace pass over CUPTI's activity records of every emulated kernel;
 * the metric pass refused as without counter permission (fake_cupti.cpp),
 * or as on a MIG slice: one line naming the cause, then analytic figures. */
static void expect_trace_with_fallback(const char *env, const char *cause)
{
    char *dir = temp_dir();
    cr_assert_eq(emulated_train(dir, env, "trace",
                                SMALL " --warmup 0 --iters 1 --trace kernels.csv --counters cupti"),
                 0, "%s", read_text(dir, "trace.err"));
    char *err = read_text(dir, "trace.err"), *out = read_text(dir, "trace.out");
    cr_expect(strstr(err, cause) != NULL, "no '%s' in:\n%s", cause, err);
    cr_expect_eq(count_lines(err), 1, "one line, not:\n%s", err);
    cr_expect(strstr(out, "timing cupti, FLOPs and bytes analytic") != NULL, "%s", out);

    run_model model;
    const run_trace *t = load_the_trace(dir, &model);
    /* resnet18-cifar's step: well over a hundred kernels */
    cr_expect_gt(t->n, 100, "%d kernel rows", t->n);
    int convs = 0;
    for (int i = 0; i < t->n; i++) {
        const run_kernel *k = &t->rows[i];
        cr_expect(k->layer[0] && k->phase[0], "row %d (%s): layer '%s', phase '%s'", i + 2,
                  k->kernel, k->layer, k->phase);
        cr_expect_str_eq(k->source, "analytic", "row %d", i + 2);
        cr_expect(k->duration_ns > 0, "row %d (%s): %g ns", i + 2, k->kernel, k->duration_ns);
        if (strncmp(k->kernel, "fake_cudnn_", 11) == 0) {
            convs++;
            cr_expect_str_eq(k->layer_type, "conv", "row %d: %s", i + 2, k->kernel);
        }
    }
    /* 20 convolutions (the stem, 16 in the blocks, 3 shortcuts), 3 passes
     * but the stem's backward data */
    cr_expect_eq(convs, 20 * 3 - 1, "%d cuDNN convolution kernels", convs);
    /* the bytes are the backend's (models/cuda/cuda_traffic.h), not the cost
     * model's: bn1's forward with its fused ReLU reads x twice (statistics,
     * then normalisation: 4 x 64 x 16 x 16 bf16, and the 64 channels'
     * shifts) and writes y once, the ReLU over it moves nothing of its own */
    double bn_read = 0, bn_written = 0, x = 4.0 * 64 * 16 * 16 * 2, ch = 64 * 4, shift = 64 * 2;
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->rows[i].layer, "bn1") == 0 && strcmp(t->rows[i].phase, "fwd") == 0) {
            bn_read += t->rows[i].dram_read_bytes;
            bn_written += t->rows[i].dram_write_bytes;
        }
    cr_expect_float_eq(bn_read, 2 * x + shift + 6 * ch, 0.5, "bn1 fwd read %.0f bytes", bn_read);
    cr_expect_float_eq(bn_written, x + 4 * ch, 0.5, "bn1 fwd wrote %.0f bytes", bn_written);
    const char *phases[] = {"fwd", "bwd_data", "bwd_weights", "loss", "update"};
    for (size_t p = 0; p < sizeof phases / sizeof *phases; p++)
        cr_expect(has_phase(t, phases[p]), "no %s kernel", phases[p]);
    run_free(&model);
    remove_temp_dir(dir);
}

Test(cuda_train_emu, trace_attributes_every_kernel_and_counters_fall_back, .timeout = 600)
{
    expect_trace_with_fallback("", "not permitted (ERR_NVGPUCTRPERM)");
}

Test(cuda_train_emu, counters_on_a_mig_slice_fall_back_with_their_cause, .timeout = 600)
{
    expect_trace_with_fallback("FAKE_CUPTI_PROFILER_ERROR=43", "MIG");
}

/* The variables that make a GPU run measure something else than it says
 * get one line each, and the run goes on. */
Test(cuda_train_emu, launch_blocking_and_tf32_override_are_named, .timeout = 600)
{
    char *dir = temp_dir();
    cr_assert_eq(emulated_train(dir, "CUDA_LAUNCH_BLOCKING=1 NVIDIA_TF32_OVERRIDE=0", "vars",
                                "--model resnet18-cifar --res 16 --batch 4 --precision tf32 "
                                "--warmup 0 --iters 1"),
                 0, "%s", read_text(dir, "vars.err"));
    char *err = read_text(dir, "vars.err");
    cr_expect(strstr(err, "train: CUDA_LAUNCH_BLOCKING=1 is set: every launch waits") &&
                  strstr(err, "train: NVIDIA_TF32_OVERRIDE=0 is set: cuDNN and cuBLAS compute "
                              "this tf32 run in full fp32"),
              "%s", err);
    cr_expect_eq(count_lines(err), 2, "%s", err);
    remove_temp_dir(dir);
}

/* Another tool holding CUPTI (Nsight, compute-sanitizer): the timing pass
 * finds it when it subscribes, before it takes any buffer, and the step is
 * timed operation by operation on the host, with one line naming the cause. */
Test(cuda_train_emu, another_tool_holding_cupti_is_named_and_the_host_times, .timeout = 600)
{
    char *dir = temp_dir();
    cr_assert_eq(emulated_train(dir, "FAKE_CUPTI_PROFILER_ERROR=0 FAKE_CUPTI_OTHER_TOOL=1", "tool",
                                SMALL " --warmup 0 --iters 1 --trace kernels.csv --counters cupti"),
                 0, "%s", read_text(dir, "tool.err"));
    char *err = read_text(dir, "tool.err"), *out = read_text(dir, "tool.out");
    cr_expect(strstr(err, "another profiler or debugger is attached") &&
                  strstr(err, "cuptiSubscribe"),
              "%s", err);
    cr_expect_eq(count_lines(err), 1, "one line, not:\n%s", err);
    cr_expect(strstr(out, "timing host, FLOPs and bytes analytic") != NULL, "%s", out);
    /* no timing pass ran: no overhead of one is claimed */
    cr_expect_null(strstr(out, "the traced step took"), "%s", out);
    run_model model;
    const run_trace *t = load_the_trace(dir, &model);
    cr_expect_gt(t->n, 10, "%d rows", t->n);
    run_free(&model);
    remove_temp_dir(dir);
}

/* The metric pass over the stand-in Range Profiler (fake_cupti_profiler.cpp,
 * counters permitted): its call sequence, one range per kernel joined to the
 * timing pass by launch order and name, the values through the plan's
 * arithmetic into kernels.csv (source cupti), and per layer against the cost
 * model. The stand-ins for cuDNN and cuBLASLt count the multiply-adds of the
 * shapes the backend gave them (an implicit GEMM's, padding taps included)
 * on the unit the precision asks for, so a convolution or a fully connected
 * layer whose counted FLOPs are not its analytic ones is a kernel booked on
 * the wrong layer, a value on the wrong metric, or a cost model that
 * disagrees with the shapes the backend ran. */
static void expect_counted_step(const char *prec, bool tensor)
{
    char *dir = temp_dir();
    char args[256];
    format_or_fail(args, sizeof args,
                   SMALL " --precision %s --warmup 0 --iters 1 --trace kernels.csv "
                         "--counters cupti",
                   prec);
    cr_assert_eq(emulated_train(dir, "FAKE_CUPTI_PROFILER_ERROR=0", "count", args), 0, "%s",
                 read_text(dir, "count.err"));
    char *err = read_text(dir, "count.err"), *out = read_text(dir, "count.out");
    cr_expect_str_empty(err, "%s", err);
    cr_expect(strstr(out, "FLOPs and bytes cupti on GH100") != NULL, "%s", out);
    cr_expect(strstr(out, "15 counters in 2 replay passes per kernel") != NULL, "%s", out);

    run_model model;
    const run_trace *t = load_the_trace(dir, &model);
    cr_expect_eq(t->n, 195, "%d kernel rows", t->n);
    for (int i = 0; i < t->n; i++) {
        const run_kernel *k = &t->rows[i];
        cr_expect_str_eq(k->source, "cupti", "row %d (%s)", i + 2, k->kernel);
        bool library = strncmp(k->kernel, "fake_cu", 7) == 0;
        double unit = tensor ? k->flops_tensor : k->flops_fp32;
        double other = tensor ? k->flops_fp32 : k->flops_tensor;
        cr_expect(library ? unit > 0 && other == 0 : unit == 0 && other == 0,
                  "row %d (%s): fp32 %g, tensor %g FLOPs", i + 2, k->kernel, k->flops_fp32,
                  k->flops_tensor);
    }

    cost_check c;
    cr_assert_eq(cost_check_build(t, &c), 0);
    cr_assert_str_empty(c.why, "%s", c.why);
    int checked = 0;
    for (int i = 0; i < c.n_layers; i++) {
        const cost_check_row *r = &c.layers[i];
        if (strcmp(r->layer_type, "conv") != 0 && strcmp(r->layer_type, "fc") != 0)
            continue;
        checked++;
        for (int p = 0; p < COST_PASSES; p++) {
            const cost_counts *pc = &r->pass[p];
            if (pc->kernels == 0)
                continue;
            /* a fully connected layer's analytic FLOPs and bytes have its
             * bias's (N K adds, forward and gradient), which neither the GEMM
             * nor the own kernels (0) count: 2C/(2C+1) */
            bool fc = strcmp(r->layer_type, "fc") == 0;
            double low = fc ? 0.99 : 1 - 1e-9;
            cr_expect(pc->flops_ratio > low && pc->flops_ratio < 1 + 1e-9,
                      "%s %s: counted/analytic FLOPs %.9g", r->name, cost_check_pass_name(p),
                      pc->flops_ratio);
            /* bytes: the operands once each, as the cost model has them, but
             * where the backward data accumulates into an input gradient that
             * the residual branch wrote first (beta = 1 reads it once more) */
            bool bwd_data = strcmp(cost_check_pass_name(p), "bwd_data") == 0;
            double high = !fc && bwd_data ? 1.5 : 1 + 1e-9;
            cr_expect(pc->bytes_ratio > low && pc->bytes_ratio < high,
                      "%s %s: counted/analytic bytes %.9g", r->name, cost_check_pass_name(p),
                      pc->bytes_ratio);
        }
    }
    cr_expect_eq(checked, 21, "%d convolution and fully connected layers", checked);
    cost_check_free(&c);
    run_free(&model);
    remove_temp_dir(dir);
}

Test(cuda_train_emu, counted_bf16_step_books_tensor_flops_on_each_layer, .timeout = 600)
{
    expect_counted_step("bf16", true);
}

/* fp32 is FMA math on cuDNN and COMPUTE_32F on cuBLASLt: no TF32 slips in
 * (the metric pass collects the tf32 tensor counters of an fp32 step) */
Test(cuda_train_emu, counted_fp32_step_books_ffma_flops_on_each_layer, .timeout = 600)
{
    expect_counted_step("fp32", false);
}

/* tf32 asks cuDNN and cuBLASLt for the tensor cores */
Test(cuda_train_emu, counted_tf32_step_books_tensor_flops_on_each_layer, .timeout = 600)
{
    expect_counted_step("tf32", true);
}

#if defined(__x86_64__) && defined(__linux__)
/* The bytes the backend says each operation moves (models/cuda/cuda_traffic.c:
 * the analytic DRAM bytes of every GPU row without counters) against what the
 * emulated kernels touch: tests/emu/host/footprint.h's meter stands in for
 * the metric pass's DRAM counters (each page a kernel reads, or writes,
 * counted once; the libraries' workspaces left out). Per operation and
 * direction within 5% and 24 KiB: what the design leaves out (the partial
 * sums of batch norm and bias gradients, a few KiB at these sizes) and the
 * pages that tensors of a few KiB round up to. Operations moving less than
 * 128 KiB are not compared. bf16 (NHWC): fp32's NCHW statistics read each
 * channel's first element a plane apart, a page each on the meter where a
 * GPU reads a 32-byte sector. */
static void expect_footprint_matches_design(const char *args)
{
    char *dir = temp_dir(), metered[1100], analytic[1100], run_args[512];
    format_or_fail(metered, sizeof metered, "%s/metered", dir);
    format_or_fail(analytic, sizeof analytic, "%s/analytic", dir);
    cr_assert_eq(sh("mkdir -p '%s' '%s'", metered, analytic), 0);
    format_or_fail(run_args, sizeof run_args,
                   "%s --warmup 0 --iters 1 --trace kernels.csv --counters cupti", args);
    cr_assert_eq(emulated_train(metered, "FAKE_CUPTI_PROFILER_ERROR=0 ROOFLINE_EMU_FOOTPRINT=1",
                                "run", run_args),
                 0, "%s", read_text(metered, "run.err"));
    format_or_fail(run_args, sizeof run_args,
                   "%s --warmup 0 --iters 1 --trace kernels.csv --counters analytic", args);
    cr_assert_eq(emulated_train(analytic, "", "run", run_args), 0, "%s",
                 read_text(analytic, "run.err"));
    run_model mm, am;
    const run_trace *m = load_the_trace(metered, &mm), *a = load_the_trace(analytic, &am);
    cr_assert_eq(m->n, a->n, "%d metered kernels, %d analytic", m->n, a->n);
    int compared = 0;
    double got[2] = {0, 0}, want[2] = {0, 0};
    for (int i = 0; i < m->n; i++) {
        const run_kernel *k = &m->rows[i], *ka = &a->rows[i];
        cr_assert(strcmp(k->kernel, ka->kernel) == 0 && strcmp(k->layer, ka->layer) == 0 &&
                      strcmp(k->phase, ka->phase) == 0,
                  "row %d: %s %s %s metered, %s %s %s analytic", i + 2, k->kernel, k->layer,
                  k->phase, ka->kernel, ka->layer, ka->phase);
        cr_expect_str_eq(k->source, "cupti", "row %d", i + 2);
        got[0] += k->dram_read_bytes, got[1] += k->dram_write_bytes;
        want[0] += ka->dram_read_bytes, want[1] += ka->dram_write_bytes;
        const run_kernel *next = i + 1 < m->n ? &m->rows[i + 1] : NULL;
        if (next && strcmp(next->layer, k->layer) == 0 && strcmp(next->phase, k->phase) == 0)
            continue; /* the operation goes on */
        if (want[0] + want[1] >= 128 * 1024) {
            compared++;
            const char *dir_name[2] = {"read", "written"};
            for (int d = 0; d < 2; d++)
                cr_expect(fabs(got[d] - want[d]) <= 0.05 * want[d] + 24 * 1024,
                          "%s %s: %.0f bytes %s by the kernels, %.0f by design", k->layer,
                          k->phase, got[d], dir_name[d], want[d]);
        }
        got[0] = got[1] = want[0] = want[1] = 0;
    }
    cr_expect_gt(compared, 40, "%d operations compared", compared);
    run_free(&mm);
    run_free(&am);
    remove_temp_dir(dir);
}

/* batch norm + ReLU, + add + ReLU, + a second batch norm; the loss; the update */
Test(cuda_train_emu, design_bytes_are_the_kernels_footprint_resnet18, .timeout = 600)
{
    expect_footprint_matches_design(SMALL);
}

/* depthwise on the own kernels, ReLU6, the adds passing gradients on in place.
 * --depthwise own: under auto each run times the own kernels against cuDNN's
 * stand-in at plan time, and the two runs could choose differently. */
Test(cuda_train_emu, design_bytes_are_the_kernels_footprint_mobilenet_v2, .timeout = 600)
{
    expect_footprint_matches_design("--model mobilenet_v2-cifar --res 16 --batch 4 "
                                    "--precision bf16 --depthwise own");
}
#endif

/* A launch that the metric pass's callback does not see (FAKE_CUPTI_HIDE_LAUNCH:
 * the ranges outnumber the names) is an error, never a shifted join: one
 * line, no kernels.csv, and the steps measured before the trace kept. */
Test(cuda_train_emu, ranges_without_their_launches_are_an_error, .timeout = 600)
{
    char *dir = temp_dir();
    int status = emulated_train(dir, "FAKE_CUPTI_PROFILER_ERROR=0 FAKE_CUPTI_HIDE_LAUNCH=7",
                                "hide",
                                SMALL " --warmup 0 --iters 2 --out steps.csv --trace kernels.csv "
                                      "--counters cupti");
    char *err = read_text(dir, "hide.err");
    cr_expect_neq(status, 0, "a join of 195 ranges to 194 launches passed");
    cr_expect_eq(count_lines(err), 1, "%s", err);
    cr_expect(strstr(err, "195 ranges for 194 kernel launches") != NULL, "%s", err);
    cr_expect_neq(sh("test -e '%s/kernels.csv'", dir), 0, "kernels.csv of a failed join");
    double loss[4];
    cr_expect_eq(read_losses(dir, "steps.csv", loss, 4), 2, "the measured steps were lost");
    remove_temp_dir(dir);
}

/* The text of `out` from `from` to the next "; convolution algorithms" (the
 * backend's choices line before the cache's sentence), malloc'd. */
static char *choices_before_cache(const char *out, const char *from)
{
    const char *a = strstr(out, from);
    cr_assert_not_null(a, "no '%s' in:\n%s", from, out);
    const char *b = strstr(a, "; convolution algorithms");
    cr_assert_not_null(b, "%s", out);
    return strndup(a, (size_t)(b - a));
}

/* A choice whose workspace cuDNN's query would not state (the stand-in
 * refusing it) runs with Find's figure and is not written to --algo-cache:
 * the next process, which would have the row alone and refuse it as stale,
 * searches that shape again and runs. */
Test(cuda_train_emu, a_refused_workspace_query_is_not_cached, .timeout = 600)
{
    char *dir = temp_dir();
    /* the legacy calls alone: a graph-API pass asks no workspace query */
    const char *args = SMALL " --warmup 0 --iters 1 --algo-cache algos.csv --conv-api legacy";
    for (int i = 0; i < 2; i++) {
        char name[16], err[24];
        format_or_fail(name, sizeof name, "run%d", i);
        format_or_fail(err, sizeof err, "%s.err", name);
        cr_assert_eq(emulated_train(dir, "FAKE_CUDNN_REFUSE_WORKSPACE_QUERY=1", name, args), 0,
                     "%s", read_text(dir, err));
    }
    char *second = read_text(dir, "run1.out");
    cr_expect(strstr(second, "convolution algorithms: 0 of 11 distinct shapes from algos.csv, "
                             "11 searched") != NULL,
              "%s", second);
    remove_temp_dir(dir);
}

/* --algo-cache: the first process searches every distinct convolution shape
 * and writes its choices, the next one runs them without searching (the
 * stand-in for cuDNN knows no algorithm its Find did not offer, so a row
 * changed by hand stops the run where the backend asks what the row's
 * algorithm needs, before any step: the rows are what runs); the depthwise
 * choices of MobileNetV2 (own kernels or cuDNN, per pass) come back the same;
 * a file that is not a cache is one line and no step. */
Test(cuda_train_emu, the_algorithm_cache_serves_the_next_process, .timeout = 600)
{
    char *dir = temp_dir();
    /* the legacy calls alone: the changed row below must be a legacy one
     * (the graph API's rows: conv_api_graph_runs_the_step_the_legacy_calls_run) */
    const char *args = SMALL " --warmup 0 --iters 2 --algo-cache algos.csv --conv-api legacy";
    double loss[2][4];
    for (int i = 0; i < 2; i++) {
        char name[16], run[256], file[32];
        format_or_fail(name, sizeof name, "run%d", i);
        format_or_fail(run, sizeof run, "%s --out %s.csv", args, name);
        format_or_fail(file, sizeof file, "%s.err", name);
        cr_assert_eq(emulated_train(dir, "", name, run), 0, "%s", read_text(dir, file));
        format_or_fail(file, sizeof file, "%s.csv", name);
        cr_assert_eq(read_losses(dir, file, loss[i], 4), 2);
    }
    /* resnet18-cifar: 11 distinct convolution shapes at batch 4 */
    char *first = read_text(dir, "run0.out"), *second = read_text(dir, "run1.out");
    cr_expect(strstr(first, "convolution algorithms: 0 of 11 distinct shapes from algos.csv, "
                            "11 searched") != NULL,
              "%s", first);
    cr_expect(strstr(second, "convolution algorithms: 11 of 11 distinct shapes from algos.csv, "
                             "0 searched") != NULL,
              "%s", second);
    for (int s = 0; s < 2; s++)
        cr_expect_eq(loss[0][s], loss[1][s], "step %d: %.9g searched, %.9g reused", s,
                     loss[0][s], loss[1][s]);
    char *cache = read_text(dir, "algos.csv");
    /* the header, and a row per pass: the stem has no backward data */
    cr_expect_eq(count_lines(cache), 1 + 11 * 3 - 1, "%s", cache);

    /* the first row (the stem's forward) names an algorithm Find did not offer */
    cr_assert_eq(sh("cd '%s' && awk -F, -v OFS=, 'NR == 2 { $4 = 2 } { print }' algos.csv "
                    ">changed.csv",
                    dir),
                 0);
    int status = emulated_train(dir, "", "changed",
                                SMALL " --warmup 0 --iters 1 --algo-cache changed.csv "
                                      "--conv-api legacy");
    char *err = read_text(dir, "changed.err");
    cr_expect_neq(status, 0, "a changed row did not run");
    cr_expect(strstr(err, "cudnnGetConvolutionForwardWorkspaceSize") != NULL &&
                  strstr(err, "conv1") != NULL,
              "%s", err);

    const char *mobile = "--model mobilenet_v2-cifar --res 16 --batch 2 --precision bf16 "
                         "--warmup 0 --iters 1 --algo-cache mobile.csv";
    cr_assert_eq(emulated_train(dir, "", "mobile0", mobile), 0, "%s",
                 read_text(dir, "mobile0.err"));
    cr_assert_eq(emulated_train(dir, "", "mobile1", mobile), 0, "%s",
                 read_text(dir, "mobile1.err"));
    char *m0 = read_text(dir, "mobile0.out"), *m1 = read_text(dir, "mobile1.out");
    char *d0 = choices_before_cache(m0, "depthwise convolutions"),
         *d1 = choices_before_cache(m1, "depthwise convolutions");
    cr_expect_str_eq(d0, d1, "the depthwise choices differ once reused");
    cr_expect(strstr(m1, ", 0 searched") != NULL, "%s", m1);
    free(d0);
    free(d1);

    write_text(dir, "other.csv", "env,model\n");
    err = one_line_failure(dir, "", "bad",
                           SMALL " --warmup 0 --iters 1 --algo-cache other.csv --out bad.csv",
                           "bad.csv");
    cr_expect(strstr(err, "other.csv is not an algorithm cache") != NULL, "%s", err);
    remove_temp_dir(dir);
}

/* One emulated bin/train per row of runs ({name, environment, arguments}),
 * each after `common` and writing name.csv, each expected to exit 0 and to
 * give the first row's two losses to the bit (the stand-ins compute every
 * way of a pass in double). */
static void same_losses(const char *dir, const char *const (*runs)[3], int n, const char *common)
{
    double first[2] = {0.0, 0.0};
    for (int r = 0; r < n; r++) {
        char args[384], file[64];
        double loss[4];
        format_or_fail(args, sizeof args, "%s %s --out %s.csv", common, runs[r][2], runs[r][0]);
        format_or_fail(file, sizeof file, "%s.err", runs[r][0]);
        cr_assert_eq(emulated_train(dir, runs[r][1], runs[r][0], args), 0, "%s",
                     read_text(dir, file));
        format_or_fail(file, sizeof file, "%s.csv", runs[r][0]);
        cr_assert_eq(read_losses(dir, file, loss, 4), 2, "%s", runs[r][0]);
        for (int k = 0; k < 2; k++) {
            if (r == 0)
                first[k] = loss[k];
            cr_expect_eq(loss[k], first[k], "%s step %d: %.9g, %s %.9g", runs[r][0], k, loss[k],
                         runs[0][0], first[k]);
        }
    }
}

/* --conv-api: the graph API's plans run the step the legacy calls run (the
 * stand-ins compute both in double: the same losses to the bit), every pass
 * there under graph, each compared with the legacy result at plan time; the
 * choices go to --algo-cache and the next process builds the same engines'
 * plans without searching, and a row naming an engine the heuristics do not
 * offer stops the run with one line; where no engine's plan can be built
 * auto runs the legacy calls and says so; fp32 runs only an engine without
 * the TENSOR_CORE note (the stand-in's 0), bf16 only one with it (1), and
 * neither the one that down-converts its inputs (2, whose results are NaN).
 * About 90 s here, 13 minutes under make test-asan-emu. */
Test(cuda_train_emu, conv_api_graph_runs_the_step_the_legacy_calls_run, .timeout = 1500)
{
    char *dir = temp_dir();
    static const char *const runs[][3] = {
        {"legacy", "", "--conv-api legacy"},
        {"graph", "", "--conv-api graph --algo-cache algos.csv"},
        {"cached", "", "--conv-api graph --algo-cache algos.csv --graph"},
        {"refused", "FAKE_CUDNN_GRAPH_REFUSE=1", "--conv-api auto"},
        {"stem", "FAKE_CUDNN_GRAPH_HEUR_FAIL=3", "--conv-api auto"},
    };
    same_losses(dir, runs, 5, SMALL " --warmup 1 --iters 2");
    char *graph = read_text(dir, "graph.out"), *cached = read_text(dir, "cached.out");
    char *refused = read_text(dir, "refused.out"), *stem = read_text(dir, "stem.out");
    /* resnet18-cifar: 20 convolutions, the stem without backward data */
    const char *all = "cuDNN's graph API in fwd 20/20, bwd_data 19/19, bwd_filter 20/20";
    cr_expect(strstr(graph, all) && strstr(graph, "compared with the legacy ones in 59/59"),
              "%s", graph);
    cr_expect(!strstr(graph, "DISAGREED"), "%s", graph);
    cr_expect(strstr(cached, all) && strstr(cached, "11 of 11 distinct shapes from algos.csv, "
                                                    "0 searched"),
              "%s", cached);
    cr_expect(strstr(refused, "cuDNN's graph API in fwd 0/20, bwd_data 0/19, bwd_filter 0/20") &&
                  strstr(refused, "no graph engine built and fitted in 59"),
              "%s", refused);
    /* the heuristics refusing the stem's graphs (3 input channels) under
     * auto: its forward and filter gradient on the legacy calls, the rest
     * on either */
    cr_expect(strstr(stem, "GRAPH PLAN FAILED in 2 (the legacy call runs them), the first: ") &&
                  strstr(stem, "conv1"),
              "%s", stem);
    char *err = one_line_failure(dir, "FAKE_CUDNN_GRAPH_HEUR_FAIL=3", "stem_graph",
                                 SMALL " --warmup 0 --iters 1 --conv-api graph --out stem.steps",
                                 "stem.steps");
    cr_expect(strstr(err, "heuristics") && strstr(err, "conv1"), "%s", err);

    /* the engines each precision takes, by its cache's rows (field 20:
     * the engine; every pass of these runs is on the graph API) */
    static const char *const precisions[][2] = {{"fp32", "0"}, {"bf16", "1"}};
    for (int k = 0; k < 2; k++) {
        char args[256], file[32];
        format_or_fail(args, sizeof args,
                       "--model resnet18-cifar --res 16 --batch 2 --precision %s --warmup 0 "
                       "--iters 1 --conv-api graph --algo-cache %s.algos",
                       precisions[k][0], precisions[k][0]);
        format_or_fail(file, sizeof file, "%s.err", precisions[k][0]);
        cr_assert_eq(emulated_train(dir, "", precisions[k][0], args), 0, "%s",
                     read_text(dir, file));
        sh("cd '%s' && awk -F, 'NR > 1 { print $19 \":\" $20 }' %s.algos | sort -u "
           ">%s.engines",
           dir, precisions[k][0], precisions[k][0]);
        format_or_fail(file, sizeof file, "%s.engines", precisions[k][0]);
        char *engines = read_text(dir, file), want[16];
        format_or_fail(want, sizeof want, "1:%s\n", precisions[k][1]);
        cr_expect_str_eq(engines, want, "%s", precisions[k][0]);
        free(engines);
    }

    /* a row naming an engine the heuristics do not offer */
    cr_assert_eq(sh("cd '%s' && awk -F, -v OFS=, 'NR > 1 && $19 == 1 { $20 = 7 } { print }' "
                    "algos.csv >changed.csv",
                    dir),
                 0);
    err = one_line_failure(dir, "", "changed",
                                 SMALL " --warmup 0 --iters 1 --conv-api graph --algo-cache "
                                       "changed.csv --out changed.csv.steps",
                                 "changed.csv.steps");
    cr_expect(strstr(err, "no longer offers engine 7") != NULL, "%s", err);

    /* rows whose engine is offered at another rank (field 21): the engine's
     * first configuration there, each counted on the choices line */
    cr_assert_eq(sh("cd '%s' && awk -F, -v OFS=, 'NR > 1 && $19 == 1 { $21 = 6 } { print }' "
                    "algos.csv >moved.csv",
                    dir),
                 0);
    cr_assert_eq(emulated_train(dir, "", "moved",
                                SMALL " --warmup 0 --iters 1 --conv-api graph --algo-cache "
                                      "moved.csv --out moved.steps"),
                 0, "%s", read_text(dir, "moved.err"));
    char *moved = read_text(dir, "moved.out");
    const char *rebuilt = " plans built from another configuration of their engine than the one "
                          "timed";
    cr_expect(strstr(moved, all) && strstr(moved, rebuilt), "%s", moved);
    cr_expect(!strstr(cached, rebuilt), "%s", cached);
    remove_temp_dir(dir);
}

/* VGG-16's forwards with bias under ReLU on the graph API's convolution with
 * the bias and ReLU in its epilogue (--conv-bias cudnn --conv-api graph):
 * all 13 there, written to --algo-cache and built again from it by the next
 * process without a search; where the heuristics take no graph of more than
 * one operation (FAKE_CUDNN_GRAPH_NO_FUSION), the legacy fused call runs
 * them and the line says why. The stand-ins compute both fused ways as one
 * (in double, rounded once): the same losses to the bit. */
Test(cuda_train_emu, conv_bias_relu_on_the_graph_api_is_cached_and_built_again, .timeout = 900)
{
    char *dir = temp_dir();
    static const char *const runs[][3] = {
        {"searched", "", "--algo-cache vgg.csv"},
        {"cached", "", "--algo-cache vgg.csv"},
        {"unfused", "FAKE_CUDNN_GRAPH_NO_FUSION=1", ""},
    };
    same_losses(dir, runs, 3,
                "--model vgg16 --res 32 --batch 2 --precision bf16 --warmup 0 --iters 2 "
                "--conv-bias cudnn --conv-api graph");
    char *out[3] = {read_text(dir, "searched.out"), read_text(dir, "cached.out"),
                    read_text(dir, "unfused.out")};
    const char *all = "cuDNN's fused conv+bias+ReLU in 13 (on its graph API in 13)";
    cr_expect(strstr(out[0], all) && strstr(out[0], " searched"), "%s", out[0]);
    cr_expect(strstr(out[1], all) && strstr(out[1], ", 0 searched"), "%s", out[1]);
    cr_expect(strstr(out[2], "cuDNN's fused conv+bias+ReLU in 13 (on its graph API in 0)") &&
                  strstr(out[2], "; the graph API built no conv+bias+ReLU plan in "),
              "%s", out[2]);
    /* the cache's forward rows: fused (field 13) on the graph API (field 19) */
    cr_assert_eq(sh("cd '%s' && awk -F, 'NR > 1 && $2 == 0 && !($13 == 1 && $19 == 1)' vgg.csv "
                    ">other.rows && awk -F, 'NR > 1 && $2 == 0' vgg.csv | wc -l >fwd.count",
                    dir),
                 0);
    char *other = read_text(dir, "other.rows"), *count = read_text(dir, "fwd.count");
    cr_expect_str_eq(other, "", "forward rows not fused on the graph API:\n%s", other);
    cr_expect(atoi(count) > 0, "%s", count);
    remove_temp_dir(dir);
}

/* cuBLASLt's heuristic offering no algorithm for a fully connected layer
 * fails the setup with one line naming the layer and the GEMM (before, the
 * step passed cublasLtMatmul no algorithm, which asks the same heuristic
 * with no workspace, and failed at its first call). */
Test(cuda_train_emu, no_gemm_algorithm_is_one_line_at_setup, .timeout = 600)
{
    char *dir = temp_dir();
    char *err = one_line_failure(dir, "FAKE_CUBLASLT_OFFER_NONE=1", "none",
                                 SMALL " --warmup 0 --iters 1 --out steps.csv", "steps.csv");
    cr_expect(strstr(err, "layer fc (fc ") &&
                  strstr(err, "cuBLASLt's heuristic offers no algorithm for its forward GEMM"),
              "%s", err);
    remove_temp_dir(dir);
}

/* What the device cannot run at all, a batch larger than its memory or a
 * precision its compute capability lacks, is exit 3 ("cannot run here", which
 * the runner skips, not fails) with one line, before anything is allocated;
 * a device that can runs it. */
Test(cuda_train_emu, what_the_device_cannot_run_is_exit_3_and_one_line, .timeout = 600)
{
    char *dir = temp_dir();
    char *err = one_line_failure(dir, "FAKE_CUDA_MEMORY_MB=40", "oom",
                                 SMALL " --precision fp32 --warmup 0 --iters 1 --out steps.csv",
                                 "steps.csv");
    cr_expect(strncmp(err, "train: cannot run here: a batch of 4 needs ", 43) == 0 &&
                  strstr(err, "GiB of device memory") && strstr(err, "use a smaller --batch"),
              "%s", err);
    cr_expect_eq(emulated_train(dir, "FAKE_CUDA_MEMORY_MB=40", "oom",
                                SMALL " --precision fp32 --warmup 0 --iters 1"),
                 3);
    err = one_line_failure(dir, "FAKE_CUDA_CC=75", "cc",
                           SMALL " --warmup 0 --iters 1 --out steps.csv", "steps.csv");
    cr_expect_str_eq(err, "train: cannot run here: bf16 needs compute capability 8.0 or newer; "
                          "host emulator (tests/emu) is 7.5\n");
    cr_expect_eq(emulated_train(dir, "FAKE_CUDA_CC=75", "tf32",
                                SMALL " --precision tf32 --warmup 0 --iters 1"),
                 3, "%s", read_text(dir, "tf32.err"));
    /* fp16 needs no Ampere; an Ampere runs bf16 */
    cr_expect_eq(emulated_train(dir, "FAKE_CUDA_CC=75", "fp16",
                                SMALL " --precision fp16 --warmup 0 --iters 1"),
                 0, "%s", read_text(dir, "fp16.err"));
    cr_expect_eq(emulated_train(dir, "FAKE_CUDA_CC=80", "a100", SMALL " --warmup 0 --iters 1"), 0,
                 "%s", read_text(dir, "a100.err"));
    remove_temp_dir(dir);
}

#define MPIRUN_2                                                                              \
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 FAKE_CUDA_DEVICES=2 timeout 600 " \
    "mpirun --oversubscribe --bind-to none -np 2 -x FAKE_CUDA_DEVICES"

/* The NCCL transport of models/ddp with two ranks, one emulated device each
 * (all-reduce over MPI, fake_nccl.cpp): bucketed reductions launched during
 * backward on the communication stream, averaged, the same update on both
 * ranks. VGG-16 has no batch norm, so two ranks on half batches must equal
 * one process on the whole batch. */
Test(cuda_train_emu, two_nccl_ranks_equal_one_process_on_the_global_batch, .timeout = 900)
{
    if (sh("command -v mpirun >/dev/null") != 0)
        cr_skip_test("no mpirun");
    char *dir = temp_dir();
    const char *common = "--model vgg16 --res 32 --dropout 0 --lr 0.01 --warmup 0 --iters 2 "
                         "--backend cuda";
    char args[512];
    format_or_fail(args, sizeof args, "%s %s --ddp --batch 2 --save-weights ddp --out steps.csv",
                   MPIRUN_2 " " ROOFLINE_CUDA_TRAIN, common);
    cr_assert_eq(sh("cd '%s' && %s >ddp.out 2>ddp.err", dir, args), 0, "%s",
                 read_text(dir, "ddp.err"));
    format_or_fail(args, sizeof args, "%s --batch 4 --shards 2 --save-weights one", common);
    cr_assert_eq(emulated_train(dir, "", "one", args), 0, "%s", read_text(dir, "one.err"));

    char *out = read_text(dir, "ddp.out");
    cr_expect(strstr(out, "2 rank(s) on 1 node(s) over nccl") != NULL, "%s", out);
    cr_expect(strstr(out, "ddp: the weights are bit-identical on all 2 ranks") != NULL, "%s",
              out);
    /* the memory counted with the backend's: VGG-16's fp32 gradients in buckets */
    cr_expect(strstr(out, "DDP's buckets 528 MiB") != NULL, "%s", out);
    cr_expect_eq(sh("cd '%s' && cmp -s ddp.rank0.bin ddp.rank1.bin", dir), 0,
                 "the ranks' weights differ");

    size_t n, m, changed = 0;
    float *x = read_bytes(dir, "ddp.rank0.bin", &n), *y = read_bytes(dir, "one.rank0.bin", &m);
    n /= sizeof *x, m /= sizeof *y;
    cr_assert_eq(n, m, "%zu and %zu weights", n, m);
    cr_expect_eq(n, 138357544, "VGG-16's parameters: %zu", n);
    double worst = 0.0;
    /* VGG-16's weights are of order 1e-2: relative to at least 1e-4 */
    for (size_t i = 0; i < n; i++) {
        double rel = fabs((double)x[i] - y[i]) / fmax(fabs(y[i]), 1e-4);
        worst = rel > worst ? rel : worst;
        changed += x[i] != y[i];
    }
    free(x);
    free(y);
    cr_expect_leq(worst, 1e-5, "2 NCCL ranks vs one process: %.3g relative", worst);
    cr_log_info("2 NCCL ranks vs one process: %zu of %zu weights differ, at most %.3g relative",
                changed, n, worst);

    /* rank 0 writes both ranks' rows */
    double loss[8];
    cr_expect_eq(read_losses(dir, "steps.csv", loss, 8), 2);
    char *steps = read_text(dir, "steps.csv");
    cr_expect_eq(count_lines(steps), 1 + 2 * 2, "%s", steps);
    remove_temp_dir(dir);
}

/* The NCCL transport's streams wait for each other where they must: two
 * ranks with the first stream each process creates (the backend's) left
 * until something waits for it (fake_cuda.cpp's FAKE_CUDA_DEFER), then the
 * second (the communication stream), then both. A bucket packed before its
 * layers' backward has run (the first), or an update that does not wait for
 * the averaged gradients (the second), gives other weights than the same
 * run with the work run at once; each of those two waits, taken out, was
 * seen to fail here. */
Test(cuda_train_emu, nccl_ddp_streams_wait_for_each_other, .timeout = 900)
{
    if (sh("command -v mpirun >/dev/null") != 0)
        cr_skip_test("no mpirun");
    char *dir = temp_dir();
    const char *defer[] = {"0", "1", "2", "all"};
    for (int k = 0; k < 4; k++) {
        char err[32];
        format_or_fail(err, sizeof err, "%d.err", k);
        cr_assert_eq(sh("cd '%s' && FAKE_CUDA_DEFER=%s %s -x FAKE_CUDA_DEFER '%s' --model "
                        "resnet18-cifar --res 16 --batch 2 --precision bf16 --warmup 1 "
                        "--iters 2 --backend cuda --ddp --save-weights w%d --out s%d.csv "
                        ">%d.out 2>%s",
                        dir, defer[k], MPIRUN_2, ROOFLINE_CUDA_TRAIN, k, k, k, err),
                     0, "FAKE_CUDA_DEFER=%s: %s", defer[k], read_text(dir, err));
    }
    double at_once[8], deferred[8];
    int n = read_losses(dir, "s0.csv", at_once, 8);
    cr_assert_eq(n, 2);
    for (int k = 1; k < 4; k++) {
        char file[32];
        format_or_fail(file, sizeof file, "s%d.csv", k);
        cr_assert_eq(read_losses(dir, file, deferred, 8), n);
        for (int i = 0; i < n; i++)
            cr_expect_eq(at_once[i], deferred[i], "FAKE_CUDA_DEFER=%s, step %d: loss %.9g, %.9g",
                         defer[k], i, deferred[i], at_once[i]);
        cr_expect_eq(sh("cd '%s' && cmp -s w0.rank0.bin w%d.rank0.bin", dir, k), 0,
                     "FAKE_CUDA_DEFER=%s: other weights than with the work run at once",
                     defer[k]);
    }
    remove_temp_dir(dir);
}

#ifdef ROOFLINE_CUDA_ALLREDUCE
/* bin/allreduce --transport nccl over two emulated ranks (fake_nccl.cpp
 * reduces over MPI): every size's sum exact, the plateau and the latency
 * written as peaks rows. The times are the emulator's, not a network's. */
Test(cuda_train_emu, nccl_allreduce_sweep_over_two_ranks, .timeout = 300)
{
    if (sh("command -v mpirun >/dev/null") != 0)
        cr_skip_test("no mpirun");
    char *dir = temp_dir();
    cr_assert_eq(sh("cd '%s' && %s '%s' --transport nccl --quick --out ar.csv --peaks-out "
                    "peaks.csv >ar.out 2>ar.err",
                    dir, MPIRUN_2, ROOFLINE_CUDA_ALLREDUCE),
                 0, "%s", read_text(dir, "ar.err"));
    char *curve = read_text(dir, "ar.csv"), *peaks = read_text(dir, "peaks.csv");
    cr_expect_gt(count_of(curve, "\nlocal,nccl,2,1,fp32,"), 10, "%s", curve);
    cr_expect_eq(count_of(curve, ",no\n"), 0, "a wrong sum:\n%s", curve);
    cr_expect(strstr(peaks, "local,gpu,allreduce,") && strstr(peaks, "local,gpu,allreduce_latency,"),
              "%s", peaks);
    /* the sums checked only once the stream has run them: with its work left
     * queued until the host polls or waits (fake_cuda.cpp), still exact */
    cr_assert_eq(sh("cd '%s' && FAKE_CUDA_DEFER=all %s -x FAKE_CUDA_DEFER '%s' --transport nccl "
                    "--quick --out deferred.csv >deferred.out 2>deferred.err",
                    dir, MPIRUN_2, ROOFLINE_CUDA_ALLREDUCE),
                 0, "%s", read_text(dir, "deferred.err"));
    char *deferred = read_text(dir, "deferred.csv");
    cr_expect_gt(count_of(deferred, "\nlocal,nccl,2,1,fp32,"), 10, "%s", deferred);
    cr_expect_eq(count_of(deferred, ",no\n"), 0, "a wrong sum:\n%s", deferred);
    remove_temp_dir(dir);
}

/* A reduction that never completes (a dead peer, as the GPU shows it: the
 * stand-in runtime's events stay pending) ends the sweep within --timeout
 * with one line, and so does NCCL's asynchronous error. */
Test(cuda_train_emu, nccl_allreduce_waits_are_bounded, .timeout = 300)
{
    if (sh("command -v mpirun >/dev/null") != 0)
        cr_skip_test("no mpirun");
    char *dir = temp_dir();
    const char *mpirun_1 = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 "
                           "mpirun --bind-to none -np 1 -x FAKE_CUDA_EVENTS_PENDING "
                           "-x FAKE_NCCL_ASYNC_ERROR";
    cr_expect_neq(sh("cd '%s' && FAKE_CUDA_EVENTS_PENDING=1 %s '%s' --transport nccl --quick "
                     "--timeout 1 --out hung.csv >hung.out 2>hung.err",
                     dir, mpirun_1, ROOFLINE_CUDA_ALLREDUCE),
                  0);
    char *err = read_text(dir, "hung.err");
    cr_expect(strstr(err, "no answer from the other ranks for 1 s while the warm-up reductions: "
                          "a peer rank died or hangs (the limit is --timeout)"),
              "%s", err);
    cr_expect_neq(sh("cd '%s' && FAKE_CUDA_EVENTS_PENDING=1 FAKE_NCCL_ASYNC_ERROR=1 %s '%s' "
                     "--transport nccl --quick --out lost.csv >lost.out 2>lost.err",
                     dir, mpirun_1, ROOFLINE_CUDA_ALLREDUCE),
                  0);
    err = read_text(dir, "lost.err");
    cr_expect(strstr(err, "NCCL asynchronous error while the warm-up reductions: remote process "
                          "exited or there was a network error"),
              "%s", err);
    /* ncclCommInitRank waiting for a peer that never comes: the guard thread
     * ends the rank (not timeout's 124) */
    const char *mpirun_hang = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                              "FAKE_NCCL_INIT_HANG=1 timeout 120 mpirun --bind-to none -np 1 "
                              "-x FAKE_NCCL_INIT_HANG";
    int status = sh("cd '%s' && %s '%s' --transport nccl --quick --timeout 1 --out init.csv "
                    ">init.out 2>init.err",
                    dir, mpirun_hang, ROOFLINE_CUDA_ALLREDUCE);
    err = read_text(dir, "init.err");
    cr_expect(status != 0 && status != 124, "exit %d: %s", status, err);
    cr_expect(strstr(err, "no answer from the other ranks for 10 s while creating the NCCL "
                          "communicator (given 10 x the timeout): a peer rank died or hangs (the "
                          "limit is --timeout)"),
              "%s", err);
    remove_temp_dir(dir);
}
#endif

/* The emulated bin/train as one NCCL rank under mpirun, SMALL with
 * --ddp-timeout 1 and args, the stand-ins' switch `fake`=value exported to
 * it: its exit status (timeout's 124 after 200 s), dir/ddp.out and ddp.err. */
static int one_nccl_rank(const char *dir, const char *fake, const char *value, const char *args)
{
    return sh("cd '%s' && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 %s=%s "
              "timeout 200 mpirun --bind-to none -np 1 -x %s '%s' " SMALL " --backend cuda "
              "--warmup 0 --ddp --ddp-timeout 1 --out steps.csv %s >ddp.out 2>ddp.err",
              dir, fake, value, fake, ROOFLINE_CUDA_TRAIN, args);
}

/* A GPU behind the host (the stand-in's stream timelines: 20 ms a kernel, a
 * step of resnet18-cifar some seconds, its own communication 2.5 s of them)
 * and --ddp-timeout 1: the watchdog's clock for a bucket's reduction starts
 * when the GPU has packed that bucket, so neither a step nor the rank's own
 * communication longer than the timeout is a lost peer. */
Test(cuda_train_emu, nccl_ddp_step_longer_than_the_timeout_is_no_lost_peer, .timeout = 600)
{
    if (sh("command -v mpirun >/dev/null") != 0)
        cr_skip_test("no mpirun");
    char *dir = temp_dir();
    cr_expect_eq(one_nccl_rank(dir, "FAKE_CUDA_KERNEL_MS", "20", "--iters 2"), 0, "%s",
                 read_text(dir, "ddp.err"));
    double ms[4];
    cr_assert_eq(read_rank0(dir, "steps.csv", "step_ms", ms, 4), 2, "%s",
                 read_text(dir, "steps.csv"));
    for (int i = 0; i < 2; i++)
        cr_expect_gt(ms[i], 1500.0, "step %d took %.0f ms of device time: not over the timeout",
                     i, ms[i]);
    remove_temp_dir(dir);
}

/* One NCCL rank of bin/train --ddp with the stand-ins' switch `fake`=1,
 * which must end on its own (not timeout's 124) with one line naming the
 * rank and holding `line` (and `more`, where not NULL). */
static void nccl_rank_ends_with(const char *fake, const char *line, const char *more)
{
    if (sh("command -v mpirun >/dev/null") != 0)
        cr_skip_test("no mpirun");
    char *dir = temp_dir();
    int status = one_nccl_rank(dir, fake, "1", "--iters 1");
    char *err = read_text(dir, "ddp.err");
    cr_expect(status != 0 && status != 124, "exit %d: %s", status, err);
    cr_expect(strstr(err, "train: rank 0 of 1 (") != NULL, "%s", err);
    cr_expect(strstr(err, line) && (!more || strstr(err, more)), "%s", err);
    remove_temp_dir(dir);
}

/* bin/train --ddp over NCCL: an asynchronous error (a peer lost, as NCCL
 * reports it) ends the rank with one line, whether the watchdog or the
 * step's end sees it first. */
Test(cuda_train_emu, nccl_ddp_asynchronous_error_ends_the_rank, .timeout = 300)
{
    nccl_rank_ends_with("FAKE_NCCL_ASYNC_ERROR", "NCCL asynchronous error while ",
                        ": remote process exited or there was a network error");
}

/* bin/train --ddp over NCCL: reductions that never complete (a peer lost
 * mid-step, as the GPU shows it: NCCL's kernel spins, its stream's events
 * stay pending) end the rank with one line, within --ddp-timeout of the
 * first bucket being packed, rather than a hang in the step's sync. */
Test(cuda_train_emu, nccl_ddp_reductions_that_never_end_are_a_lost_peer, .timeout = 300)
{
    nccl_rank_ends_with("FAKE_NCCL_HANG",
                        "no answer from the other ranks for 1 s while reducing gradient bucket 1 "
                        "of 3: a peer rank died or hangs (the limit is --ddp-timeout); NCCL "
                        "communicator aborted",
                        NULL);
}

/* bin/train --ddp over NCCL: a call that never returns (NCCL connecting
 * the peers inside the first reduction, one of them hung) ends the rank
 * within --ddp-timeout, without ncclCommAbort (the main thread is inside an
 * NCCL call on that communicator). */
Test(cuda_train_emu, nccl_ddp_a_reduction_call_that_never_returns_ends_the_rank, .timeout = 300)
{
    if (sh("command -v mpirun >/dev/null") != 0)
        cr_skip_test("no mpirun");
    char *dir = temp_dir();
    int status = one_nccl_rank(dir, "FAKE_NCCL_CONNECT_HANG", "1", "--iters 1");
    char *err = read_text(dir, "ddp.err");
    cr_expect(status != 0 && status != 124, "exit %d: %s", status, err);
    cr_expect(strstr(err, "no answer from the other ranks for 1 s while reducing gradient "
                          "bucket 1 of 3: a peer rank died or hangs") &&
                  !strstr(err, "communicator aborted"),
              "%s", err);
    remove_temp_dir(dir);
}

/* bin/train --ddp over NCCL: a communicator that is never made (a peer lost
 * after the unique id's broadcast) ends the rank with one line naming it,
 * after 10 x --ddp-timeout (a guard thread bounds the blocking call). */
Test(cuda_train_emu, nccl_ddp_communicator_creation_is_bounded, .timeout = 300)
{
    nccl_rank_ends_with("FAKE_NCCL_INIT_HANG",
                        "no answer from the other ranks for 10 s while creating the NCCL "
                        "communicator (given 10 x the timeout): a peer rank died or hangs (the "
                        "limit is --ddp-timeout)",
                        NULL);
}

/* make bench of a cuda row, end to end, with the emulated bin/train beside
 * the real programs: the runs, the trace pass with the metric pass on the
 * stand-in profiler (counters permitted), the analysis and the report's GPU
 * sections and figures over counted kernels; the configuration eager and
 * replayed from a CUDA graph (graph `off, on`), the graph's repeats without
 * a trace pass of their own, side by side in the report. Peaks off: the host
 * has no GPU to measure (bin/peaks --gpu is make test-gpu's). */
Test(cuda_train_emu, bench_of_a_cuda_row_end_to_end, .timeout = 600)
{
    char *dir = temp_dir();
    write_text(dir, "matrix.md",
               "| ENV | backend | models | res | batch | precision | graph | warmup | iters | "
               "repeats | ranks | counters | peaks |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
               "| emu | cuda | resnet18-cifar@16/4 | - | - | bf16 | off, on | 1 | 2 | 2 | - | cupti "
               "| off |\n");
    /* PyTorch beside it: the stand-in of tests/fakes (a GPU's flags, both modes) */
    int status = sh("cd '%s' && mkdir bin && ln -s '%s'/* bin/ && ln -sf '%s' bin/train && "
                    "ln -s '%s/tests/fakes/pytorch_ref_fake.sh' python3 && "
                    "FAKE_CUPTI_PROFILER_ERROR=0 PY=\"$PWD/python3\" '%s/scripts/bench.sh' emu "
                    "MATRIX=matrix.md RUNS_DIR=runs BIN=bin >bench.out 2>&1",
                    dir, ROOFLINE_BIN_DIR, ROOFLINE_CUDA_TRAIN, ROOFLINE_SOURCE_DIR,
                    ROOFLINE_SOURCE_DIR);
    char *out = read_text(dir, "bench.out");
    cr_assert_eq(status, 0, "%s", out);
    cr_expect(strstr(out, "(5 runs ok)") != NULL, "%s", out);
    cr_expect(strstr(out, "a graph configuration's trace is its eager twin's") != NULL, "%s", out);
    cr_expect(strstr(out, "configuration 2 of 2, repeat 1 of 2 (run 4 of 5): resnet18-cifar res 16 "
                          "batch 4 bf16 graph;") != NULL,
              "%s", out);
    cr_assert_eq(sh("cd '%s' && ln -s runs/emu/2* run", dir), 0);
    cr_expect_eq(sh("cd '%s/run' && grep -q '(CUDA graph)' logs/*_bf16_graph.rep1.log && "
                    "! ls parts/*_graph.kernels.csv logs/*_graph.trace.log 2>/dev/null",
                    dir),
                 0, "the graph configuration did not replay a graph, or was traced");
    /* the first repeat searched the convolution algorithms, the second and the
     * trace pass took its choices */
    cr_expect_eq(sh("cd '%s/run' && test -s algos.csv && grep -q ', 11 searched' logs/*.rep1.log "
                    "&& grep -q ', 0 searched' logs/*.rep2.log && grep -q ', 0 searched' "
                    "logs/*.trace.log",
                    dir),
                 0, "algos.csv was not reused");

    run_model model;
    char err[512], run[1024];
    format_or_fail(run, sizeof run, "%s/run", dir);
    cr_assert_eq(run_load(&model, run, RUN_STEPS | RUN_KERNELS | RUN_CONFIGS,
                          RUN_STEPS | RUN_KERNELS | RUN_CONFIGS, err, sizeof err),
                 RUN_LOAD_OK, "%s", err);
    cr_assert_eq(model.n_steps, 2, "eager and graph are two configurations");
    cr_expect_str_eq(model.steps[0].key.backend, "cuda");
    cr_expect(!model.steps[0].key.graph && model.steps[1].key.graph);
    cr_expect_eq(model.steps[0].repeats, 2);
    cr_expect_eq(model.steps[1].repeats, 2);
    int graph_attempts = 0;
    for (int i = 0; i < model.n_attempts; i++)
        graph_attempts += model.attempts[i].graph;
    cr_expect_eq(graph_attempts, 2, "configs.csv: the graph configuration's two repeats");
    cr_expect_eq(model.n_traces, 1);
    cr_expect_gt(model.traces[0].n, 100, "%d kernel rows", model.traces[0].n);
    run_free(&model);

    /* one eager and one graph process, each with a GPU's flags */
    char *pylog = read_text(dir, "python.log");
    cr_expect(strstr(pylog, "--device cuda") && strstr(pylog, "--channels-last") &&
                  strstr(pylog, "--mode eager") && strstr(pylog, "--mode graph"),
              "%s", pylog);
    free(pylog);
    char *ref = read_text(run, "reference.csv");
    cr_expect(strstr(ref, "\nemu,pytorch-9.9-stand-in,resnet18-cifar,16,4,bf16,1,0,0,1,500,8,2.3,"
                          "1048576,off\n") &&
                  strstr(ref, "\nemu,pytorch-9.9-stand-in,resnet18-cifar,16,4,bf16,1,0,0,1,500,8,"
                              "2.3,1048576,on\n"),
              "%s", ref);
    free(ref);

    char *md = read_text(run, "report.md");
    cr_expect(strstr(md, "\n## Against PyTorch\n") != NULL, "%s", md);
    cr_expect(strstr(md, "| resnet18-cifar | 16 | 4 | bf16 graph | ") != NULL &&
                  strstr(md, "| 8.00 |") != NULL,
              "the graph configuration beside PyTorch's graph: %s", md);
    static const char *const sections[] = {"## GPU: hierarchical roofline",
                                           "## GPU: step time by layer type and phase",
                                           "## GPU: counters against the cost model"};
    for (size_t i = 0; i < sizeof sections / sizeof *sections; i++)
        cr_expect(strstr(md, sections[i]) != NULL, "report.md has no '%s'", sections[i]);
    cr_expect(strstr(md, "(FLOPs and bytes: cupti)") != NULL, "the kernels were not counted");
    cr_expect(strstr(md, "| resnet18-cifar | 16 | 4 | bf16 graph |") != NULL,
              "no graph row in the results");
    cr_expect(strstr(md, "CUDA graph against eager launches (images/s, median over the repeats): "
                         "resnet18-cifar @16 b4 bf16 ") != NULL,
              "no graph finding");
    /* the throughput figure draws the graph configuration as a series of its own */
    char *vars = read_text(run, "figures/data/throughput_bf16.vars");
    cr_expect(strstr(vars, "series_name_1 = \"resnet18-cifar\"") &&
                  strstr(vars, "series_name_2 = \"resnet18-cifar (graph)\""),
              "%s", vars);
    /* the cuDNN stand-in's counts are the convolutions' analytic FLOPs; the
     * backend's own kernels, whose instructions the emulator does not count,
     * read 0 and are the findings' disagreements */
    cr_expect(strstr(md, "| conv | 20 | 60 | 3.33 | 3.33 | 1.00x |") != NULL,
              "no counted convolutions at 1.00x of their analytic FLOPs");
    cr_expect(strstr(md, "disagree by more than 2x in 80 layer passes (update FLOPs 0x") != NULL,
              "the own kernels' zero counts are not findings");
    if (have_gnuplot()) {
        char *log = read_text(run, "figures/gnuplot.log");
        cr_expect_str_empty(log, "gnuplot: %s", log);
        uint32_t w, h;
        char png[1200];
        format_or_fail(png, sizeof png, "%s/figures/roofline_hier_resnet18-cifar_16_b4_bf16.png",
                       run);
        png_size(png, &w, &h);
        cr_expect(w == 1200 && h == 800, "%s is %ux%u", png, w, h);
    }
    remove_temp_dir(dir);
}

#else

Test(cuda_train_emu, needs_the_emulated_train)
{
    cr_skip_test("the emulated bin/train needs the CUDA toolkit, CUPTI, NCCL and MPI");
}

#endif
