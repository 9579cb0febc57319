#include "summary.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../models/cost.h"
#include "../models/zoo.h"
#include "roofline_table.h"
#include "stats.h"

double summary_analytic_gflop(const char *model, int res, int batch, const char *prec_name)
{
    const model_info *info = zoo_find(model);
    precision prec;
    /* the programs' own bounds */
    if (!info || !precision_parse(prec_name, &prec) || res < zoo_min_res(model) ||
        res > ZOO_MAX_RES || batch < 1 || batch > (1 << 20))
        return NAN;
    network net;
    if (zoo_build(&net, model, res, info->default_classes) != NET_OK)
        return NAN;
    /* a batch whose counts would not fit in 64 bits has no analytic figure */
    step_cost c = cost_step(&net, batch, prec, NULL);
    net_free(&net);
    return c.saturated ? NAN : c.step_flops / 1e9;
}

static bool attempt_matches(const run_attempt *a, const summary_row *s)
{
    return a->res == s->res && a->batch == s->batch && a->graph == s->graph &&
           strcmp(a->model, s->model) == 0 && strcmp(a->precision, s->precision) == 0;
}

/* "ok" when every timed attempt was, else the first one's status that was
 * not; a trace pass that failed is added after it ("ok; trace: failed (exit
 * 1)"), since the step times stand without it, unless its status is that one
 * (a configuration skipped here, trace pass and all). Marks the attempts it
 * read and returns the number of timed ones. */
static int config_status(const run_model *m, bool *used, summary_row *s)
{
    int timed = 0;
    const char *first_bad = NULL, *trace_bad = NULL;
    for (int i = 0; i < m->n_attempts; i++) {
        const run_attempt *a = &m->attempts[i];
        if (!attempt_matches(a, s))
            continue;
        used[i] = true;
        bool ok = strcmp(a->status, "ok") == 0;
        if (a->trace && !ok && !trace_bad)
            trace_bad = a->status;
        if (!a->trace && !ok && !first_bad)
            first_bad = a->status;
        timed += !a->trace;
    }
    if (trace_bad && first_bad && strcmp(trace_bad, first_bad) == 0)
        trace_bad = NULL;
    snprintf(s->status, sizeof s->status, "%s%s%s", first_bad ? first_bad : "ok",
             trace_bad ? "; trace: " : "", trace_bad ? trace_bad : "");
    return timed;
}

static summary_row empty_row(void)
{
    return (summary_row){.repeats = -1, .iters = -1, .world_size = -1, .ips_median = NAN,
                         .ips_q1 = NAN, .ips_q3 = NAN, .step_ms_median = NAN,
                         .analytic_gflop = NAN, .achieved_tflops = NAN, .peak_gflops = NAN,
                         .pct_of_peak = NAN, .mfu = NAN, .mem_bound_share = NAN,
                         .pct_of_roofs = NAN, .peak_mem_bytes = NAN};
}

/* Everything computed from the key alone: FLOPs, roof, trace. */
static void add_model_columns(summary_row *s, const roofline *rl, const roofs *r)
{
    s->analytic_gflop = summary_analytic_gflop(s->model, s->res, s->batch, s->precision);
    if (r) {
        roofs_precision_ceiling(r, s->precision, s->ceiling);
        s->peak_gflops = roofs_peak(r, s->ceiling);
    }
    /* GFLOP per ms is TFLOP/s */
    s->achieved_tflops = s->analytic_gflop / s->step_ms_median;
    s->pct_of_peak = 100.0 * s->achieved_tflops * 1e3 / s->peak_gflops;
    s->mfu = s->pct_of_peak;
    const roof_config *rc = roofline_find(rl, s->env, s->model, s->res, s->batch, s->precision);
    if (rc)
        s->mem_bound_share = rc->mem_bound_share;
    /* how close the timed step runs to its roofs: the trace's work at the
     * roofs, kernel by kernel, over the median step (ns per ms: 1e6) */
    const roof_row *step = rc ? roofline_step(rc) : NULL;
    if (step && s->step_ms_median > 0)
        s->pct_of_roofs = 100.0 * step->roof_ns / (s->step_ms_median * 1e6);
}

static int measured_row(summary_row *s, const run_steps *c)
{
    s->env = c->key.env;
    s->backend = c->key.backend;
    s->model = c->key.model;
    s->precision = c->key.precision;
    s->res = c->key.res;
    s->batch = c->key.batch;
    s->world_size = c->key.world_size;
    s->graph = c->key.graph;
    s->repeats = c->repeats;
    s->iters = c->iters;
    s->peak_mem_bytes = c->peak_mem_bytes;
    double *ips = malloc(((size_t)c->n + 1) * sizeof *ips);
    if (!ips)
        return -1;
    for (int i = 0; i < c->n; i++) /* a row without images_per_s: from the batch */
        ips[i] = isfinite(c->images_per_s[i]) ? c->images_per_s[i] : c->key.batch * 1e3 / c->step_ms[i];
    stats_summary st;
    int rc = stats_describe(ips, c->n, &st);
    s->ips_median = st.median;
    s->ips_q1 = st.q1;
    s->ips_q3 = st.q3;
    if (!rc)
        rc = stats_describe(c->step_ms, c->n, &st);
    s->step_ms_median = st.median;
    free(ips);
    return rc;
}

int summary_build(const run_model *m, const roofline *rl, const roofs *r, summary *out,
                  char *err, size_t err_len)
{
    *out = (summary){0};
    out->rows = calloc((size_t)(m->n_steps + m->n_attempts) + 1, sizeof *out->rows);
    bool *used = calloc((size_t)m->n_attempts + 1, sizeof *used);
    if (!out->rows || !used)
        goto oom;
    for (int k = 0; k < m->n_steps; k++) {
        summary_row *s = &out->rows[out->n++];
        *s = empty_row();
        if (measured_row(s, &m->steps[k]))
            goto oom;
        config_status(m, used, s);
        add_model_columns(s, rl, r);
    }
    /* attempts without a step row: failed or skipped, kept with their status */
    for (int i = 0; i < m->n_attempts; i++) {
        if (used[i])
            continue;
        const run_attempt *a = &m->attempts[i];
        summary_row *s = &out->rows[out->n++];
        *s = empty_row();
        s->env = m->n_steps ? m->steps[0].key.env : "";
        s->backend = "";
        s->model = a->model;
        s->precision = a->precision;
        s->res = a->res;
        s->batch = a->batch;
        s->graph = a->graph;
        s->repeats = config_status(m, used, s);
        add_model_columns(s, rl, r);
    }
    free(used);
    return 0;
oom:
    free(used);
    summary_free(out);
    snprintf(err, err_len, "summary: out of memory");
    return -1;
}

void summary_free(summary *s)
{
    free(s->rows);
    *s = (summary){0};
}
