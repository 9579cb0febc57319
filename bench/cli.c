#include "cli.h"

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
