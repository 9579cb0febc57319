/* Data of the counters against the cost model for one GPU trace
 * (PLOT_COST_CHECK): per layer, in the network's order (then the loss and the
 * update), counted / analytic FLOPs and DRAM bytes of each pass (fwd,
 * bwd_data, bwd_weights; the loss and the update as a whole), one block per
 * layer type and pass so that each has its colour and shape; the layers and
 * passes outside COST_CHECK_FACTOR named. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../cost_check.h"
#include "../fmt.h"
#include "plot_data.h"
#include "plot_out.h"

static void span(double v, double *lo, double *hi)
{
    if (!(v > 0) || !isfinite(v))
        return;
    *lo = fmin(*lo, v);
    *hi = fmax(*hi, v);
}

static bool outside(double ratio)
{
    return isfinite(ratio) && (ratio > COST_CHECK_FACTOR || ratio < 1 / COST_CHECK_FACTOR);
}

/* "layer3.0.conv1 fwd" where the ratio is outside the factor, else "". */
static void put_label(FILE *f, const cost_check_row *r, int scope, double ratio)
{
    char label[96] = "";
    if (outside(ratio))
        snprintf(label, sizeof label, "%s%s%s", r->name, scope < COST_PASSES ? " " : "",
                 scope < COST_PASSES ? cost_check_pass_name(scope) : "");
    fputc(' ', f);
    plot_data_str(f, label);
}

/* Blocks type x scope: index (COST_PASSES + 1) * type + scope, where scope
 * COST_PASSES is every pass together (the loss and the update). */
static void write_blocks(FILE *f, const cost_check *c, double *lo, double *hi)
{
    int block = 0;
    for (int t = 0; t < c->n_types; t++)
        for (int s = 0; s <= COST_PASSES; s++) {
            fprintf(f, "%s# %s, %s: position flops_ratio bytes_ratio flops_label bytes_label\n",
                    block++ ? "\n\n" : "", c->types[t].name, cost_check_pass_name(s));
            int rows = 0;
            for (int i = 0; i < c->n_layers; i++) {
                const cost_check_row *r = &c->layers[i];
                /* a layer's passes; the loss and update rows have only the whole */
                bool whole = strcmp(r->layer_type, "loss") == 0 || strcmp(r->layer_type, "sgd") == 0;
                if (strcmp(r->layer_type, c->types[t].layer_type) != 0 || whole != (s == COST_PASSES))
                    continue;
                const cost_counts *k = cost_check_scope(r, s);
                if (!(k->kernels > 0))
                    continue;
                span(k->flops_ratio, lo, hi);
                span(k->bytes_ratio, lo, hi);
                fprintf(f, "%d %.6g %.6g", i + 1, k->flops_ratio, k->bytes_ratio);
                put_label(f, r, s, k->flops_ratio);
                put_label(f, r, s, k->bytes_ratio);
                fputc('\n', f);
                rows++;
            }
            if (!rows) /* gnuplot's index needs the block */
                fprintf(f, "NaN NaN NaN \"\" \"\"\n");
        }
    if (block == 0)
        fprintf(f, "NaN NaN NaN \"\" \"\"\n");
}

int plot_write_cost_check(const run_model *run, const plot_figure *fig, const char *prefix,
                          char *err, size_t err_len)
{
    cost_check c;
    if (!fig->gpu_trace || cost_check_build(fig->gpu_trace, &c)) {
        snprintf(err, err_len, "%s: out of memory", fig->stem);
        return -1;
    }
    plot_file data, vars;
    int status = -1;
    double lo = 1 / COST_CHECK_FACTOR, hi = COST_CHECK_FACTOR;
    if (plot_file_open(&data, prefix, ".dat", err, err_len))
        goto done;
    write_blocks(data.f, &c, &lo, &hi);
    if (plot_file_close(&data, err, err_len) || plot_file_open(&vars, prefix, ".vars", err, err_len))
        goto done;
    fprintf(vars.f, "# written by bin/plotdata for scripts/gnuplot/cost_check.gp\n");
    plot_var_str(vars.f, "env_name", run->env_name);
    plot_var_str(vars.f, "precision", c.precision);
    plot_var_num(vars.f, "factor", COST_CHECK_FACTOR);
    plot_var_num(vars.f, "nlayers", c.n_layers);
    plot_var_num(vars.f, "ymin", plot_decade_below(lo / 1.5));
    plot_var_num(vars.f, "ymax", plot_decade_above(hi * 1.5));
    plot_var_num(vars.f, "ntypes", c.n_types);
    plot_var_num(vars.f, "nscopes", COST_PASSES + 1);
    int spare = 0;
    for (int t = 0; t < c.n_types; t++) {
        plot_var_str_i(vars.f, "type", t + 1, c.types[t].name);
        plot_var_str_i(vars.f, "color", t + 1, plot_type_color(c.types[t].layer_type, &spare));
    }
    for (int s = 0; s <= COST_PASSES; s++)
        plot_var_str_i(vars.f, "scope", s + 1, s < COST_PASSES ? cost_check_pass_name(s) : "loss, update");
    int no_kernels = 0;
    for (int i = 0; i < c.n_layers; i++)
        no_kernels += c.layers[i].all.kernels == 0 && c.layers[i].all.analytic_flops > 0;
    char label[512], a[FMT_LEN], b[FMT_LEN];
    size_t used = 0;
    /* short lines: the label stands in the right margin, between the legends */
    fmt_append(label, sizeof label, &used, "whole step:\nFLOPs x%s\nDRAM bytes x%s",
               fmt_num(a, c.step.all.flops_ratio), fmt_num(b, c.step.all.bytes_ratio));
    if (no_kernels)
        fmt_append(label, sizeof label, &used,
                   "\n%d layer(s) with analytic\nFLOPs have no kernel of\ntheir own (fused "
                   "into\nanother's): not drawn",
                   no_kernels);
    plot_var_str(vars.f, "step_label", label);
    status = plot_file_close(&vars, err, err_len);
done:
    cost_check_free(&c);
    return status;
}
