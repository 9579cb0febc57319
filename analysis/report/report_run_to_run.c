/* The comparison's run to run (analysis/run_to_run.h): a finding per
 * environment measured in several runs, what the slowest and fastest runs'
 * env.json hold differently, and the section with its table. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../fmt.h"
#include "../run_env.h"
#include "../run_to_run.h"
#include "report_sections.h"

/* env.json keys that differ from run to run whatever happened: the date, the
 * command line, the load averages, the memory free and the clocks read at one
 * instant (the busy CPUs, the governor and the maximum clocks stay). */
static bool always_differs(const char *key)
{
    static const char *const keys[] = {"date_utc", "command_lines", "load.sampled_s",
                                       "load.loadavg_1min", "load.loadavg_5min",
                                       "load.loadavg_15min", "cpu.memory_available_gib",
                                       "cpu_clocks.cpuinfo_mhz",
                                       "cpu_clocks.cpufreq.scaling_cur_khz"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(key, keys[i]) == 0)
            return true;
    return strstr(key, ".clocks_now.") != NULL; /* gpu.devices[i].clocks_now.sm_mhz */
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

void report_run_to_run_findings(report_doc *d, const run_model *runs, const run_to_run *all,
                                int k)
{
    for (int i = 0; i < k; i++) {
        const char *env = all[i].key->env;
        bool first = true;
        for (int j = 0; j < i && first; j++)
            first = strcmp(all[j].key->env, env) != 0;
        if (!first)
            continue; /* one finding an environment */
        int configs = 0, differ = 0, n_runs = 0;
        bool in_study[RUN_TO_RUN_MAX_RUNS] = {false};
        const run_to_run *worst = NULL;
        double widest = 0;
        for (int j = i; j < k; j++) {
            const run_to_run *c = &all[j];
            if (strcmp(c->key->env, env) != 0)
                continue;
            configs++;
            for (int q = 0; q < c->n; q++)
                if (!in_study[c->runs[q]]) {
                    in_study[c->runs[q]] = true;
                    n_runs++;
                }
            widest = fmax(widest, run_to_run_spread(c));
            if (!run_to_run_within_noise(c)) {
                differ++;
                if (!worst || run_to_run_spread(c) > run_to_run_spread(worst))
                    worst = c;
            }
        }
        char a[FMT_LEN], b[FMT_LEN], c[FMT_LEN], name[160];
        if (!worst) {
            doc_item(d, "Run to run, %s (%d runs): the %d configuration%s measured in more than "
                        "one run agree%s within each run's own noise (spread at most %s).",
                     env, n_runs, configs, configs == 1 ? "" : "s", configs == 1 ? "s" : "",
                     fmt_share(a, widest));
            continue;
        }
        const run_model *slow = &runs[worst->runs[worst->slowest]];
        const run_model *fast = &runs[worst->runs[worst->fastest]];
        config_name(name, sizeof name, worst->key);
        char diffs[2048];
        int n_diffs = env_differences(diffs, sizeof diffs, &slow->env, &fast->env);
        char why[2200];
        const run_model *unread = !slow->env.present || !slow->env.complete ? slow
                                  : !fast->env.present || !fast->env.complete ? fast
                                                                              : NULL;
        if (unread)
            snprintf(why, sizeof why, "Their env.json cannot be compared: %s's is %s",
                     unread->label, unread->env.present ? "incomplete" : "missing");
        else if (n_diffs)
            snprintf(why, sizeof why, "Their env.json differ in %s", diffs);
        else
            snprintf(why, sizeof why, "Their env.json agree (beyond dates and load averages): "
                                      "the cause is outside what bin/envinfo records");
        char by[FMT_LEN + 16];
        if (run_to_run_spread(worst) < 1)
            snprintf(by, sizeof by, "%s slower than", fmt_share(a, run_to_run_spread(worst)));
        else
            snprintf(by, sizeof by, "%sx as slow as", fmt_num(a, 1 + run_to_run_spread(worst)));
        doc_item(d, "Run to run, %s (%d runs): %d of %d configuration%s measured in more than "
                    "one run differ%s beyond each run's own noise, %s %s: %s is %s %s "
                    "(median step %s against %s ms). %s.",
                 env, n_runs, differ, configs, configs == 1 ? "" : "s", differ == 1 ? "s" : "",
                 differ == 1 ? "namely" : "the most", name, slow->label, by, fast->label,
                 fmt_num(b, worst->median[worst->slowest]),
                 fmt_num(c, worst->median[worst->fastest]), why);
    }
}

void report_run_to_run_section(report_doc *d, const run_model *runs, const run_to_run *all,
                               int k, const char *out_dir)
{
    if (k > 0) {
        doc_heading(d, 1, "Run to run");
        doc_para(d, "The configurations that two or more runs of one environment measured: each "
                    "run's median step (all its timed steps) and its own noise, the 95%% interval "
                    "of that median (under 6 steps, the median +- 2 stddev / sqrt(n)) widened to "
                    "its repeats' medians. Runs whose ranges share no "
                    "point differ beyond their own noise: something changed between them (the "
                    "findings name what their env.json hold differently).");
        doc_table(d, "llrrrrl",
                  (const char *const[]){"environment", "configuration", "runs",
                                        "fastest median ms", "slowest median ms", "spread",
                                        "verdict"});
    }
    for (int i = 0; i < k; i++) {
        const run_to_run *c = &all[i];
        char name[160], a[FMT_LEN], b[FMT_LEN], s[FMT_LEN];
        config_name(name, sizeof name, c->key);
        doc_cell(d, "%s", c->key->env);
        doc_cell(d, "%s", name);
        doc_cell(d, "%d", c->n);
        doc_cell(d, "%s (%s)", fmt_num(a, c->median[c->fastest]), runs[c->runs[c->fastest]].label);
        doc_cell(d, "%s (%s)", fmt_num(b, c->median[c->slowest]), runs[c->runs[c->slowest]].label);
        doc_cell(d, "%s", fmt_share(s, run_to_run_spread(c)));
        doc_cell(d, "%s", run_to_run_within_noise(c) ? "within noise" : "beyond noise");
    }
    char rel[64];
    if (k > 0 && report_png_exists(out_dir, "run_to_run", rel, sizeof rel))
        doc_figure(d, rel, "run to run",
                   "Per configuration, each run's median step in percent above the fastest "
                   "run's, its bar the run's own range; bars that share no level differ beyond "
                   "the runs' own noise.");
}
