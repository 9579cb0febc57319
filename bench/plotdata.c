/* bin/plotdata: turns a run folder, loaded into the run model, into the data
 * files the gnuplot scripts read (scripts/gnuplot/, drawn by
 * scripts/render.sh), so that gnuplot never parses CSV. Also the combined
 * roofline of several run folders (scripts/compare.sh). */
#include <stdio.h>
#include <stdlib.h>

#include "../analysis/plot/plot_data.h"
#include "../analysis/plot/plot_out.h"
#include "../analysis/run_load.h"
#include "cli.h"

static const char *const prog = "plotdata";

/* What the figures draw: the analysis, and the raw kernels for the GPU
 * figures (the hierarchical roofline needs their L1 bytes, the cost check
 * their layers). */
#define PLOT_FILES (RUN_PEAKS | RUN_STEPS | RUN_KERNELS | RUN_SCALING | RUN_SCALING_MODEL | RUN_OUTPUTS)

static void print_help(void)
{
    printf("usage: plotdata RUN_DIR\n"
           "       plotdata --compare OUTDIR RUN_DIR...\n"
           "Writes the data of every figure the run's files support to\n"
           "RUN_DIR/figures/data/ and the list of figures to RUN_DIR/figures/figures.tsv\n"
           "(script, stem, title; scripts/render.sh draws them). --compare writes the\n"
           "combined roofline of the run folders to OUTDIR/figures/.\n");
}

static _Noreturn void die(const char *err)
{
    fprintf(stderr, "%s: %s\n", prog, err);
    exit(1);
}

/* A load failure: bad input is a usage error (status 2), anything else 1. */
static _Noreturn void load_failed(int status, const char *err)
{
    if (status == RUN_LOAD_BAD_INPUT)
        cli_usage_error(prog, "%s", err);
    die(err);
}

/* figures/ and figures/data/ under dir; the manifest is opened there. */
static void open_manifest(const char *dir, plot_file *manifest, char *data_dir, size_t len)
{
    char err[RUN_PATH_LEN + 128];
    snprintf(data_dir, len, "%s/figures/data", dir);
    if (plot_make_dirs(dir, "figures/data", err, sizeof err))
        die(err);
    char prefix[RUN_PATH_LEN + 16];
    snprintf(prefix, sizeof prefix, "%s/figures/", dir);
    if (plot_file_open(manifest, prefix, "figures.tsv", err, sizeof err))
        die(err);
}

static void write_figure(const run_model *runs, int n_runs, const plot_figure *fig,
                         const char *data_dir, FILE *manifest)
{
    char prefix[RUN_PATH_LEN + 256], err[RUN_PATH_LEN + 256];
    snprintf(prefix, sizeof prefix, "%s/%s", data_dir, fig->stem);
    int status = fig->kind == PLOT_ROOFLINE_COMPARE
                     ? plot_write_roofline_compare(runs, n_runs, prefix, err, sizeof err)
                 : fig->kind == PLOT_RUN_TO_RUN
                     ? plot_write_run_to_run(runs, n_runs, prefix, err, sizeof err)
                     : plot_write_figure(runs, fig, prefix, err, sizeof err);
    if (status)
        die(err);
    plot_manifest_line(manifest, fig);
}

static int run_one(const char *dir)
{
    char err[RUN_PATH_LEN + 256], data_dir[RUN_PATH_LEN + 32];
    run_model run;
    int status = run_load(&run, dir, PLOT_FILES, 0, err, sizeof err);
    if (status)
        load_failed(status, err);
    plot_figure_list figs;
    if (plot_figures_of_run(&run, &figs))
        die("out of memory");
    plot_file manifest;
    open_manifest(dir, &manifest, data_dir, sizeof data_dir);
    for (int i = 0; i < figs.n; i++)
        write_figure(&run, 1, &figs.items[i], data_dir, manifest.f);
    if (plot_file_close(&manifest, err, sizeof err))
        die(err);
    printf("plotdata: %d figure(s) for %s\n", figs.n, dir);
    plot_figure_list_free(&figs);
    run_free(&run);
    return 0;
}

static int run_compare(const char *out_dir, char **dirs, int n)
{
    char err[RUN_PATH_LEN + 256], data_dir[RUN_PATH_LEN + 32];
    int status;
    run_model *runs = run_load_many(dirs, n, PLOT_FILES, 0, &status, err, sizeof err);
    if (!runs)
        load_failed(status, err);
    plot_figure fig = {.kind = PLOT_ROOFLINE_COMPARE, .stem = "roofline_compare"};
    int used = snprintf(fig.title, sizeof fig.title, "roofline of");
    for (int i = 0; i < n && used > 0 && (size_t)used < sizeof fig.title; i++)
        used += snprintf(fig.title + used, sizeof fig.title - (size_t)used, "%s %s",
                         i == 0 ? "" : i == n - 1 ? " and" : ",", runs[i].label);
    plot_file manifest;
    open_manifest(out_dir, &manifest, data_dir, sizeof data_dir);
    write_figure(runs, n, &fig, data_dir, manifest.f);
    if (plot_has_run_to_run(runs, n)) {
        plot_figure r2r = {.kind = PLOT_RUN_TO_RUN, .stem = "run_to_run",
                           .title = "run to run: each run's median step against the fastest's"};
        write_figure(runs, n, &r2r, data_dir, manifest.f);
    }
    if (plot_file_close(&manifest, err, sizeof err))
        die(err);
    run_free_many(runs, n);
    return 0;
}

int main(int argc, char **argv)
{
    return cli_run_dirs_main(prog, argc, argv, print_help, run_one, run_compare);
}
