#include "plot_data.h"

#include <stdio.h>

int plot_write_figure(const run_model *run, const plot_figure *fig, const char *data_prefix,
                      char *err, size_t err_len)
{
    switch (fig->kind) {
    case PLOT_ROOFLINE: return plot_write_roofline(run, fig, data_prefix, err, err_len);
    case PLOT_ROOFLINE_MODELS: return plot_write_roofline_models(run, fig, data_prefix, err, err_len);
    case PLOT_THROUGHPUT: return plot_write_throughput(run, fig, data_prefix, err, err_len);
    case PLOT_VARIABILITY: return plot_write_variability(run, fig, data_prefix, err, err_len);
    case PLOT_SCALING: return plot_write_scaling(run, data_prefix, err, err_len);
    case PLOT_ROOFLINE_COMPARE: return plot_write_roofline_compare(run, 1, data_prefix, err, err_len);
    case PLOT_HIER_ROOFLINE: return plot_write_hier_roofline(run, fig, data_prefix, err, err_len);
    case PLOT_TIME_BREAKDOWN: return plot_write_time_breakdown(run, fig, data_prefix, err, err_len);
    case PLOT_COST_CHECK: return plot_write_cost_check(run, fig, data_prefix, err, err_len);
    case PLOT_RUN_TO_RUN: return plot_write_run_to_run(run, 1, data_prefix, err, err_len);
    }
    snprintf(err, err_len, "unknown figure kind %d", (int)fig->kind);
    return -1;
}
