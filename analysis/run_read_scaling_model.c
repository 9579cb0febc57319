/* scaling_model.csv (bin/scaling_model, written by the runner's scaling
 * stage): the predicted step and efficiency of each configuration at each
 * world size, with the links, overlap rule and fit each row assumed.
 * Optional; the report's scaling section and figure show it beside the
 * measurements. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "run_read.h"

static const col_rule milliseconds = {0, INFINITY, false, true, true, "milliseconds > 0"};
static const col_rule efficiency = {0, INFINITY, false, true, false, "a value >= 0"};

/* The numbers of a row, by column; all optional but step_ms and efficiency,
 * which are read under their own rules. */
static const struct {
    const char *name;
    size_t offset;
} numbers[] = {
    {"per_rank_batch", offsetof(run_prediction, per_rank_batch)},
    {"global_batch", offsetof(run_prediction, global_batch)},
    {"compute_ms", offsetof(run_prediction, compute_ms)},
    {"allreduce_ms", offsetof(run_prediction, allreduce_ms)},
    {"overlap_ms", offsetof(run_prediction, overlap_ms)},
    {"exposed_ms", offsetof(run_prediction, exposed_ms)},
    {"images_per_s", offsetof(run_prediction, images_per_s)},
    {"measured_step_ms", offsetof(run_prediction, measured_step_ms)},
    {"measured_efficiency", offsetof(run_prediction, measured_efficiency)},
    {"intra_alpha_us", offsetof(run_prediction, intra_alpha_us)},
    {"intra_busbw_gbs", offsetof(run_prediction, intra_busbw_gbs)},
    {"inter_alpha_us", offsetof(run_prediction, inter_alpha_us)},
    {"inter_busbw_gbs", offsetof(run_prediction, inter_busbw_gbs)},
    {"overlap_efficiency", offsetof(run_prediction, overlap_efficiency)},
    {"backward_share", offsetof(run_prediction, backward_share)},
    {"host_copy_ms", offsetof(run_prediction, host_copy_ms)},
    {"last_bucket_ms", offsetof(run_prediction, last_bucket_ms)},
    {"fit_worst_pct", offsetof(run_prediction, fit_worst_pct)},
    {"fit_min_mb", offsetof(run_prediction, fit_min_mb)},
};
enum { NUMBERS = sizeof numbers / sizeof numbers[0] };

int run_read_scaling_model(run_model *m, col_file *f)
{
    static const char *const names[] = {"model", "res", "mode",       "link",
                                        "world_size", "step_ms", "efficiency", NULL};
    enum { MODEL, RES, MODE, LINK, WORLD, STEP, EFF };
    int cols[7];
    if (col_require(f, names, cols))
        return -1;
    int env = col_optional(f, "env"), backend = col_optional(f, "backend"),
        nodes = col_optional(f, "nodes"), per_node = col_optional(f, "ranks_per_node"),
        fit_ranks = col_optional(f, "fit_ranks"), fit_points = col_optional(f, "fit_points");
    int num_cols[NUMBERS];
    for (int j = 0; j < NUMBERS; j++)
        num_cols[j] = col_optional(f, numbers[j].name);
    int n = csv_rows(f->t);
    m->predictions = calloc((size_t)n + 1, sizeof *m->predictions);
    if (!m->predictions)
        return col_oom(f);
    for (int i = 0; i < n; i++) {
        run_prediction *p = &m->predictions[i];
        if (col_int(f, i, cols[RES], &COL_COUNT_1, &p->res) ||
            col_int(f, i, cols[WORLD], &COL_COUNT_1, &p->world_size) ||
            col_num(f, i, cols[STEP], &milliseconds, &p->step_ms) ||
            col_num(f, i, cols[EFF], &efficiency, &p->efficiency) ||
            col_int(f, i, nodes, &COL_OPT_COUNT_0, &p->nodes) ||
            col_int(f, i, per_node, &COL_OPT_COUNT_0, &p->ranks_per_node) ||
            col_int(f, i, fit_ranks, &COL_OPT_COUNT_0, &p->fit_ranks) ||
            col_int(f, i, fit_points, &COL_OPT_COUNT_0, &p->fit_points))
            return -1;
        for (int j = 0; j < NUMBERS; j++)
            if (col_num(f, i, num_cols[j], &COL_OPT_NONNEG,
                        (double *)((char *)p + numbers[j].offset)))
                return -1;
        p->env = col_text(f, i, env);
        p->backend = col_text(f, i, backend);
        p->model = col_text(f, i, cols[MODEL]);
        p->mode = col_text(f, i, cols[MODE]);
        p->link = col_text(f, i, cols[LINK]);
        /* the report tells the two sets apart by this cell */
        if (strcmp(p->link, "fit") != 0 && strcmp(p->link, "links") != 0) {
            col_error(f, i, "column 'link': '%s' is not fit or links", p->link);
            return -1;
        }
    }
    m->n_predictions = n;
    return 0;
}
