/* bin/peaks: measures this machine's roofs (CPU FMA peaks, memory and cache
 * bandwidth; GPU CUDA-core and tensor-core peaks, HBM/L2/L1 and PCIe) and
 * writes them to peaks.csv beside the vendor's figures (peaks/README.md). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    bool gpu_required; /* --gpu given: no device is an error, not a skip */
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
           "  --out FILE   the CSV to write (default peaks.csv); it appears only when\n"
           "               everything asked for was measured (FILE.partial holds the rows\n"
           "               of a run that failed part-way)\n"
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

enum { PATH_LEN = 4096 };
static const char *const accepted_out = "accepted: a file path in a folder this user can write";

/* --out must name a file that can be written at the end, where the rename
 * lands: checked before any measuring, so minutes of work are never lost to
 * a bad path. One line and exit 2 otherwise. */
static void check_out_option(const char *path)
{
    char dir[PATH_LEN], probe[PATH_LEN + 16];
    if (strlen(path) + 16 >= PATH_LEN)
        cli_usage_error(prog, "--out: '%.40s...' is too long (%s)", path, accepted_out);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        cli_usage_error(prog, "--out: '%s' is a directory (%s)", path, accepted_out);
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        cli_usage_error(prog, "--out: '%s': folder '%s' does not exist (%s)", path, dir,
                        accepted_out);
    /* the writer's own temporary name: if it can be made, the run can end */
    snprintf(probe, sizeof probe, "%s.tmp", path);
    FILE *f = fopen(probe, "w");
    if (!f)
        cli_usage_error(prog, "--out: '%s': cannot create a file in '%s': %s (%s)", path, dir,
                        strerror(errno), accepted_out);
    fclose(f);
    remove(probe);
}

static const char default_out[] = "peaks.csv";

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
    options o = {.threads = max_threads, .out = default_out, .verbose = true};
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
            if (!*optarg)
                cli_usage_error(prog, "--out: '' is not a file name (%s)", accepted_out);
            o.out = optarg;
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
        default:
            /* getopt reports "--quick=1" as unknown; say what is wrong with it */
            if (c == '?' && strncmp(argv[optind - 1], "--", 2) == 0 &&
                strchr(argv[optind - 1], '='))
                for (const struct option *l = longopts; l->name; l++)
                    if (l->has_arg == no_argument &&
                        strncmp(argv[optind - 1] + 2, l->name, strlen(l->name)) == 0 &&
                        argv[optind - 1][2 + strlen(l->name)] == '=')
                        cli_usage_error(prog, "--%s takes no value (got '%s')", l->name,
                                        argv[optind - 1]);
            cli_bad_option(prog, c, argv[optind - 1], accepted);
        }
    }
    if (optind < argc)
        cli_usage_error(prog, "unexpected argument '%s' (accepted: %s)", argv[optind], accepted);
    o.gpu_required = o.gpu;
    if (!o.cpu && !o.gpu)
        o.cpu = o.gpu = true;
    check_out_option(o.out);
    return o;
}

/* Where the rows of a run that did not finish go: never the --out file, so a
 * reader (and `make bench` resuming) sees peaks.csv only once it is whole. */
static void partial_path(const options *o, char *out, size_t len)
{
    snprintf(out, len, "%s.partial", o->out);
}

static int write_rows(const char *path, const options *o, const peak_table *t)
{
    char err[512];
    if (peaks_csv_write(path, o->env, t, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return -1;
    }
    return 0;
}

/* Keeps what was measured before a failure, under the partial name. */
static void keep_partial(const options *o, const peak_table *t)
{
    char path[PATH_LEN + 16];
    partial_path(o, path, sizeof path);
    if (t->n && write_rows(path, o, t) == 0)
        fprintf(stderr, "%s: the %d rows measured so far are in %s; %s was not written\n", prog,
                t->n, path, o->out);
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
    if (o.cpu && o.verbose)
        warn_if_busy();
    char partial[PATH_LEN + 16];
    partial_path(&o, partial, sizeof partial);
    remove(partial); /* a previous run's leftovers */
    peak_table t = {0};
    char err[512];
    int status = 0;
    if (o.cpu) {
        cpu_peaks_options co = {.threads = o.threads, .quick = o.quick, .verbose = o.verbose};
        if (cpu_peaks_run(&co, &t, err, sizeof err) != 0) {
            fprintf(stderr, "%s: %s\n", prog, err);
            keep_partial(&o, &t);
            peak_table_free(&t);
            return 1;
        }
        /* a failing CUDA call ends the process (models/cuda/check.h): the CPU
         * rows are on disk by then, under the partial name */
        if (o.gpu && write_rows(partial, &o, &t) != 0)
            status = 1;
    }
    if (o.gpu && status == 0) {
#ifdef HAVE_CUDA
        gpu_peaks_options go = {.device = 0, .quick = o.quick, .verbose = o.verbose};
        if (gpu_peaks_run(&go, &t, err, sizeof err) == GPU_PEAKS_NO_DEVICE) {
            fprintf(stderr, "%s: gpu %s: %s\n", prog, o.gpu_required ? "failed" : "skipped", err);
            status = o.gpu_required ? 1 : 0;
        }
#else
        fprintf(stderr, "%s: gpu %s: built without the CUDA toolkit\n", prog,
                o.gpu_required ? "failed" : "skipped");
        status = o.gpu_required ? 1 : 0;
#endif
    }
    if (status == 0 && write_rows(o.out, &o, &t) != 0)
        status = 1;
    if (status == 0) {
        remove(partial);
        peaks_print_table(stdout, o.env, &t);
    } else {
        keep_partial(&o, &t);
    }
    peak_table_free(&t);
    return status;
}
