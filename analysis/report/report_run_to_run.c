/* Run to run across run folders of one environment (make compare of several
 * runs of one ENV): per configuration, whether the runs' medians differ by
 * more than each run's own noise, and what their env.json say changed. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "../fmt.h"
#include "../run_env.h"
#include "report_build.h"
#include "report_sections.h"

/* One configuration measured in several runs of one environment. */
typedef struct {
    const variability_row *key; /* the first run's iterations row */
    int runs[REPORT_MAX_COMPARE];
    double median[REPORT_MAX_COMPARE], lo[REPORT_MAX_COMPARE], hi[REPORT_MAX_COMPARE];
    int n;
    int fastest, slowest; /* indexes into runs[] */
} across_runs;

static bool same_config(const variability_row *a, const variability_row *b)
{
    return a->res == b->res && a->batch == b->batch && a->graph == b->graph &&
           strcmp(a->env, b->env) == 0 && strcmp(a->model, b->model) == 0 &&
           strcmp(a->precision, b->precision) == 0;
}

/* A run's own range for a configuration: the 95% interval of its pooled
 * median and its repeats' medians (process to process), whichever is wider. */
static void own_range(const run_model *run, const variability_row *pooled, double *lo, double *hi)
{
    *lo = isnan(pooled->ci95_lo) ? pooled->median : fmin(pooled->ci95_lo, pooled->median);
    *hi = isnan(pooled->ci95_hi) ? pooled->median : fmax(pooled->ci95_hi, pooled->median);
    for (int i = 0; i < run->variability.n; i++) {
        const variability_row *v = &run->variability.rows[i];
        if (strncmp(v->scope, "repeat=", 7) == 0 && same_config(v, pooled) && !isnan(v->median)) {
            *lo = fmin(*lo, v->median);
            *hi = fmax(*hi, v->median);
        }
    }
}

/* The configurations measured in two or more runs whose environments share a
 * name; returns how many (at most max). */
static int gather(const run_model *runs, int n, across_runs *out, int max)
{
    int k = 0;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < runs[r].variability.n; i++) {
            const variability_row *v = &runs[r].variability.rows[i];
            if (strcmp(v->scope, "iterations") != 0 || !(v->median > 0))
                continue;
            int at = -1;
            for (int j = 0; j < k && at < 0; j++)
                if (same_config(out[j].key, v))
                    at = j;
            if (at < 0) {
                if (k == max)
                    continue;
                at = k++;
                out[at] = (across_runs){.key = v};
            }
            across_runs *c = &out[at];
            if (c->n > 0 && c->runs[c->n - 1] == r)
                continue; /* one row a configuration a run */
            c->runs[c->n] = r;
            c->median[c->n] = v->median;
            own_range(&runs[r], v, &c->lo[c->n], &c->hi[c->n]);
            c->n++;
        }
    int kept = 0;
    for (int j = 0; j < k; j++) {
        across_runs *c = &out[j];
        if (c->n < 2)
            continue;
        c->fastest = c->slowest = 0;
        for (int i = 1; i < c->n; i++) {
            if (c->median[i] < c->median[c->fastest])
                c->fastest = i;
            if (c->median[i] >= c->median[c->slowest]) /* of runs alike, another one */
                c->slowest = i;
        }
        out[kept++] = *c;
    }
    return kept;
}

/* Whether the runs' own ranges share a point: their medians differ by no more
 * than each run's own noise. */
static bool within_noise(const across_runs *c)
{
    double lo = -INFINITY, hi = INFINITY;
    for (int i = 0; i < c->n; i++) {
        lo = fmax(lo, c->lo[i]);
        hi = fmin(hi, c->hi[i]);
    }
    return lo <= hi;
}

static double spread(const across_runs *c)
{
    return c->median[c->slowest] / c->median[c->fastest] - 1;
}

/* env.json keys that differ from run to run whatever happened. */
static bool always_differs(const char *key)
{
    static const char *const keys[] = {"date_utc", "command_lines", "load.sampled_s",
                                       "load.loadavg_5min", "load.loadavg_15min",
                                       "cpu.memory_available_gib"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(key, keys[i]) == 0)
            return true;
    return false;
}

/* "git.commit (9fa660f against 7c2e21f), load.busy_cpus (1.1 against 0)": what
 * the slower run's env.json holds differently from the faster's. */
static int env_differences(char *out, size_t len, const run_env *slow, const run_env *fast)
{
    size_t used = 0;
    int n = 0;
    out[0] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        const run_env *a = pass ? fast : slow, *b = pass ? slow : fast;
        for (int i = 0; i < a->n; i++) {
            const char *key = a->items[i].key;
            const char *other = run_env_get(b, key);
            if (always_differs(key) || (pass && other) || (other && !strcmp(other, a->items[i].value)))
                continue;
            if (++n <= 6)
                fmt_append(out, len, &used, "%s%s (%.40s against %.40s)", n > 1 ? ", " : "", key,
                           pass ? "none" : a->items[i].value,
                           pass ? a->items[i].value : other ? other : "none");
        }
    }
    if (n > 6)
        fmt_append(out, len, &used, " and %d more", n - 6);
    return n;
}

static void config_name(char *out, size_t len, const variability_row *v)
{
    char p[FMT_LEN];
    report_key_short(out, len, v->model, v->res, v->batch,
                     report_precision_label(p, sizeof p, v->precision, v->graph));
}

/* The configurations measured in several runs of one environment, or NULL
 * (out of memory: d->failed set). */
static across_runs *gather_all(report_doc *d, const run_model *runs, int n, int *k)
{
    int max = 0;
    for (int r = 0; r < n; r++)
        max += runs[r].variability.n;
    across_runs *all = calloc((size_t)max + 1, sizeof *all);
    if (!all) {
        d->failed = true;
        *k = 0;
        return NULL;
    }
    *k = gather(runs, n, all, max);
    return all;
}

void report_run_to_run_findings(report_doc *d, const run_model *runs, int n)
{
    int k;
    across_runs *all = gather_all(d, runs, n, &k);
    for (int i = 0; i < k; i++) {
        const char *env = all[i].key->env;
        bool first = true;
        for (int j = 0; j < i && first; j++)
            first = strcmp(all[j].key->env, env) != 0;
        if (!first)
            continue; /* one finding an environment */
        int configs = 0, differ = 0, most_runs = 0;
        const across_runs *worst = NULL;
        double widest = 0;
        for (int j = i; j < k; j++) {
            const across_runs *c = &all[j];
            if (strcmp(c->key->env, env) != 0)
                continue;
            configs++;
            most_runs = c->n > most_runs ? c->n : most_runs;
            widest = fmax(widest, spread(c));
            if (!within_noise(c)) {
                differ++;
                if (!worst || spread(c) > spread(worst))
                    worst = c;
            }
        }
        char a[FMT_LEN], b[FMT_LEN], c[FMT_LEN], name[160];
        if (!worst) {
            doc_item(d, "Run to run, %s (%d runs): the %d configuration%s measured in more than "
                        "one run agree%s within each run's own noise (spread at most %s).",
                     env, most_runs, configs, configs == 1 ? "" : "s", configs == 1 ? "s" : "",
                     fmt_share(a, widest));
            continue;
        }
        const run_model *slow = &runs[worst->runs[worst->slowest]];
        const run_model *fast = &runs[worst->runs[worst->fastest]];
        config_name(name, sizeof name, worst->key);
        char diffs[1024];
        int n_diffs = env_differences(diffs, sizeof diffs, &slow->env, &fast->env);
        char why[1100];
        if (n_diffs)
            snprintf(why, sizeof why, "Their env.json differ in %s", diffs);
        else
            snprintf(why, sizeof why, "Their env.json agree (beyond dates and load averages): "
                                      "the cause is outside what bin/envinfo records");
        char by[FMT_LEN + 16];
        if (spread(worst) < 1)
            snprintf(by, sizeof by, "%s slower than", fmt_share(a, spread(worst)));
        else
            snprintf(by, sizeof by, "%sx as slow as", fmt_num(a, 1 + spread(worst)));
        doc_item(d, "Run to run, %s: %d of %d configuration%s measured in more than one run "
                    "differ%s beyond each run's own noise, the most %s: %s is %s %s "
                    "(median step %s against %s ms). %s.",
                 env, differ, configs, configs == 1 ? "" : "s", differ == 1 ? "s" : "", name,
                 slow->label, by, fast->label,
                 fmt_num(b, worst->median[worst->slowest]),
                 fmt_num(c, worst->median[worst->fastest]), why);
    }
    free(all);
}

void report_run_to_run_section(report_doc *d, const run_model *runs, int n)
{
    int k;
    across_runs *all = gather_all(d, runs, n, &k);
    if (k > 0) {
        doc_heading(d, 1, "Run to run");
        doc_para(d, "The configurations that two or more runs of one environment measured: each "
                    "run's median step (all its timed steps) and its own noise, the 95%% interval "
                    "of that median widened to its repeats' medians. Runs whose ranges share no "
                    "point differ beyond their own noise: something changed between them (the "
                    "findings name what their env.json hold differently).");
        doc_table(d, "llrrrrl",
                  (const char *const[]){"environment", "configuration", "runs",
                                        "fastest median ms", "slowest median ms", "spread",
                                        "verdict"});
    }
    for (int i = 0; i < k; i++) {
        const across_runs *c = &all[i];
        char name[160], a[FMT_LEN], b[FMT_LEN], s[FMT_LEN];
        config_name(name, sizeof name, c->key);
        doc_cell(d, "%s", c->key->env);
        doc_cell(d, "%s", name);
        doc_cell(d, "%d", c->n);
        doc_cell(d, "%s (%s)", fmt_num(a, c->median[c->fastest]), runs[c->runs[c->fastest]].label);
        doc_cell(d, "%s (%s)", fmt_num(b, c->median[c->slowest]), runs[c->runs[c->slowest]].label);
        doc_cell(d, "%s", fmt_share(s, spread(c)));
        doc_cell(d, "%s", within_noise(c) ? "within noise" : "beyond noise");
    }
    free(all);
}
