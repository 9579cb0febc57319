/* The GPU half of bin/peaks: runs every GPU microbenchmark on one device and
 * turns the results into peaks.csv rows beside the specs.csv figures. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_bench.h"
#include "gpu_peaks.h"
#include "specs.h"

namespace {

struct row_context {
    const gpu_context *gpu;
    const gpu_spec *spec; /* NULL when no specs.csv row matches */
    peak_table *table;
    bool verbose;
    double sm_mhz_sum; /* over the tests NVML saw, for the clock row */
    double mem_mhz_sum;
    int clock_tests;
};

/* Per-lane PCIe payload rate, GB/s per direction, after line encoding. */
double pcie_lane_gbs(unsigned gen)
{
    static const double rate[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
    return gen < sizeof rate / sizeof rate[0] ? rate[gen] : NAN;
}

void add_row(row_context &rc, const char *ceiling, const gpu_result &r, const char *unit,
             const char *method, double spec, const char *spec_note)
{
    if (!(r.value > 0)) {
        fprintf(stderr, "peaks: %s left out: %s\n", ceiling, r.detail);
        return;
    }
    char notes[PEAK_NOTES], clocks[96] = "clocks: NVML unavailable";
    if (isfinite(r.sm_mhz)) {
        snprintf(clocks, sizeof clocks, "sm %.0f MHz; mem %.0f MHz (NVML mean)", r.sm_mhz,
                 r.mem_mhz);
        rc.sm_mhz_sum += r.sm_mhz;
        rc.mem_mhz_sum += r.mem_mhz;
        rc.clock_tests++;
    }
    snprintf(notes, sizeof notes, "%s; %s; spec: %s", r.detail, clocks, spec_note);
    peak_row row = peak_row_make(rc.gpu->prop.name, ceiling, r.value, unit, method, spec,
                                 rc.gpu->sms, notes);
    if (peak_table_add(rc.table, &row) != 0) {
        fprintf(stderr, "peaks: out of memory for the peaks table\n");
        exit(EXIT_FAILURE);
    }
    if (rc.verbose)
        fprintf(stderr, "peaks: gpu %-12s %10.1f %s\n", ceiling, r.value, unit);
}

/* The vendor figure for a ceiling, and a note naming where it came from. */
double vendor_spec(const row_context &rc, const char *ceiling, char *note, size_t len)
{
    double v = specs_value(rc.spec, ceiling);
    if (rc.spec && isfinite(v))
        snprintf(note, len, "specs.csv '%s'", rc.spec->gpu);
    else if (rc.spec)
        snprintf(note, len, "specs.csv '%s' has no figure", rc.spec->gpu);
    else
        snprintf(note, len, "no specs.csv row for this GPU");
    return v;
}

void flops_rows(row_context &rc)
{
    static const struct {
        gpu_fma_type type;
        const char *ceiling;
    } tests[] = {{GPU_FMA_FP64, "fp64_fma"}, {GPU_FMA_FP32, "fp32_fma"}, {GPU_FMA_FP16X2, "fp16_fma"}};
    for (const auto &t : tests) {
        gpu_result r = gpu_fma_peak(*rc.gpu, t.type);
        char note[96];
        double spec = vendor_spec(rc, t.ceiling, note, sizeof note);
        add_row(rc, t.ceiling, r, "GFLOP/s", "CUDA-core FMA: ERT-style sweep plateau", spec, note);
    }
}

void gemm_rows(row_context &rc)
{
    static const struct {
        gpu_gemm_type type;
        const char *ceiling;
    } tests[] = {{GPU_GEMM_TF32, "tf32_tensor"},
                 {GPU_GEMM_FP16, "fp16_tensor"},
                 {GPU_GEMM_BF16, "bf16_tensor"},
                 {GPU_GEMM_FP8, "fp8_tensor"}};
    for (const auto &t : tests) {
        gpu_result r = gpu_gemm_peak(*rc.gpu, t.type);
        char note[96];
        double spec = vendor_spec(rc, t.ceiling, note, sizeof note);
        add_row(rc, t.ceiling, r, "GFLOP/s", "cuBLASLt GEMM: best over shapes and algorithms",
                spec, note);
    }
}

void memory_rows(row_context &rc)
{
    const gpu_context &c = *rc.gpu;
    char note[160];
    for (gpu_mem_test test : {GPU_MEM_HBM_COPY, GPU_MEM_HBM_TRIAD}) {
        const char *ceiling = test == GPU_MEM_HBM_COPY ? "hbm_copy" : "hbm_triad";
        gpu_result r = gpu_mem_bandwidth(c, test);
        double spec = vendor_spec(rc, ceiling, note, sizeof note);
        if (!isfinite(spec) && c.mem_theory_gbs > 0) {
            spec = c.mem_theory_gbs;
            snprintf(note, sizeof note, "2 x memory clock x bus width (device attributes)");
        }
        add_row(rc, ceiling, r, "GB/s", "STREAM-style float4 kernel; arrays far beyond L2", spec,
                note);
    }
    gpu_result l2 = gpu_mem_bandwidth(c, GPU_MEM_L2);
    add_row(rc, "l2", l2, "GB/s", "read kernel; working set inside L2", NAN,
            "no vendor figure");
    for (gpu_mem_test test : {GPU_MEM_L1, GPU_MEM_SMEM}) {
        gpu_result r = gpu_mem_bandwidth(c, test);
        /* 32 banks x 4 bytes per clock per SM (Volta and later) */
        bool measured_clock = isfinite(r.sm_mhz);
        double mhz = measured_clock ? r.sm_mhz : c.max_sm_mhz;
        double spec = 128.0 * c.sms * mhz * 1e-3;
        snprintf(note, sizeof note, "128 B/clk/SM x %d SMs x %.0f MHz (%s)", c.sms, mhz,
                 measured_clock ? "NVML SM clock during the test" : "the device's maximum clock");
        add_row(rc, test == GPU_MEM_L1 ? "l1" : "smem", r, "GB/s",
                test == GPU_MEM_L1 ? "read kernel; 8 KiB per block through L1"
                                   : "read kernel; 8 KiB of shared memory per block",
                spec, note);
    }
    unsigned gen = 0, width = 0;
    bool link = nvml_pcie_link(c.nvml, &gen, &width) == 0;
    double link_gbs = link ? pcie_lane_gbs(gen) * width : NAN;
    if (link)
        snprintf(note, sizeof note, "PCIe gen%u x%u per direction after encoding (NVML)", gen,
                 width);
    else
        snprintf(note, sizeof note, "link unknown without NVML");
    for (gpu_mem_test test : {GPU_MEM_PCIE_H2D, GPU_MEM_PCIE_D2H}) {
        gpu_result r = gpu_mem_bandwidth(c, test);
        add_row(rc, test == GPU_MEM_PCIE_H2D ? "pcie_h2d" : "pcie_d2h", r, "GB/s",
                "cudaMemcpyAsync; pinned host memory", link_gbs, note);
    }
}

void clock_row(row_context &rc)
{
    if (rc.clock_tests == 0)
        return;
    gpu_result r = {};
    r.sm_mhz = rc.sm_mhz_sum / rc.clock_tests;
    r.mem_mhz = rc.mem_mhz_sum / rc.clock_tests;
    r.value = r.sm_mhz * 1e-3;
    snprintf(r.detail, sizeof r.detail, "mean over the %d tests above", rc.clock_tests);
    double spec = rc.spec ? rc.spec->boost_mhz * 1e-3 : NAN;
    char note[96];
    snprintf(note, sizeof note, rc.spec ? "boost clock of specs.csv '%s'" : "no specs.csv row",
             rc.spec ? rc.spec->gpu : "");
    add_row(rc, "sm_clock_ghz", r, "GHz", "NVML SM clock sampled every 20 ms during the tests",
            spec, note);
}

} // namespace

extern "C" int gpu_peaks_run(const gpu_peaks_options *o, peak_table *t, char *err, size_t err_len)
{
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        snprintf(err, err_len, "no CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
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
    row_context rc = {};
    rc.gpu = &c;
    rc.spec = specs_match(&specs, c.prop.name);
    rc.table = t;
    rc.verbose = o->verbose;
    if (o->verbose)
        fprintf(stderr, "peaks: gpu %s, %d SMs, compute %d.%d, spec row %s\n", c.prop.name, c.sms,
                c.prop.major, c.prop.minor, rc.spec ? rc.spec->gpu : "(none)");
    flops_rows(rc);
    gemm_rows(rc);
    memory_rows(rc);
    clock_row(rc);
    specs_free(&specs);
    gpu_context_close(&c);
    return GPU_PEAKS_OK;
}
