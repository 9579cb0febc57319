/* bin/analyze: the analysis stage of a run folder (analysis/README.md):
 * steps.csv, kernels.csv, peaks.csv and configs.csv in; roofline.csv,
 * summary.csv and variability.csv out, beside them. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../analysis/csv.h"
#include "../analysis/roofline.h"
#include "../analysis/roofline_table.h"
#include "../analysis/steps.h"
#include "../analysis/summary.h"
#include "../analysis/variability.h"
#include "cli.h"

static const char *const prog = "analyze";

enum { PATH_LEN = 4096, ERR_LEN = 512 };

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

static void join(char *out, const char *dir, const char *name)
{
    if ((size_t)snprintf(out, PATH_LEN, "%s/%s", dir, name) >= PATH_LEN)
        cli_usage_error(prog, "RUN_DIR '%.80s...' is too long", dir);
}

/* An optional input: NULL when absent (*absent set), exit 2 when unreadable. */
static csv_table *read_optional(const char *path, int *absent)
{
    struct stat st;
    *absent = stat(path, &st) != 0 && errno == ENOENT;
    if (*absent)
        return NULL;
    char err[ERR_LEN];
    csv_table *t = csv_read(path, err, sizeof err);
    if (!t)
        cli_usage_error(prog, "%s", err);
    return t;
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
    printf("%-20s %5s %5s %-5s %22s %10s %7s %9s  %s\n", "model", "res", "batch", "prec",
           "img/s median [IQR]", "GFLOP/s", "% peak", "mem-bound", "status");
    for (int i = 0; i < s->n; i++) {
        const summary_row *r = &s->rows[i];
        char ips[64] = "-";
        if (isfinite(r->ips_median))
            snprintf(ips, sizeof ips, "%.1f [%.1f, %.1f]", r->ips_median, r->ips_q1, r->ips_q3);
        printf("%-20s %5d %5d %-5s %22s ", r->model, r->res, r->batch, r->precision, ips);
        print_value(r->achieved_tflops * 1e3, "%*.1f", 10);
        print_value(r->pct_of_peak, " %*.1f", 6);
        print_value(r->mem_bound_share * 100, " %*.0f%%", 8);
        printf("  %s\n", r->status);
    }
}

static int write_outputs(const char *dir, const roofline *rl, const step_table *steps,
                         const summary *sum)
{
    char path[PATH_LEN], err[ERR_LEN];
    join(path, dir, "roofline.csv");
    int rc = roofline_write(rl, path, err, sizeof err);
    if (!rc) {
        join(path, dir, "summary.csv");
        rc = summary_write(sum, path, err, sizeof err);
    }
    if (!rc) {
        join(path, dir, "variability.csv");
        rc = variability_write(steps, path, err, sizeof err);
    }
    if (rc)
        fprintf(stderr, "%s: %s\n", prog, err);
    return rc;
}

int main(int argc, char **argv)
{
    const char *dir = parse_options(argc, argv);
    char path[PATH_LEN], err[ERR_LEN];
    int no_kernels, no_peaks, no_configs;

    join(path, dir, "steps.csv");
    csv_table *steps_csv = csv_read(path, err, sizeof err);
    if (!steps_csv)
        cli_usage_error(prog, "%s", err);
    step_table steps;
    if (steps_group(steps_csv, path, &steps, err, sizeof err))
        cli_usage_error(prog, "%s", err);

    join(path, dir, "peaks.csv");
    csv_table *peaks_csv = read_optional(path, &no_peaks);
    roofs roofs;
    if (roofs_init(&roofs, peaks_csv, path, err, sizeof err))
        cli_usage_error(prog, "%s", err);

    join(path, dir, "kernels.csv");
    csv_table *kernels_csv = read_optional(path, &no_kernels);
    roofline rl = {0};
    if (kernels_csv && peaks_csv && roofline_build(kernels_csv, path, &roofs, &rl, err, sizeof err))
        cli_usage_error(prog, "%s", err);
    if (no_kernels || no_peaks)
        printf("%s: no %s in %s: roofline.csv holds its header alone; summary.csv has no "
               "memory-bound share%s\n",
               prog, no_peaks ? (no_kernels ? "peaks.csv or kernels.csv" : "peaks.csv")
                              : "kernels.csv",
               dir, no_peaks ? " and no peak columns" : "");

    join(path, dir, "configs.csv");
    csv_table *configs_csv = read_optional(path, &no_configs);
    summary sum;
    if (summary_build(&steps, configs_csv, path, &rl, peaks_csv ? &roofs : NULL, &sum, err,
                      sizeof err))
        cli_usage_error(prog, "%s", err);

    int rc = write_outputs(dir, &rl, &steps, &sum);
    if (!rc)
        print_summary(&sum);
    summary_free(&sum);
    roofline_free(&rl);
    steps_free(&steps);
    csv_free(configs_csv);
    csv_free(kernels_csv);
    csv_free(peaks_csv);
    csv_free(steps_csv);
    return rc ? 1 : 0;
}
