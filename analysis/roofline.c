#include "roofline.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* "dram", "dram_triad", ... but not "dramatic": the family name alone or
 * followed by an underscore. */
static bool in_family(const char *ceiling, const char *family)
{
    size_t m = strlen(family);
    return starts_with(ceiling, family) && (ceiling[m] == '\0' || ceiling[m] == '_');
}

/* The best row of a memory family; NaN and "" when there is none. */
static double best_bandwidth(const roofs *r, const char *const *families, char *name)
{
    double best = NAN;
    name[0] = '\0';
    for (int i = 0; r->peaks && i < csv_rows(r->peaks); i++) {
        const char *c = csv_cell(r->peaks, i, r->col_ceiling);
        if (strcmp(csv_cell(r->peaks, i, r->col_unit), "GB/s") != 0 || ends_with(c, "_1core"))
            continue;
        bool member = false;
        for (const char *const *f = families; *f; f++)
            member = member || in_family(c, *f);
        bool ok;
        double v = csv_num(r->peaks, i, r->col_value, &ok);
        if (member && ok && v > 0 && !(v <= best)) {
            best = v;
            snprintf(name, ROOF_CEILING_LEN, "%s", c);
        }
    }
    return best;
}

int roofs_init(roofs *r, const csv_table *peaks, const char *path, char *err, size_t err_len)
{
    *r = (roofs){.peaks = peaks, .dram_gbs = NAN, .l2_gbs = NAN};
    if (!peaks)
        return 0;
    static const char *const names[] = {"ceiling", "value", "unit", NULL};
    int cols[3];
    if (csv_require(peaks, path, names, cols, err, err_len))
        return -1;
    r->col_ceiling = cols[0];
    r->col_value = cols[1];
    r->col_unit = cols[2];
    static const char *const dram[] = {"dram", "hbm", NULL};
    static const char *const l2[] = {"l2", NULL};
    r->dram_gbs = best_bandwidth(r, dram, r->dram_ceiling);
    r->l2_gbs = best_bandwidth(r, l2, r->l2_ceiling);
    return 0;
}

double roofs_peak(const roofs *r, const char *name)
{
    double best = NAN;
    for (int i = 0; r->peaks && name[0] && i < csv_rows(r->peaks); i++) {
        if (strcmp(csv_cell(r->peaks, i, r->col_ceiling), name) != 0 ||
            strcmp(csv_cell(r->peaks, i, r->col_unit), "GFLOP/s") != 0)
            continue;
        bool ok;
        double v = csv_num(r->peaks, i, r->col_value, &ok);
        if (ok && v > 0 && !(v <= best))
            best = v;
    }
    return best;
}

const char *roof_kernel_ceiling(const char *precision, double fp64, double fp32, double fp16,
                                double tensor, char *buf)
{
    buf[0] = '\0';
    if (tensor > 0) {
        snprintf(buf, ROOF_CEILING_LEN, "%s_tensor", precision);
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

const char *roof_precision_ceiling(const roofs *r, const char *precision, char *buf)
{
    buf[0] = '\0';
    if (strcmp(precision, "fp32") == 0)
        snprintf(buf, ROOF_CEILING_LEN, "fp32_fma");
    else if (strcmp(precision, "tf32") == 0 || strcmp(precision, "bf16") == 0 ||
             strcmp(precision, "fp8") == 0 || strcmp(precision, "fp16") == 0)
        snprintf(buf, ROOF_CEILING_LEN, "%s_tensor", precision);
    if (strcmp(precision, "fp16") == 0 && isnan(roofs_peak(r, buf)))
        snprintf(buf, ROOF_CEILING_LEN, "fp16_fma");
    return buf;
}

const char *roof_bound_name(roof_bound b)
{
    return b == BOUND_MEMORY ? "memory" : b == BOUND_COMPUTE ? "compute" : "unknown";
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
        return;
    }
    if (!isfinite(p->ai_dram) || !isfinite(p->ridge_ai) || !(p->peak_gflops > 0))
        return;
    p->attainable_gflops = fmin(p->ai_dram * p->dram_gbs, p->peak_gflops);
    p->pct_of_attainable = 100.0 * ratio(p->achieved_gflops, p->attainable_gflops);
    p->bound = p->ai_dram < p->ridge_ai ? BOUND_MEMORY : BOUND_COMPUTE;
}
