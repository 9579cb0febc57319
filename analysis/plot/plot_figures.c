#include "plot_figures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    }
    return "";
}

bool plot_is_step_row(const csv_table *roofline, int row)
{
    return strcmp(report_cell(roofline, row, "level"), "step") == 0;
}

/* A step that has a place on log axes: positive intensity and rate. */
static bool drawable_step_row(const csv_table *roofline, int row)
{
    return plot_is_step_row(roofline, row) && report_num(roofline, row, "ai_dram") > 0 &&
           report_num(roofline, row, "achieved_gflops") > 0;
}

/* File names keep to letters, digits, '-', '_' and '.'. */
static void sanitise(char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '-' || *s == '_' || *s == '.'))
            *s = '_';
}

static bool precision_has_ok_rows(const csv_table *t, const char *precision, const char *value_col)
{
    for (int row = 0; t && row < csv_rows(t); row++)
        if (strcmp(report_cell(t, row, "precision"), precision) == 0 &&
            !isnan(report_num(t, row, value_col)))
            return true;
    return false;
}

static int traced_in_precision(const report_configs *traced, const char *precision)
{
    int n = 0;
    for (int i = 0; i < traced->n; i++)
        n += strcmp(traced->items[i].precision, precision) == 0;
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

static int add_per_precision(const report_run *run, const report_strings *precisions,
                             const report_configs *traced, plot_figure_list *out)
{
    for (int i = 0; i < precisions->n; i++) {
        const char *p = precisions->items[i];
        plot_figure f = {0};
        snprintf(f.precision, sizeof f.precision, "%s", p);
        if (traced_in_precision(traced, p) >= 2 &&
            push_precision_figure(out, &f, PLOT_ROOFLINE_MODELS, "roofline_models", run->env,
                                  "roofline of the models (steps and layer types)"))
            return -1;
        if (precision_has_ok_rows(run->summary, p, "images_per_s_median") &&
            push_precision_figure(out, &f, PLOT_THROUGHPUT, "throughput", run->env,
                                  "training throughput against batch size"))
            return -1;
        if (precision_has_ok_rows(run->steps, p, "step_ms") &&
            push_precision_figure(out, &f, PLOT_VARIABILITY, "variability", run->env,
                                  "step time per configuration, all repeats"))
            return -1;
    }
    return 0;
}

int plot_figures_of_run(const report_run *run, plot_figure_list *out)
{
    *out = (plot_figure_list){0};
    /* a trace without FLOPs or bytes (no counters) has no roofline to draw */
    report_configs traced;
    if (report_configs_distinct(run->roofline, drawable_step_row, &traced))
        return -1;
    for (int i = 0; i < traced.n; i++) {
        plot_figure f = {.kind = PLOT_ROOFLINE, .config = traced.items[i]};
        const report_config *c = &f.config;
        snprintf(f.stem, sizeof f.stem, "roofline_%s_%d_b%d_%s", c->model, c->res, c->batch,
                 c->precision);
        sanitise(f.stem);
        snprintf(f.title, sizeof f.title, "%s, %s: roofline of %s @%d, batch %d", run->env,
                 c->precision, c->model, c->res, c->batch);
        snprintf(f.precision, sizeof f.precision, "%s", c->precision);
        if (push(out, &f))
            goto oom;
    }
    /* precisions in the order the summary (else the steps) lists them */
    report_strings precisions;
    if (report_strings_distinct(run->summary ? run->summary : run->steps, "precision", &precisions))
        goto oom;
    int status = add_per_precision(run, &precisions, &traced, out);
    report_strings_free(&precisions);
    if (status)
        goto oom;
    if (run->scaling && csv_rows(run->scaling) > 0) {
        plot_figure f = {.kind = PLOT_SCALING};
        snprintf(f.stem, sizeof f.stem, "scaling");
        snprintf(f.title, sizeof f.title, "%s: data-parallel scaling", run->env);
        if (push(out, &f))
            goto oom;
    }
    report_configs_free(&traced);
    return 0;
oom:
    report_configs_free(&traced);
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
