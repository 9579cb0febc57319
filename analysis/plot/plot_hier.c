/* Data of the hierarchical roofline of one GPU trace (PLOT_HIER_ROOFLINE):
 * every kernel three times, at its HBM, L2 and L1 intensity and one achieved
 * rate, coloured by level and shaped by unit (tensor core or CUDA core); the
 * whole step per level; the roofs of the three levels and the compute roofs
 * the kernels ran against. A kernel without FLOPs (communication, copies)
 * has no place on log axes and is counted instead. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../fmt.h"
#include "../hier_roofline.h"
#include "plot_axes.h"
#include "plot_ceilings.h"
#include "plot_data.h"
#include "plot_out.h"

/* One colour per level, the same for its points and its roof. */
static const char *const level_colors[HIER_LEVELS] = {"#c0392b", "#1e8449", "#2471a3"};

/* The roofs the figure draws: the three levels (the HBM/DRAM roof as
 * analysis/roofs.c chooses it) and the compute ceilings the kernels ran
 * against, those peaks.csv has. */
static void figure_roofs(const run_model *run, const hier_config *c, roof_lines *out)
{
    roof_lines all;
    roof_lines_of(run->roofs, run->n_roofs, &all);
    memset(out, 0, sizeof *out);
    const roof_line *main = roof_lines_main_memory(&all);
    for (int l = 0; l < HIER_LEVELS; l++) {
        if (!(c->roof_gbs[l] > 0))
            continue;
        roof_line *m = &out->memory[out->n_memory++];
        static const mem_level levels[HIER_LEVELS] = {MEM_HBM, MEM_L2, MEM_L1};
        *m = (roof_line){.value = c->roof_gbs[l],
                         .level = l == HIER_HBM && main ? main->level : levels[l]};
        const char *name = l == HIER_HBM && main ? main->label : hier_level_name(l, "HBM");
        snprintf(m->ceiling, sizeof m->ceiling, "%s", name);
        snprintf(m->label, sizeof m->label, "%s", name);
    }
    for (int i = 0; i < c->n; i++) {
        const roof_line *line = roof_lines_compute(&all, c->kernels[i].ceiling);
        if (line && !roof_lines_compute(out, line->ceiling) && out->n_compute < ROOF_MAX_LINES)
            out->compute[out->n_compute++] = *line;
    }
}

/* The level of memory line i of figure_roofs (they keep the levels' order,
 * leaving out those without a roof). */
static int level_of_line(const hier_config *c, int i)
{
    for (int l = 0; l < HIER_LEVELS; l++)
        if (c->roof_gbs[l] > 0 && i-- == 0)
            return l;
    return HIER_HBM;
}

/* Blocks level x unit: index 2 * level + (0 tensor core, 1 CUDA core). */
static void write_kernels(FILE *f, const hier_config *c, double yscale, const char *unit,
                          const char *mem, plot_span *x, plot_span *y)
{
    for (int l = 0; l < HIER_LEVELS; l++)
        for (int cuda = 0; cuda <= 1; cuda++) {
            fprintf(f, "%s# %s, %s kernels: ai_%s achieved (%s) time_share\n",
                    l + cuda ? "\n\n" : "", hier_level_name(l, mem),
                    cuda ? "CUDA-core" : "tensor-core", l == HIER_HBM ? "hbm" : l == HIER_L2 ? "l2" : "l1",
                    unit);
            int rows = 0;
            for (int i = 0; i < c->n; i++) {
                const hier_point *p = &c->kernels[i];
                if (p->tensor == (bool)cuda || !hier_drawable(p, l))
                    continue;
                plot_span_add(x, p->level[l].ai);
                plot_span_add(y, p->achieved_gflops);
                fprintf(f, "%.6g %.6g %.6g\n", p->level[l].ai, p->achieved_gflops * yscale,
                        isnan(p->time_share) ? 0 : p->time_share);
                rows++;
            }
            if (!rows) /* gnuplot's index needs the block */
                fprintf(f, "NaN NaN 0\n");
        }
}

/* Blocks 0..2: the step at each level; block 3: the three together (the
 * line that joins them). */
static void write_step(FILE *f, const hier_config *c, double yscale, const char *unit,
                       const char *mem, plot_span *x, plot_span *y)
{
    const hier_point *s = &c->step;
    for (int l = 0; l < HIER_LEVELS; l++) {
        fprintf(f, "%s# whole step, %s: ai achieved (%s)\n", l ? "\n\n" : "",
                hier_level_name(l, mem), unit);
        if (hier_drawable(s, l)) {
            plot_span_add(x, s->level[l].ai);
            plot_span_add(y, s->achieved_gflops);
            fprintf(f, "%.6g %.6g\n", s->level[l].ai, s->achieved_gflops * yscale);
        } else {
            fprintf(f, "NaN NaN\n");
        }
    }
    fprintf(f, "\n\n# whole step, every level\n");
    for (int l = 0; l < HIER_LEVELS; l++)
        if (hier_drawable(s, l))
            fprintf(f, "%.6g %.6g\n", s->level[l].ai, s->achieved_gflops * yscale);
    fprintf(f, "NaN NaN\n");
}

static void write_step_label(FILE *f, const hier_config *c, const char *mem)
{
    const hier_point *s = &c->step;
    char label[768], a[FMT_LEN], g[FMT_LEN], p[FMT_LEN];
    size_t used = 0;
    fmt_append(label, sizeof label, &used, "whole step (squares): %s, %s of attainable",
               fmt_gflops(g, s->achieved_gflops), fmt_pct(p, s->pct_of_attainable));
    if (s->limit >= 0)
        fmt_append(label, sizeof label, &used, ", limited by %s", hier_level_name(s->limit, mem));
    fmt_append(label, sizeof label, &used, "\nFLOP/byte:");
    for (int l = 0; l < HIER_LEVELS; l++)
        fmt_append(label, sizeof label, &used, "%s %s %s", l ? "," : "", hier_level_name(l, mem),
                   fmt_num(a, s->level[l].ai));
    int hidden = 0;
    double share = 0;
    for (int i = 0; i < c->n; i++) {
        bool drawn = false;
        for (int l = 0; l < HIER_LEVELS; l++)
            drawn = drawn || hier_drawable(&c->kernels[i], l);
        if (!drawn) {
            hidden++;
            share += isnan(c->kernels[i].time_share) ? 0 : c->kernels[i].time_share;
        }
    }
    if (hidden)
        fmt_append(label, sizeof label, &used,
                   "\n%d kernel(s), %s of the time, have no FLOPs (communication, copies): not drawn",
                   hidden, fmt_share(p, share));
    plot_var_str(f, "step_label", label);
}

int plot_write_hier_roofline(const run_model *run, const plot_figure *fig, const char *prefix,
                             char *err, size_t err_len)
{
    roofs rf;
    roofs_init(&rf, run->roofs, run->n_roofs);
    hier_config c;
    if (!fig->gpu_trace || hier_config_build(fig->gpu_trace, &rf, &c)) {
        snprintf(err, err_len, "%s: out of memory", fig->stem);
        return -1;
    }
    const char *mem = roofs_memory_name(run->roofs, run->n_roofs);
    roof_lines lines;
    figure_roofs(run, &c, &lines);
    double top = c.step.achieved_gflops;
    for (int i = 0; i < c.n; i++)
        if (c.kernels[i].achieved_gflops > top)
            top = c.kernels[i].achieved_gflops;
    const char *unit;
    double yscale = plot_figure_yscale(&lines, top, &unit);
    plot_span x = {0}, y = {0};
    plot_file data, step, vars;
    int status = -1;
    if (plot_file_open(&data, prefix, ".kernels", err, err_len))
        goto done;
    write_kernels(data.f, &c, yscale, unit, mem, &x, &y);
    if (plot_file_close(&data, err, err_len) || plot_file_open(&step, prefix, ".step", err, err_len))
        goto done;
    write_step(step.f, &c, yscale, unit, mem, &x, &y);
    if (plot_file_close(&step, err, err_len) || plot_file_open(&vars, prefix, ".vars", err, err_len))
        goto done;
    double main_gflops = c.step.peak_gflops > 0 ? c.step.peak_gflops : roof_lines_top_compute(&lines);
    fprintf(vars.f, "# written by bin/plotdata for scripts/gnuplot/roofline_hier.gp\n");
    plot_var_str(vars.f, "env_name", run->env_name);
    plot_var_str(vars.f, "precision", c.precision);
    plot_write_axes(vars.f, x, y, &lines, c.step.ceiling, main_gflops);
    for (int i = 0; i < lines.n_memory; i++)
        plot_var_str_i(vars.f, "mem_color", i + 1, level_colors[level_of_line(&c, i)]);
    for (int l = 0; l < HIER_LEVELS; l++) {
        plot_var_str_i(vars.f, "level_name", l + 1, hier_level_name(l, mem));
        plot_var_str_i(vars.f, "level_color", l + 1, level_colors[l]);
    }
    plot_var_num(vars.f, "ridge_ai", c.step.peak_gflops / c.roof_gbs[HIER_HBM]);
    write_step_label(vars.f, &c, mem);
    status = plot_file_close(&vars, err, err_len);
done:
    hier_config_free(&c);
    return status;
}
