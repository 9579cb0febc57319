/* bin/matrix: reads run_matrix.md and prints what scripts/bench.sh runs for an
 * environment, one configuration per line, tab-separated. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/envinfo_gpu.h"
#include "runner/matrix.h"
#include "cli.h"

static const char *const prog = "matrix";

typedef struct {
    const char *file, *env;
    enum { SHOW_CONFIGS, SHOW_LIST, SHOW_RESOLVE } show;
} options;

static void print_help(void)
{
    printf("usage: matrix [--file run_matrix.md] ENV | --list | --resolve ENV\n"
           "Prints the configurations `make bench ENV=...` runs, one per line, with tabs:\n"
           "  model res batch precision warmup iters repeats backend counters ranks peaks graph\n"
           "(ranks comma-separated, '-' for none; graph on or off). ENV local stands for the\n"
           "row of the GPU present, or cpu.\n"
           "  --list          the environments of the table, one per line\n"
           "  --resolve ENV   the row ENV stands for (local: the one for this machine)\n");
}

static options parse_options(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"file", required_argument, 0, 'f'}, {"list", no_argument, 0, 'l'},
        {"resolve", no_argument, 0, 'r'},    {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *accepted = "--file, --list, --resolve, --help, ENV";
    options o = {.file = "run_matrix.md", .show = SHOW_CONFIGS};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': o.file = optarg; break;
        case 'l': o.show = SHOW_LIST; break;
        case 'r': o.show = SHOW_RESOLVE; break;
        case 'h': print_help(); exit(0);
        default: cli_bad_option(prog, c, argv[optind - 1], accepted);
        }
    }
    if (o.show != SHOW_LIST) {
        if (optind == argc)
            cli_usage_error(prog, "give an ENV (a row of %s, or local)", o.file);
        o.env = argv[optind++];
    }
    if (optind < argc)
        cli_usage_error(prog, "unexpected argument '%s' (accepted: %s)", argv[optind], accepted);
    return o;
}

/* The row ENV names; local is the row of this machine's GPU, or cpu. */
static const matrix_row *resolve(const run_matrix *m, const options *o)
{
    char names[1024];
    if (strcmp(o->env, "local") != 0) {
        const matrix_row *r = matrix_find(m, o->env);
        if (!r)
            cli_usage_error(prog, "unknown ENV '%s' (known: %s, local; rows of %s)", o->env,
                            matrix_env_names(m, names, sizeof names), o->file);
        return r;
    }
    char gpu[256], why[256];
    bool have_gpu = envinfo_gpu_first_name(gpu, sizeof gpu, why, sizeof why) == 0;
    const matrix_row *r = matrix_local_row(m, have_gpu ? gpu : NULL);
    if (!r)
        cli_usage_error(prog, "ENV local: %s %s, and %s has no cpu row (known: %s)",
                        have_gpu ? "no row matches the GPU" : "no GPU:", have_gpu ? gpu : why,
                        o->file, matrix_env_names(m, names, sizeof names));
    if (have_gpu && strcmp(r->backend, "cuda") != 0)
        fprintf(stderr, "%s: local: no row of %s matches the GPU '%s'; using %s\n", prog, o->file,
                gpu, r->env);
    else if (have_gpu && strcmp(r->env, MATRIX_GENERIC_GPU) == 0)
        fprintf(stderr,
                "%s: local: no row of %s is named after the GPU '%s'; using %s, the generic GPU "
                "row (what this GPU cannot run is skipped; a row named by a word of the GPU's "
                "name chooses its own configurations)\n",
                prog, o->file, gpu, r->env);
    else if (!have_gpu)
        fprintf(stderr, "%s: local: %s; using %s\n", prog, why, r->env);
    return r;
}

static void print_configs(const matrix_row *r)
{
    int n = matrix_expand(r, NULL, 0);
    matrix_config *configs = malloc((size_t)n * sizeof *configs);
    if (!configs) {
        fprintf(stderr, "%s: out of memory for %d configurations\n", prog, n);
        exit(1);
    }
    matrix_expand(r, configs, n);
    char ranks[MATRIX_MAX_LIST * 8] = "-";
    size_t used = 0;
    for (int i = 0; i < r->n_ranks; i++)
        used += (size_t)snprintf(ranks + used, sizeof ranks - used, "%s%d", i ? "," : "",
                                 r->ranks[i]);
    for (int i = 0; i < n; i++)
        printf("%s\t%d\t%d\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", configs[i].model,
               configs[i].res, configs[i].batch, precision_name(configs[i].prec), r->warmup,
               r->iters, r->repeats, r->backend, r->counters, ranks, r->peaks,
               configs[i].graph ? "on" : "off");
    free(configs);
}

int main(int argc, char **argv)
{
    options o = parse_options(argc, argv);
    run_matrix m;
    char err[1024];
    if (matrix_load(o.file, &m, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return CLI_EXIT_USAGE;
    }
    if (o.show == SHOW_LIST) {
        for (int i = 0; i < m.n_rows; i++)
            printf("%s\n", m.rows[i].env);
    } else {
        const matrix_row *r = resolve(&m, &o);
        if (o.show == SHOW_RESOLVE)
            printf("%s\n", r->env);
        else
            print_configs(r);
    }
    matrix_free(&m);
    return fflush(stdout) == 0 ? 0 : 1;
}
