/* bin/train --trace and the CPU's FLOP counters: the traced step's rows add
 * up to the analytic step, and the counters fail over to the analytic model
 * with one line where the PMU is closed (as on most virtual machines). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../counters/perf.h"
#include "../counters/step_trace.h"
#include "helpers.h"

#ifdef HAVE_DNNL
typedef struct {
    int rows, loss_rows, by_phase[PASS_COUNT];
    long long flops, bytes;     /* of the operations' rows */
    int layout_rows;            /* oneDNN's reorders, each after its operation's row */
    int misplaced_layout_rows;  /* not right after a conv or fc row of its layer and phase */
    long long layout_flops, layout_bytes, layout_ns, ns;
    int nonpositive_durations;
    int bn_act_rows;            /* kernel omp:bn_relu*_<pass>: a batch norm applying its ReLU */
    int add_act_rows;           /* omp:add_relu*_<pass>: an add applying it */
    char source[32];
} kernels_totals;

/* Runs "bin/train <args> --trace <new folder>/kernels.csv", which must
 * succeed; its stdout or stderr (want_stderr) into out. Returns the folder. */
static char *train_traced(const char *args, int want_stderr, char *out, size_t len)
{
    char *dir = temp_dir();
    char cmd[512];
    format_or_fail(cmd, sizeof cmd, "train %s --backend cpu --trace %s/kernels.csv", args, dir);
    cr_assert_eq(run_bin(cmd, want_stderr, out, len), 0, "%s", out);
    return dir;
}

/* Sums dir/kernels.csv written by one traced step; checks its shape on the way. */
static kernels_totals read_kernels(const char *dir)
{
    char path[512];
    format_or_fail(path, sizeof path, "%s/kernels.csv", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[1024];
    cr_assert_not_null(fgets(line, sizeof line, f));
    line[strcspn(line, "\n")] = '\0';
    cr_assert_str_eq(line, KERNELS_CSV_HEADER);
    kernels_totals t = {0};
    char prev_layer[128] = "", prev_phase[32] = "", prev_kernel[160] = "";
    while (fgets(line, sizeof line, f)) {
        char *field[21];
        int n = 0;
        line[strcspn(line, "\n")] = '\0';
        /* split by hand: strtok would merge the empty l2 and l1 fields */
        for (char *p = line; n < 21; n++) {
            field[n] = p;
            char *comma = strchr(p, ',');
            if (!comma) {
                n++;
                break;
            }
            *comma = '\0';
            p = comma + 1;
        }
        cr_assert_eq(n, 21, "row %d has %d fields", t.rows, n);
        long long duration = atoll(field[11]);
        long long flops = atoll(field[12]) + atoll(field[13]) + atoll(field[14]) + atoll(field[15]);
        long long bytes = atoll(field[16]) + atoll(field[17]);
        t.ns += duration;
        snprintf(t.source, sizeof t.source, "%s", field[20]);
        cr_expect_eq(atoi(field[6]), t.rows, "seq counts the rows");
        t.rows++;
        if (!strcmp(field[9], "reorder")) {
            t.layout_rows++;
            t.layout_flops += flops;
            t.layout_bytes += bytes;
            t.layout_ns += duration;
            t.misplaced_layout_rows += strcmp(field[8], prev_layer) || strcmp(field[10], prev_phase) ||
                                       strncmp(prev_kernel, "dnnl:", 5) || bytes <= 0 ||
                                       strcmp(field[7], "dnnl:reorder");
            prev_layer[0] = '\0';
            continue;
        }
        t.nonpositive_durations += duration <= 0;
        t.flops += flops;
        t.bytes += bytes;
        snprintf(prev_layer, sizeof prev_layer, "%s", field[8]);
        snprintf(prev_phase, sizeof prev_phase, "%s", field[10]);
        snprintf(prev_kernel, sizeof prev_kernel, "%s", field[7]);
        if (!strcmp(field[10], "loss"))
            t.loss_rows++;
        t.bn_act_rows += !strncmp(field[7], "omp:bn_relu", 11);
        t.add_act_rows += !strncmp(field[7], "omp:add_relu", 12);
        for (int p = 0; p < PASS_COUNT; p++)
            t.by_phase[p] += !strcmp(field[10], pass_name(p));
    }
    fclose(f);
    return t;
}

Test(trace, rows_add_up_to_the_analytic_step, .timeout = 120)
{
    char out[4096];
    /* every layer its own operation: one row per layer and pass */
    char *dir = train_traced("--model mobilenet_v2-cifar --batch 2 --warmup 1 --iters 2 "
                             "--threads 1 --counters analytic --env test --no-fusion",
                             0, out, sizeof out);
    cr_expect(strstr(out, "of the median untraced step"), "%s", out);
    kernels_totals t = read_kernels(dir);
    network net = build_or_fail("mobilenet_v2-cifar", 32, 10);
    int expect[PASS_COUNT] = {0};
    for (int i = 0; i < net.n_layers; i++) {
        const layer *l = &net.layers[i];
        expect[PASS_FWD]++;
        expect[PASS_BWD_DATA] += l->computes_input_grad;
        expect[PASS_BWD_WEIGHTS] += l->params > 0;
        expect[PASS_UPDATE] += l->params > 0;
    }
    for (int p = 0; p < PASS_COUNT; p++)
        cr_expect_eq(t.by_phase[p], expect[p], "%s rows", pass_name(p));
    cr_expect_eq(t.loss_rows, 1);
    step_cost cost = cost_step(&net, 2, PREC_FP32, NULL);
    cr_expect_eq(t.flops, cost.step_flops, "FLOPs of the rows %lld, of the step %lld", t.flops,
                 (long long)cost.step_flops);
    cr_expect_eq(t.bytes, cost.step_bytes, "bytes of the rows");
    cr_expect_eq(t.nonpositive_durations, 0);
    cr_expect_str_eq(t.source, "analytic");
    /* oneDNN's reorders: rows of their own, after the conv or fc operation
     * that ran them, with no FLOPs and the bytes of the tensors they moved */
    cr_expect_eq(t.misplaced_layout_rows, 0);
    cr_expect_eq(t.layout_flops, 0);
    cr_expect(t.layout_ns < t.ns);
    if (t.layout_rows > 0)
        cr_expect(strstr(out, "in the layout conversions of") != NULL, "%s", out);
    net_free(&net);
    remove_temp_dir(dir);
}

/* With the ReLU/ReLU6 after a batch norm or a residual add done by that
 * layer's loops, the activations have no rows of their own; the layer's rows
 * carry their FLOPs, and the bytes of the step are the analytic ones less the
 * activations' passes over their tensors, which no longer happen, plus the
 * fused add's backward reading its output for the mask. */
static void expect_fused_rows(const char *model, int min_bn, int min_add)
{
    char out[4096], args[256];
    format_or_fail(args, sizeof args,
                   "--model %s --batch 2 --warmup 1 --iters 2 --threads 1 --counters analytic "
                   "--env test",
                   model);
    char *dir = train_traced(args, 0, out, sizeof out);
    kernels_totals t = read_kernels(dir);
    network net = build_or_fail(model, 32, 10);
    int fused_bn = 0, fused_add = 0, layers_fwd = 0, layers_bwd = 0;
    int64_t saved = 0;
    for (int i = 0; i < net.n_layers; i++) {
        const layer *l = &net.layers[i];
        layers_fwd++;
        layers_bwd += l->computes_input_grad;
        int consumer, by = l->inputs[0];
        if ((l->type != LAYER_RELU && l->type != LAYER_RELU6) || by == GRAPH_INPUT ||
            net_consumers(&net, by, &consumer, 1) != 1)
            continue;
        layer_type t_by = net.layers[by].type;
        if (t_by != LAYER_BN && t_by != LAYER_ADD)
            continue;
        layer_cost c = cost_layer(&net, i, 2, PREC_FP32);
        saved += c.bytes[PASS_FWD] + c.bytes[PASS_BWD_DATA];
        if (t_by == LAYER_ADD)
            saved -= 4 * (int64_t)backend_buffer_elems(&net, by, 2, BUF_OUTPUT);
        fused_bn += t_by == LAYER_BN;
        fused_add += t_by == LAYER_ADD;
    }
    int fused = fused_bn + fused_add;
    cr_expect_geq(fused_bn, min_bn, "%s: batch norms with their activation", model);
    cr_expect_geq(fused_add, min_add, "%s: adds with their activation", model);
    cr_expect_eq(t.bn_act_rows, 3 * fused_bn, "rows named omp:bn_relu*_<pass>");
    cr_expect_eq(t.add_act_rows, 2 * fused_add, "rows named omp:add_relu*_<pass>");
    cr_expect_eq(t.by_phase[PASS_FWD], layers_fwd - fused, "forward rows");
    cr_expect_eq(t.by_phase[PASS_BWD_DATA], layers_bwd - fused, "backward-data rows");
    step_cost cost = cost_step(&net, 2, PREC_FP32, NULL);
    cr_expect_eq(t.flops, cost.step_flops, "FLOPs of the rows %lld, of the step %lld", t.flops,
                 (long long)cost.step_flops);
    cr_expect_eq(t.bytes, cost.step_bytes - saved, "bytes of the rows %lld, analytic %lld, "
                 "the activations' %lld", t.bytes, (long long)cost.step_bytes, (long long)saved);
    net_free(&net);
    remove_temp_dir(dir);
}

Test(trace, fused_activations_are_booked_on_their_batch_norm, .timeout = 120)
{
    expect_fused_rows("mobilenet_v2-cifar", 31, 0);
}

Test(trace, fused_activations_are_booked_on_their_add, .timeout = 120)
{
    expect_fused_rows("resnet18-cifar", 8, 8);
}

Test(trace, counters_fail_over_with_one_line, .timeout = 120)
{
    char err[4096];
    char *dir = train_traced("--model resnet18-cifar --batch 2 --warmup 0 --iters 1 --threads 1",
                             1, err, sizeof err);
    char why[240];
    perf_fp *p = perf_fp_open(why, sizeof why);
    kernels_totals t = read_kernels(dir);
    if (p) {
        cr_expect_str_eq(t.source, "perf");
        cr_expect(t.flops > 0);
    } else {
        cr_expect_str_eq(t.source, "analytic");
        cr_expect_eq(count_lines(err), 1, "one line: %s", err);
        cr_expect(strstr(err, "FLOPs from the analytic model") && strstr(err, why), "%s", err);
    }
    perf_fp_close(p);
    remove_temp_dir(dir);
}

Test(trace, bad_counters_option)
{
    expect_usage_error("train --model resnet18 --counters papi", "--counters: unknown 'papi'");
    expect_usage_error("train --model resnet18 --backend cpu --counters cupti",
                       "cupti needs the cuda backend");
}
#endif /* HAVE_DNNL */

/* Where the PMU is open, a known loop of dependent multiply-adds counts
 * 2 FLOPs per iteration (an FMA counts twice on Intel and AMD alike). */
Test(perf, counts_a_known_loop_or_says_why)
{
    char why[240] = "";
    perf_fp *p = perf_fp_open(why, sizeof why);
    if (!p) {
        cr_expect(strlen(why) > 10, "a reason: '%s'", why);
        cr_skip_test("no FLOP counters here: %s", why);
    }
    perf_fp_counts before, after;
    cr_assert_eq(perf_fp_read(p, &before, why, sizeof why), 0, "%s", why);
    volatile double seed = 1.0;
    double x = seed, a = 0.999999, b = 1e-7;
    enum { ITERS = 10000000 };
    for (int i = 0; i < ITERS; i++)
        x = x * a + b;
    volatile double sink = x;
    (void)sink;
    cr_assert_eq(perf_fp_read(p, &after, why, sizeof why), 0, "%s", why);
    long long counted = (after.fp64 - before.fp64) + (after.fp32 - before.fp32) +
                        (after.unsplit - before.unsplit);
    cr_expect(counted >= 2LL * ITERS && counted < 2LL * ITERS * 11 / 10,
              "%lld FLOPs counted for %d multiply-adds (%s)", counted, ITERS, perf_fp_events(p));
    perf_fp_close(p);
}
