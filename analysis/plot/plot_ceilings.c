#include "plot_ceilings.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "../fmt.h"
#include "../roofline_table.h"
#include "plot_out.h"

/* Adds compute ceiling `name` to out: peaks.csv's line, else (peaks.csv lacks
 * it) the peak a roofline row was classified against. */
static void add_ceiling(roof_lines *out, const roof_lines *all, const char *name, double peak)
{
    if (!name[0] || roof_lines_compute(out, name) || out->n_compute >= ROOF_MAX_LINES)
        return;
    const roof_line *measured = roof_lines_compute(all, name);
    if (measured) {
        out->compute[out->n_compute++] = *measured;
    } else if (peak > 0) {
        roof_line *r = &out->compute[out->n_compute++];
        *r = (roof_line){.value = peak, .level = MEM_NONE};
        snprintf(r->ceiling, sizeof r->ceiling, "%s", name);
        snprintf(r->label, sizeof r->label, "%s", name);
    }
}

void plot_run_roofs(const run_model *run, const roof_config *const *configs, int n,
                    roof_lines *out)
{
    roof_lines all;
    roof_lines_of(run->roofs, run->n_roofs, &all);
    *out = all;
    out->n_compute = 0;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < configs[k]->n; i++)
            add_ceiling(out, &all, configs[k]->rows[i].ceiling, configs[k]->rows[i].pt.peak_gflops);
    if (out->n_compute == 0) /* no row names its ceiling: every one peaks.csv has */
        memcpy(out->compute, all.compute, sizeof out->compute), out->n_compute = all.n_compute;
    const roof_row *step = n > 0 ? roofline_step(configs[0]) : NULL;
    if (step && step->pt.dram_gbs > 0 && !roof_lines_main_memory(out) &&
        out->n_memory < ROOF_MAX_LINES) {
        /* the analysis had a DRAM figure that peaks.csv does not show: slowest level */
        memmove(&out->memory[1], &out->memory[0], (size_t)out->n_memory * sizeof out->memory[0]);
        out->n_memory++;
        out->memory[0] = (roof_line){.ceiling = "dram", .label = "DRAM", .value = step->pt.dram_gbs,
                                     .level = MEM_DRAM};
    }
}

/* Where a compute ceiling's horizontal line starts: its ridge point with the
 * DRAM/HBM level (the roof of a kernel of that precision), else with the
 * fastest level; 0 without memory levels (the line spans the plot). */
static double ceiling_start(const roof_lines *roofs, double gflops)
{
    const roof_line *m = roof_lines_main_memory(roofs);
    double bw = m ? m->value : roof_lines_top_memory(roofs);
    return bw > 0 ? gflops / bw : 0;
}

/* The label of drawn ceiling `members` (indexes into roofs->compute, within
 * 4% of each other): "bf16 tensor  791 TFLOP/s"; merged ones name each value
 * where they differ as printed: "bf16 tensor 791, fp16 tensor 761 TFLOP/s". */
static void ceiling_label(char *out, size_t len, const roof_lines *roofs, const int *members,
                          int n)
{
    char first[FMT_LEN], value[FMT_LEN];
    fmt_gflops(first, roofs->compute[members[0]].value);
    const char *unit = strchr(first, ' ') ? strchr(first, ' ') + 1 : "";
    bool same = true, one_unit = true;
    for (int k = 1; k < n; k++) {
        fmt_gflops(value, roofs->compute[members[k]].value);
        same = same && strcmp(value, first) == 0;
        one_unit = one_unit && strcmp(strchr(value, ' ') ? strchr(value, ' ') + 1 : "", unit) == 0;
    }
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < n; k++) {
        const roof_line *r = &roofs->compute[members[k]];
        fmt_gflops(value, r->value);
        if (same)
            fmt_append(out, len, &used, "%s%s", k ? ", " : "", r->label);
        else if (one_unit)
            fmt_append(out, len, &used, "%s%s %.*s", k ? ", " : "", r->label,
                       (int)strcspn(value, " "), value);
        else /* either side of GFLOP/s to TFLOP/s: each its own unit */
            fmt_append(out, len, &used, "%s%s %s", k ? ", " : "", r->label, value);
    }
    if (same)
        fmt_append(out, len, &used, "  %s", first);
    else if (one_unit)
        fmt_append(out, len, &used, " %s", unit);
}

void plot_write_ceilings(FILE *f, const roof_lines *roofs, const char *main_compute,
                         double main_gflops, double yscale, const char *yunit)
{
    int drawn[ROOF_MAX_LINES]; /* index into roofs->compute of each drawn ceiling */
    int members[ROOF_MAX_LINES][ROOF_MAX_LINES], n_members[ROOF_MAX_LINES];
    bool main[ROOF_MAX_LINES];
    int n = 0;
    for (int i = 0; i < roofs->n_compute; i++) {
        const roof_line *r = &roofs->compute[i];
        bool is_main = main_compute && strcmp(r->ceiling, main_compute) == 0;
        int same = -1;
        for (int j = 0; j < n && same < 0; j++)
            if (fabs(roofs->compute[drawn[j]].value - r->value) <= 0.04 * r->value)
                same = j;
        if (same >= 0) {
            members[same][n_members[same]++] = i;
            main[same] = main[same] || is_main;
            continue;
        }
        drawn[n] = i;
        members[n][0] = i;
        n_members[n] = 1;
        main[n++] = is_main;
    }
    plot_var_str(f, "yunit", yunit);
    plot_var_num(f, "ncomp", n);
    for (int j = 0; j < n; j++) {
        double v = roofs->compute[drawn[j]].value;
        char label[192];
        ceiling_label(label, sizeof label, roofs, members[j], n_members[j]);
        plot_var_str_i(f, "comp_label", j + 1, label);
        plot_var_num_i(f, "comp_y", j + 1, v * yscale);
        plot_var_num_i(f, "comp_from", j + 1, ceiling_start(roofs, v));
        plot_var_num_i(f, "comp_main", j + 1, main[j]);
    }
    plot_var_num(f, "nmem", roofs->n_memory);
    const roof_line *dram = roof_lines_main_memory(roofs);
    double top = roof_lines_top_compute(roofs);
    /* Levels within 35% of each other run a few pixels apart: one label on the
     * faster line names both ("L2 222.7, L3 187.2 GB/s"); the slower gets none. */
    char label[256] = "";
    for (int i = 0; i < roofs->n_memory; i++) {
        const roof_line *m = &roofs->memory[i];
        char own[96], value[FMT_LEN], joined[256];
        fmt_gbs(value, m->value);
        snprintf(own, sizeof own, "%s %.*s", m->label, (int)strcspn(value, " "), value);
        /* the levels joined so far kept to what fits beside this one's name */
        snprintf(joined, sizeof joined, "%s%s%.150s", own, label[0] ? ", " : "", label);
        snprintf(label, sizeof label, "%s", joined);
        bool next_close = i + 1 < roofs->n_memory && roofs->memory[i + 1].value < 1.35 * m->value;
        char shown[300] = "";
        if (!next_close) {
            snprintf(shown, sizeof shown, "%s %s", label, strchr(value, ' ') + 1);
            label[0] = '\0';
        }
        plot_var_str_i(f, "mem_name", i + 1, m->label);
        plot_var_str_i(f, "mem_label", i + 1, shown);
        plot_var_num_i(f, "mem_slope", i + 1, m->value * yscale);
        /* DRAM/HBM up to the highest ceiling (every precision's ridge on it),
         * the caches up to the ceiling the kernels ran against */
        double end = m == dram || !(main_gflops > 0) ? top : main_gflops;
        plot_var_num_i(f, "mem_to", i + 1, end / m->value);
        plot_var_num_i(f, "mem_main", i + 1, m == dram);
    }
    plot_var_num(f, "main_y", main_gflops * yscale);
}
