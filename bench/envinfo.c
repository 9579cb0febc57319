/* bin/envinfo: writes env.json, the provenance of a run (DESIGN.md §7): the
 * command lines, date, host, CPU, memory, GPUs, library versions asked from
 * the libraries, clocks and the git commit the suite was built from. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../analysis/csv.h"
#include "../analysis/run.h"
#include "runner/envinfo_sections.h"
#include "../peaks/cpu_info.h"
#include "cli.h"

/* Baked in by the Makefile (git rev-parse --short HEAD, and whether tracked
 * files differed from it at build time). */
#ifndef ROOFLINE_GIT_COMMIT
#define ROOFLINE_GIT_COMMIT "unknown"
#endif
#ifndef ROOFLINE_GIT_DIRTY
#define ROOFLINE_GIT_DIRTY 0
#endif

static const char *const prog = "envinfo";

enum { MAX_ARGV = 32, OUT_PATH_MAX = 4000 };

typedef struct {
    const char *out, *env, *backend;
    const char *argv[MAX_ARGV];
    int n_argv;
} options;

static void print_help(void)
{
    printf("usage: envinfo [--out env.json] [--env NAME] [--backend cpu|cuda] [--argv \"CMD\"]...\n"
           "Writes the run's provenance as JSON: command lines, date, host, CPU, memory,\n"
           "GPUs, CUDA/cuDNN/cuBLAS/NCCL/MPI/oneDNN/compiler versions, clocks, git commit.\n"
           "  --out FILE      the file to write (default env.json; written as FILE.tmp, then renamed)\n"
           "  --env NAME      the run-matrix environment (default local)\n"
           "  --backend B     what the run trains on, for the rank's device (default: cuda\n"
           "                  when a CUDA device answers, else cpu)\n"
           "  --argv CMD      a command line to record; may be given up to %d times\n",
           MAX_ARGV);
}

static options parse_options(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"out", required_argument, 0, 'o'},  {"env", required_argument, 0, 'e'},
        {"argv", required_argument, 0, 'a'}, {"backend", required_argument, 0, 'b'},
        {"help", no_argument, 0, 'h'},       {0, 0, 0, 0},
    };
    const char *accepted = "--out, --env, --backend, --argv, --help";
    options o = {.out = "env.json", .env = "local"};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (strlen(optarg) > OUT_PATH_MAX)
                cli_usage_error(prog, "--out: the path is longer than %d characters", OUT_PATH_MAX);
            /* a folder named as the file, or a missing folder, is a bad value
             * as in every program's --out */
            o.out = cli_output_file(prog, "--out", optarg);
            break;
        case 'e': o.env = cli_name_option(prog, "--env", optarg); break;
        case 'b':
            if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda"))
                cli_usage_error(prog, "--backend: unknown '%s' (accepted: cpu, cuda)", optarg);
            o.backend = optarg;
            break;
        case 'a':
            if (o.n_argv == MAX_ARGV)
                cli_usage_error(prog, "--argv: more than %d command lines", MAX_ARGV);
            o.argv[o.n_argv++] = optarg;
            break;
        case 'h': print_help(); exit(0);
        default: cli_bad_option(prog, c, argv[optind - 1], accepted);
        }
    }
    if (optind < argc)
        cli_usage_error(prog, "unexpected argument '%s' (accepted: %s)", argv[optind], accepted);
    return o;
}

/* envinfo's own command line, words joined by blanks. */
static void own_command_line(int argc, char **argv, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < argc && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%s", i ? " " : "", argv[i]);
}

/* Rank 0 of a single-process run: this host and the device it trains on. */
static void write_ranks(json_writer *w, const char *backend)
{
    char host[256] = "unknown", device[256], why[256];
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    char gpu[256];
    bool have_gpu = envinfo_gpu_first_name(gpu, sizeof gpu, why, sizeof why) == 0;
    if (!backend)
        backend = have_gpu ? "cuda" : "cpu";
    if (strcmp(backend, "cuda") == 0)
        snprintf(device, sizeof device, "%s", have_gpu ? gpu : "no CUDA device");
    else
        cpu_model_name(device, sizeof device);
    json_array_begin(w, "ranks");
    json_object_begin(w, NULL);
    json_int(w, "rank", 0);
    json_string(w, "host", host);
    json_string(w, "backend", backend);
    json_string(w, "device", device);
    json_object_end(w);
    json_array_end(w);
}

/* Long enough for 100 Hz jiffies to tell a busy CPU from an idle one. */
#define LOAD_SAMPLE_S 0.25

static void write_env_json(FILE *f, const options *o, int argc, char **argv, double *busy_cpus,
                           int *cpus)
{
    char date[64], own[4096];
    time_t now = time(NULL);
    struct tm tm;
    if (!gmtime_r(&now, &tm) || !strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(date, sizeof date, "unknown");
    own_command_line(argc, argv, own, sizeof own);
    json_writer w;
    json_begin(&w, f);
    json_string(&w, "schema", "roofline-suite env.json 1");
    json_string(&w, "env", o->env);
    json_string(&w, "date_utc", date);
    json_array_begin(&w, "command_lines");
    for (int i = 0; i < o->n_argv; i++)
        json_string(&w, NULL, o->argv[i]);
    json_string(&w, NULL, own);
    json_array_end(&w);
    json_object_begin(&w, "git");
    json_string(&w, "commit", ROOFLINE_GIT_COMMIT);
    if (strcmp(ROOFLINE_GIT_COMMIT, "unknown") == 0)
        json_string(&w, "dirty", NULL);
    else
        json_bool(&w, "dirty", ROOFLINE_GIT_DIRTY);
    json_object_end(&w);
    envinfo_write_host(&w);
    envinfo_write_cpu(&w);
    envinfo_write_cpu_clocks(&w);
    envinfo_write_load(&w, LOAD_SAMPLE_S, busy_cpus, cpus);
    envinfo_write_gpus(&w);
    envinfo_write_versions(&w);
    envinfo_write_environment(&w);
    write_ranks(&w, o->backend);
    json_end(&w);
}

int main(int argc, char **argv)
{
    options o = parse_options(argc, argv);
    /* FILE.tmp, then a rename: never through a link planted at either name */
    char tmp[OUT_PATH_MAX + 8], err[2 * OUT_PATH_MAX];
    FILE *f = csv_create(o.out, tmp, sizeof tmp, err, sizeof err);
    if (!f) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return 1;
    }
    double busy_cpus;
    int cpus;
    write_env_json(f, &o, argc, argv, &busy_cpus, &cpus);
    if (csv_commit(f, tmp, o.out, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return 1;
    }
    if (busy_cpus >= RUN_BUSY_CPUS_NOTABLE)
        fprintf(stderr,
                "%s: other work keeps %.1f of %d CPUs busy: what is measured now is lower and "
                "noisier than this machine's own (env.json: load; the report says so)\n",
                prog, busy_cpus, cpus);
    return 0;
}
