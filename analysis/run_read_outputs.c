/* What bin/analyze wrote (analysis/README.md, "Outputs"): roofline.csv,
 * summary.csv and variability.csv, read back for the figures and the report. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run_read.h"

/* Numbers of a row: each column's cell into the double at its offset. */
typedef struct {
    const char *name;
    size_t offset;
} num_field;

static int read_nums(col_file *f, int row, const num_field *fields, size_t n, void *base,
                     const int *cols)
{
    for (size_t j = 0; j < n; j++)
        if (col_num(f, row, cols[j], &COL_OPT_ANY, (double *)((char *)base + fields[j].offset)))
            return -1;
    return 0;
}

static int optional_cols(col_file *f, const num_field *fields, size_t n, int *cols)
{
    for (size_t j = 0; j < n; j++)
        cols[j] = col_optional(f, fields[j].name);
    return 0;
}

/* ---- roofline.csv ------------------------------------------------------ */

#define PT(field) offsetof(roof_row, pt) + offsetof(roof_point, field)
static const num_field roof_nums[] = {
    {"count", offsetof(roof_row, count)}, {"duration_ns", PT(duration_ns)},
    {"time_share", offsetof(roof_row, time_share)}, {"flops", PT(flops)},
    {"dram_bytes", PT(dram_bytes)}, {"l2_bytes", PT(l2_bytes)}, {"ai_dram", PT(ai_dram)},
    {"ai_l2", PT(ai_l2)}, {"achieved_gflops", PT(achieved_gflops)},
    {"peak_gflops", PT(peak_gflops)}, {"dram_gbs", PT(dram_gbs)}, {"l2_gbs", PT(l2_gbs)},
    {"ridge_ai", PT(ridge_ai)}, {"attainable_gflops", PT(attainable_gflops)},
    {"pct_of_attainable", PT(pct_of_attainable)}, {"roof_ns", offsetof(roof_row, roof_ns)},
    {"above_roof_ns", offsetof(roof_row, above_roof_ns)}};
enum { ROOF_NUMS = sizeof roof_nums / sizeof roof_nums[0] };

static bool same_config(const roof_config *c, const col_file *f, const int *cols, int row, int res,
                        int batch)
{
    return c->res == res && c->batch == batch && strcmp(c->env, col_text(f, row, cols[0])) == 0 &&
           strcmp(c->model, col_text(f, row, cols[1])) == 0 &&
           strcmp(c->precision, col_text(f, row, cols[4])) == 0;
}

int run_read_roofline(run_model *m, col_file *f)
{
    static const char *const names[] = {"env", "model", "res", "batch", "precision", "level",
                                        "name", "bound", NULL};
    int cols[8], ncols[ROOF_NUMS];
    if (col_require(f, names, cols))
        return -1;
    optional_cols(f, roof_nums, ROOF_NUMS, ncols);
    int layer = col_optional(f, "layer"), ltype = col_optional(f, "layer_type"),
        phase = col_optional(f, "phase"), source = col_optional(f, "source"),
        ceiling = col_optional(f, "peak_ceiling");
    int n = csv_rows(f->t);
    roofline *rl = &m->roofline;
    rl->configs = calloc((size_t)n + 1, sizeof *rl->configs);
    roof_row *rows = calloc((size_t)n + 1, sizeof *rows);
    int *config_of = malloc(((size_t)n + 1) * sizeof *config_of);
    int rc = -1;
    if (!rl->configs || !rows || !config_of) {
        col_oom(f);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        int res, batch;
        roof_row *r = &rows[i];
        if (col_int(f, i, cols[2], &COL_COUNT_1, &res) ||
            col_int(f, i, cols[3], &COL_COUNT_1, &batch) ||
            read_nums(f, i, roof_nums, ROOF_NUMS, r, ncols))
            goto done;
        const char *bound = col_text(f, i, cols[7]);
        if (*bound && !roof_bound_parse(bound, &r->pt.bound)) {
            col_error(f, i, "column 'bound': '%s' is not memory, compute or unknown", bound);
            goto done;
        }
        r->level = col_text(f, i, cols[5]);
        r->name = col_text(f, i, cols[6]);
        r->layer = col_text(f, i, layer);
        r->layer_type = col_text(f, i, ltype);
        r->phase = col_text(f, i, phase);
        r->source = col_text(f, i, source);
        snprintf(r->ceiling, sizeof r->ceiling, "%s", col_text(f, i, ceiling));
        int k = rl->n - 1;
        if (k < 0 || !same_config(&rl->configs[k], f, cols, i, res, batch))
            for (k = 0; k < rl->n; k++)
                if (same_config(&rl->configs[k], f, cols, i, res, batch))
                    break;
        if (k == rl->n)
            rl->configs[rl->n++] = (roof_config){.env = col_text(f, i, cols[0]),
                                                 .model = col_text(f, i, cols[1]),
                                                 .precision = col_text(f, i, cols[4]),
                                                 .res = res,
                                                 .batch = batch,
                                                 .repeats = 1,
                                                 .mem_bound_share = NAN};
        config_of[i] = k;
        rl->configs[k].n++;
    }
    for (int k = 0; k < rl->n; k++) {
        rl->configs[k].rows = malloc(((size_t)rl->configs[k].n + 1) * sizeof *rows);
        if (!rl->configs[k].rows) {
            col_oom(f);
            goto done;
        }
        rl->configs[k].n = 0;
    }
    for (int i = 0; i < n; i++) {
        roof_config *c = &rl->configs[config_of[i]];
        c->rows[c->n++] = rows[i];
    }
    rc = 0;
done:
    free(rows);
    free(config_of);
    return rc;
}

/* ---- summary.csv ------------------------------------------------------- */

#define SUM(field) offsetof(summary_row, field)
static const num_field summary_nums[] = {
    {"images_per_s_median", SUM(ips_median)}, {"images_per_s_q1", SUM(ips_q1)},
    {"images_per_s_q3", SUM(ips_q3)}, {"step_ms_median", SUM(step_ms_median)},
    {"analytic_gflop_per_step", SUM(analytic_gflop)}, {"achieved_tflops", SUM(achieved_tflops)},
    {"peak_gflops", SUM(peak_gflops)}, {"pct_of_peak", SUM(pct_of_peak)}, {"mfu", SUM(mfu)},
    {"mem_bound_time_share", SUM(mem_bound_share)}, {"pct_of_roofs", SUM(pct_of_roofs)}};
enum { SUMMARY_NUMS = sizeof summary_nums / sizeof summary_nums[0] };

int run_read_summary(run_model *m, col_file *f)
{
    static const char *const names[] = {"env", "model", "res", "batch", "precision", "status", NULL};
    int cols[6], ncols[SUMMARY_NUMS];
    if (col_require(f, names, cols))
        return -1;
    optional_cols(f, summary_nums, SUMMARY_NUMS, ncols);
    int backend = col_optional(f, "backend"), world = col_optional(f, "world_size"),
        repeats = col_optional(f, "repeats"), iters = col_optional(f, "iters"),
        ceiling = col_optional(f, "peak_ceiling"), graph = col_optional(f, "graph");
    int n = csv_rows(f->t);
    m->summary.rows = calloc((size_t)n + 1, sizeof *m->summary.rows);
    if (!m->summary.rows)
        return col_oom(f);
    for (int i = 0; i < n; i++) {
        summary_row *s = &m->summary.rows[i];
        if (col_int(f, i, cols[2], &COL_COUNT_1, &s->res) ||
            col_int(f, i, cols[3], &COL_COUNT_1, &s->batch) ||
            col_int(f, i, world, &COL_OPT_COUNT_0, &s->world_size) ||
            col_int(f, i, repeats, &COL_OPT_COUNT_0, &s->repeats) ||
            col_int(f, i, iters, &COL_OPT_COUNT_0, &s->iters) ||
            read_nums(f, i, summary_nums, SUMMARY_NUMS, s, ncols) ||
            col_on_off(f, i, graph, &s->graph))
            return -1;
        s->env = col_text(f, i, cols[0]);
        s->backend = col_text(f, i, backend);
        s->model = col_text(f, i, cols[1]);
        s->precision = col_text(f, i, cols[4]);
        snprintf(s->ceiling, sizeof s->ceiling, "%s", col_text(f, i, ceiling));
        snprintf(s->status, sizeof s->status, "%s", col_text(f, i, cols[5]));
        s->peak_mem_bytes = NAN;
        m->summary.n++;
    }
    return 0;
}

/* ---- variability.csv --------------------------------------------------- */

#define VAR(field) offsetof(variability_row, field)
static const num_field variability_nums[] = {
    {"mean", VAR(mean)},       {"median", VAR(median)},   {"stddev", VAR(stddev)},
    {"cv", VAR(cv)},           {"min", VAR(min)},         {"max", VAR(max)},
    {"ci95_lo", VAR(ci95_lo)}, {"ci95_hi", VAR(ci95_hi)}, {"drift_pct", VAR(drift_pct)}};
enum { VARIABILITY_NUMS = sizeof variability_nums / sizeof variability_nums[0] };

int run_read_variability(run_model *m, col_file *f)
{
    static const char *const names[] = {"env", "model", "res", "batch", "precision", "scope",
                                        "n", "outliers", NULL};
    int cols[8], ncols[VARIABILITY_NUMS];
    if (col_require(f, names, cols))
        return -1;
    optional_cols(f, variability_nums, VARIABILITY_NUMS, ncols);
    int graph = col_optional(f, "graph");
    int n = csv_rows(f->t);
    m->variability.rows = calloc((size_t)n + 1, sizeof *m->variability.rows);
    if (!m->variability.rows)
        return col_oom(f);
    for (int i = 0; i < n; i++) {
        variability_row *v = &m->variability.rows[i];
        if (col_int(f, i, cols[2], &COL_COUNT_1, &v->res) ||
            col_int(f, i, cols[3], &COL_COUNT_1, &v->batch) ||
            col_int(f, i, cols[6], &COL_COUNT_0, &v->n) ||
            col_int(f, i, cols[7], &COL_COUNT_0, &v->outliers) ||
            read_nums(f, i, variability_nums, VARIABILITY_NUMS, v, ncols) ||
            col_on_off(f, i, graph, &v->graph))
            return -1;
        v->env = col_text(f, i, cols[0]);
        v->model = col_text(f, i, cols[1]);
        v->precision = col_text(f, i, cols[4]);
        snprintf(v->scope, sizeof v->scope, "%s", col_text(f, i, cols[5]));
        m->variability.n++;
    }
    return 0;
}
