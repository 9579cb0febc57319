/* The GPU half of bin/peaks: runs every GPU microbenchmark on one device,
 * checks the figures against each other (peak_check.h), measures again what
 * fails, and turns the results into peaks.csv rows beside the specs.csv
 * figures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <new>

#include "cuda_driver_dl.h"
#include "gpu_bench.h"
#include "gpu_peaks.h"
#include "peak_check.h"
#include "specs.h"

namespace {

enum test_id {
    T_FP64, T_FP32, T_FP16,
    T_TF32, T_FP16_TENSOR, T_BF16_TENSOR, T_FP8_TENSOR,
    T_HBM_COPY, T_HBM_TRIAD, T_HBM_READ, T_HBM_WRITE,
    T_L2, T_L1, T_SMEM, T_H2D, T_D2H,
    T_COUNT
};

struct test_def {
    const char *ceiling, *unit, *method;
    double tol; /* best and runner-up trial must agree within this */
};

const test_def tests[T_COUNT] = {
    {"fp64_fma", "GFLOP/s", "CUDA-core FMA chains in registers; one wave", 0.03},
    {"fp32_fma", "GFLOP/s", "CUDA-core FMA chains in registers; one wave", 0.03},
    {"fp16_fma", "GFLOP/s", "CUDA-core half2 FMA chains in registers; one wave", 0.03},
    {"tf32_tensor", "GFLOP/s", "cuBLASLt GEMM: best over shapes and algorithms", 0.05},
    {"fp16_tensor", "GFLOP/s", "cuBLASLt GEMM: best over shapes and algorithms", 0.05},
    {"bf16_tensor", "GFLOP/s", "cuBLASLt GEMM: best over shapes and algorithms", 0.05},
    {"fp8_tensor", "GFLOP/s", "cuBLASLt GEMM: best over shapes and algorithms", 0.05},
    {"hbm_copy", "GB/s", "best of own float4 copy kernels and cudaMemcpyAsync D2D", 0.03},
    {"hbm_triad", "GB/s", "STREAM-style float4 triad kernel; arrays far beyond L2", 0.03},
    {"hbm_read", "GB/s", "float4 read-only kernel; one array far beyond L2", 0.03},
    {"hbm_write", "GB/s", "float4 write-only kernel; one array far beyond L2", 0.03},
    {"l2", "GB/s", "read kernel; working set inside L2", 0.03},
    {"l1", "GB/s", "read kernel; 8 KiB per block through L1", 0.03},
    {"smem", "GB/s", "read kernel; 8 KiB of shared memory per block", 0.03},
    {"pcie_h2d", "GB/s", "cudaMemcpyAsync; pinned host memory", 0.10},
    {"pcie_d2h", "GB/s", "cudaMemcpyAsync; pinned host memory", 0.10},
};

gpu_result run_test(const gpu_context &c, int id)
{
    switch (id) {
    case T_FP64: return gpu_fma_peak(c, GPU_FMA_FP64);
    case T_FP32: return gpu_fma_peak(c, GPU_FMA_FP32);
    case T_FP16: return gpu_fma_peak(c, GPU_FMA_FP16X2);
    case T_TF32: return gpu_gemm_peak(c, GPU_GEMM_TF32);
    case T_FP16_TENSOR: return gpu_gemm_peak(c, GPU_GEMM_FP16);
    case T_BF16_TENSOR: return gpu_gemm_peak(c, GPU_GEMM_BF16);
    case T_FP8_TENSOR: return gpu_gemm_peak(c, GPU_GEMM_FP8);
    case T_HBM_COPY: return gpu_mem_bandwidth(c, GPU_MEM_HBM_COPY);
    case T_HBM_TRIAD: return gpu_mem_bandwidth(c, GPU_MEM_HBM_TRIAD);
    case T_HBM_READ: return gpu_mem_bandwidth(c, GPU_MEM_HBM_READ);
    case T_HBM_WRITE: return gpu_mem_bandwidth(c, GPU_MEM_HBM_WRITE);
    case T_L2: return gpu_mem_bandwidth(c, GPU_MEM_L2);
    case T_L1: return gpu_mem_bandwidth(c, GPU_MEM_L1);
    case T_SMEM: return gpu_mem_bandwidth(c, GPU_MEM_SMEM);
    case T_H2D: return gpu_mem_bandwidth(c, GPU_MEM_PCIE_H2D);
    default: return gpu_mem_bandwidth(c, GPU_MEM_PCIE_D2H);
    }
}

struct gpu_state {
    const gpu_context *gpu;
    const gpu_spec *spec; /* NULL when no specs.csv row matches */
    bool verbose;
    gpu_result res[T_COUNT];
    int fig[T_COUNT];     /* index in checks, -1 when not measured */
    check_set checks;
};

/* A test again at a higher effort; the better result is kept whole (its
 * clocks and detail with it). */
int measure_again(void *ctx, int group, int round, double seconds_left, check_set *s, char *err,
                  size_t err_len)
{
    (void)seconds_left;
    (void)err;
    (void)err_len;
    gpu_state *st = (gpu_state *)ctx;
    gpu_context c = *st->gpu;
    c.effort = 1 + round;
    if (st->verbose)
        fprintf(stderr, "peaks: gpu %s again (consistency check, effort %d)\n",
                tests[group].ceiling, c.effort);
    gpu_result r = run_test(c, group);
    if (r.value > st->res[group].value)
        st->res[group] = r;
    check_offer(s, st->fig[group], r.value, r.second);
    return 0;
}

double now(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void relate(gpu_state &st, int low, int high, double factor, const char *what)
{
    if (st.fig[low] >= 0 && st.fig[high] >= 0)
        check_relate(&st.checks, st.fig[low], st.fig[high], factor, what);
}

/* What the hardware imposes between the figures of one GPU; the lower side
 * of a broken relation is measured again. */
void build_checks(gpu_state &st)
{
    memset(&st.checks, 0, sizeof st.checks);
    for (int t = 0; t < T_COUNT; t++)
        st.fig[t] = st.res[t].value > 0 ? check_add(&st.checks, tests[t].ceiling, t,
                                                    st.res[t].value, st.res[t].second,
                                                    tests[t].tol)
                                        : -1;
    relate(st, T_FP32, T_FP64, 0.9, "fp32 >= 0.9 x fp64");
    relate(st, T_FP16, T_FP32, 0.8, "half2 >= 0.8 x fp32 (1x, 2x or 4x on every GPU)");
    relate(st, T_FP16_TENSOR, T_BF16_TENSOR, 0.85, "fp16 and bf16 tensor within 15%");
    relate(st, T_BF16_TENSOR, T_FP16_TENSOR, 0.85, "fp16 and bf16 tensor within 15%");
    relate(st, T_FP8_TENSOR, T_FP16_TENSOR, 0.9, "fp8 tensor >= 0.9 x fp16 tensor");
    relate(st, T_TF32, T_FP16_TENSOR, 0.35, "tf32 tensor >= 0.35 x fp16 tensor");
    relate(st, T_HBM_TRIAD, T_HBM_COPY, 0.9, "hbm triad and copy within 10%");
    relate(st, T_HBM_COPY, T_HBM_TRIAD, 0.9, "hbm triad and copy within 10%");
    relate(st, T_HBM_READ, T_HBM_COPY, 0.8, "hbm read >= 0.8 x copy");
    relate(st, T_L2, T_HBM_READ, 1.0, "l2 >= hbm read");
    relate(st, T_L1, T_L2, 0.9, "l1 >= 0.9 x l2");
    relate(st, T_SMEM, T_L1, 0.7, "l1 and shared memory within 30%");
    relate(st, T_L1, T_SMEM, 0.7, "l1 and shared memory within 30%");
    relate(st, T_H2D, T_D2H, 0.7, "pcie directions within 30%");
    relate(st, T_D2H, T_H2D, 0.7, "pcie directions within 30%");
}

/* Per-lane PCIe payload rate, GB/s per direction, after line encoding. */
double pcie_lane_gbs(unsigned gen)
{
    static const double rate[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
    return gen < sizeof rate / sizeof rate[0] ? rate[gen] : NAN;
}

/* Appends ";<text>" to a note while it fits. */
void append(char *note, size_t len, const char *text)
{
    size_t used = strlen(note);
    if (text[0] && used + 3 < len)
        snprintf(note + used, len - used, "; %s", text);
}

struct row_sums {
    double sm_mhz, mem_mhz;
    int tests;
};

void add_row(const gpu_state &st, peak_table *t, row_sums *sums, int id, double spec,
             const char *spec_note)
{
    const gpu_result &r = st.res[id];
    if (!(r.value > 0)) {
        fprintf(stderr, "peaks: %s left out: %s\n", tests[id].ceiling, r.detail);
        return;
    }
    char notes[PEAK_NOTES], clocks[96] = "clocks: not sampled (no NVML, or a run under 20 ms)",
                           extra[400] = "";
    if (isfinite(r.sm_mhz)) {
        snprintf(clocks, sizeof clocks, "sm %.0f MHz; mem %.0f MHz (NVML mean)", r.sm_mhz,
                 r.mem_mhz);
        sums->sm_mhz += r.sm_mhz;
        sums->mem_mhz += r.mem_mhz;
        sums->tests++;
    }
    /* FLOP figures scale with the SM clock: the spec at the measured clock
     * tells a slow clock from a slow kernel */
    double spec_mhz = specs_clock_mhz(st.spec, tests[id].ceiling);
    if (isfinite(spec) && isfinite(spec_mhz) && isfinite(r.sm_mhz))
        snprintf(extra, sizeof extra,
                 "spec at the measured %.0f MHz: %.1f %s (%.1f%% reached; datasheet %.1f at %.0f "
                 "MHz)",
                 r.sm_mhz, spec * r.sm_mhz / spec_mhz, tests[id].unit,
                 100.0 * r.value / (spec * r.sm_mhz / spec_mhz), spec, spec_mhz);
    snprintf(notes, sizeof notes, "%s; %s; spec: %s", r.detail, clocks, spec_note);
    append(notes, sizeof notes, extra);
    if (id == T_FP16 && isfinite(spec) && r.value < 0.9 * spec) {
        char why[320];
        snprintf(why, sizeof why,
                 "below 90%% of spec: HFMA2 issue %.3f per clock per SM sub-partition against "
                 "FFMA %.3f (measured counter: SM cycles, clock64); on sm_80/sm_90 ptxas runs half "
                 "the HFMA2s on the MMA pipe, so the spec needs both pipes issuing every other "
                 "cycle; the achievable half2 figure here is this row's value",
                 r.issue_rate, st.res[T_FP32].issue_rate);
        append(notes, sizeof notes, why);
    }
    if (st.fig[id] >= 0) {
        char note[CHECK_WHY + 64];
        check_note(&st.checks.fig[st.fig[id]], note, sizeof note);
        append(notes, sizeof notes, note);
    }
    peak_row row = peak_row_make(st.gpu->prop.name, tests[id].ceiling, r.value, tests[id].unit,
                                 tests[id].method, spec, st.gpu->sms, notes);
    if (peak_table_add(t, &row) != 0) {
        fprintf(stderr, "peaks: out of memory for the peaks table\n");
        exit(EXIT_FAILURE);
    }
}

/* The vendor figure for a ceiling, and a note naming where it came from. */
double vendor_spec(const gpu_state &st, const char *ceiling, char *note, size_t len)
{
    double v = specs_value(st.spec, ceiling);
    if (st.spec && isfinite(v))
        snprintf(note, len, "specs.csv '%s'", st.spec->gpu);
    else if (st.spec)
        snprintf(note, len, "specs.csv '%s' has no figure", st.spec->gpu);
    else
        snprintf(note, len, "no specs.csv row for this GPU");
    return v;
}

void rows(const gpu_state &st, peak_table *t)
{
    const gpu_context &c = *st.gpu;
    row_sums sums = {0.0, 0.0, 0};
    char note[160];
    for (int id = T_FP64; id <= T_HBM_WRITE; id++) {
        double spec = vendor_spec(st, tests[id].ceiling, note, sizeof note);
        if (id >= T_HBM_COPY && !isfinite(spec) && c.mem_theory_gbs > 0) {
            spec = c.mem_theory_gbs;
            snprintf(note, sizeof note, "2 x memory clock x bus width (device attributes)");
        }
        add_row(st, t, &sums, id, spec, note);
    }
    add_row(st, t, &sums, T_L2, NAN, "no vendor figure");
    for (int id : {T_L1, T_SMEM}) {
        /* 32 banks x 4 bytes per clock per SM (Volta and later) */
        bool measured_clock = isfinite(st.res[id].sm_mhz);
        double mhz = measured_clock ? st.res[id].sm_mhz : c.max_sm_mhz;
        snprintf(note, sizeof note, "128 B/clk/SM x %d SMs x %.0f MHz (%s)", c.sms, mhz,
                 measured_clock ? "NVML SM clock during the test" : "the device's maximum clock");
        add_row(st, t, &sums, id, 128.0 * c.sms * mhz * 1e-3, note);
    }
    unsigned gen = 0, width = 0;
    bool link = nvml_pcie_link(c.nvml, &gen, &width) == 0;
    if (link)
        snprintf(note, sizeof note, "PCIe gen%u x%u per direction after encoding (NVML)", gen,
                 width);
    else
        snprintf(note, sizeof note, "link unknown without NVML");
    for (int id : {T_H2D, T_D2H})
        add_row(st, t, &sums, id, link ? pcie_lane_gbs(gen) * width : NAN, note);

    if (sums.tests == 0)
        return;
    double mhz = sums.sm_mhz / sums.tests;
    char notes[PEAK_NOTES], spec_note[96];
    snprintf(spec_note, sizeof spec_note, st.spec ? "boost clock of specs.csv '%s'" : "no specs.csv row",
             st.spec ? st.spec->gpu : "");
    snprintf(notes, sizeof notes,
             "mean over the %d tests above (each row's notes give its own; tensor GEMMs run "
             "lowest); mem %.0f MHz; spec: %s",
             sums.tests, sums.mem_mhz / sums.tests, spec_note);
    peak_row row = peak_row_make(c.prop.name, "sm_clock_ghz", mhz * 1e-3, "GHz",
                                 "NVML SM clock sampled every 20 ms during the tests",
                                 st.spec ? st.spec->boost_mhz * 1e-3 : NAN, c.sms, notes);
    if (peak_table_add(t, &row) != 0) {
        fprintf(stderr, "peaks: out of memory for the peaks table\n");
        exit(EXIT_FAILURE);
    }
}

} // namespace

extern "C" int gpu_peaks_run(const gpu_peaks_options *o, peak_table *t, char *err, size_t err_len)
{
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        char why[256] = "none found";
        if (e != cudaSuccess)
            cuda_no_device_why(e == cudaErrorInsufficientDriver, cudaGetErrorString(e),
                               CUDART_VERSION, why, sizeof why);
        snprintf(err, err_len, "no CUDA device (%s)", why);
        return GPU_PEAKS_NO_DEVICE;
    }
    if (o->device < 0 || o->device >= devices) {
        snprintf(err, err_len, "no CUDA device %d (%d found)", o->device, devices);
        return GPU_PEAKS_NO_DEVICE;
    }
    gpu_context c;
    gpu_context_open(&c, o->device, o->quick);
    gpu_spec_table specs = {NULL, 0};
    char path[4096], why[512];
    if (specs_find_file(path, sizeof path) != 0)
        fprintf(stderr, "peaks: peaks/specs.csv not found (set ROOFLINE_SPECS); spec_value left empty\n");
    else if (specs_load(path, &specs, why, sizeof why) != 0)
        fprintf(stderr, "peaks: %s; spec_value left empty\n", why);
    gpu_state *st = new (std::nothrow) gpu_state();
    if (!st) {
        fprintf(stderr, "peaks: out of memory for the GPU peaks\n");
        exit(EXIT_FAILURE);
    }
    st->gpu = &c;
    st->spec = specs_match(&specs, c.prop.name);
    st->verbose = o->verbose;
    if (o->verbose)
        fprintf(stderr, "peaks: gpu %s, %d SMs, compute %d.%d, spec row %s\n", c.prop.name, c.sms,
                c.prop.major, c.prop.minor, st->spec ? st->spec->gpu : "(none)");
    for (int id = 0; id < T_COUNT; id++) {
        st->res[id] = run_test(c, id);
        if (o->verbose && st->res[id].value > 0)
            fprintf(stderr, "peaks: gpu %-12s %10.1f %s\n", tests[id].ceiling, st->res[id].value,
                    tests[id].unit);
    }
    build_checks(*st);
    check_plan plan = {measure_again, now, st, o->quick ? 20.0 : 120.0, 3};
    char check_err[256];
    if (check_run(&st->checks, &plan, check_err, sizeof check_err) < 0)
        fprintf(stderr, "peaks: gpu consistency checks: %s\n", check_err);
    for (int i = 0; i < st->checks.n_fig; i++)
        if (st->checks.fig[i].suspect)
            fprintf(stderr, "peaks: %s is suspect: %s\n", st->checks.fig[i].name,
                    st->checks.fig[i].why);
    rows(*st, t);
    delete st;
    specs_free(&specs);
    gpu_context_close(&c);
    return GPU_PEAKS_OK;
}
