/* The report's check of the counters against the cost model, per GPU trace
 * (analysis/cost_check.h): counted and analytic FLOPs and DRAM bytes per
 * layer type and for the step, the layers that disagree by more than
 * COST_CHECK_FACTOR, the layers without kernels of their own, the figure. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cost_check.h"
#include "../trace_gpu.h"
#include "report_sections.h"

/* Layers outside the factor listed in the table, furthest first. */
#define OUTSIDE_SHOWN 15

static const char *fmt_ratio(char buf[FMT_LEN], double ratio)
{
    char n[FMT_LEN];
    if (!isfinite(ratio))
        snprintf(buf, FMT_LEN, "-");
    else
        snprintf(buf, FMT_LEN, "%sx", fmt_num(n, ratio));
    return buf;
}

static void count_cells(report_doc *d, const cost_counts *k)
{
    char a[FMT_LEN];
    doc_cell(d, "%s", fmt_count(a, k->kernels));
    doc_cell(d, "%s", k->kernels > 0 ? fmt_num(a, k->measured_flops / 1e9) : "-");
    doc_cell(d, "%s", fmt_num(a, k->analytic_flops / 1e9));
    doc_cell(d, "%s", fmt_ratio(a, k->flops_ratio));
    doc_cell(d, "%s", k->kernels > 0 ? fmt_num(a, k->measured_bytes / 1e6) : "-");
    doc_cell(d, "%s", fmt_num(a, k->analytic_bytes / 1e6));
    doc_cell(d, "%s", fmt_ratio(a, k->bytes_ratio));
}

/* "17 (9 without kernels)": a type's layers, and those whose work other
 * layers' kernels do (their analytic figures are in the type's sums). */
static void layers_cell(report_doc *d, const cost_check *c, const char *layer_type)
{
    int layers = 0, without = 0;
    for (int i = 0; i < c->n_layers; i++)
        if (!layer_type || strcmp(c->layers[i].layer_type, layer_type) == 0) {
            layers++;
            without += !(c->layers[i].all.kernels > 0);
        }
    if (without)
        doc_cell(d, "%d (%d without kernels)", layers, without);
    else
        doc_cell(d, "%d", layers);
}

static void type_table(report_doc *d, const cost_check *c)
{
    doc_table(d, "lrrrrrrrr",
              (const char *const[]){"layer type", "layers", "kernels", "counted GFLOP",
                                    "analytic GFLOP", "FLOPs ratio", "counted MB", "analytic MB",
                                    "bytes ratio"});
    for (int i = 0; i < c->n_types; i++) {
        doc_cell(d, "%s", c->types[i].name);
        layers_cell(d, c, c->types[i].layer_type);
        count_cells(d, &c->types[i].all);
    }
    doc_cell(d, "whole step");
    layers_cell(d, c, NULL);
    count_cells(d, &c->step.all);
}

static void outside_table(report_doc *d, const cost_check *c)
{
    int n;
    cost_check_entry *e = cost_check_outside_list(c, COST_CHECK_FACTOR, &n);
    if (!e) {
        d->failed = true;
        return;
    }
    if (n == 0) {
        doc_para(d, "Every layer's counted FLOPs and bytes, pass by pass, are within %gx of the "
                    "analytic ones.",
                 COST_CHECK_FACTOR);
    } else {
        char first[32] = "";
        if (n > OUTSIDE_SHOWN)
            snprintf(first, sizeof first, " (the first %d)", OUTSIDE_SHOWN);
        doc_para(d, "%d layer pass%s outside %gx, the weightiest first (by the difference as a "
                    "share of the step's analytic FLOPs or bytes)%s:",
                 n, n == 1 ? "" : "es", COST_CHECK_FACTOR, first);
        doc_table(d, "llrrrrrrr",
                  (const char *const[]){"layer", "pass", "kernels", "counted GFLOP",
                                        "analytic GFLOP", "FLOPs ratio", "counted MB",
                                        "analytic MB", "bytes ratio"});
        for (int i = 0; i < n && i < OUTSIDE_SHOWN; i++) {
            const cost_check_row *r = &c->layers[e[i].layer];
            doc_cell(d, "%s", r->name);
            doc_cell(d, "%s", cost_check_pass_name(e[i].scope));
            count_cells(d, cost_check_scope(r, e[i].scope));
        }
    }
    free(e);
}

/* The layers with analytic work and no kernel of their own. */
static void fused_note(report_doc *d, const cost_check *c)
{
    char list[1024];
    size_t used = 0;
    int n = 0;
    for (int i = 0; i < c->n_layers; i++) {
        const cost_check_row *r = &c->layers[i];
        if (r->all.kernels > 0 || !(r->all.analytic_flops > 0 || r->all.analytic_bytes > 0))
            continue;
        if (n < 12)
            fmt_append(list, sizeof list, &used, "%s%s", n ? ", " : "", r->name);
        n++;
    }
    if (n > 0)
        doc_note(d, "%d layer%s with analytic work have no counted kernel of their own (fused into "
                    "another layer's kernels, whose counts then hold their work): %s%s.",
                 n, n == 1 ? "" : "s", list, n > 12 ? ", ..." : "");
}

static void config_section(report_doc *d, const run_model *run, const plot_figure_list *figs,
                           const run_trace *t)
{
    cost_check c;
    if (cost_check_build(t, &c)) {
        d->failed = true;
        return;
    }
    char name[256];
    report_key_name(name, sizeof name, t->model, t->res, t->batch, t->precision);
    doc_heading(d, 2, "%s", name);
    if (c.why[0]) {
        doc_para(d, "Not compared: %s.", c.why);
        cost_check_free(&c);
        return;
    }
    type_table(d, &c);
    outside_table(d, &c);
    fused_note(d, &c);
    if (c.other_kernels > 0) {
        char n[FMT_LEN];
        doc_note(d, "%s counted kernel launches belong to no layer of the network "
                    "(communication or unattributed) and are left out.",
                 fmt_count(n, c.other_kernels));
    }
    char caption[768];
    snprintf(caption, sizeof caption,
             "Counted / analytic FLOPs (top) and DRAM bytes (bottom) of each layer's passes of %s, "
             "in the network's order (shape: the pass); the band is agreement within %gx, the "
             "passes outside it are named.",
             name, COST_CHECK_FACTOR);
    report_gpu_figure(d, run, figs, PLOT_COST_CHECK, t, caption);
    cost_check_free(&c);
}

void report_gpu_costs(report_doc *d, const run_model *run, const plot_figure_list *figs)
{
    if (!run_has_gpu_trace(run))
        return;
    doc_heading(d, 1, "GPU: counters against the cost model");
    doc_para(d, "FLOPs and DRAM bytes counted by CUPTI (source cupti), per layer and pass (its "
                "fwd, bwd_data and bwd_weights kernels), for the loss and for the update, beside "
                "the analytic figures of the cost model (models/cost.h) for the same passes, and "
                "counted / analytic. FLOPs within a few percent check both; a convolution "
                "algorithm that does less arithmetic (Winograd, FFT) or pads its channels moves "
                "the ratio. The analytic bytes are minimal ones (each operand read once, no "
                "fusion): a ratio below 1 is reuse in L2 or fusion, above 1 re-reads. Ratios "
                "beyond %gx either way are named in the findings.",
             COST_CHECK_FACTOR);
    for (int k = 0; k < run->n_traces; k++)
        if (trace_is_gpu(run, &run->traces[k]))
            config_section(d, run, figs, &run->traces[k]);
}
