/* bin/analyze: the analysis stage of a run folder (analysis/README.md):
 * steps.csv, kernels.csv, peaks.csv and configs.csv in; roofline.csv,
 * summary.csv and variability.csv out, beside them. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../analysis/analyze.h"
#include "../analysis/outputs.h"
#include "../analysis/run_load.h"
#include "cli.h"

static const char *const prog = "analyze";

enum { ERR_LEN = 1024 };

static void print_help(void)
{
    printf("usage: analyze RUN_DIR\n"
           "Roofline points, per-configuration summary and variability of one run folder.\n"
           "Reads RUN_DIR/steps.csv (required), kernels.csv, peaks.csv and configs.csv\n"
           "(each optional: without kernels.csv or peaks.csv the roofline is left empty);\n"
           "writes roofline.csv, summary.csv and variability.csv in RUN_DIR (formats:\n"
           "analysis/README.md) and prints the summary.\n"
           "  --help  this text\n");
}

static const char *parse_options(int argc, char **argv)
{
    static const struct option longopts[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        if (c == 'h') {
            print_help();
            exit(0);
        }
        cli_bad_option(prog, c, argv[optind - 1], "--help, RUN_DIR");
    }
    if (optind >= argc)
        cli_usage_error(prog, "missing RUN_DIR (a run folder holding steps.csv; see --help)");
    if (optind + 1 < argc)
        cli_usage_error(prog, "unexpected argument '%s' (accepted: one RUN_DIR)", argv[optind + 1]);
    struct stat st;
    if (stat(argv[optind], &st) != 0 || !S_ISDIR(st.st_mode))
        cli_usage_error(prog, "RUN_DIR '%s' is not a directory", argv[optind]);
    return argv[optind];
}

static void print_value(double v, const char *fmt, int width)
{
    if (isfinite(v))
        printf(fmt, width, v);
    else
        printf("%*s", width, "-");
}

static void print_summary(const summary *s)
{
    printf("%-20s %5s %5s %-5s %22s %10s %7s %9s %8s  %s\n", "model", "res", "batch", "prec",
           "img/s median [IQR]", "GFLOP/s", "% peak", "mem-bound", "% roofs", "status");
    for (int i = 0; i < s->n; i++) {
        const summary_row *r = &s->rows[i];
        char ips[64] = "-";
        if (isfinite(r->ips_median))
            snprintf(ips, sizeof ips, "%.1f [%.1f, %.1f]", r->ips_median, r->ips_q1, r->ips_q3);
        printf("%-20s %5d %5d %-5s %22s ", r->model, r->res, r->batch, r->precision, ips);
        print_value(r->achieved_tflops * 1e3, "%*.1f", 10);
        print_value(r->pct_of_peak, " %*.1f", 6);
        print_value(r->mem_bound_share * 100, " %*.0f%%", 8);
        print_value(r->pct_of_roofs, " %*.0f%%", 7);
        printf("  %s\n", r->status);
    }
}

int main(int argc, char **argv)
{
    const char *dir = parse_options(argc, argv);
    char err[ERR_LEN];
    run_model run;
    int status = run_load(&run, dir, RUN_INPUTS & ~RUN_ENV_JSON, RUN_STEPS, err, sizeof err);
    if (status == RUN_LOAD_BAD_INPUT)
        cli_usage_error(prog, "%s", err);
    if (status) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return 1;
    }
    bool no_peaks = !(run.present & RUN_PEAKS), no_kernels = !(run.present & RUN_KERNELS);
    if (no_kernels || no_peaks)
        printf("%s: no %s in %s: roofline.csv holds its header alone; summary.csv has no "
               "memory-bound share%s\n",
               prog, no_peaks ? (no_kernels ? "peaks.csv or kernels.csv" : "peaks.csv")
                              : "kernels.csv",
               dir, no_peaks ? " and no peak columns" : "");
    int rc = run_analyze(&run, err, sizeof err) ||
             outputs_write(dir, &run.roofline, &run.summary, &run.variability, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s: %s\n", prog, err);
    else
        print_summary(&run.summary);
    run_free(&run);
    return rc ? 1 : 0;
}
