#include "roofline.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *roof_kernel_ceiling(const char *precision, double fp64, double fp32, double fp16,
                                double tensor, char *buf)
{
    buf[0] = '\0';
    if (tensor > 0) {
        /* an fp32 step's tensor-core FLOPs ran as tf32: the metric pass counts
         * the tf32 tensor pipe for fp32 steps (counters/README.md) */
        snprintf(buf, ROOF_CEILING_LEN, "%s_tensor",
                 strcmp(precision, "fp32") == 0 ? "tf32" : precision);
        return buf;
    }
    /* NaN compares false, so an empty count never wins */
    const char *name = NULL;
    double most = 0;
    if (fp64 > most)
        most = fp64, name = "fp64_fma";
    if (fp32 > most)
        most = fp32, name = "fp32_fma";
    if (fp16 > most)
        most = fp16, name = "fp16_fma";
    if (name)
        snprintf(buf, ROOF_CEILING_LEN, "%s", name);
    return buf;
}

const char *roof_bound_name(roof_bound b)
{
    return b == BOUND_MEMORY ? "memory" : b == BOUND_COMPUTE ? "compute" : "unknown";
}

bool roof_bound_parse(const char *name, roof_bound *out)
{
    for (roof_bound b = BOUND_UNKNOWN; b <= BOUND_COMPUTE; b++)
        if (strcmp(name, roof_bound_name(b)) == 0) {
            *out = b;
            return true;
        }
    return false;
}

static double ratio(double num, double den)
{
    return den > 0 ? num / den : NAN; /* NaN inputs stay NaN */
}

void roof_point_eval(roof_point *p)
{
    p->ai_dram = ratio(p->flops, p->dram_bytes);
    p->ai_l2 = ratio(p->flops, p->l2_bytes);
    p->achieved_gflops = ratio(p->flops, p->duration_ns);
    p->ridge_ai = ratio(p->peak_gflops, p->dram_gbs);
    p->attainable_gflops = NAN;
    p->pct_of_attainable = NAN;
    p->bound = BOUND_UNKNOWN;
    if (p->flops == 0 && p->dram_bytes > 0 && p->dram_gbs > 0) {
        p->attainable_gflops = 0;
        p->bound = BOUND_MEMORY;
        /* its only rate is the bytes': against the DRAM roof */
        p->pct_of_attainable = 100.0 * ratio(p->dram_bytes / p->duration_ns, p->dram_gbs);
        return;
    }
    if (!isfinite(p->ai_dram) || !isfinite(p->ridge_ai) || !(p->peak_gflops > 0))
        return;
    p->attainable_gflops = fmin(p->ai_dram * p->dram_gbs, p->peak_gflops);
    p->pct_of_attainable = 100.0 * ratio(p->achieved_gflops, p->attainable_gflops);
    p->bound = p->ai_dram < p->ridge_ai ? BOUND_MEMORY : BOUND_COMPUTE;
}

double roof_point_time_ns(const roof_point *p)
{
    if (p->flops == 0 && p->attainable_gflops == 0)
        return ratio(p->dram_bytes, p->dram_gbs);
    return ratio(p->flops, p->attainable_gflops);
}
