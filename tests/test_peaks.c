/* bin/peaks and the CPU microbenchmarks behind it (peaks/), at sizes small
 * enough for a unit test: every figure positive, finite and under a bound no
 * real machine reaches; peaks.csv well formed; bad options rejected. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../peaks/cpu_clock.h"
#include "../peaks/cpu_flops.h"
#include "../peaks/cpu_info.h"
#include "../peaks/cpu_mem.h"
#include "../peaks/peaks_csv.h"
#include "../peaks/specs.h"
#include "helpers.h"

/* Far above any core: 64 FP32 lanes x 2 pipes x 2 FLOPs x 8 GHz. */
#define MAX_GFLOPS_PER_CORE 2048.0
/* Far above any cache level of any core. */
#define MAX_GBS_PER_CORE 4096.0

static void expect_sane(double v, double max, const char *what)
{
    cr_expect(isfinite(v) && v > 0 && v < max, "%s = %g, wanted in (0, %g)", what, v, max);
}

Test(peaks_cpu, clock_is_a_plausible_frequency)
{
    double ghz = cpu_clock_ghz(0.01);
    cr_expect(ghz > 0.2 && ghz < 10.0, "clock %g GHz", ghz);
}

Test(peaks_cpu, fma_throughput_is_positive_and_bounded)
{
    char err[256];
    for (int p = CPU_FP32; p <= CPU_FP64; p++) {
        cpu_fma_result r;
        cr_assert_eq(cpu_fma_measure((cpu_precision)p, 1, 0.01, 1, &r, err, sizeof err), 0,
                     "%s", err);
        expect_sane(r.gflops, MAX_GFLOPS_PER_CORE, p == CPU_FP32 ? "fp32 GFLOP/s" : "fp64 GFLOP/s");
        cr_expect(r.clock_ghz > 0.2 && r.clock_ghz < 10.0, "clock %g GHz", r.clock_ghz);
        cr_expect_eq(r.threads, 1);
        char why[192];
        int per_cycle = cpu_fma_flops_per_cycle((cpu_precision)p, why, sizeof why);
        cr_expect(per_cycle >= 2 && per_cycle <= 128, "%d flop/cycle (%s)", per_cycle, why);
        /* The theoretical peak at the fastest clock any core reaches (7 GHz) bounds
         * the measurement. Not the measured clock: CI runs tests two at a time, and
         * a preempted clock chain reads low (0.8 GHz was seen). */
        cr_expect(r.gflops < per_cycle * 7.0, "%g GFLOP/s over %d flop/cycle x 7 GHz", r.gflops,
                  per_cycle);
    }
}

Test(peaks_cpu, fp64_has_half_the_lanes_of_fp32)
{
    char why[192];
    cr_expect_eq(2 * cpu_fma_flops_per_cycle(CPU_FP64, why, sizeof why),
                 cpu_fma_flops_per_cycle(CPU_FP32, why, sizeof why));
}

Test(peaks_cpu, stream_kernels_are_positive_and_bounded)
{
    char err[256];
    stream_result r;
    cr_assert_eq(cpu_stream_measure(1 << 15, 1, 2, &r, err, sizeof err), 0, "%s", err);
    for (int k = 0; k < STREAM_KERNELS; k++)
        expect_sane(r.gbs[k], MAX_GBS_PER_CORE, stream_kernel_name((stream_kernel)k));
    cr_expect_eq(r.array_bytes, (size_t)(1 << 15) * sizeof(double));
    cr_expect_eq(stream_kernel_arrays(STREAM_COPY), 2);
    cr_expect_eq(stream_kernel_arrays(STREAM_TRIAD), 3);
}

Test(peaks_cpu, stream_rejects_arrays_smaller_than_the_threads)
{
    char err[256] = "";
    stream_result r;
    cr_expect_eq(cpu_stream_measure(4, 2, 1, &r, err, sizeof err), -1);
    cr_expect(strlen(err) > 0);
}

Test(peaks_cpu, sweep_gives_one_point_per_size)
{
    char err[256];
    sweep_result r;
    cr_assert_eq(cpu_sweep_measure(16 << 10, 64 << 10, 2.0, 1 << 20, 1, 1, &r, err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(r.n, 3);
    cr_expect_eq(r.bytes_per_thread[0], (size_t)16 << 10);
    cr_expect_eq(r.bytes_per_thread[2], (size_t)64 << 10);
    for (int p = 0; p < r.n; p++)
        expect_sane(r.gbs[p], MAX_GBS_PER_CORE, "sweep point");
}

/* A made-up machine: 32 KiB L1 and 1 MiB L2 per core, 32 MiB L3 for both. */
Test(peaks_cpu, level_ceiling_is_the_best_point_inside_the_level)
{
    cpu_caches caches = {.levels = 3};
    caches.bytes[1] = 32 << 10;
    caches.bytes[2] = 1 << 20;
    caches.bytes[3] = 32 << 20;
    caches.shared_by[1] = caches.shared_by[2] = 1;
    caches.shared_by[3] = 2;
    sweep_result s = {.n = 6, .threads = 2};
    size_t sizes[] = {16 << 10, 128 << 10, 512 << 10, 4 << 20, 16 << 20, 64 << 20};
    double gbs[] = {400, 200, 250, 90, 60, 40};
    for (int p = 0; p < s.n; p++) {
        s.bytes_per_thread[p] = sizes[p];
        s.gbs[p] = gbs[p];
    }
    size_t lo, hi;
    cr_expect_eq(sweep_level_ceiling(&s, &caches, 1, &lo, &hi), 400);
    cr_expect_eq(sweep_level_ceiling(&s, &caches, 2, &lo, &hi), 250);
    cr_expect_eq(lo, (size_t)64 << 10);
    cr_expect_eq(hi, (size_t)512 << 10);
    /* L3's half share per thread is 8 MiB: 16 MiB is past it */
    cr_expect_eq(sweep_level_ceiling(&s, &caches, 3, &lo, &hi), 90);
    cr_expect_eq(sweep_level_ceiling(&s, &caches, 4, &lo, &hi), 40);
    cr_expect_eq(lo, (size_t)64 << 20, "4 x 32 MiB over 2 threads");
}

Test(peaks_cpu, caches_are_found)
{
    cpu_caches c;
    cpu_caches_read(&c);
    cr_expect(c.levels >= 1);
    cr_expect(cpu_caches_llc(&c) >= (16u << 10), "LLC %zu bytes (%s)", cpu_caches_llc(&c),
              c.source);
}

/* ---- peaks.csv ------------------------------------------------------------ */

/* Splits a CSV line as RFC 4180 reads it; returns the field count. */
static int count_fields(const char *line)
{
    int n = 1, quoted = 0;
    for (const char *p = line; *p && *p != '\n'; p++) {
        if (*p == '"')
            quoted = !quoted;
        else if (*p == ',' && !quoted)
            n++;
    }
    return n;
}

static char *make_temp_dir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/peaks_test_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

Test(peaks_csv, write_quotes_fields_and_leaves_no_temporary)
{
    char *dir = make_temp_dir(), path[128], tmp[160], err[256], line[1024];
    snprintf(path, sizeof path, "%s/p.csv", dir);
    peak_table t = {0};
    peak_row r = peak_row_make("cpu", "l1", 123.5, "GB/s", "m", NAN, 2, "a, \"quoted\" note");
    cr_assert_eq(peak_table_add(&t, &r), 0);
    r = peak_row_make("cpu", "fp32_fma", 100, "GFLOP/s", "m", 110, 2, "plain");
    cr_assert_eq(peak_table_add(&t, &r), 0);
    cr_assert_eq(peaks_csv_write(path, "env1", &t, err, sizeof err), 0, "%s", err);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    cr_expect_neq(access(tmp, F_OK), 0, "the temporary file was left behind");
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(line, sizeof line, f));
    cr_expect_str_eq(line, PEAKS_CSV_HEADER "\n");
    cr_assert_not_null(fgets(line, sizeof line, f));
    cr_expect_str_eq(line, "env1,cpu,l1,123.5,GB/s,m,,2,\"a, \"\"quoted\"\" note\"\n");
    cr_expect_eq(count_fields(line), 9);
    cr_assert_not_null(fgets(line, sizeof line, f));
    cr_expect_str_eq(line, "env1,cpu,fp32_fma,100,GFLOP/s,m,110,2,plain\n");
    fclose(f);
    peak_table_free(&t);
    remove(path);
    rmdir(dir);
}

Test(peaks_csv, quick_cpu_run_writes_a_well_formed_file, .timeout = 60)
{
    char *dir = make_temp_dir(), path[128], args[256], out[16384], line[2048];
    snprintf(path, sizeof path, "%s/peaks.csv", dir);
    snprintf(args, sizeof args, "peaks --quick --cpu --quiet --env test --out %s", path);
    cr_assert_eq(run_bin(args, 0, out, sizeof out), 0, "peaks exited non-zero");
    cr_expect(strstr(out, "fp32_fma") != NULL, "the table on stdout: %s", out);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s was not written", path);
    cr_assert_not_null(fgets(line, sizeof line, f));
    cr_expect_str_eq(line, PEAKS_CSV_HEADER "\n");
    const char *wanted[] = {"fp32_fma", "fp64_fma", "clock_ghz", "dram_copy", "dram_triad",
                            "l1", "l2", "dram_read"};
    int found[sizeof wanted / sizeof wanted[0]] = {0}, rows = 0;
    while (fgets(line, sizeof line, f)) {
        rows++;
        cr_expect_eq(count_fields(line), 9, "row %d: %s", rows, line);
        char ceiling[64] = "";
        double value = 0;
        cr_expect_eq(sscanf(line, "test,%*[^,],%63[^,],%lf,", ceiling, &value), 2, "%s", line);
        expect_sane(value, 1e6, ceiling);
        for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
            found[i] += strcmp(ceiling, wanted[i]) == 0;
    }
    fclose(f);
    for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++)
        cr_expect_eq(found[i], 1, "ceiling %s appears %d times", wanted[i], found[i]);
    remove(path);
    rmdir(dir);
}

/* ---- options ---------------------------------------------------------------- */



Test(peaks_cli, bad_options_get_one_line_and_status_2)
{
    expect_usage_error("peaks --threads 0", "--threads: '0' is not an integer in 1..");
    expect_usage_error("peaks --threads 2x", "--threads: '2x'");
    expect_usage_error("peaks --threads 100000", "--threads: '100000'");
    expect_usage_error("peaks --bogus", "unknown option '--bogus' (accepted: --cpu, --gpu");
    expect_usage_error("peaks --env 'a,b'", "--env: 'a,b'");
    expect_usage_error("peaks --out", "--out needs a value");
    expect_usage_error("peaks stray", "unexpected argument 'stray'");
}

/* ---- specs.csv --------------------------------------------------------------- */

static gpu_spec_table load_specs(void)
{
    gpu_spec_table t;
    char err[512];
    cr_assert_eq(specs_load(ROOFLINE_BIN_DIR "/../peaks/specs.csv", &t, err, sizeof err), 0,
                 "%s", err);
    return t;
}

Test(peaks_specs, device_names_find_their_rows)
{
    gpu_spec_table t = load_specs();
    static const char *const cases[][2] = {
        {"NVIDIA H200", "H200 SXM"},
        {"NVIDIA H100 80GB HBM3", "H100 SXM5"},
        {"NVIDIA H100 PCIe", "H100 PCIe"},
        {"NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"},
        {"NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"},
        {"NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"},
        {"NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"},
        {"NVIDIA L40S", "L40S"},
        {"NVIDIA L4", "L4"},
        {"NVIDIA A10", "A10"},
        {"Tesla T4", "T4"},
        {"Tesla V100-SXM2-32GB", "V100 SXM2"},
        {"Tesla V100-PCIE-16GB", "V100 PCIe"},
        {"NVIDIA GeForce RTX 4090", "RTX 4090"},
        {"NVIDIA GeForce RTX 3090", "RTX 3090"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const gpu_spec *s = specs_match(&t, cases[i][0]);
        cr_expect(s && strcmp(s->gpu, cases[i][1]) == 0, "%s matched %s, wanted %s", cases[i][0],
                  s ? s->gpu : "nothing", cases[i][1]);
    }
    cr_expect_null(specs_match(&t, "NVIDIA L40"), "L40 is not an L40S");
    cr_expect_null(specs_match(&t, "NVIDIA GeForce RTX 3080"));
    specs_free(&t);
}

Test(peaks_specs, values_come_in_the_ceilings_units)
{
    gpu_spec_table t = load_specs();
    const gpu_spec *h200 = specs_match(&t, "NVIDIA H200");
    cr_assert_not_null(h200);
    cr_expect_float_eq(specs_value(h200, "bf16_tensor"), 989400.0, 1e-6);
    cr_expect_float_eq(specs_value(h200, "fp32_fma"), 67000.0, 1e-6);
    cr_expect_float_eq(specs_value(h200, "hbm_triad"), 4800.0, 1e-6);
    cr_expect(isnan(specs_value(h200, "l2")));
    cr_expect(isnan(specs_value(specs_match(&t, "Tesla T4"), "bf16_tensor")), "T4 has no bf16");
    cr_expect(isnan(specs_value(NULL, "fp32_fma")));
    specs_free(&t);
}

/* The table checks itself: FP32 = SMs x boost x (64 or 128 lanes) x 2, and
 * TF32 runs at half the FP16 tensor rate on every GPU that has both. */
Test(peaks_specs, rows_agree_with_their_own_clocks)
{
    gpu_spec_table t = load_specs();
    cr_expect_geq(t.n, 12);
    for (int i = 0; i < t.n; i++) {
        const gpu_spec *s = &t.rows[i];
        double lanes = s->fp32_tflops * 1e12 / (s->sms * s->boost_mhz * 1e6 * 2.0);
        cr_expect(fabs(lanes - 64) < 64 * 0.02 || fabs(lanes - 128) < 128 * 0.02,
                  "%s: FP32 implies %.1f lanes per SM", s->gpu, lanes);
        if (isfinite(s->tf32_tensor_tflops))
            cr_expect(fabs(2 * s->tf32_tensor_tflops / s->fp16_tensor_tflops - 1) < 0.03,
                      "%s: tf32 %g vs fp16 %g", s->gpu, s->tf32_tensor_tflops,
                      s->fp16_tensor_tflops);
        cr_expect(s->mem_gbs > 100 && strlen(s->source) > 20, "%s", s->gpu);
    }
    specs_free(&t);
}
