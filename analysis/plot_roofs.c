#include "plot_roofs.h"

#include <stdio.h>
#include <string.h>

#include "report_run.h"

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

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

/* The memory level a bandwidth row measures, or NULL when it is not one. */
static const char *memory_level(const char *ceiling, const char **label)
{
    static const struct {
        const char *prefix, *level, *label;
        bool exact;
    } levels[] = {
        {"dram", "dram", "DRAM", false}, {"hbm", "hbm", "HBM", false},
        {"l3", "l3", "L3", true},        {"l2", "l2", "L2", true},
        {"l1", "l1", "L1", true},        {"smem", "smem", "shared memory", true},
    };
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        bool match = levels[i].exact ? strcmp(ceiling, levels[i].prefix) == 0
                                     : (strcmp(ceiling, levels[i].prefix) == 0 ||
                                        (starts_with(ceiling, levels[i].prefix) &&
                                         ceiling[strlen(levels[i].prefix)] == '_'));
        if (match) {
            *label = levels[i].label;
            return levels[i].level;
        }
    }
    return NULL;
}

static void keep_best(plot_roof *list, int *n, const char *ceiling, const char *label,
                      double value)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(list[i].ceiling, ceiling) == 0) {
            if (value > list[i].value)
                list[i].value = value;
            return;
        }
    if (*n == PLOT_MAX_ROOFS)
        return;
    plot_roof *r = &list[(*n)++];
    snprintf(r->ceiling, sizeof r->ceiling, "%s", ceiling);
    snprintf(r->label, sizeof r->label, "%s", label);
    r->value = value;
}

void plot_roofs_from_peaks(const csv_table *peaks, plot_roofs *out)
{
    memset(out, 0, sizeof *out);
    for (int row = 0; peaks && row < csv_rows(peaks); row++) {
        const char *ceiling = report_cell(peaks, row, "ceiling");
        const char *unit = report_cell(peaks, row, "unit");
        double value = report_num(peaks, row, "value");
        if (!(value > 0) || ends_with(ceiling, "_1core"))
            continue;
        if (strcmp(unit, "GFLOP/s") == 0) {
            char label[48];
            compute_label(ceiling, label, sizeof label);
            keep_best(out->compute, &out->n_compute, ceiling, label, value);
        } else if (strcmp(unit, "GB/s") == 0) {
            const char *label;
            const char *level = memory_level(ceiling, &label);
            if (level)
                keep_best(out->memory, &out->n_memory, level, label, value);
        }
    }
    /* slowest level first: the order a reader meets the diagonals */
    for (int i = 1; i < out->n_memory; i++)
        for (int j = i; j > 0 && out->memory[j].value < out->memory[j - 1].value; j--) {
            plot_roof t = out->memory[j];
            out->memory[j] = out->memory[j - 1];
            out->memory[j - 1] = t;
        }
}

const plot_roof *plot_roofs_compute(const plot_roofs *r, const char *ceiling)
{
    for (int i = 0; i < r->n_compute; i++)
        if (strcmp(r->compute[i].ceiling, ceiling) == 0)
            return &r->compute[i];
    return NULL;
}

const plot_roof *plot_roofs_main_memory(const plot_roofs *r)
{
    for (int i = 0; i < r->n_memory; i++)
        if (strcmp(r->memory[i].ceiling, "dram") == 0 || strcmp(r->memory[i].ceiling, "hbm") == 0)
            return &r->memory[i];
    return NULL;
}

double plot_roofs_top_compute(const plot_roofs *r)
{
    double top = 0;
    for (int i = 0; i < r->n_compute; i++)
        if (r->compute[i].value > top)
            top = r->compute[i].value;
    return top;
}

double plot_roofs_top_memory(const plot_roofs *r)
{
    return r->n_memory ? r->memory[r->n_memory - 1].value : 0;
}
