/* Data of the time breakdown of one GPU trace (PLOT_TIME_BREAKDOWN): one bar
 * per phase, in the order a step runs them, stacked by layer type, in percent
 * of the step's kernel time (analysis/time_breakdown.h). */
#include <stdio.h>

#include "../fmt.h"
#include "../time_breakdown.h"
#include "plot_data.h"
#include "plot_out.h"

int plot_write_time_breakdown(const run_model *run, const plot_figure *fig, const char *prefix,
                              char *err, size_t err_len)
{
    if (!fig->gpu_trace) {
        snprintf(err, err_len, "%s: no trace", fig->stem);
        return -1;
    }
    time_breakdown b;
    time_breakdown_of(fig->gpu_trace, &b);
    plot_file data, vars;
    if (plot_file_open(&data, prefix, ".dat", err, err_len))
        return -1;
    fprintf(data.f, "# phase, then the percent of the step's kernel time of each layer type, "
                    "then the phase's total\n# phase");
    for (int t = 0; t < b.n_types; t++)
        fprintf(data.f, " %s", b.types[t]);
    fprintf(data.f, " total\n");
    double top = 0;
    for (int p = 0; p < b.n_phases; p++) {
        plot_data_str(data.f, b.phases[p]);
        for (int t = 0; t < b.n_types; t++)
            fprintf(data.f, " %.6g", 100 * time_breakdown_share(&b, t, p));
        double total = 100 * time_breakdown_share(&b, -1, p);
        fprintf(data.f, " %.6g\n", total);
        top = total > top ? total : top;
    }
    if (b.n_phases == 0)
        fprintf(data.f, "\"none\" 0\n");
    if (plot_file_close(&data, err, err_len) || plot_file_open(&vars, prefix, ".vars", err, err_len))
        return -1;
    fprintf(vars.f, "# written by bin/plotdata for scripts/gnuplot/time_breakdown.gp\n");
    plot_var_str(vars.f, "env_name", run->env_name);
    plot_var_str(vars.f, "precision", b.precision);
    plot_var_num(vars.f, "ntypes", b.n_types);
    int spare = 0;
    for (int t = 0; t < b.n_types; t++) {
        char label[96], pct[FMT_LEN];
        snprintf(label, sizeof label, "%s  %s", b.types[t],
                 fmt_share(pct, time_breakdown_share(&b, t, -1)));
        plot_var_str_i(vars.f, "type", t + 1, label);
        plot_var_str_i(vars.f, "color", t + 1, plot_type_color(b.types[t], &spare));
    }
    plot_var_num(vars.f, "nphases", b.n_phases);
    /* room above the tallest bar for its label */
    plot_var_num(vars.f, "ymax", plot_nice_above(top > 0 ? top * 1.12 : 100));
    char ms[FMT_LEN], count[FMT_LEN], label[256];
    snprintf(label, sizeof label, "%s kernel launches, %s ms of kernel time per traced step",
             fmt_count(count, b.kernels), fmt_ms_of_ns(ms, b.total_ns));
    plot_var_str(vars.f, "total_label", label);
    return plot_file_close(&vars, err, err_len);
}
