/* Data of the roofline of the models (PLOT_ROOFLINE_MODELS): the whole step
 * and the layer types of every traced configuration of one precision. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../roofline_table.h"
#include "plot_axes.h"
#include "plot_ceilings.h"
#include "plot_data.h"
#include "plot_out.h"

/* Layer types under 5% of the step are drawn without a name. */
#define MODELS_LABEL_SHARE 0.05

/* Series name: the model, with the batch when the model has several traced
 * configurations in this precision. */
static void series_name(const roof_config *const *cs, int n, int i, char *out, size_t len)
{
    int same_model = 0;
    for (int j = 0; j < n; j++)
        same_model += strcmp(cs[j]->model, cs[i]->model) == 0;
    if (same_model > 1)
        snprintf(out, len, "%s b%d", cs[i]->model, cs[i]->batch);
    else
        snprintf(out, len, "%s", cs[i]->model);
}

/* One block of layer types per configuration, one point per configuration's step. */
static void write_points(FILE *types, FILE *steps, const roof_config *const *cs, int n,
                         double yscale, const char *unit, plot_span *x, plot_span *y)
{
    for (int i = 0; i < n; i++) {
        const roof_row *step = roofline_step(cs[i]);
        double ai = step->pt.ai_dram, g = step->pt.achieved_gflops;
        plot_span_add(x, ai);
        plot_span_add(y, g);
        fprintf(steps, "%s# %s: ai_dram achieved (%s)\n%.6g %.6g\n", i ? "\n\n" : "",
                cs[i]->model, unit, ai, g * yscale);
        fprintf(types, "%s# %s: ai_dram achieved (%s) time_share label\n", i ? "\n\n" : "",
                cs[i]->model, unit);
        int drawn = 0;
        for (int k = 0; k < cs[i]->n; k++) {
            const roof_row *r = &cs[i]->rows[k];
            if (strcmp(r->level, "layer_type") != 0 || !plot_drawable(r))
                continue;
            double share = r->time_share;
            plot_span_add(x, r->pt.ai_dram);
            plot_span_add(y, r->pt.achieved_gflops);
            fprintf(types, "%.6g %.6g %.6g ", r->pt.ai_dram, r->pt.achieved_gflops * yscale,
                    isnan(share) ? 0 : share);
            plot_data_str(types, share >= MODELS_LABEL_SHARE ? r->name : "");
            fputc('\n', types);
            drawn++;
        }
        if (!drawn)
            fprintf(types, "NaN NaN 0 \"\"\n");
    }
}

int plot_write_roofline_models(const run_model *run, const plot_figure *fig,
                               const char *prefix, char *err, size_t err_len)
{
    const roofline *rl = &run->roofline;
    /* this precision's configurations whose step can be drawn */
    const roof_config **cs = calloc((size_t)rl->n + 1, sizeof *cs);
    if (!cs) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    int n = 0;
    for (int k = 0; k < rl->n; k++)
        if (strcmp(rl->configs[k].precision, fig->precision) == 0 &&
            plot_drawable_step(&rl->configs[k]))
            cs[n++] = &rl->configs[k];
    /* one set of roofs for all: the ceilings any of them ran against; the
     * first configuration's step names the main one (they share the precision) */
    const roof_row *first_step = n ? roofline_step(cs[0]) : NULL;
    roof_lines roofs;
    plot_run_roofs(run, cs, n, &roofs);
    double fastest = 0;
    for (int i = 0; i < n; i++)
        fastest = fmax(fastest, roofline_step(cs[i])->pt.achieved_gflops);
    const char *unit;
    double yscale = plot_figure_yscale(&roofs, fastest, &unit);
    plot_file types, steps, vars;
    int status = -1;
    plot_span x = {0}, y = {0};
    if (plot_file_open(&types, prefix, ".types", err, err_len))
        goto done;
    if (plot_file_open(&steps, prefix, ".steps", err, err_len)) {
        plot_file_abort(&types);
        goto done;
    }
    write_points(types.f, steps.f, cs, n, yscale, unit, &x, &y);
    if (plot_file_close(&types, err, err_len)) {
        plot_file_abort(&steps);
        goto done;
    }
    if (plot_file_close(&steps, err, err_len))
        goto done;
    if (plot_file_open(&vars, prefix, ".vars", err, err_len))
        goto done;
    double main_gflops = first_step ? first_step->pt.peak_gflops : NAN;
    if (!(main_gflops > 0))
        main_gflops = roof_lines_top_compute(&roofs);
    fprintf(vars.f, "# written by bin/plotdata for scripts/gnuplot/roofline_models.gp\n");
    plot_var_str(vars.f, "env_name", run->env_name);
    plot_var_str(vars.f, "precision", fig->precision);
    plot_write_axes(vars.f, x, y, &roofs, first_step ? first_step->ceiling : "", main_gflops);
    plot_var_num(vars.f, "nseries", n);
    for (int i = 0; i < n; i++) {
        char name[160];
        series_name(cs, n, i, name, sizeof name);
        plot_var_str_i(vars.f, "series_name", i + 1, name);
        plot_var_str_i(vars.f, "series_color", i + 1, plot_series_color(i));
    }
    plot_var_num(vars.f, "ridge_ai", first_step ? first_step->pt.ridge_ai : NAN);
    plot_var_str(vars.f, "source", first_step ? first_step->source : "");
    status = plot_file_close(&vars, err, err_len);
done:
    free(cs);
    return status;
}
