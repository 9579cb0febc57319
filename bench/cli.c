#include "cli.h"

#include "../models/zoo.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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
