#include "cli.h"

#include "../models/zoo.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cli_parse_long(const char *text, long min, long max, long *out)
{
    /* strtol would also take leading blanks and '+' */
    if (!text || !(isdigit((unsigned char)text[0]) || text[0] == '-'))
        return false;
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno || *end != '\0' || value < min || value > max)
        return false;
    *out = value;
    return true;
}

void cli_usage_error(const char *prog, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(CLI_EXIT_USAGE);
}

int cli_int_option(const char *prog, const char *option, const char *text, long min, long max)
{
    long value;
    if (!cli_parse_long(text, min, max, &value))
        cli_usage_error(prog, "%s: '%s' is not an integer in %ld..%ld", option, text, min, max);
    return (int)value;
}

void cli_model_options(const char *prog, const char *model, const char *res_text,
                       const char *classes_text, int *res, int *classes)
{
    char names[ZOO_NAMES_LEN];
    if (!model)
        cli_usage_error(prog, "--model is required (one of: %s)", zoo_names(names, sizeof names));
    const model_info *info = zoo_find(model);
    if (!info)
        cli_usage_error(prog, "--model: unknown '%s' (accepted: %s)", model,
                        zoo_names(names, sizeof names));
    *res = res_text ? cli_int_option(prog, "--res", res_text, 1, ZOO_MAX_RES) : info->default_res;
    *classes = classes_text ? cli_int_option(prog, "--classes", classes_text, 1, ZOO_MAX_CLASSES)
                            : info->default_classes;
    int min_res = zoo_min_res(model);
    if (*res < min_res)
        cli_usage_error(prog, "--res: %d is too small for %s (minimum %d)", *res, model, min_res);
}

precision cli_precision_option(const char *prog, const char *text)
{
    precision p;
    if (!precision_parse(text, &p))
        cli_usage_error(prog, "--precision: unknown '%s' (accepted: %s)", text, precision_names());
    return p;
}

void cli_bad_option(const char *prog, int getopt_code, const char *arg, const char *accepted)
{
    if (getopt_code == ':')
        cli_usage_error(prog, "%s needs a value", arg);
    cli_usage_error(prog, "unknown option '%s' (accepted: %s)", arg, accepted);
}

const char *cli_file_option(const char *prog, const char *option, const char *text)
{
    if (!*text)
        cli_usage_error(prog, "%s: '' is not a file name", option);
    return text;
}

int cli_run_dirs_main(const char *prog, int argc, char **argv, void (*help)(void),
                      int (*one)(const char *run_dir),
                      int (*compare)(const char *out_dir, char **run_dirs, int n_runs))
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        help();
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "--compare") == 0) {
        if (argc < 4)
            cli_usage_error(prog, "--compare needs OUTDIR and at least one RUN_DIR");
        /* an empty OUTDIR would put OUTDIR/figures at the root of the file system */
        if (!argv[2][0] || argv[2][0] == '-')
            cli_usage_error(prog, "--compare: OUTDIR '%s' is not a folder name", argv[2]);
        for (int i = 3; i < argc; i++)
            if (!argv[i][0] || argv[i][0] == '-')
                cli_usage_error(prog, "--compare: RUN_DIR '%s' is not a folder name", argv[i]);
        return compare(argv[2], argv + 3, argc - 3);
    }
    if (argc != 2 || argv[1][0] == '-' || !argv[1][0])
        cli_usage_error(prog, "expected one RUN_DIR (or --compare OUTDIR RUN_DIR...), got %s",
                        argc < 2 ? "nothing" : argc > 2 ? "several arguments" : argv[1]);
    return one(argv[1]);
}
