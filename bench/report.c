/* bin/report: writes report.md and a self-contained report.html for a run
 * folder from its CSV files and figures (analysis/report_*.c), or a
 * comparison of several run folders (--compare). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/plot_data.h"
#include "../analysis/report_build.h"
#include "cli.h"

static const char *const prog = "report";

/* Index 31 of a table row is its last column: 2 + 2 x runs must fit. */
enum { MAX_COMPARE_RUNS = 14 };

static void print_help(void)
{
    printf("usage: report RUN_DIR\n"
           "       report --compare OUTDIR RUN_DIR...\n"
           "Writes RUN_DIR/report.md and RUN_DIR/report.html (self-contained: figures\n"
           "embedded) from the run's CSV files and the figures in RUN_DIR/figures/.\n"
           "--compare writes OUTDIR/compare.md and OUTDIR/compare.html for up to %d runs.\n",
           MAX_COMPARE_RUNS);
}

static _Noreturn void die(const char *err)
{
    fprintf(stderr, "%s: %s\n", prog, err);
    exit(1);
}

static void write_both(const report_doc *doc, const char *dir, const char *stem)
{
    char md[REPORT_PATH_LEN + 32], html[REPORT_PATH_LEN + 32], err[REPORT_PATH_LEN + 256];
    snprintf(md, sizeof md, "%s/%s.md", dir, stem);
    snprintf(html, sizeof html, "%s/%s.html", dir, stem);
    if (doc_write_md(doc, md, err, sizeof err) || doc_write_html(doc, dir, html, err, sizeof err))
        die(err);
    printf("%s: wrote %s and %s\n", prog, md, html);
}

static int run_one(const char *dir)
{
    char err[REPORT_PATH_LEN + 256], title[REPORT_PATH_LEN + 128];
    report_run run;
    if (report_run_load(&run, dir, err, sizeof err))
        die(err);
    plot_figure_list figs;
    if (plot_figures_of_run(&run, &figs))
        die("out of memory");
    /* the run's id is its folder's name (runs/<ENV>/<ID>) */
    const char *id = strrchr(run.dir, '/');
    id = id && id[1] ? id + 1 : run.dir;
    snprintf(title, sizeof title, "Roofline report: %s (%s)", run.env[0] ? run.env : "?", id);
    report_doc doc;
    doc_init(&doc, title);
    report_build_run(&doc, &run, &figs);
    write_both(&doc, dir, "report");
    doc_free(&doc);
    plot_figure_list_free(&figs);
    report_run_free(&run);
    return 0;
}

static int run_compare(const char *out_dir, char **dirs, int n)
{
    char err[REPORT_PATH_LEN + 256], title[512];
    if (n > MAX_COMPARE_RUNS)
        cli_usage_error(prog, "--compare: %d run folders given, at most %d are accepted", n,
                        MAX_COMPARE_RUNS);
    if (plot_make_dirs(out_dir, err, sizeof err))
        die(err);
    report_run *runs = report_runs_load(dirs, n, err, sizeof err);
    if (!runs)
        die(err);
    size_t used = (size_t)snprintf(title, sizeof title, "Comparison:");
    for (int i = 0; i < n && used < sizeof title; i++)
        used += (size_t)snprintf(title + used, sizeof title - used, "%s %s", i ? "," : "",
                                 runs[i].env[0] ? runs[i].env : dirs[i]);
    report_doc doc;
    doc_init(&doc, title);
    report_build_compare(&doc, runs, n, out_dir);
    write_both(&doc, out_dir, "compare");
    doc_free(&doc);
    report_runs_free(runs, n);
    return 0;
}

int main(int argc, char **argv)
{
    return cli_run_dirs_main(prog, argc, argv, print_help, run_one, run_compare);
}
