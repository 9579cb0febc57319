/* bin/peaks: measures this machine's roofs (CPU FMA peaks, memory and cache
 * bandwidth; GPU CUDA-core and tensor-core peaks, HBM/L2/L1 and PCIe) and
 * writes them to peaks.csv beside the vendor's figures (peaks/README.md). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../peaks/cpu_peaks.h"
#include "../peaks/cpu_team.h"
#include "../peaks/peaks_csv.h"
#ifdef HAVE_CUDA
#include "../peaks/gpu_peaks.h"
#endif
#include "cli.h"

static const char *const prog = "peaks";

typedef struct {
    bool cpu, gpu, quick, verbose;
    int threads;
    const char *out;
    char env[64];
} options;

static void print_help(int max_threads)
{
    printf("usage: peaks [--cpu] [--gpu] [--quick] [--threads T] [--out FILE] [--env NAME] [--quiet]\n"
           "Measures the roofs of this machine and writes them to a CSV file.\n"
           "  --cpu        CPU FMA peaks, STREAM-style bandwidth, cache sweep, clock\n"
           "  --gpu        GPU CUDA-core and tensor-core peaks, HBM/L2/L1 and PCIe bandwidth\n"
           "               (neither: both; the GPU part is skipped where there is no device)\n"
           "  --quick      short trials: seconds instead of minutes\n"
           "  --threads T  threads of the all-core CPU runs, 1..%d (default %d)\n"
           "  --out FILE   the CSV to write (default peaks.csv)\n"
           "  --env NAME   the env column: letters, digits, '.', '_', '-' (default: host name)\n"
           "  --quiet      no progress on stderr\n",
           max_threads, max_threads);
}

static bool valid_env(const char *s)
{
    if (!*s || strlen(s) >= 64)
        return false;
    for (; *s; s++)
        if (!(('a' <= *s && *s <= 'z') || ('A' <= *s && *s <= 'Z') || ('0' <= *s && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '-'))
            return false;
    return true;
}

static void default_env(char *out, size_t len)
{
    char host[64];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "local");
    host[sizeof host - 1] = '\0';
    host[strcspn(host, ".")] = '\0';
    snprintf(out, len, "%s", valid_env(host) ? host : "local");
}

static options parse_options(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"cpu", no_argument, 0, 'c'},         {"gpu", no_argument, 0, 'g'},
        {"quick", no_argument, 0, 'q'},       {"threads", required_argument, 0, 't'},
        {"out", required_argument, 0, 'o'},   {"env", required_argument, 0, 'e'},
        {"quiet", no_argument, 0, 's'},       {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *accepted = "--cpu, --gpu, --quick, --threads, --out, --env, --quiet, --help";
    int max_threads = cpu_usable_count();
    options o = {.threads = max_threads, .out = "peaks.csv", .verbose = true};
    default_env(o.env, sizeof o.env);
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': o.cpu = true; break;
        case 'g': o.gpu = true; break;
        case 'q': o.quick = true; break;
        case 't': o.threads = cli_int_option(prog, "--threads", optarg, 1, max_threads); break;
        case 'o':
            o.out = cli_file_option(prog, "--out", optarg);
            break;
        case 'e':
            if (!valid_env(optarg))
                cli_usage_error(prog,
                                "--env: '%s' is not accepted (letters, digits, '.', '_', '-'; "
                                "at most 63)",
                                optarg);
            snprintf(o.env, sizeof o.env, "%s", optarg);
            break;
        case 's': o.verbose = false; break;
        case 'h': print_help(max_threads); exit(0);
        default: cli_bad_option(prog, c, argv[optind - 1], accepted);
        }
    }
    if (optind < argc)
        cli_usage_error(prog, "unexpected argument '%s' (accepted: %s)", argv[optind], accepted);
    if (!o.cpu && !o.gpu)
        o.cpu = o.gpu = true;
    return o;
}

/* Fails before any measuring when the file could not be written at the end. */
static void check_writable(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot write %s: ", prog, tmp);
        perror(NULL);
        exit(1);
    }
    fclose(f);
    remove(tmp);
}

static void write_or_die(const options *o, const peak_table *t)
{
    char err[512];
    if (peaks_csv_write(o->out, o->env, t, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        exit(1);
    }
}

/* Other work on the cores lowers every CPU figure; say so rather than let a
 * low roof pass as the machine's. */
static void warn_if_busy(void)
{
    double load = 0.0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f)
        return;
    if (fscanf(f, "%lf", &load) == 1 && load > 0.5)
        fprintf(stderr, "%s: load average %.2f before starting: other work may lower the CPU figures\n",
                prog, load);
    fclose(f);
}

int main(int argc, char **argv)
{
    options o = parse_options(argc, argv);
    check_writable(o.out);
    if (o.cpu && o.verbose)
        warn_if_busy();
    peak_table t = {0};
    char err[512];
    if (o.cpu) {
        cpu_peaks_options co = {.threads = o.threads, .quick = o.quick, .verbose = o.verbose};
        if (cpu_peaks_run(&co, &t, err, sizeof err) != 0) {
            if (t.n)
                write_or_die(&o, &t);
            fprintf(stderr, "%s: %s\n", prog, err);
            peak_table_free(&t);
            return 1;
        }
        /* a GPU failure ends the process: what the CPU part measured is on
         * disk by then */
        if (o.gpu)
            write_or_die(&o, &t);
    }
    if (o.gpu) {
#ifdef HAVE_CUDA
        gpu_peaks_options go = {.device = 0, .quick = o.quick, .verbose = o.verbose};
        if (gpu_peaks_run(&go, &t, err, sizeof err) == GPU_PEAKS_NO_DEVICE) {
            fprintf(stderr, "%s: gpu skipped: %s\n", prog, err);
            if (!o.cpu) {
                peak_table_free(&t);
                return 1;
            }
        }
#else
        fprintf(stderr, "%s: gpu skipped: built without the CUDA toolkit\n", prog);
        if (!o.cpu)
            return 1;
#endif
    }
    write_or_die(&o, &t);
    peaks_print_table(stdout, o.env, &t);
    peak_table_free(&t);
    return 0;
}
