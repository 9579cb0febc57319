/* The report's hierarchical roofline of each GPU trace (analysis/hier_roofline.h):
 * the step per memory level against its roof, the time by what limits each
 * kernel, the compute roof of each unit, the costliest kernels at their three
 * intensities, and the figure. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../hier_roofline.h"
#include "../trace_gpu.h"
#include "report_sections.h"

#define TOP_KERNELS 10

static void level_table(report_doc *d, const hier_config *c, const char *mem)
{
    const hier_point *s = &c->step;
    char a[FMT_LEN];
    doc_table(d, "lrrrrr",
              (const char *const[]){"level", "MB per step", "FLOP/byte", "roof",
                                    "attainable", "% of attainable"});
    for (int l = 0; l < HIER_LEVELS; l++) {
        const hier_level_point *lv = &s->level[l];
        doc_cell(d, "%s", hier_level_name(l, mem));
        doc_cell(d, "%s", fmt_num(a, lv->bytes / 1e6));
        doc_cell(d, "%s", fmt_num(a, lv->ai));
        doc_cell(d, "%s", fmt_gbs(a, lv->roof_gbs));
        doc_cell(d, "%s", fmt_gflops(a, lv->attainable));
        doc_cell(d, "%s", fmt_pct(a, 100 * s->achieved_gflops / lv->attainable));
    }
    doc_cell(d, "compute (%s)", s->ceiling[0] ? s->ceiling : "-");
    doc_cell(d, "-");
    doc_cell(d, "-");
    doc_cell(d, "%s", fmt_gflops(a, s->peak_gflops));
    doc_cell(d, "%s", fmt_gflops(a, s->peak_gflops));
    doc_cell(d, "%s", fmt_pct(a, 100 * s->achieved_gflops / s->peak_gflops));
}

/* Kernel time and FLOPs by the roof that limits each kernel. */
static void limit_table(report_doc *d, const hier_config *c, const char *mem)
{
    doc_table(d, "lrrr", (const char *const[]){"limited by", "kernels", "share of kernel time",
                                               "share of FLOPs"});
    for (int lim = -1; lim <= HIER_COMPUTE; lim++) {
        double count = 0, share = 0, flops = 0;
        for (int i = 0; i < c->n; i++) {
            const hier_point *p = &c->kernels[i];
            if (p->limit != lim)
                continue;
            count += p->count;
            share += isnan(p->time_share) ? 0 : p->time_share;
            flops += p->flops > 0 ? p->flops : 0;
        }
        if (count == 0)
            continue;
        char a[FMT_LEN], b[FMT_LEN], n[FMT_LEN];
        doc_cell(d, "%s", lim < 0 ? "unknown (no FLOPs or no roof)" : hier_level_name(lim, mem));
        doc_cell(d, "%s", fmt_count(n, count));
        doc_cell(d, "%s", fmt_share(a, share));
        doc_cell(d, "%s", fmt_share(b, c->step.flops > 0 ? flops / c->step.flops : NAN));
    }
}

/* The compute roof of each unit: tensor-core kernels against <p>_tensor,
 * the others against their FMA peak. */
static void unit_table(report_doc *d, const hier_config *c)
{
    doc_table(d, "llrrrrr", (const char *const[]){"unit", "compute roof", "peak", "kernels",
                                                  "share of kernel time", "share of FLOPs",
                                                  "achieved"});
    for (int i = 0; i < c->n; i++) {
        const char *ceiling = c->kernels[i].ceiling;
        bool met = false; /* each ceiling once, where it is first met */
        for (int j = 0; j < i && !met; j++)
            met = strcmp(c->kernels[j].ceiling, ceiling) == 0;
        if (met || !ceiling[0])
            continue;
        double count = 0, share = 0, flops = 0, ns = 0;
        for (int j = i; j < c->n; j++) {
            const hier_point *p = &c->kernels[j];
            if (strcmp(p->ceiling, ceiling) != 0)
                continue;
            count += p->count;
            share += isnan(p->time_share) ? 0 : p->time_share;
            flops += p->flops > 0 ? p->flops : 0;
            ns += p->duration_ns > 0 ? p->duration_ns : 0;
        }
        char a[FMT_LEN], n[FMT_LEN];
        doc_cell(d, "%s", c->kernels[i].tensor ? "tensor core" : "CUDA core");
        doc_cell(d, "%s", ceiling);
        doc_cell(d, "%s", fmt_gflops(a, c->kernels[i].peak_gflops));
        doc_cell(d, "%s", fmt_count(n, count));
        doc_cell(d, "%s", fmt_share(a, share));
        doc_cell(d, "%s", fmt_share(a, c->step.flops > 0 ? flops / c->step.flops : NAN));
        doc_cell(d, "%s", fmt_gflops(a, ns > 0 ? flops / ns : NAN));
    }
}

static double duration_key(int i, const void *arg)
{
    return ((const hier_config *)arg)->kernels[i].duration_ns;
}

static void top_kernels(report_doc *d, const hier_config *c, const char *mem)
{
    int n;
    int *rows = report_order_desc(c->n, NULL, duration_key, c, &n);
    if (!rows) {
        d->failed = true;
        return;
    }
    char h_ai[3][32];
    for (int l = 0; l < HIER_LEVELS; l++)
        snprintf(h_ai[l], sizeof h_ai[l], "FLOP/B %s", hier_level_name(l, mem));
    doc_para(d, "The %d costliest kernels:", n < TOP_KERNELS ? n : TOP_KERNELS);
    doc_table(d, "rlllrrrrrllr",
              (const char *const[]){"#", "kernel", "layer", "phase", "share", h_ai[0], h_ai[1],
                                    h_ai[2], "achieved", "compute roof", "limited by",
                                    "% of attainable"});
    for (int i = 0; i < n && i < TOP_KERNELS; i++) {
        const hier_point *p = &c->kernels[rows[i]];
        char a[FMT_LEN];
        doc_cell(d, "%d", i + 1);
        doc_cell(d, "%s", p->kernel);
        doc_cell(d, "%s", p->layer);
        doc_cell(d, "%s", p->phase);
        doc_cell(d, "%s", fmt_share(a, p->time_share));
        for (int l = 0; l < HIER_LEVELS; l++)
            doc_cell(d, "%s", fmt_num(a, p->level[l].ai));
        doc_cell(d, "%s", fmt_gflops(a, p->achieved_gflops));
        doc_cell(d, "%s", p->ceiling[0] ? p->ceiling : "-");
        doc_cell(d, "%s", p->limit < 0 ? "unknown" : hier_level_name(p->limit, mem));
        doc_cell(d, "%s", fmt_pct(a, p->pct_of_attainable));
    }
    free(rows);
}

static void config_section(report_doc *d, const run_model *run, const plot_figure_list *figs,
                           const run_trace *t, const roofs *rf, const char *mem)
{
    hier_config c;
    if (hier_config_build(t, rf, &c)) {
        d->failed = true;
        return;
    }
    const hier_point *s = &c.step;
    char name[256], n[FMT_LEN], ms[FMT_LEN], gf[FMT_LEN], g[FMT_LEN], p[FMT_LEN];
    report_key_name(name, sizeof name, t->model, t->res, t->batch, t->precision);
    doc_heading(d, 2, "%s", name);
    doc_para(d, "%s kernels, %s ms of kernel time and %s GFLOP per traced step: %s, %s of the "
                "attainable rate, limited by %s. FLOPs and bytes: %s.",
             fmt_count(n, s->count), fmt_ms_of_ns(ms, s->duration_ns), fmt_num(gf, s->flops / 1e9),
             fmt_gflops(g, s->achieved_gflops), fmt_pct(p, s->pct_of_attainable),
             s->limit < 0 ? "an unknown roof" : hier_level_name(s->limit, mem), s->source);
    level_table(d, &c, mem);
    limit_table(d, &c, mem);
    unit_table(d, &c);
    doc_drop_empty_table(d);
    top_kernels(d, &c, mem);
    char caption[1024];
    snprintf(caption, sizeof caption,
             "Hierarchical roofline of %s: each kernel at its %s (red), L2 (green) and L1 "
             "(blue) intensity, all three at its achieved rate; circles ran on tensor cores, "
             "triangles on CUDA cores; area: share of the kernel time. Squares: the whole step "
             "per level. The diagonals are the levels' measured roofs in the same colours, the "
             "horizontals the compute roofs the kernels ran against.",
             name, mem);
    report_gpu_figure(d, run, figs, PLOT_HIER_ROOFLINE, t, caption);
    hier_config_free(&c);
}

void report_gpu_roofline(report_doc *d, const run_model *run, const plot_figure_list *figs)
{
    if (!run_has_gpu_trace(run))
        return;
    roofs rf;
    roofs_init(&rf, run->roofs, run->n_roofs);
    const char *mem = report_memory_name(run);
    char h[FMT_LEN], l2[FMT_LEN], l1[FMT_LEN];
    doc_heading(d, 1, "GPU: hierarchical roofline");
    doc_para(d, "Every kernel of a traced GPU step at three arithmetic intensities: its FLOPs over "
                "the bytes it moved to and from %s, L2 and L1, all at its one achieved rate "
                "(FLOPs over its time). Roofs: %s %s (the best sustained of peaks.csv's copy, "
                "triad and read rows), L2 %s, L1 %s; the compute roof of each kernel's precision "
                "and unit: tensor-core kernels against <precision>_tensor (tf32 in an fp32 step), "
                "the others against fp32_fma, fp16_fma or fp64_fma. A kernel is limited by the "
                "lowest of its roofs: a level's bandwidth times its intensity at that level, or "
                "the compute peak. On Hopper the L1 bytes (l1tex__t_bytes) do not see TMA loads.",
             mem, mem, fmt_gbs(h, rf.dram_gbs), fmt_gbs(l2, rf.l2_gbs), fmt_gbs(l1, rf.l1_gbs));
    for (int k = 0; k < run->n_traces; k++)
        if (trace_is_gpu(run, &run->traces[k]))
            config_section(d, run, figs, &run->traces[k], &rf, mem);
}
