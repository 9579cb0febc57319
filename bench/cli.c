#include "cli.h"

#include "../models/zoo.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Whether `name` (length len) is one of the comma-separated options of accepted. */
static bool is_accepted(const char *accepted, const char *name, size_t len)
{
    for (const char *p = accepted; (p = strstr(p, "--")) != NULL; p++)
        if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == '\0') &&
            (p == accepted || p[-1] == ' '))
            return true;
    return false;
}

void cli_bad_option(const char *prog, int getopt_code, const char *arg, const char *accepted)
{
    if (getopt_code == ':')
        cli_usage_error(prog, "%s needs a value", arg);
    /* getopt_long refuses "--flag=value" for a flag as if it were unknown */
    const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
    if (eq && is_accepted(accepted, arg, (size_t)(eq - arg)))
        cli_usage_error(prog, "%.*s takes no value (got '%s')", (int)(eq - arg), arg, arg);
    cli_usage_error(prog, "unknown option '%s' (accepted: %s)", arg, accepted);
}

const char *cli_file_option(const char *prog, const char *option, const char *text)
{
    if (!*text)
        cli_usage_error(prog, "%s: '' is not a file name", option);
    return text;
}

bool cli_folder_of(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');
    int n = !slash            ? snprintf(dir, len, ".")
            : slash == path ? snprintf(dir, len, "/")
                            : snprintf(dir, len, "%.*s", (int)(slash - path), path);
    return n >= 0 && (size_t)n < len;
}

const char *cli_output_file(const char *prog, const char *option, const char *text)
{
    cli_file_option(prog, option, text);
    struct stat st;
    if (stat(text, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            cli_usage_error(prog, "%s: '%s' is a folder (a file name was expected)", option, text);
        if (access(text, W_OK) != 0)
            cli_usage_error(prog, "%s: '%s' is not writable", option, text);
        return text;
    }
    char dir[4096];
    if (!cli_folder_of(text, dir, sizeof dir))
        cli_usage_error(prog, "%s: the path is longer than %zu characters", option, sizeof dir);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0)
        cli_usage_error(prog, "%s: cannot create '%s': its folder '%s' is missing or not writable",
                        option, text, dir);
    return text;
}

const char *cli_name_option(const char *prog, const char *option, const char *text)
{
    bool ok = isalnum((unsigned char)text[0]) && strlen(text) <= CLI_NAME_MAX;
    for (const char *c = text; ok && *c; c++)
        ok = isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-';
    if (!ok)
        cli_usage_error(prog, "%s: '%s' is not a name of 1 to %d letters, digits, '.', '_' or '-' "
                              "starting with a letter or digit", option, text, CLI_NAME_MAX);
    return text;
}

/* One folder under two names would be compared with itself. Folders that do
 * not exist are left to the loader, which names them. */
static void same_folder_twice(const char *prog, char **dirs, int n)
{
    for (int i = 0; i < n; i++) {
        struct stat a;
        if (stat(dirs[i], &a) != 0)
            continue;
        for (int j = 0; j < i; j++) {
            struct stat b;
            if (stat(dirs[j], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
                cli_usage_error(prog, "--compare: RUN_DIR '%s' is '%s' again: give each run "
                                      "folder once", dirs[i], dirs[j]);
        }
    }
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
        if (argc - 3 > CLI_MAX_COMPARE_RUNS)
            cli_usage_error(prog, "--compare: %d run folders given, at most %d are accepted",
                            argc - 3, CLI_MAX_COMPARE_RUNS);
        same_folder_twice(prog, argv + 3, argc - 3);
        return compare(argv[2], argv + 3, argc - 3);
    }
    if (argc < 2 || argc > 2)
        cli_usage_error(prog, "expected one RUN_DIR (or --compare OUTDIR RUN_DIR...), got %s",
                        argc < 2 ? "nothing" : "several arguments");
    if (argv[1][0] == '-' || !argv[1][0])
        cli_usage_error(prog, "expected one RUN_DIR (or --compare OUTDIR RUN_DIR...), got '%s'",
                        argv[1]);
    return one(argv[1]);
}
