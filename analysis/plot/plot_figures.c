#include "plot_figures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cost_check.h"
#include "../roofline_table.h"
#include "../trace_gpu.h"

static int push(plot_figure_list *l, const plot_figure *f)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        plot_figure *p = realloc(l->items, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        l->items = p;
        l->cap = cap;
    }
    l->items[l->n++] = *f;
    return 0;
}

void plot_figure_list_free(plot_figure_list *l)
{
    free(l->items);
    *l = (plot_figure_list){0};
}

const char *plot_script(plot_kind kind)
{
    switch (kind) {
    case PLOT_ROOFLINE: return "roofline.gp";
    case PLOT_ROOFLINE_MODELS: return "roofline_models.gp";
    case PLOT_THROUGHPUT: return "throughput.gp";
    case PLOT_VARIABILITY: return "variability.gp";
    case PLOT_SCALING: return "scaling.gp";
    case PLOT_ROOFLINE_COMPARE: return "roofline_compare.gp";
    case PLOT_HIER_ROOFLINE: return "roofline_hier.gp";
    case PLOT_TIME_BREAKDOWN: return "time_breakdown.gp";
    case PLOT_COST_CHECK: return "cost_check.gp";
    case PLOT_RUN_TO_RUN: return "run_to_run.gp";
    }
    return "";
}

bool plot_drawable(const roof_row *r)
{
    return r && r->pt.ai_dram > 0 && r->pt.achieved_gflops > 0;
}

const roof_row *plot_drawable_step(const roof_config *c)
{
    const roof_row *step = roofline_step(c);
    return plot_drawable(step) ? step : NULL;
}

/* File names keep to letters, digits, '-', '_' and '.'. */
static void sanitise(char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_' || *s == '.'))
            *s = '_';
}

static bool has_throughput(const run_model *run, const char *precision)
{
    for (int i = 0; i < run->summary.n; i++)
        if (strcmp(run->summary.rows[i].precision, precision) == 0 &&
            !isnan(run->summary.rows[i].ips_median))
            return true;
    return false;
}

static bool has_steps(const run_model *run, const char *precision)
{
    for (int k = 0; k < run->n_steps; k++)
        if (strcmp(run->steps[k].key.precision, precision) == 0 && run->steps[k].n > 0)
            return true;
    return false;
}

static int traced_in_precision(const run_model *run, const char *precision)
{
    int n = 0;
    for (int k = 0; k < run->roofline.n; k++)
        n += plot_drawable_step(&run->roofline.configs[k]) != NULL &&
             strcmp(run->roofline.configs[k].precision, precision) == 0;
    return n;
}

/* f (its precision set) as a figure of `kind` named "<stem>_<precision>". */
static int push_precision_figure(plot_figure_list *out, plot_figure *f, plot_kind kind,
                                 const char *stem, const char *env, const char *what)
{
    f->kind = kind;
    snprintf(f->stem, sizeof f->stem, "%s_%s", stem, f->precision);
    snprintf(f->title, sizeof f->title, "%s, %s: %s", env, f->precision, what);
    sanitise(f->stem);
    return push(out, f);
}

/* The precisions in the order the summary (else the steps) lists them. */
static int precisions_of(const run_model *run, const char **out, int max)
{
    int n = 0;
    bool summary = run->present & RUN_SUMMARY;
    int rows = summary ? run->summary.n : run->n_steps;
    for (int i = 0; i < rows; i++) {
        const char *p = summary ? run->summary.rows[i].precision : run->steps[i].key.precision;
        bool seen = false;
        for (int j = 0; j < n && !seen; j++)
            seen = strcmp(out[j], p) == 0;
        if (!seen && n < max)
            out[n++] = p;
    }
    return n;
}

static int add_per_precision(const run_model *run, plot_figure_list *out)
{
    const char *precisions[32];
    int n = precisions_of(run, precisions, 32);
    for (int i = 0; i < n; i++) {
        const char *p = precisions[i];
        plot_figure f = {0};
        snprintf(f.precision, sizeof f.precision, "%s", p);
        if (traced_in_precision(run, p) >= 2 &&
            push_precision_figure(out, &f, PLOT_ROOFLINE_MODELS, "roofline_models", run->env_name,
                                  "roofline of the models (steps and layer types)"))
            return -1;
        if (has_throughput(run, p) &&
            push_precision_figure(out, &f, PLOT_THROUGHPUT, "throughput", run->env_name,
                                  "training throughput against batch size"))
            return -1;
        if (has_steps(run, p) &&
            push_precision_figure(out, &f, PLOT_VARIABILITY, "variability", run->env_name,
                                  "step time per configuration, all repeats"))
            return -1;
    }
    return 0;
}

/* Whether a GPU figure of trace t has something to draw: a kernel with FLOPs,
 * time and bytes of some level; any kernel time; a comparison with the cost
 * model. */
static bool gpu_figure_has_data(const run_trace *t, plot_kind kind)
{
    if (kind == PLOT_COST_CHECK) {
        cost_check c;
        if (cost_check_build(t, &c))
            return false;
        bool compared = c.why[0] == '\0';
        cost_check_free(&c);
        return compared;
    }
    for (int i = 0; i < t->n; i++) {
        const run_kernel *k = &t->rows[i];
        /* an empty cell (NaN) is no count */
        bool flops = k->flops_fp64 > 0 || k->flops_fp32 > 0 || k->flops_fp16 > 0 ||
                     k->flops_tensor > 0;
        bool bytes = k->dram_read_bytes > 0 || k->dram_write_bytes > 0 || k->l2_bytes > 0 ||
                     k->l1_bytes > 0;
        if (k->duration_ns > 0 && (kind == PLOT_TIME_BREAKDOWN || (flops && bytes)))
            return true;
    }
    return false;
}

/* Per GPU trace: its hierarchical roofline, its time by phase and layer type,
 * its counters against the cost model. */
static int add_gpu_figures(const run_model *run, plot_figure_list *out)
{
    static const struct {
        plot_kind kind;
        const char *stem, *what;
    } kinds[] = {
        {PLOT_HIER_ROOFLINE, "roofline_hier", "hierarchical roofline"},
        {PLOT_TIME_BREAKDOWN, "time_breakdown", "kernel time by phase and layer type"},
        {PLOT_COST_CHECK, "cost_check", "counters against the cost model"},
    };
    for (int k = 0; k < run->n_traces; k++) {
        const run_trace *t = &run->traces[k];
        if (!trace_is_gpu(run, t))
            continue;
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            if (!gpu_figure_has_data(t, kinds[i].kind))
                continue;
            plot_figure f = {.kind = kinds[i].kind, .gpu_trace = t};
            snprintf(f.stem, sizeof f.stem, "%s_%s_%d_b%d_%s", kinds[i].stem, t->model, t->res,
                     t->batch, t->precision);
            sanitise(f.stem);
            snprintf(f.title, sizeof f.title, "%s, %s: %s of %s @%d, batch %d", run->env_name,
                     t->precision, kinds[i].what, t->model, t->res, t->batch);
            snprintf(f.precision, sizeof f.precision, "%s", t->precision);
            if (push(out, &f))
                return -1;
        }
    }
    return 0;
}

int plot_figures_of_run(const run_model *run, plot_figure_list *out)
{
    *out = (plot_figure_list){0};
    /* a trace without FLOPs or bytes (no counters) has no roofline to draw */
    for (int k = 0; k < run->roofline.n; k++) {
        const roof_config *c = &run->roofline.configs[k];
        if (!plot_drawable_step(c))
            continue;
        plot_figure f = {.kind = PLOT_ROOFLINE, .trace = c};
        snprintf(f.stem, sizeof f.stem, "roofline_%s_%d_b%d_%s", c->model, c->res, c->batch,
                 c->precision);
        sanitise(f.stem);
        snprintf(f.title, sizeof f.title, "%s, %s: roofline of %s @%d, batch %d", run->env_name,
                 c->precision, c->model, c->res, c->batch);
        snprintf(f.precision, sizeof f.precision, "%s", c->precision);
        if (push(out, &f))
            goto oom;
    }
    if (add_gpu_figures(run, out) || add_per_precision(run, out))
        goto oom;
    if (run->n_scaling > 0) {
        plot_figure f = {.kind = PLOT_SCALING};
        snprintf(f.stem, sizeof f.stem, "scaling");
        snprintf(f.title, sizeof f.title, "%s: data-parallel scaling", run->env_name);
        if (push(out, &f))
            goto oom;
    }
    return 0;
oom:
    plot_figure_list_free(out);
    return -1;
}

void plot_manifest_line(FILE *f, const plot_figure *fig)
{
    /* a tab or newline in a title (from an env or model name) would split the line */
    fprintf(f, "%s\t%s\t", plot_script(fig->kind), fig->stem);
    for (const char *p = fig->title; *p; p++)
        fputc(*p == '\t' || *p == '\n' || *p == '\r' ? ' ' : *p, f);
    fputc('\n', f);
}
