#include "roofs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A row that can be a roof of the machine: measured, positive, not one core's. */
static bool usable(const run_roof *r)
{
    return !r->one_core && r->value > 0;
}

static bool is_main_memory(mem_level level)
{
    return level == MEM_DRAM || level == MEM_HBM;
}

/* The DRAM/HBM figures a roof is taken from: what a kernel that reads and
 * writes can sustain, copy, triad and the read sweep ("dram", "hbm" alone
 * too). STREAM's scale and add, and a write-only stream (hbm_write: no read
 * traffic to turn the bus around for, faster than any training kernel can
 * move data), are not roofs. */
static bool sustained(const run_roof *r)
{
    const char *kind = strchr(r->ceiling, '_');
    return !kind || strcmp(kind, "_copy") == 0 || strcmp(kind, "_triad") == 0 ||
           strcmp(kind, "_read") == 0;
}

/* Whether a usable main-memory row is one of the sustained ones; rows of other
 * kinds count only in a peaks.csv without any sustained row (an older file). */
static bool has_sustained(const run_roof *rows, int n)
{
    for (int i = 0; i < n; i++)
        if (rows[i].rate == ROOF_RATE_BANDWIDTH && usable(&rows[i]) &&
            is_main_memory(rows[i].level) && sustained(&rows[i]))
            return true;
    return false;
}

static bool memory_roof_row(const run_roof *r, bool only_sustained)
{
    return r->rate == ROOF_RATE_BANDWIDTH && usable(r) &&
           !(only_sustained && is_main_memory(r->level) && !sustained(r));
}

static double best_of_levels(const run_roof *rows, int n, mem_level a, mem_level b)
{
    bool only_sustained = has_sustained(rows, n);
    double best = NAN;
    for (int i = 0; i < n; i++) {
        const run_roof *r = &rows[i];
        if (memory_roof_row(r, only_sustained) && (r->level == a || r->level == b) &&
            !(r->value <= best))
            best = r->value;
    }
    return best;
}

void roofs_init(roofs *r, const run_roof *rows, int n)
{
    *r = (roofs){.rows = rows, .n = n};
    r->dram_gbs = best_of_levels(rows, n, MEM_DRAM, MEM_HBM);
    r->l2_gbs = best_of_levels(rows, n, MEM_L2, MEM_L2);
    r->l1_gbs = best_of_levels(rows, n, MEM_L1, MEM_L1);
}

double roofs_peak(const roofs *r, const char *name)
{
    double best = NAN;
    for (int i = 0; name[0] && i < r->n; i++) {
        const run_roof *row = &r->rows[i];
        if (row->rate == ROOF_RATE_COMPUTE && row->value > 0 && strcmp(row->ceiling, name) == 0 &&
            !(row->value <= best))
            best = row->value;
    }
    return best;
}

const char *roofs_precision_ceiling(const roofs *r, const char *precision, char *buf)
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

/* ---- the ceilings a figure draws ------------------------------------------ */

static const struct {
    mem_level level;
    const char *name, *label;
} level_names[] = {
    {MEM_DRAM, "dram", "DRAM"}, {MEM_HBM, "hbm", "HBM"}, {MEM_L3, "l3", "L3"},
    {MEM_L2, "l2", "L2"},       {MEM_L1, "l1", "L1"},    {MEM_SMEM, "smem", "shared memory"},
};

/* "fp32_fma" -> "fp32 FMA", "bf16_tensor" -> "bf16 tensor". */
static void compute_label(const char *ceiling, char *out, size_t len)
{
    snprintf(out, len, "%s", ceiling);
    for (char *p = out; *p; p++)
        if (*p == '_')
            *p = ' ';
    char *fma = strstr(out, " fma");
    if (fma && fma[4] == '\0')
        memcpy(fma + 1, "FMA", 3);
}

static void keep_best(roof_line *list, int *n, const char *ceiling, const char *label,
                      double value, mem_level level)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(list[i].ceiling, ceiling) == 0) {
            if (value > list[i].value)
                list[i].value = value;
            return;
        }
    if (*n == ROOF_MAX_LINES)
        return;
    roof_line *r = &list[(*n)++];
    snprintf(r->ceiling, sizeof r->ceiling, "%s", ceiling);
    snprintf(r->label, sizeof r->label, "%s", label);
    r->value = value;
    r->level = level;
}

void roof_lines_of(const run_roof *rows, int n, roof_lines *out)
{
    memset(out, 0, sizeof *out);
    bool only_sustained = has_sustained(rows, n);
    for (int i = 0; i < n; i++) {
        const run_roof *r = &rows[i];
        if (!usable(r))
            continue;
        if (r->rate == ROOF_RATE_COMPUTE) {
            char label[48];
            compute_label(r->ceiling, label, sizeof label);
            keep_best(out->compute, &out->n_compute, r->ceiling, label, r->value, MEM_NONE);
        } else if (memory_roof_row(r, only_sustained) && r->level != MEM_NONE) {
            for (size_t k = 0; k < sizeof level_names / sizeof level_names[0]; k++)
                if (level_names[k].level == r->level)
                    keep_best(out->memory, &out->n_memory, level_names[k].name,
                              level_names[k].label, r->value, r->level);
        }
    }
    /* slowest level first: the order a reader meets the diagonals */
    for (int i = 1; i < out->n_memory; i++)
        for (int j = i; j > 0 && out->memory[j].value < out->memory[j - 1].value; j--) {
            roof_line t = out->memory[j];
            out->memory[j] = out->memory[j - 1];
            out->memory[j - 1] = t;
        }
}

const roof_line *roof_lines_compute(const roof_lines *l, const char *ceiling)
{
    for (int i = 0; i < l->n_compute; i++)
        if (strcmp(l->compute[i].ceiling, ceiling) == 0)
            return &l->compute[i];
    return NULL;
}

const roof_line *roof_lines_main_memory(const roof_lines *l)
{
    for (int i = 0; i < l->n_memory; i++)
        if (l->memory[i].level == MEM_DRAM || l->memory[i].level == MEM_HBM)
            return &l->memory[i];
    return NULL;
}

double roof_lines_top_compute(const roof_lines *l)
{
    double top = 0;
    for (int i = 0; i < l->n_compute; i++)
        if (l->compute[i].value > top)
            top = l->compute[i].value;
    return top;
}

double roof_lines_top_memory(const roof_lines *l)
{
    return l->n_memory ? l->memory[l->n_memory - 1].value : 0;
}

const char *roofs_memory_name(const run_roof *rows, int n)
{
    roof_lines l;
    roof_lines_of(rows, n, &l);
    const roof_line *m = roof_lines_main_memory(&l);
    return m && m->level == MEM_HBM ? "HBM" : "DRAM";
}
