/* The analysis stage (analysis/, bin/analyze) on small hand-made run files
 * whose answers were worked out by hand; each expected value says how. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../analysis/analyze.h"
#include "../analysis/csv.h"
#include "../analysis/outputs.h"
#include "../analysis/roofline.h"
#include "../analysis/roofline_table.h"
#include "../analysis/roofs.h"
#include "../analysis/run_load.h"
#include "../analysis/stats.h"
#include "../analysis/summary.h"
#include "../analysis/variability.h"
#include "helpers.h"

#define NEAR(got, want, tol) cr_expect(fabs((got) - (want)) <= (tol), "%s = %.9g, want %.9g", #got, (double)(got), (double)(want))

static csv_table *read_ok(const char *dir, const char *name)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    csv_table *t = csv_read(path, err, sizeof err);
    cr_assert_not_null(t, "%s", err);
    return t;
}

/* The row of t whose column `col` holds `value` (and `col2` `value2`, when given). */
static int find_row(const csv_table *t, const char *col, const char *value, const char *col2,
                    const char *value2)
{
    for (int i = 0; i < csv_rows(t); i++)
        if (strcmp(csv_cell(t, i, csv_col(t, col)), value) == 0 &&
            (!col2 || strcmp(csv_cell(t, i, csv_col(t, col2)), value2) == 0))
            return i;
    cr_assert_fail("no row with %s = %s", col, value);
    return -1;
}

static double num(const csv_table *t, int row, const char *col)
{
    return csv_num(t, row, csv_col(t, col), NULL);
}

static const char *cell(const csv_table *t, int row, const char *col)
{
    return csv_cell(t, row, csv_col(t, col));
}

/* ---- csv ---------------------------------------------------------------- */

Test(analysis_csv, quoting_crlf_and_blank_lines)
{
    char *dir = temp_dir();
    write_text(dir, "a.csv",
               "name,notes,value\r\n"
               "x,\"a, b\",1.5\r\n"
               "\n"
               "y,\"say \"\"hi\"\"\nand more\",\r\n"
               "z,plain,2e3"); /* no newline at the end */
    csv_table *t = read_ok(dir, "a.csv");
    cr_expect_eq(csv_rows(t), 3);
    cr_expect_eq(csv_cols(t), 3);
    cr_expect_eq(csv_col(t, "value"), 2);
    cr_expect_eq(csv_col(t, "nope"), -1);
    cr_expect_str_eq(csv_cell(t, 0, 1), "a, b");
    cr_expect_str_eq(csv_cell(t, 1, 1), "say \"hi\"\nand more");
    cr_expect_str_eq(csv_cell(t, 1, 2), "");
    cr_expect_str_eq(csv_cell(t, 9, 0), "", "out of range reads as empty");
    cr_expect_str_eq(csv_cell(t, 0, -1), "");
    cr_expect_eq(csv_line(t, 2), 6, "z starts on line 6 (the quoted newline counts)");
    bool ok;
    cr_expect_eq(csv_num(t, 0, 2, &ok), 1.5);
    cr_expect(ok);
    cr_expect_eq(csv_num(t, 2, 2, &ok), 2000);
    cr_expect(isnan(csv_num(t, 1, 2, &ok)) && !ok, "empty is not a number");
    cr_expect(isnan(csv_num(t, 2, 1, &ok)) && !ok, "'plain' is not a number");
    double v;
    char err[256];
    cr_expect_eq(csv_get_num(t, 1, 2, "a.csv", false, &v, err, sizeof err), 0);
    cr_expect(isnan(v));
    cr_expect_eq(csv_get_num(t, 1, 2, "a.csv", true, &v, err, sizeof err), -1);
    cr_expect_str_eq(err, "a.csv:4: empty value");
    cr_expect_eq(csv_get_num(t, 2, 1, "a.csv", false, &v, err, sizeof err), -1);
    cr_expect_str_eq(err, "a.csv:6: notes 'plain' is not a number");
    csv_free(t);
    remove_temp_dir(dir);
}

Test(analysis_csv, errors_name_the_file_and_line)
{
    char *dir = temp_dir(), path[512], err[512];
    write_text(dir, "ragged.csv", "a,b,c\n1,2,3\n\"x\ny\",2,3\n4,5\n");
    snprintf(path, sizeof path, "%s/ragged.csv", dir);
    cr_expect_null(csv_read(path, err, sizeof err));
    cr_expect(strstr(err, "ragged.csv:5: 2 fields, header has 3"), "%s", err);

    write_text(dir, "open.csv", "a,b\n1,\"open\n");
    snprintf(path, sizeof path, "%s/open.csv", dir);
    cr_expect_null(csv_read(path, err, sizeof err));
    cr_expect(strstr(err, "open.csv:2: unterminated quoted field"), "%s", err);

    write_text(dir, "empty.csv", "");
    snprintf(path, sizeof path, "%s/empty.csv", dir);
    cr_expect_null(csv_read(path, err, sizeof err));
    cr_expect(strstr(err, "empty.csv: empty file"), "%s", err);

    snprintf(path, sizeof path, "%s/missing.csv", dir);
    cr_expect_null(csv_read(path, err, sizeof err));
    cr_expect(strstr(err, "missing.csv: cannot open"), "%s", err);
    remove_temp_dir(dir);
}

Test(analysis_csv, writer_quotes_and_commits_atomically)
{
    char *dir = temp_dir(), path[512], tmp[600], err[256];
    snprintf(path, sizeof path, "%s/out.csv", dir);
    FILE *f = csv_create(path, tmp, sizeof tmp, err, sizeof err);
    cr_assert_not_null(f, "%s", err);
    cr_expect(strstr(tmp, "out.csv.tmp"));
    fputs("a,b,c,d\n", f);
    csv_put_field(f, "plain");
    fputc(',', f);
    csv_put_field(f, "with, comma");
    fputc(',', f);
    csv_put_field(f, "q\"uote");
    fputc(',', f);
    csv_put_num(f, NAN);
    fputc('\n', f);
    cr_expect_neq(access(path, F_OK), 0, "nothing at the final name before the commit");
    cr_assert_eq(csv_commit(f, tmp, path, err, sizeof err), 0, "%s", err);
    cr_expect_neq(access(tmp, F_OK), 0, "the temporary file is renamed");
    csv_table *t = read_ok(dir, "out.csv");
    cr_expect_str_eq(csv_cell(t, 0, 1), "with, comma");
    cr_expect_str_eq(csv_cell(t, 0, 2), "q\"uote");
    cr_expect_str_eq(csv_cell(t, 0, 3), "", "NaN writes an empty cell");
    csv_free(t);

    snprintf(path, sizeof path, "%s/no/such/dir/out.csv", dir);
    cr_expect_null(csv_create(path, tmp, sizeof tmp, err, sizeof err));
    cr_expect(strstr(err, "cannot write") && strstr(err, "out.csv.tmp"), "%s", err);
    remove_temp_dir(dir);
}

/* ---- stats -------------------------------------------------------------- */

Test(analysis_stats, known_sample)
{
    /* sorted: 2 4 4 4 5 5 7 9; mean 5, sum of squares 32, sample var 32/7;
     * type 7: q1 at h = 1.75 -> 4, median at 3.5 -> 4.5, q3 at 5.25 -> 5 + 0.25 x 2 = 5.5;
     * fences 4 - 2.25 = 1.75 and 5.5 + 2.25 = 7.75: only 9 is out;
     * n = 8: P(B <= 0) = 1/256 <= 0.025 < P(B <= 1) = 9/256, so k = 1: [2, 9];
     * drift: fifths of 1 point, first 2, last 9: +350% */
    const double x[] = {2, 4, 4, 4, 5, 5, 7, 9};
    stats_summary s;
    cr_assert_eq(stats_describe(x, 8, &s), 0);
    cr_expect_eq(s.n, 8);
    NEAR(s.mean, 5, 1e-12);
    NEAR(s.stddev, sqrt(32.0 / 7), 1e-12);
    NEAR(s.cv, sqrt(32.0 / 7) / 5, 1e-12);
    NEAR(s.q1, 4, 1e-12);
    NEAR(s.median, 4.5, 1e-12);
    NEAR(s.q3, 5.5, 1e-12);
    cr_expect_eq(s.min, 2);
    cr_expect_eq(s.max, 9);
    cr_expect_eq(s.ci95_lo, 2);
    cr_expect_eq(s.ci95_hi, 9);
    cr_expect_eq(s.outliers, 1);
    NEAR(s.drift_pct, 350, 1e-9);
}

Test(analysis_stats, quantiles_interpolate_linearly)
{
    /* numpy.percentile([1, 2, 3, 4], [25, 50, 75]) = 1.75, 2.5, 3.25 */
    const double x[] = {1, 2, 3, 4};
    NEAR(stats_quantile_sorted(x, 4, 0.25), 1.75, 1e-12);
    NEAR(stats_quantile_sorted(x, 4, 0.5), 2.5, 1e-12);
    NEAR(stats_quantile_sorted(x, 4, 0.75), 3.25, 1e-12);
    cr_expect_eq(stats_quantile_sorted(x, 4, 0), 1);
    cr_expect_eq(stats_quantile_sorted(x, 4, 1), 4);
    cr_expect_eq(stats_quantile_sorted(x, 1, 0.25), 1);
    cr_expect(isnan(stats_quantile_sorted(x, 0, 0.5)));
}

Test(analysis_stats, median_interval_ranks)
{
    /* P(B <= k-1) for B ~ Bin(n, 1/2): n = 5: 1/32 > 0.025, none;
     * n = 6: 1/64 -> k = 1; n = 10: 11/1024 <= 0.025 < 56/1024 -> k = 2;
     * n = 20: 21700/2^20 = 0.0207 <= 0.025 < 60460/2^20 -> k = 6 */
    cr_expect_eq(stats_median_ci_rank(5), 0);
    cr_expect_eq(stats_median_ci_rank(6), 1);
    cr_expect_eq(stats_median_ci_rank(10), 2);
    cr_expect_eq(stats_median_ci_rank(20), 6);
    /* large n: the normal approximation n/2 - 1.96 sqrt(n)/2 = 469; no underflow */
    int k = stats_median_ci_rank(1000);
    cr_expect(k >= 468 && k <= 470, "k = %d", k);
    cr_expect(stats_median_ci_rank(5000) > 2000);

    const double five[] = {1, 2, 3, 4, 5};
    stats_summary s;
    cr_assert_eq(stats_describe(five, 5, &s), 0);
    cr_expect(isnan(s.ci95_lo) && isnan(s.ci95_hi), "no interval below n = 6");
    const double ten[] = {10, 1, 9, 2, 8, 3, 7, 4, 6, 5};
    cr_assert_eq(stats_describe(ten, 10, &s), 0);
    cr_expect_eq(s.ci95_lo, 2, "x(2)");
    cr_expect_eq(s.ci95_hi, 9, "x(9)");
}

Test(analysis_stats, drift_uses_the_medians_of_the_fifths)
{
    /* n = 10: fifths of 2; first {12, 10} -> 11, last {8, 9} -> 8.5: -22.727...% */
    const double x[] = {12, 10, 5, 5, 5, 5, 5, 5, 8, 9};
    NEAR(stats_drift_pct(x, 10), 100.0 * (8.5 - 11) / 11, 1e-9);
    cr_expect(isnan(stats_drift_pct(x, 4)), "no fifth below n = 5");
}

Test(analysis_stats, small_and_empty_samples)
{
    stats_summary s;
    const double one[] = {3};
    cr_assert_eq(stats_describe(one, 1, &s), 0);
    cr_expect_eq(s.median, 3);
    cr_expect(isnan(s.stddev) && isnan(s.cv), "no spread from one value");
    cr_expect_eq(s.outliers, 0);
    cr_assert_eq(stats_describe(one, 0, &s), 0);
    cr_expect_eq(s.n, 0);
    cr_expect(isnan(s.mean) && isnan(s.median) && isnan(s.min));
}

/* ---- roofline ----------------------------------------------------------- */

/* DRAM roof 50 GB/s (dram_triad; the faster _1core row is one core's, not a
 * roof), L2 400, fp32 200 GFLOP/s: ridge 4 FLOP/byte. */
static const char *const peaks_csv =
    "env,device,ceiling,value,unit,method,spec_value,threads_or_sms,notes\n"
    "t,cpu,fp32_fma,200,GFLOP/s,m,,2,\"best of 3, pinned\"\n"
    "t,cpu,fp32_fma_1core,100,GFLOP/s,m,,1,\n"
    "t,cpu,fp64_fma,100,GFLOP/s,m,,2,\n"
    "t,cpu,dram_copy,40,GB/s,m,,2,\n"
    "t,cpu,dram_triad,50,GB/s,m,,2,\n"
    "t,cpu,dram_triad_1core,60,GB/s,m,,1,\n"
    "t,cpu,l2,400,GB/s,m,,2,\n"
    "t,cpu,l3,300,GB/s,m,,2,\n"
    "t,cpu,clock_ghz,3.5,GHz,m,,2,\n";

static const char *const kernels_header =
    "env,model,res,batch,precision,repeat,seq,kernel,layer,layer_type,phase,duration_ns,"
    "flops_fp64,flops_fp32,flops_fp16,flops_tensor,dram_read_bytes,dram_write_bytes,"
    "l2_bytes,l1_bytes,source\n";

/* One step of t/resnet18-cifar/32/8/fp32 (durations 1+2+1+1+1 = 6 ms):
 *  conv1   1e8 FLOP / 1e7 B = AI 10 > 4: compute; achieved 100, attainable 200 (50%)
 *  bn1     1e6 / 1e7 = AI 0.1 < 4: memory; achieved 0.5, attainable 5 (10%)
 *  relu    0 FLOP, 4e6 B: memory at AI 0, attainable 0; 4 GB/s of the 50 (8%)
 *  conv2   4e7 / 1e7 = AI 4, on the ridge: compute; achieved 40 (20%)
 *  fc      tensor FLOPs at fp32: no fp32_tensor ceiling -> unknown */
static const char *const kernels_rows =
    "t,resnet18-cifar,32,8,fp32,0,0,conv_fwd,conv1,conv,fwd,1000000,0,100000000,0,0,6000000,4000000,,,analytic\n"
    "t,resnet18-cifar,32,8,fp32,0,1,bn_fwd,bn1,bn,fwd,2000000,0,1000000,0,0,5000000,5000000,,,analytic\n"
    "t,resnet18-cifar,32,8,fp32,0,2,eltwise,relu,relu,fwd,1000000,0,0,0,0,2000000,2000000,,,analytic\n"
    "t,resnet18-cifar,32,8,fp32,0,3,conv_fwd,conv2,conv,fwd,1000000,0,40000000,0,0,5000000,5000000,,,analytic\n"
    "t,resnet18-cifar,32,8,fp32,0,4,gemm,fc,fc,fwd,1000000,0,0,0,1000000,50000,50000,,,perf\n";

/* dir/name holding header then rows. */
static void write_joined(const char *dir, const char *name, const char *header, const char *rows)
{
    char text[4096];
    format_or_fail(text, sizeof text, "%s%s", header, rows);
    write_text(dir, name, text);
}

/* The run folder dir loaded (the files of `want`); fails the test on error. */
static run_model load_ok(const char *dir, unsigned want)
{
    run_model m;
    char err[1024];
    cr_assert_eq(run_load(&m, dir, want, 0, err, sizeof err), RUN_LOAD_OK, "%s", err);
    return m;
}

/* The error run_load gives for dir (it must fail). */
static void load_error(const char *dir, unsigned want, char *err, size_t len)
{
    run_model m;
    cr_assert_neq(run_load(&m, dir, want, 0, err, len), RUN_LOAD_OK, "%s loaded", dir);
}

Test(analysis_roofline, roofs_from_peaks)
{
    char *dir = temp_dir(), err[512];
    write_text(dir, "peaks.csv", peaks_csv);
    run_model m = load_ok(dir, RUN_PEAKS);
    roofs r;
    roofs_init(&r, m.roofs, m.n_roofs);
    cr_expect_eq(r.dram_gbs, 50);
    cr_expect_eq(r.l2_gbs, 400);
    cr_expect_eq(roofs_peak(&r, "fp32_fma"), 200);
    cr_expect_eq(roofs_peak(&r, "fp64_fma"), 100);
    cr_expect(isnan(roofs_peak(&r, "bf16_tensor")));
    cr_expect(isnan(roofs_peak(&r, "clock_ghz")), "GHz is no compute roof");
    cr_expect_eq(m.roofs[0].rate, ROOF_RATE_COMPUTE);
    cr_expect_eq(m.roofs[4].level, MEM_DRAM);
    cr_expect(m.roofs[5].one_core);
    cr_expect_str_eq(m.roofs[0].notes, "best of 3, pinned");

    char buf[ROOF_CEILING_LEN];
    cr_expect_str_eq(roof_kernel_ceiling("bf16", 0, 5, 10, 0, buf), "fp16_fma");
    cr_expect_str_eq(roof_kernel_ceiling("bf16", 0, 5, 10, 1, buf), "bf16_tensor");
    cr_expect_str_eq(roof_kernel_ceiling("fp32", 7, 5, NAN, NAN, buf), "fp64_fma");
    cr_expect_str_eq(roof_kernel_ceiling("fp32", 0, 0, 0, 0, buf), "");
    cr_expect_str_eq(roofs_precision_ceiling(&r, "fp32", buf), "fp32_fma");
    cr_expect_str_eq(roofs_precision_ceiling(&r, "bf16", buf), "bf16_tensor");
    cr_expect_str_eq(roofs_precision_ceiling(&r, "fp16", buf), "fp16_fma",
                     "no fp16_tensor figure here");
    run_free(&m);

    write_text(dir, "peaks.csv", "env,device,value,unit\n");
    load_error(dir, RUN_PEAKS, err, sizeof err);
    cr_expect(strstr(err, "peaks.csv:1: no column 'ceiling' in the header"), "%s", err);

    write_text(dir, "peaks.csv",
               "ceiling,value,unit\nhbm_copy,3000,GB/s\nhbm_triad,3100,GB/s\n"
               "dramatic,9999,GB/s\n");
    m = load_ok(dir, RUN_PEAKS);
    roofs_init(&r, m.roofs, m.n_roofs);
    cr_expect_eq(r.dram_gbs, 3100, "hbm_* is the DRAM roof; 'dramatic' is no dram_ row");
    cr_expect(isnan(r.l2_gbs));
    cr_expect_str_eq(roofs_memory_name(m.roofs, m.n_roofs), "HBM");
    run_free(&m);
    remove_temp_dir(dir);
}

Test(analysis_roofline, point_arithmetic_both_sides_of_the_ridge)
{
    roof_point left = {.flops = 1e6, .dram_bytes = 1e7, .l2_bytes = NAN, .duration_ns = 2e6,
                       .peak_gflops = 200, .dram_gbs = 50, .l2_gbs = NAN};
    roof_point_eval(&left);
    NEAR(left.ridge_ai, 4, 1e-12);
    NEAR(left.ai_dram, 0.1, 1e-12);
    cr_expect(isnan(left.ai_l2));
    NEAR(left.achieved_gflops, 0.5, 1e-12);
    NEAR(left.attainable_gflops, 5, 1e-12);
    NEAR(left.pct_of_attainable, 10, 1e-9);
    cr_expect_eq(left.bound, BOUND_MEMORY);

    roof_point right = left;
    right.flops = 1e8;
    right.duration_ns = 1e6;
    roof_point_eval(&right);
    NEAR(right.ai_dram, 10, 1e-12);
    NEAR(right.attainable_gflops, 200, 1e-12);
    NEAR(right.pct_of_attainable, 50, 1e-9);
    cr_expect_eq(right.bound, BOUND_COMPUTE);

    roof_point ridge = left;
    ridge.flops = 4e7;
    roof_point_eval(&ridge);
    cr_expect_eq(ridge.bound, BOUND_COMPUTE, "on the ridge is not left of it");

    roof_point no_peak = right;
    no_peak.peak_gflops = NAN;
    roof_point_eval(&no_peak);
    cr_expect_eq(no_peak.bound, BOUND_UNKNOWN);
    cr_expect(isnan(no_peak.attainable_gflops) && isnan(no_peak.pct_of_attainable));
    NEAR(no_peak.achieved_gflops, 100, 1e-12);
    cr_expect_str_eq(roof_bound_name(no_peak.bound), "unknown");
}

Test(analysis_roofline, kernels_layer_types_and_step)
{
    char *dir = temp_dir(), err[256];
    write_text(dir, "peaks.csv", peaks_csv);
    write_joined(dir, "kernels.csv", kernels_header, kernels_rows);
    run_model m = load_ok(dir, RUN_PEAKS | RUN_KERNELS);
    roofs r;
    roofs_init(&r, m.roofs, m.n_roofs);
    roofline rl;
    cr_assert_eq(roofline_build(m.traces, m.n_traces, &r, &rl, err, sizeof err), 0, "%s", err);
    cr_assert_eq(rl.n, 1);
    const roof_config *c = roofline_find(&rl, "t", "resnet18-cifar", 32, 8, "fp32");
    cr_assert_not_null(c);
    cr_expect_null(roofline_find(&rl, "t", "resnet18-cifar", 32, 16, "fp32"));
    /* 5 kernels, 4 layer types (conv, bn, relu, fc), 1 step */
    cr_assert_eq(c->n, 10);
    const roof_row *conv1 = &c->rows[0], *bn = &c->rows[1], *relu = &c->rows[2],
                   *conv2 = &c->rows[3], *fc = &c->rows[4];
    cr_expect_str_eq(conv1->layer, "conv1");
    cr_expect_eq(conv1->pt.bound, BOUND_COMPUTE);
    NEAR(conv1->pt.pct_of_attainable, 50, 1e-9);
    NEAR(conv1->time_share, 1.0 / 6, 1e-12);
    cr_expect_str_eq(conv1->ceiling, "fp32_fma");
    cr_expect_eq(bn->pt.bound, BOUND_MEMORY);
    NEAR(bn->pt.attainable_gflops, 5, 1e-12);
    cr_expect_eq(relu->pt.bound, BOUND_MEMORY, "zero FLOPs sit at AI 0");
    cr_expect_eq(relu->pt.attainable_gflops, 0);
    NEAR(relu->pt.pct_of_attainable, 8, 1e-9); /* its bytes/s against the DRAM roof */
    cr_expect_eq(conv2->pt.bound, BOUND_COMPUTE);
    NEAR(conv2->pt.pct_of_attainable, 20, 1e-9);
    /* an fp32 step's tensor-core FLOPs ran as tf32, which these roofs lack */
    cr_expect_str_eq(fc->ceiling, "tf32_tensor");
    cr_expect_eq(fc->pt.bound, BOUND_UNKNOWN, "a missing ceiling");
    cr_expect(isnan(fc->pt.attainable_gflops));

    /* conv: 2 ms, 1.4e8 FLOP, 2e7 B: AI 7, achieved 70, attainable 200: 35% */
    const roof_row *conv = &c->rows[5];
    cr_expect_str_eq(conv->level, "layer_type");
    cr_expect_str_eq(conv->name, "conv");
    NEAR(conv->count, 2, 0);
    NEAR(conv->pt.ai_dram, 7, 1e-12);
    NEAR(conv->pt.pct_of_attainable, 35, 1e-9);
    NEAR(conv->time_share, 2.0 / 6, 1e-12);
    cr_expect_str_eq(c->rows[6].name, "bn");
    cr_expect_str_eq(c->rows[7].name, "relu");
    cr_expect_str_eq(c->rows[8].name, "fc");
    /* step: 1.42e8 FLOP over 3.41e7 B = AI 4.164 > 4: compute, under fp32_fma
     * (1.41e8 of the FLOPs); memory-bound time (bn 2 + relu 1) / 6 = 0.5 */
    const roof_row *step = &c->rows[9];
    cr_expect_str_eq(step->level, "step");
    cr_expect_str_eq(step->ceiling, "fp32_fma");
    NEAR(step->pt.duration_ns, 6e6, 0);
    NEAR(step->pt.ai_dram, 1.42e8 / 3.41e7, 1e-9);
    cr_expect_eq(step->pt.bound, BOUND_COMPUTE);
    NEAR(step->time_share, 1, 1e-12);
    cr_expect_str_eq(step->source, "mixed");
    NEAR(c->mem_bound_share, 0.5, 1e-12);
    cr_expect_eq(roofline_step(c), step);

    /* time at the roofs: conv1 1e8 FLOP at 200 = 0.5 ms of its 1; bn 1e6 at 5
     * = 0.2 of 2; relu 4e6 B at 50 GB/s = 0.08 of 1; conv2 4e7 at 200 = 0.2
     * of 1; fc has no roof. Layer types and the step sum their kernels'
     * (the conv type's own point would say 1.4e8 / 200 = 0.7 too; the step's,
     * 1.42e8 / 200 = 0.71 ms, would not: 0.98) */
    NEAR(conv1->roof_ns, 5e5, 1e-6);
    NEAR(conv1->above_roof_ns, 5e5, 1e-6);
    NEAR(bn->roof_ns, 2e5, 1e-6);
    NEAR(bn->above_roof_ns, 1.8e6, 1e-6);
    NEAR(relu->roof_ns, 8e4, 1e-6);
    NEAR(relu->above_roof_ns, 9.2e5, 1e-6);
    NEAR(conv2->roof_ns, 2e5, 1e-6);
    cr_expect(isnan(fc->roof_ns) && isnan(fc->above_roof_ns), "no roof, no time at it");
    NEAR(conv->roof_ns, 7e5, 1e-6);
    NEAR(conv->above_roof_ns, 1.3e6, 1e-6);
    cr_expect(isnan(c->rows[8].roof_ns), "fc: none of its kernels has a roof");
    NEAR(step->roof_ns, 9.8e5, 1e-6);
    NEAR(step->above_roof_ns, 4.02e6, 1e-6);
    for (int i = 0; i < 4; i++) /* duration x pct / 100, as the header says */
        NEAR(c->rows[i].roof_ns, c->rows[i].pt.duration_ns * c->rows[i].pt.pct_of_attainable / 100,
             1e-6);

    /* per layer type and phase, most time above the roofs first */
    roof_phase_sum *g;
    cr_assert_eq(roofline_by_phase(c, &g), 4);
    cr_expect_str_eq(g[0].layer_type, "bn");
    NEAR(g[0].above_roof_ns, 1.8e6, 1e-6);
    cr_expect_str_eq(g[1].layer_type, "conv");
    cr_expect_str_eq(g[1].phase, "fwd");
    NEAR(g[1].above_roof_ns, 1.3e6, 1e-6);
    NEAR(g[1].duration_ns, 2e6, 0);
    NEAR(g[1].roof_ns, 7e5, 1e-6);
    cr_expect_str_eq(g[2].layer_type, "relu");
    cr_expect_str_eq(g[3].layer_type, "fc", "no roof: last");
    cr_expect(isnan(g[3].roof_ns));
    NEAR(g[3].unroofed_ns, 1e6, 0);
    cr_expect_eq(g[1].unroofed_ns, 0);
    free(g);
    roofline_free(&rl);
    run_free(&m);
    remove_temp_dir(dir);
}

Test(analysis_roofline, repeats_and_repeated_kernels_average_per_step)
{
    /* The same conv twice per step (count 2) in two traced repeats: per-step
     * sums are half the file's. */
    char *dir = temp_dir(), err[256];
    write_joined(dir, "kernels.csv", kernels_header,
                            "t,m,32,8,fp32,0,0,k,l,conv,fwd,1000,0,1000,0,0,100,100,,,perf\n"
                            "t,m,32,8,fp32,0,1,k,l,conv,fwd,3000,0,1000,0,0,100,100,,,perf\n"
                            "t,m,32,8,fp32,1,0,k,l,conv,fwd,1000,0,1000,0,0,100,100,,,perf\n"
                            "t,m,32,8,fp32,1,1,k,l,conv,fwd,3000,0,1000,0,0,100,100,,,perf\n"
                            "t,m,64,8,fp32,0,0,k,l,conv,fwd,1000,0,1000,0,0,100,100,,,perf\n");
    run_model m = load_ok(dir, RUN_KERNELS);
    roofs r;
    roofs_init(&r, NULL, 0);
    roofline rl;
    cr_assert_eq(roofline_build(m.traces, m.n_traces, &r, &rl, err, sizeof err), 0, "%s", err);
    cr_assert_eq(rl.n, 2, "res 32 and res 64 are two configurations");
    const roof_config *c = &rl.configs[0];
    cr_expect_eq(c->repeats, 2);
    cr_assert_eq(c->n, 3);
    NEAR(c->rows[0].count, 2, 0);
    NEAR(c->rows[0].pt.duration_ns, 4000, 0);
    NEAR(c->rows[0].pt.flops, 2000, 0);
    NEAR(c->rows[0].pt.dram_bytes, 400, 0);
    NEAR(c->rows[0].pt.achieved_gflops, 0.5, 1e-12);
    cr_expect_eq(c->rows[0].pt.bound, BOUND_UNKNOWN, "no peaks.csv: no bound");
    cr_expect(isnan(c->mem_bound_share));
    roofline_free(&rl);
    run_free(&m);
    remove_temp_dir(dir);
}

/* A kernel faster than its roof (its bytes partly from a cache) spends no
 * time above it, and offsets no other kernel's time above its own. */
Test(analysis_roofline, a_kernel_faster_than_its_roof_offsets_no_other)
{
    char *dir = temp_dir(), err[256];
    write_text(dir, "peaks.csv", peaks_csv);
    /* a: 1e7 B in 0.1 ms = 100 GB/s, twice the roof's 50: roof 0.2 ms;
     * b: 1e7 B in 0.5 ms: roof 0.2 ms, 0.3 ms above */
    write_joined(dir, "kernels.csv", kernels_header,
                 "t,m,32,8,fp32,0,0,a,l1,relu,fwd,100000,0,0,0,0,5000000,5000000,,,analytic\n"
                 "t,m,32,8,fp32,0,1,b,l2,relu,bwd_data,500000,0,0,0,0,5000000,5000000,,,analytic\n");
    run_model m = load_ok(dir, RUN_PEAKS | RUN_KERNELS);
    roofs r;
    roofs_init(&r, m.roofs, m.n_roofs);
    roofline rl;
    cr_assert_eq(roofline_build(m.traces, m.n_traces, &r, &rl, err, sizeof err), 0, "%s", err);
    const roof_config *c = &rl.configs[0];
    NEAR(c->rows[0].roof_ns, 2e5, 1e-6);
    cr_expect_eq(c->rows[0].above_roof_ns, 0);
    NEAR(c->rows[1].above_roof_ns, 3e5, 1e-6);
    const roof_row *step = roofline_step(c);
    NEAR(step->roof_ns, 4e5, 1e-6);
    NEAR(step->above_roof_ns, 3e5, 1e-6); /* not 0.6 - 0.4 = 0.2 */
    roof_phase_sum *g;
    cr_assert_eq(roofline_by_phase(c, &g), 2);
    cr_expect_str_eq(g[0].phase, "bwd_data");
    cr_expect_str_eq(g[1].phase, "fwd", "0 above: after");
    free(g);
    roofline_free(&rl);
    run_free(&m);
    remove_temp_dir(dir);
}

Test(analysis_roofline, bad_kernel_rows_name_the_line)
{
    char *dir = temp_dir(), err[512];
    write_joined(dir, "kernels.csv", kernels_header,
                 "t,m,32,8,fp32,0,0,k,l,conv,fwd,1000,0,lots,0,0,100,100,,,perf\n");
    load_error(dir, RUN_KERNELS, err, sizeof err);
    cr_expect(strstr(err, "kernels.csv:2: column 'flops_fp32': 'lots' is not a number"), "%s", err);
    write_text(dir, "kernels.csv", "env,model\nt,m\n");
    load_error(dir, RUN_KERNELS, err, sizeof err);
    cr_expect(strstr(err, "kernels.csv:1: no column 'res' in the header"), "%s", err);
    remove_temp_dir(dir);
}

/* The analysis of a folder through bin/analyze's own path: load, compute, write. */
static run_model analyse_ok(const char *dir)
{
    run_model m = load_ok(dir, RUN_INPUTS);
    char err[512];
    cr_assert_eq(run_analyze(&m, err, sizeof err), 0, "%s", err);
    return m;
}

Test(analysis_roofline, csv_round_trip)
{
    char *dir = temp_dir(), err[512];
    write_text(dir, "peaks.csv", peaks_csv);
    write_joined(dir, "kernels.csv", kernels_header, kernels_rows);
    write_text(dir, "steps.csv", "env,backend,model,res,batch,precision,world_size,rank,repeat,"
                                 "iter,step_ms,images_per_s,loss\n");
    run_model m = analyse_ok(dir);
    cr_assert_eq(outputs_write(dir, &m.roofline, &m.summary, &m.variability, err, sizeof err), 0,
                 "%s", err);
    csv_table *out = read_ok(dir, "roofline.csv");
    cr_expect_eq(csv_cols(out), 30);
    cr_expect_eq(csv_rows(out), 10);
    int bn = find_row(out, "name", "bn_fwd", NULL, NULL);
    cr_expect_str_eq(cell(out, bn, "bound"), "memory");
    NEAR(num(out, bn, "ridge_ai"), 4, 1e-12);
    NEAR(num(out, bn, "pct_of_attainable"), 10, 1e-4);
    cr_expect_str_eq(cell(out, bn, "l2_bytes"), "", "not measured stays empty");
    int fc = find_row(out, "name", "gemm", NULL, NULL);
    cr_expect_str_eq(cell(out, fc, "bound"), "unknown");
    cr_expect_str_eq(cell(out, fc, "attainable_gflops"), "");
    cr_expect_str_eq(cell(out, fc, "roof_ns"), "", "no roof: empty");
    int step = find_row(out, "level", "step", NULL, NULL);
    NEAR(num(out, step, "duration_ns"), 6e6, 0);
    NEAR(num(out, step, "roof_ns"), 9.8e5, 1e-3);
    NEAR(num(out, step, "above_roof_ns"), 4.02e6, 1e-3);
    csv_free(out);
    run_free(&m);
    /* and read back as the report reads it */
    m = load_ok(dir, RUN_OUTPUTS);
    cr_assert_eq(m.roofline.n, 1);
    cr_assert_eq(m.roofline.configs[0].n, 10);
    const roof_row *back = &m.roofline.configs[0].rows[1];
    cr_expect_str_eq(back->name, "bn_fwd");
    cr_expect_eq(back->pt.bound, BOUND_MEMORY);
    NEAR(back->pt.ai_dram, 0.1, 1e-12);
    cr_expect_str_eq(back->ceiling, "fp32_fma");
    NEAR(back->roof_ns, 2e5, 1e-3);
    NEAR(back->above_roof_ns, 1.8e6, 1e-3);
    cr_expect(isnan(m.roofline.configs[0].rows[4].roof_ns), "fc: empty read as NaN");
    run_free(&m);
    remove_temp_dir(dir);
}

/* ---- summary and variability --------------------------------------------- */

static const char *const steps_header =
    "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,images_per_s,"
    "loss\n";

/* resnet18-cifar: repeat 0 takes 10 20 30 40 50 ms (written out of order),
 * repeat 1 takes 20 20 20 20 20; rank 1's rows are ignored. */
static const char *const steps_rows =
    "t,cpu,resnet18-cifar,32,8,fp32,1,0,0,1,20,400,1\n"
    "t,cpu,resnet18-cifar,32,8,fp32,1,0,0,0,10,800,1\n"
    "t,cpu,resnet18-cifar,32,8,fp32,1,0,0,2,30,266.667,1\n"
    "t,cpu,resnet18-cifar,32,8,fp32,1,0,0,3,40,200,1\n"
    "t,cpu,resnet18-cifar,32,8,fp32,1,0,0,4,50,160,1\n"
    "t,cpu,resnet18-cifar,32,8,fp32,1,1,0,0,999,8,1\n"
    "t,cpu,resnet18-cifar,32,8,fp32,1,0,1,0,20,400,1\n"
    "t,cpu,resnet18-cifar,32,8,fp32,1,0,1,1,20,400,1\n"
    "t,cpu,resnet18-cifar,32,8,fp32,1,0,1,2,20,400,1\n"
    "t,cpu,resnet18-cifar,32,8,fp32,1,0,1,3,20,400,1\n"
    "t,cpu,resnet18-cifar,32,8,fp32,1,0,1,4,20,400,1\n"
    "t,cpu,nosuchnet,32,8,fp32,1,0,0,0,5,,1\n";

static const char *const configs_csv =
    "config,model,res,batch,precision,repeat,status,seconds,log\n"
    "1/4,resnet18-cifar,32,8,fp32,0,ok,3,logs/1.log\n"
    "2/4,resnet18-cifar,32,8,fp32,1,failed (exit 1),3,logs/2.log\n"
    "1/4,resnet18-cifar,32,8,fp32,trace,ok,3,logs/1t.log\n"
    "3/4,nosuchnet,32,8,fp32,0,ok,1,logs/3.log\n"
    "3/4,nosuchnet,32,8,fp32,trace,failed (exit 1),1,logs/3t.log\n"
    "4/4,vgg16-cifar,32,8,fp32,0,\"skipped (needs 9 GiB, has 4)\",0,logs/4.log\n";

Test(analysis_summary, steps_grouping)
{
    char *dir = temp_dir(), err[512];
    write_joined(dir, "steps.csv", steps_header, steps_rows);
    run_model m = load_ok(dir, RUN_STEPS);
    cr_assert_eq(m.n_steps, 2);
    const run_steps *c = &m.steps[0];
    cr_expect_eq(c->n, 10, "rank 0's rows");
    cr_expect_eq(c->repeats, 2);
    cr_expect_eq(c->iters, 5);
    const double want[] = {10, 20, 30, 40, 50};
    for (int i = 0; i < 5; i++)
        cr_expect_eq(c->step_ms[i], want[i], "sorted by iter");
    cr_expect_eq(c->repeat[5], 1);
    cr_expect(isnan(c->peak_mem_bytes), "no peak_mem_bytes column: unknown");
    run_free(&m);

    write_joined(dir, "steps.csv", steps_header, "t,cpu,m,32,8,fp32,1,0,0,0,-3,1,1\n");
    load_error(dir, RUN_STEPS, err, sizeof err);
    cr_expect(strstr(err, "steps.csv:2: column 'step_ms': '-3' is out of range (expected "
                          "milliseconds > 0)"), "%s", err);
    remove_temp_dir(dir);
}

Test(analysis_summary, peak_memory_is_the_largest_of_the_rows)
{
    char *dir = temp_dir();
    write_text(dir, "steps.csv",
               "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,"
               "images_per_s,loss,peak_mem_bytes\n"
               "t,cpu,m,32,8,fp32,1,0,1,0,10,800,1,1000\n"
               "t,cpu,m,32,8,fp32,1,0,1,1,10,800,1,3000\n"
               "t,cpu,m,32,8,fp32,1,0,2,0,10,800,1,2000\n"
               "t,cpu,m,32,16,fp32,1,0,1,0,10,800,1,\n");
    run_model m = load_ok(dir, RUN_STEPS);
    cr_assert_eq(m.n_steps, 2);
    cr_expect_eq(m.steps[0].peak_mem_bytes, 3000);
    cr_expect(isnan(m.steps[1].peak_mem_bytes), "an empty cell is unknown");
    run_free(&m);
    remove_temp_dir(dir);
}

/* The same model, batch and precision eager and replayed from a CUDA graph:
 * two configurations, each with its own status, summary and variability
 * rows, and the graph column written out. */
Test(analysis_summary, graph_and_eager_are_two_configurations)
{
    char *dir = temp_dir(), err[512];
    const char *header = "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,"
                         "step_ms,images_per_s,loss,peak_mem_bytes,graph\n";
    write_joined(dir, "steps.csv", header,
                 "t,cuda,resnet18-cifar,32,8,bf16,1,0,1,0,10,800,1,1000,off\n"
                 "t,cuda,resnet18-cifar,32,8,bf16,1,0,1,0,8,1000,1,900,on\n"
                 "t,cuda,resnet18-cifar,32,8,bf16,1,0,1,1,10,800,1,1000,off\n"
                 "t,cuda,resnet18-cifar,32,8,bf16,1,0,1,1,8,1000,1,900,on\n");
    write_text(dir, "configs.csv",
               "config,model,res,batch,precision,repeat,status,seconds,log,graph\n"
               "1/2,resnet18-cifar,32,8,bf16,1,ok,3,logs/1.log,off\n"
               "1/2,resnet18-cifar,32,8,bf16,trace,ok,3,logs/1t.log,off\n"
               "2/2,resnet18-cifar,32,8,bf16,1,ok,3,logs/2.log,on\n"
               "2/2,resnet18-cifar,32,8,bf16,2,failed (exit 1),3,logs/3.log,on\n");
    run_model m = analyse_ok(dir);
    cr_assert_eq(m.n_steps, 2, "eager and graph are not pooled");
    cr_expect(!m.steps[0].key.graph && m.steps[1].key.graph);
    cr_expect_eq(m.steps[0].n, 2);
    cr_expect_eq(m.steps[1].n, 2);
    cr_expect_eq(m.steps[1].peak_mem_bytes, 900);
    cr_assert_eq(m.summary.n, 2);
    const summary_row *eager = &m.summary.rows[0], *graph = &m.summary.rows[1];
    cr_expect(!eager->graph && graph->graph);
    NEAR(eager->step_ms_median, 10, 1e-12);
    NEAR(graph->step_ms_median, 8, 1e-12);
    cr_expect_str_eq(eager->status, "ok", "the graph's failed repeat is not the eager's");
    cr_expect_str_eq(graph->status, "failed (exit 1)");
    cr_expect_eq(graph->repeats, 1, "the repeats that measured");
    cr_expect_eq(graph->peak_mem_bytes, 900);
    cr_assert_eq(outputs_write(dir, &m.roofline, &m.summary, &m.variability, err, sizeof err), 0,
                 "%s", err);
    csv_table *out = read_ok(dir, "summary.csv");
    cr_expect_str_eq(cell(out, 0, "graph"), "off");
    cr_expect_str_eq(cell(out, 1, "graph"), "on");
    csv_free(out);
    csv_table *v = read_ok(dir, "variability.csv");
    int pooled = find_row(v, "scope", "iterations", "graph", "on");
    NEAR(num(v, pooled, "median"), 8, 1e-12);
    csv_free(v);
    run_free(&m);

    /* read back: the outputs keep the two apart */
    run_model back;
    cr_assert_eq(run_load(&back, dir, RUN_SUMMARY | RUN_VARIABILITY, RUN_SUMMARY, err, sizeof err),
                 RUN_LOAD_OK, "%s", err);
    cr_expect(!back.summary.rows[0].graph && back.summary.rows[1].graph);
    cr_expect_eq(back.variability.rows[back.variability.n - 1].graph, true);
    run_free(&back);

    write_joined(dir, "steps.csv", header, "t,cuda,m,32,8,bf16,1,0,1,0,10,800,1,1000,yes\n");
    load_error(dir, RUN_STEPS, err, sizeof err);
    cr_expect(strstr(err, "steps.csv:2: column 'graph': 'yes' is not on or off"), "%s", err);
    remove_temp_dir(dir);
}

Test(analysis_summary, a_repeated_step_is_an_error)
{
    char *dir = temp_dir(), err[512];
    write_joined(dir, "steps.csv", steps_header,
                 "t,cpu,m,32,8,fp32,1,0,1,0,10,800,1\n"
                 "t,cpu,m,32,8,fp32,1,0,1,1,10,800,1\n"
                 "t,cpu,m,32,16,fp32,1,0,1,1,10,800,1\n"
                 "t,cpu,m,32,8,fp32,1,0,1,1,12,800,1\n");
    load_error(dir, RUN_STEPS, err, sizeof err);
    cr_expect(strstr(err, "steps.csv:5: rank 0, repeat 1, iter 1 of this configuration is "
                          "already on line 3"), "%s", err);
    remove_temp_dir(dir);
}

Test(analysis_summary, rows_status_and_analytic_flops)
{
    char *dir = temp_dir(), err[512];
    write_joined(dir, "steps.csv", steps_header, steps_rows);
    write_text(dir, "configs.csv", configs_csv);
    write_text(dir, "peaks.csv", peaks_csv);
    write_joined(dir, "kernels.csv", kernels_header, kernels_rows);
    run_model m = analyse_ok(dir);
    const summary s = m.summary;
    cr_assert_eq(s.n, 3, "two measured configurations and one skipped");

    /* pooled step times 10 20 20 20 20 20 20 30 40 50: median 20;
     * images/s 160 200 266.667 400 x 6 800: q1 at h = 2.25 -> 266.667 + 0.25 x 133.333 */
    const summary_row *a = &s.rows[0];
    cr_expect_str_eq(a->model, "resnet18-cifar");
    cr_expect_eq(a->repeats, 2);
    cr_expect_eq(a->iters, 5);
    NEAR(a->step_ms_median, 20, 1e-12);
    NEAR(a->ips_median, 400, 1e-12);
    NEAR(a->ips_q1, 266.667 + 0.25 * (400 - 266.667), 1e-9);
    NEAR(a->ips_q3, 400, 1e-12);
    network net = build_or_fail("resnet18-cifar", 32, 10);
    double gflop = cost_step(&net, 8, PREC_FP32, NULL).step_flops / 1e9;
    net_free(&net);
    NEAR(a->analytic_gflop, gflop, 1e-9);
    NEAR(a->achieved_tflops, gflop / 20, 1e-12);
    cr_expect_str_eq(a->ceiling, "fp32_fma");
    NEAR(a->pct_of_peak, 100 * gflop / 20 * 1e3 / 200, 1e-9);
    NEAR(a->mem_bound_share, 0.5, 1e-12);
    /* the trace's 0.98 ms at the roofs (analysis_roofline) of the 20 ms median step */
    NEAR(a->pct_of_roofs, 100 * 9.8e5 / 20e6, 1e-9);
    cr_expect_str_eq(a->status, "failed (exit 1)", "the first attempt that was not ok");

    const summary_row *b = &s.rows[1];
    cr_expect_str_eq(b->model, "nosuchnet");
    cr_expect(isnan(b->analytic_gflop) && isnan(b->achieved_tflops) && isnan(b->pct_of_peak),
              "a model the zoo does not know has empty analytic columns");
    NEAR(b->ips_median, 8 * 1e3 / 5, 1e-9); /* images_per_s empty: from the batch */
    cr_expect_str_eq(b->status, "ok; trace: failed (exit 1)");
    cr_expect(isnan(b->pct_of_roofs), "no trace, no roofs");
    cr_expect_eq(b->repeats, 1, "the trace pass is no repeat");

    const summary_row *c = &s.rows[2];
    cr_expect_str_eq(c->model, "vgg16-cifar");
    cr_expect_str_eq(c->status, "skipped (needs 9 GiB, has 4)");
    cr_expect(isnan(c->ips_median) && isnan(c->step_ms_median));
    cr_expect_eq(c->repeats, 1);

    cr_assert_eq(outputs_write(dir, &m.roofline, &m.summary, &m.variability, err, sizeof err), 0,
                 "%s", err);
    csv_table *out = read_ok(dir, "summary.csv");
    cr_expect_eq(csv_cols(out), 23);
    cr_expect_eq(csv_rows(out), 3);
    NEAR(num(out, find_row(out, "model", "resnet18-cifar", NULL, NULL), "pct_of_roofs"), 4.9,
         1e-4);
    int skipped = find_row(out, "model", "vgg16-cifar", NULL, NULL);
    cr_expect_str_eq(cell(out, skipped, "status"), "skipped (needs 9 GiB, has 4)");
    cr_expect_str_eq(cell(out, skipped, "images_per_s_median"), "");
    cr_expect_str_eq(cell(out, skipped, "iters"), "");
    int unknown = find_row(out, "model", "nosuchnet", NULL, NULL);
    cr_expect_str_eq(cell(out, unknown, "analytic_gflop_per_step"), "");
    cr_expect_str_eq(cell(out, unknown, "mem_bound_time_share"), "");
    cr_expect_str_eq(cell(out, unknown, "pct_of_roofs"), "");
    csv_free(out);
    run_free(&m);
    /* read back as the report reads it */
    m = load_ok(dir, RUN_OUTPUTS);
    NEAR(m.summary.rows[0].pct_of_roofs, 4.9, 1e-4);
    cr_expect(isnan(m.summary.rows[1].pct_of_roofs));
    run_free(&m);
    remove_temp_dir(dir);
}

Test(analysis_summary, variability_rows)
{
    char *dir = temp_dir(), err[512];
    write_joined(dir, "steps.csv", steps_header, steps_rows);
    run_model m = analyse_ok(dir);
    cr_assert_eq(outputs_write(dir, &m.roofline, &m.summary, &m.variability, err, sizeof err), 0,
                 "%s", err);
    csv_table *v = read_ok(dir, "variability.csv");
    cr_expect_eq(csv_cols(v), 18);
    /* resnet18-cifar: repeat=0, repeat=1, iterations, repeats; nosuchnet: repeat=0,
     * iterations, repeats */
    cr_expect_eq(csv_rows(v), 7);
    /* repeat 0: 10..50: mean 30, sample sd sqrt(1000/4) = 15.811, cv 0.527,
     * drift (50 - 10) / 10 = +400% */
    int r0 = find_row(v, "scope", "repeat=0", "model", "resnet18-cifar");
    NEAR(num(v, r0, "n"), 5, 0);
    NEAR(num(v, r0, "mean"), 30, 1e-9);
    NEAR(num(v, r0, "stddev"), sqrt(250.0), 1e-4);
    NEAR(num(v, r0, "cv"), sqrt(250.0) / 30, 1e-5);
    NEAR(num(v, r0, "drift_pct"), 400, 1e-9);
    cr_expect_str_eq(cell(v, r0, "ci95_lo"), "", "no interval for n = 5");
    /* pooled: 10 20 20 20 20 20 20 30 40 50: q1 20, q3 27.5, fences 8.75 and 38.75:
     * 40 and 50 are outliers; n = 10 interval [x(2), x(9)] = [20, 40] */
    int pooled = find_row(v, "scope", "iterations", "model", "resnet18-cifar");
    NEAR(num(v, pooled, "n"), 10, 0);
    NEAR(num(v, pooled, "median"), 20, 1e-9);
    NEAR(num(v, pooled, "outliers"), 2, 0);
    NEAR(num(v, pooled, "ci95_lo"), 20, 1e-9);
    NEAR(num(v, pooled, "ci95_hi"), 40, 1e-9);
    /* its drift: the median of the repeats' own, +400% and 0%, not the pooled
     * sequence's first fifth (10, 20) against its last (20, 20): +33% */
    NEAR(num(v, pooled, "drift_pct"), 200, 1e-9);
    /* over the repeats' medians 30 and 20 */
    int reps = find_row(v, "scope", "repeats", "model", "resnet18-cifar");
    NEAR(num(v, reps, "n"), 2, 0);
    NEAR(num(v, reps, "median"), 25, 1e-9);
    NEAR(num(v, reps, "min"), 20, 1e-9);
    csv_free(v);
    run_free(&m);
    remove_temp_dir(dir);
}

/* ---- bin/analyze end to end ---------------------------------------------- */

static void write_run(const char *dir, bool kernels)
{
    write_joined(dir, "steps.csv", steps_header, steps_rows);
    write_text(dir, "peaks.csv", peaks_csv);
    write_text(dir, "configs.csv", configs_csv);
    if (kernels)
        write_joined(dir, "kernels.csv", kernels_header, kernels_rows);
}

Test(analysis_bin, writes_three_csvs, .timeout = 60)
{
    char *dir = temp_dir(), args[512], out[8192], path[512];
    write_run(dir, true);
    snprintf(args, sizeof args, "analyze %s", dir);
    cr_assert_eq(run_bin(args, 0, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "img/s median [IQR]") && strstr(out, "resnet18-cifar") &&
                  strstr(out, "skipped (needs 9 GiB, has 4)"),
              "%s", out);
    const char *names[] = {"roofline.csv", "summary.csv", "variability.csv"};
    const int cols[] = {30, 23, 18}, rows[] = {10, 3, 7};
    for (int i = 0; i < 3; i++) {
        csv_table *t = read_ok(dir, names[i]);
        cr_expect_eq(csv_cols(t), cols[i], "%s", names[i]);
        cr_expect_eq(csv_rows(t), rows[i], "%s", names[i]);
        csv_free(t);
        snprintf(path, sizeof path, "%s/%s.tmp", dir, names[i]);
        cr_expect_neq(access(path, F_OK), 0, "%s left behind", path);
    }
    remove_temp_dir(dir);
}

Test(analysis_bin, without_kernels_the_roofline_is_empty, .timeout = 60)
{
    char *dir = temp_dir(), args[512], out[8192];
    write_run(dir, false);
    snprintf(args, sizeof args, "analyze %s", dir);
    cr_assert_eq(run_bin(args, 0, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "no kernels.csv"), "%s", out);
    csv_table *t = read_ok(dir, "roofline.csv");
    cr_expect_eq(csv_rows(t), 0);
    cr_expect_eq(csv_cols(t), 30);
    csv_free(t);
    t = read_ok(dir, "summary.csv");
    cr_expect_eq(csv_rows(t), 3);
    csv_free(t);
    remove_temp_dir(dir);
}

Test(analysis_bin, bad_input_is_one_line_and_status_2, .timeout = 60)
{
    char *dir = temp_dir(), args[600];
    expect_usage_error("analyze", "missing RUN_DIR");
    expect_usage_error("analyze --bogus x", "--bogus");
    snprintf(args, sizeof args, "analyze %s/nowhere", dir);
    expect_usage_error(args, "is not a directory");
    snprintf(args, sizeof args, "analyze %s", dir);
    expect_usage_error(args, "steps.csv: cannot open");
    write_joined(dir, "steps.csv", steps_header, "t,cpu,m,32,8,fp32,1,0,0,0,5\n");
    expect_usage_error(args, "steps.csv:2: 11 fields, header has 13");
    write_joined(dir, "steps.csv", steps_header, "t,cpu,m,32,8,fp32,1,0,0,0,5,,1\n");
    write_text(dir, "configs.csv", "model,res,batch,precision,status\nm,1e308,8,fp32,ok\n");
    expect_usage_error(args, "configs.csv:2: column 'res': '1e308' is out of range");
    remove(strcat(strcpy(args, dir), "/configs.csv"));
    snprintf(args, sizeof args, "analyze %s", dir);
    write_joined(dir, "steps.csv", steps_header, steps_rows);
    write_text(dir, "kernels.csv", "env,model\nt,m\n");
    write_text(dir, "peaks.csv", peaks_csv);
    expect_usage_error(args, "kernels.csv:1: no column 'res'");
    remove_temp_dir(dir);
}

Test(analysis_bin, outputs_are_all_or_nothing, .timeout = 60)
{
    char *dir = temp_dir(), args[512], out[8192];
    write_run(dir, true);
    snprintf(args, sizeof args, "analyze %s", dir);
    cr_assert_eq(run_bin(args, 0, out, sizeof out), 0, "%s", out);
    char *roofline_before = read_text(dir, "roofline.csv");
    char *variability_before = read_text(dir, "variability.csv");
    /* new steps and no kernels: every output would change; summary.csv cannot be written */
    write_joined(dir, "steps.csv", steps_header, "t,cpu,resnet18-cifar,32,8,fp32,1,0,0,0,7,,1\n");
    remove(strcat(strcpy(out, dir), "/kernels.csv"));
    cr_assert_eq(sh("mkdir '%s/summary.csv.tmp'", dir), 0);
    cr_expect_eq(run_bin(args, 1, out, sizeof out), 1, "%s", out);
    cr_expect(strstr(out, "summary.csv.tmp") != NULL, "names the file: %s", out);
    char *roofline_after = read_text(dir, "roofline.csv");
    char *variability_after = read_text(dir, "variability.csv");
    cr_expect_str_eq(roofline_after, roofline_before, "roofline.csv was replaced");
    cr_expect_str_eq(variability_after, variability_before, "variability.csv was replaced");
    cr_expect_neq(sh("ls '%s'/roofline.csv.tmp '%s'/variability.csv.tmp >/dev/null 2>&1", dir, dir),
                  0, "a temporary file is left");
    free(roofline_before);
    free(roofline_after);
    free(variability_before);
    free(variability_after);
    remove_temp_dir(dir);
}
