/* make test-gpu: every GPU microbenchmark of bin/peaks runs on the GPU it
 * finds and lands within 10%..105% of that GPU's specs.csv figure (or of the
 * theoretical figure bin/peaks sets beside it: 128 B/clk/SM for L1 and shared
 * memory, the PCIe link for transfers). Quick mode: seconds. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_test.h"
#include "../../peaks/gpu_bench.h"
#include "../../peaks/specs.h"

static gpu_tally tally;

static void expect(bool ok, const char *what)
{
    gpu_expect(&tally, ok, what);
}

/* Within 10%..105% of the reference, or merely positive where there is none. */
static void check(const char *ceiling, const gpu_result &r, double reference, const char *unit)
{
    char line[512];
    if (isfinite(reference) && reference > 0) {
        double ratio = r.value / reference;
        snprintf(line, sizeof line, "%s = %.1f %s, %.1f%% of %.1f (%s)", ceiling, r.value, unit,
                 100.0 * ratio, reference, r.detail);
        expect(ratio >= 0.10 && ratio <= 1.05, line);
    } else {
        snprintf(line, sizeof line, "%s = %.1f %s, no reference (%s)", ceiling, r.value, unit,
                 r.detail);
        expect(r.value > 0 && isfinite(r.value), line);
    }
}

int main(void)
{
    if (gpu_test_skip())
        return 0;
    gpu_context c;
    gpu_context_open(&c, 0, true);
    gpu_spec_table specs = {NULL, 0};
    char path[4096], why[512];
    if (specs_find_file(path, sizeof path) != 0 || specs_load(path, &specs, why, sizeof why) != 0)
        printf("note: peaks/specs.csv not readable; checking for positive values only\n");
    const gpu_spec *spec = specs_match(&specs, c.prop.name);
    printf("device 0: %s, %d SMs, compute %d.%d; specs.csv row: %s\n", c.prop.name, c.sms,
           c.prop.major, c.prop.minor, spec ? spec->gpu : "none");

    const struct {
        gpu_fma_type type;
        const char *ceiling;
    } fmas[] = {{GPU_FMA_FP64, "fp64_fma"}, {GPU_FMA_FP32, "fp32_fma"}, {GPU_FMA_FP16X2, "fp16_fma"}};
    for (const auto &f : fmas)
        check(f.ceiling, gpu_fma_peak(c, f.type), specs_value(spec, f.ceiling), "GFLOP/s");

    const struct {
        gpu_gemm_type type;
        const char *ceiling;
    } gemms[] = {{GPU_GEMM_TF32, "tf32_tensor"},
                 {GPU_GEMM_FP16, "fp16_tensor"},
                 {GPU_GEMM_BF16, "bf16_tensor"},
                 {GPU_GEMM_FP8, "fp8_tensor"}};
    for (const auto &g : gemms) {
        gpu_result r = gpu_gemm_peak(c, g.type);
        double reference = specs_value(spec, g.ceiling);
        /* a GPU the spec row gives no such figure cannot run it either */
        if (r.value == 0 && (!spec || !isfinite(reference))) {
            printf("SKIP: %s: %s\n", g.ceiling, r.detail);
            continue;
        }
        check(g.ceiling, r, reference, "GFLOP/s");
    }

    double hbm_reference = spec ? spec->mem_gbs : c.mem_theory_gbs;
    gpu_result copy = gpu_mem_bandwidth(c, GPU_MEM_HBM_COPY);
    check("hbm_copy", copy, hbm_reference, "GB/s");
    check("hbm_triad", gpu_mem_bandwidth(c, GPU_MEM_HBM_TRIAD), hbm_reference, "GB/s");
    gpu_result l2 = gpu_mem_bandwidth(c, GPU_MEM_L2);
    char line[512];
    snprintf(line, sizeof line, "l2 = %.1f GB/s, above hbm_copy's %.1f (%s)", l2.value,
             copy.value, l2.detail);
    expect(l2.value > copy.value, line);
    for (gpu_mem_test t : {GPU_MEM_L1, GPU_MEM_SMEM}) {
        gpu_result r = gpu_mem_bandwidth(c, t);
        double mhz = isfinite(r.sm_mhz) ? r.sm_mhz : c.max_sm_mhz;
        check(t == GPU_MEM_L1 ? "l1" : "smem", r, 128.0 * c.sms * mhz * 1e-3, "GB/s");
    }
    unsigned gen = 0, width = 0;
    static const double lane_gbs[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.563};
    double link = nvml_pcie_link(c.nvml, &gen, &width) == 0 && gen < 7 ? lane_gbs[gen] * width : NAN;
    check("pcie_h2d", gpu_mem_bandwidth(c, GPU_MEM_PCIE_H2D), link, "GB/s");
    check("pcie_d2h", gpu_mem_bandwidth(c, GPU_MEM_PCIE_D2H), link, "GB/s");

    specs_free(&specs);
    gpu_context_close(&c);
    return gpu_test_finish(&tally);
}
