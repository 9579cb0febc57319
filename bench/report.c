/* bin/report: writes report.md and a self-contained report.html for a run
 * folder from its run model and figures (analysis/report/), or a
 * comparison of several run folders (--compare). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/plot/plot_figures.h"
#include "../analysis/plot/plot_out.h"
#include "../analysis/report/report_build.h"
#include "../analysis/run_load.h"
#include "cli.h"

_Static_assert((int)CLI_MAX_COMPARE_RUNS == (int)REPORT_MAX_COMPARE,
               "the command line refuses what the comparison cannot hold");

static const char *const prog = "report";

static void print_help(void)
{
    printf("usage: report RUN_DIR\n"
           "       report --compare OUTDIR RUN_DIR...\n"
           "Writes RUN_DIR/report.md and RUN_DIR/report.html (self-contained: figures\n"
           "embedded) from the run's CSV files and the figures in RUN_DIR/figures/.\n"
           "--compare writes OUTDIR/compare.md and OUTDIR/compare.html for up to %d runs.\n",
           CLI_MAX_COMPARE_RUNS);
}

static _Noreturn void die(const char *err)
{
    fprintf(stderr, "%s: %s\n", prog, err);
    exit(1);
}

/* What the report shows: everything (the raw kernels for the GPU sections). */
#define REPORT_FILES (RUN_INPUTS | RUN_OUTPUTS)

/* A load failure: bad input is a usage error (status 2), anything else 1. */
static _Noreturn void load_failed(int status, const char *err)
{
    if (status == RUN_LOAD_BAD_INPUT)
        cli_usage_error(prog, "%s", err);
    die(err);
}

static void write_both(const report_doc *doc, const char *dir, const char *stem)
{
    char md[RUN_PATH_LEN + 32], html[RUN_PATH_LEN + 32], err[RUN_PATH_LEN + 256];
    snprintf(md, sizeof md, "%s/%s.md", dir, stem);
    snprintf(html, sizeof html, "%s/%s.html", dir, stem);
    if (doc_write_md(doc, md, err, sizeof err) || doc_write_html(doc, dir, html, err, sizeof err))
        die(err);
    printf("%s: wrote %s and %s\n", prog, md, html);
}

static int run_one(const char *dir)
{
    char err[RUN_PATH_LEN + 256], title[RUN_PATH_LEN + 128];
    run_model run;
    int status = run_load(&run, dir, REPORT_FILES, 0, err, sizeof err);
    if (status)
        load_failed(status, err);
    plot_figure_list figs;
    if (plot_figures_of_run(&run, &figs))
        die("out of memory");
    /* the run's id is its folder's name (runs/<ENV>/<ID>) */
    const char *id = strrchr(run.dir, '/');
    id = id && id[1] ? id + 1 : run.dir;
    snprintf(title, sizeof title, "Roofline report: %s (%s)", run.env_name[0] ? run.env_name : "?", id);
    report_doc doc;
    doc_init(&doc, title);
    report_build_run(&doc, &run, &figs);
    write_both(&doc, dir, "report");
    doc_free(&doc);
    plot_figure_list_free(&figs);
    run_free(&run);
    return 0;
}

static int run_compare(const char *out_dir, char **dirs, int n)
{
    char err[RUN_PATH_LEN + 256], title[512];
    int status;
    run_model *runs = run_load_many(dirs, n, REPORT_FILES, 0, &status, err, sizeof err);
    if (!runs)
        load_failed(status, err);
    if (plot_make_dirs(out_dir, ".", err, sizeof err))
        die(err);
    size_t used = (size_t)snprintf(title, sizeof title, "Comparison:");
    for (int i = 0; i < n && used < sizeof title; i++)
        used += (size_t)snprintf(title + used, sizeof title - used, "%s %s", i ? "," : "",
                                 runs[i].env_name[0] ? runs[i].label : dirs[i]);
    report_doc doc;
    doc_init(&doc, title);
    report_build_compare(&doc, runs, n, out_dir);
    write_both(&doc, out_dir, "compare");
    doc_free(&doc);
    run_free_many(runs, n);
    return 0;
}

int main(int argc, char **argv)
{
    return cli_run_dirs_main(prog, argc, argv, print_help, run_one, run_compare);
}
