/* configs.csv (analysis/README.md): every process the runner attempted, with
 * its status; and scaling.csv (DESIGN.md §7), optional. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run_read.h"

static const col_rule seconds = {0, INFINITY, false, false, false, "seconds >= 0, or empty"};

int run_read_configs(run_model *m, col_file *f)
{
    static const char *const names[] = {"model", "res", "batch", "precision", "status", NULL};
    int cols[5];
    if (col_require(f, names, cols))
        return -1;
    int config = col_optional(f, "config"), repeat = col_optional(f, "repeat"),
        secs = col_optional(f, "seconds"), log = col_optional(f, "log"),
        graph = col_optional(f, "graph");
    int n = csv_rows(f->t);
    m->attempts = calloc((size_t)n + 1, sizeof *m->attempts);
    if (!m->attempts)
        return col_oom(f);
    for (int i = 0; i < n; i++) {
        run_attempt *a = &m->attempts[i];
        if (col_int(f, i, cols[1], &COL_COUNT_1, &a->res) ||
            col_int(f, i, cols[2], &COL_COUNT_1, &a->batch) ||
            col_num(f, i, secs, &seconds, &a->seconds) || col_on_off(f, i, graph, &a->graph))
            return -1;
        a->config = col_text(f, i, config);
        a->model = col_text(f, i, cols[0]);
        a->precision = col_text(f, i, cols[3]);
        a->status = col_text(f, i, cols[4]);
        a->repeat = col_text(f, i, repeat);
        a->log = col_text(f, i, log);
        a->trace = strcmp(a->repeat, "trace") == 0;
        a->skipped_here = strncmp(a->status, "skipped here (", 14) == 0;
    }
    m->n_attempts = n;
    return 0;
}

int run_read_scaling(run_model *m, col_file *f)
{
    static const char *const names[] = {"model", "res", "mode", "world_size", "images_per_s", NULL};
    int cols[5];
    if (col_require(f, names, cols))
        return -1;
    int env = col_optional(f, "env"), nodes = col_optional(f, "nodes"),
        per_rank = col_optional(f, "per_rank_batch"), global = col_optional(f, "global_batch"),
        threads = col_optional(f, "threads_per_rank"), backend = col_optional(f, "backend"),
        transport = col_optional(f, "transport");
    struct {
        const char *name;
        size_t offset;
    } nums[] = {{"step_ms", offsetof(run_scaling, step_ms)},
                {"comm_ms", offsetof(run_scaling, comm_ms)},
                {"exposed_comm_ms", offsetof(run_scaling, exposed_comm_ms)},
                {"efficiency", offsetof(run_scaling, efficiency)},
                {"copy_ms", offsetof(run_scaling, copy_ms)},
                {"backward_comm_ms", offsetof(run_scaling, backward_comm_ms)},
                {"last_comm_ms", offsetof(run_scaling, last_comm_ms)}};
    int n = csv_rows(f->t);
    m->scaling = calloc((size_t)n + 1, sizeof *m->scaling);
    if (!m->scaling)
        return col_oom(f);
    for (int i = 0; i < n; i++) {
        run_scaling *s = &m->scaling[i];
        if (col_int(f, i, cols[1], &COL_COUNT_1, &s->res) ||
            col_int(f, i, cols[3], &COL_COUNT_1, &s->world_size) ||
            col_num(f, i, cols[4], &COL_OPT_NONNEG, &s->images_per_s) ||
            col_int(f, i, nodes, &COL_OPT_COUNT_0, &s->nodes) ||
            col_int(f, i, per_rank, &COL_OPT_COUNT_0, &s->per_rank_batch) ||
            col_int(f, i, global, &COL_OPT_COUNT_0, &s->global_batch) ||
            col_int(f, i, threads, &COL_OPT_COUNT_0, &s->threads_per_rank))
            return -1;
        for (size_t j = 0; j < sizeof nums / sizeof nums[0]; j++)
            if (col_num(f, i, col_optional(f, nums[j].name), &COL_OPT_NONNEG,
                        (double *)((char *)s + nums[j].offset)))
                return -1;
        s->env = col_text(f, i, env);
        s->model = col_text(f, i, cols[0]);
        s->mode = col_text(f, i, cols[2]);
        s->backend = col_text(f, i, backend);
        s->transport = col_text(f, i, transport);
    }
    m->n_scaling = n;
    return 0;
}
