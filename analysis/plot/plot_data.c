#include "plot_data.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report_fmt.h"

int plot_write_figure(const report_run *run, const plot_figure *fig, const char *data_prefix,
                      char *err, size_t err_len)
{
    switch (fig->kind) {
    case PLOT_ROOFLINE: return plot_write_roofline(run, fig, data_prefix, err, err_len);
    case PLOT_ROOFLINE_MODELS: return plot_write_roofline_models(run, fig, data_prefix, err, err_len);
    case PLOT_THROUGHPUT: return plot_write_throughput(run, fig, data_prefix, err, err_len);
    case PLOT_VARIABILITY: return plot_write_variability(run, fig, data_prefix, err, err_len);
    case PLOT_SCALING: return plot_write_scaling(run, data_prefix, err, err_len);
    case PLOT_ROOFLINE_COMPARE: return plot_write_roofline_compare(run, 1, data_prefix, err, err_len);
    }
    snprintf(err, err_len, "unknown figure kind %d", (int)fig->kind);
    return -1;
}

void plot_run_roofs(const report_run *run, int step_row, plot_roofs *out)
{
    plot_roofs_from_peaks(run->peaks, out);
    if (step_row < 0 || !run->roofline)
        return;
    const char *ceiling = report_cell(run->roofline, step_row, "peak_ceiling");
    double peak = report_num(run->roofline, step_row, "peak_gflops");
    if (*ceiling && peak > 0 && !plot_roofs_compute(out, ceiling) &&
        out->n_compute < PLOT_MAX_ROOFS) {
        plot_roof *r = &out->compute[out->n_compute++];
        snprintf(r->ceiling, sizeof r->ceiling, "%s", ceiling);
        snprintf(r->label, sizeof r->label, "%s", ceiling);
        r->value = peak;
    }
    double dram = report_num(run->roofline, step_row, "dram_gbs");
    if (dram > 0 && !plot_roofs_main_memory(out) && out->n_memory < PLOT_MAX_ROOFS) {
        /* the analysis had a DRAM figure that peaks.csv does not show: slowest level */
        memmove(&out->memory[1], &out->memory[0], (size_t)out->n_memory * sizeof out->memory[0]);
        out->n_memory++;
        out->memory[0] = (plot_roof){.ceiling = "dram", .label = "DRAM", .value = dram};
    }
}

/* Where a compute ceiling's horizontal line starts: its ridge point with the
 * DRAM/HBM level (the roof of a kernel of that precision), else with the
 * fastest level; 0 without memory levels (the line spans the plot). */
static double ceiling_start(const plot_roofs *roofs, double gflops)
{
    const plot_roof *m = plot_roofs_main_memory(roofs);
    double bw = m ? m->value : plot_roofs_top_memory(roofs);
    return bw > 0 ? gflops / bw : 0;
}

void plot_write_ceilings(FILE *f, const plot_roofs *roofs, const char *main_compute,
                         double main_gflops, double yscale, const char *yunit)
{
    int drawn[PLOT_MAX_ROOFS]; /* index into roofs->compute of each drawn ceiling */
    char names[PLOT_MAX_ROOFS][128];
    bool main[PLOT_MAX_ROOFS];
    int n = 0;
    for (int i = 0; i < roofs->n_compute; i++) {
        const plot_roof *r = &roofs->compute[i];
        bool is_main = main_compute && strcmp(r->ceiling, main_compute) == 0;
        int same = -1;
        for (int j = 0; j < n && same < 0; j++)
            if (fabs(roofs->compute[drawn[j]].value - r->value) <= 0.04 * r->value)
                same = j;
        if (same >= 0) {
            size_t used = strlen(names[same]);
            snprintf(names[same] + used, sizeof names[same] - used, ", %s", r->label);
            main[same] = main[same] || is_main;
            continue;
        }
        drawn[n] = i;
        snprintf(names[n], sizeof names[n], "%s", r->label);
        main[n++] = is_main;
    }
    plot_var_str(f, "yunit", yunit);
    plot_var_num(f, "ncomp", n);
    for (int j = 0; j < n; j++) {
        double v = roofs->compute[drawn[j]].value;
        char value[FMT_LEN], label[192];
        fmt_gflops(value, v);
        snprintf(label, sizeof label, "%.127s  %s", names[j], value);
        plot_var_str_i(f, "comp_label", j + 1, label);
        plot_var_num_i(f, "comp_y", j + 1, v * yscale);
        plot_var_num_i(f, "comp_from", j + 1, ceiling_start(roofs, v));
        plot_var_num_i(f, "comp_main", j + 1, main[j]);
    }
    plot_var_num(f, "nmem", roofs->n_memory);
    const plot_roof *dram = plot_roofs_main_memory(roofs);
    double top = plot_roofs_top_compute(roofs);
    /* Levels within 35% of each other run a few pixels apart: one label on the
     * faster line names both ("L2 222.7, L3 187.2 GB/s"); the slower gets none. */
    char label[256] = "";
    for (int i = 0; i < roofs->n_memory; i++) {
        const plot_roof *m = &roofs->memory[i];
        char own[96], value[FMT_LEN], joined[256];
        fmt_gbs(value, m->value);
        snprintf(own, sizeof own, "%s %.*s", m->label, (int)strcspn(value, " "), value);
        snprintf(joined, sizeof joined, "%s%s%s", own, label[0] ? ", " : "", label);
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
