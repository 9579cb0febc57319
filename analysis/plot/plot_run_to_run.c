/* Data of the run-to-run figure of a comparison (bin/plotdata --compare, when
 * two or more runs of one environment measured a configuration): per
 * configuration, each run's median step in percent above the fastest run's,
 * with its own range as an error bar, one colour a run. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "../run_to_run.h"
#include "plot_data.h"
#include "plot_out.h"

bool plot_has_run_to_run(const run_model *runs, int n_runs)
{
    run_to_run *all;
    int k;
    if (run_to_run_build(runs, n_runs, &all, &k))
        return true; /* out of memory: the writer will say so */
    free(all);
    return k > 0;
}

int plot_write_run_to_run(const run_model *runs, int n_runs, const char *prefix, char *err,
                          size_t err_len)
{
    run_to_run *all;
    int k;
    if (run_to_run_build(runs, n_runs, &all, &k)) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    /* the runs in the study: those of a configuration measured more than once */
    bool in_study[RUN_TO_RUN_MAX_RUNS] = {false};
    for (int i = 0; i < k; i++)
        for (int j = 0; j < all[i].n; j++)
            in_study[all[i].runs[j]] = true;
    plot_file data, vars;
    int status = -1, drawn = 0;
    double lo = 0, hi = 0;
    if (plot_file_open(&data, prefix, ".dat", err, err_len))
        goto done;
    /* one block a run of the study: configuration index, % above the fastest, range */
    for (int r = 0; r < n_runs && r < RUN_TO_RUN_MAX_RUNS; r++) {
        if (!in_study[r])
            continue;
        fprintf(data.f, "%s# %s: configuration pct_above_fastest lo hi\n", drawn++ ? "\n\n" : "",
                runs[r].label);
        int rows = 0;
        for (int i = 0; i < k; i++) {
            const run_to_run *c = &all[i];
            double fastest = c->median[c->fastest];
            for (int j = 0; j < c->n; j++) {
                if (c->runs[j] != r)
                    continue;
                double y = 100 * (c->median[j] / fastest - 1);
                double ylo = 100 * (c->lo[j] / fastest - 1), yhi = 100 * (c->hi[j] / fastest - 1);
                fprintf(data.f, "%d %.6g %.6g %.6g\n", i + 1, y, ylo, yhi);
                lo = fmin(lo, ylo);
                hi = fmax(hi, yhi);
                rows++;
            }
        }
        if (!rows) /* gnuplot's index needs the block */
            fprintf(data.f, "NaN NaN NaN NaN\n");
    }
    if (plot_file_close(&data, err, err_len))
        goto done;
    if (plot_file_open(&vars, prefix, ".vars", err, err_len))
        goto done;
    plot_var_num(vars.f, "nconf", k);
    for (int i = 0; i < k; i++) {
        const variability_row *v = all[i].key;
        char name[256];
        snprintf(name, sizeof name, "%s %s @%d b%d %s%s", v->env, v->model, v->res, v->batch,
                 v->precision, v->graph ? " graph" : "");
        plot_var_str_i(vars.f, "conf_label", i + 1, name);
    }
    plot_var_num(vars.f, "nruns", drawn);
    for (int r = 0, i = 0; r < n_runs && r < RUN_TO_RUN_MAX_RUNS; r++)
        if (in_study[r]) {
            plot_var_str_i(vars.f, "run_label", i + 1, runs[r].label);
            plot_var_str_i(vars.f, "run_color", i + 1, plot_series_color(i));
            i++;
        }
    double pad = fmax(1, 0.08 * (hi - lo));
    plot_var_num(vars.f, "ymin", lo - pad);
    plot_var_num(vars.f, "ymax", hi + pad);
    status = plot_file_close(&vars, err, err_len);
done:
    free(all);
    return status;
}
