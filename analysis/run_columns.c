#include "run_columns.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_COUNT 1e9

const col_rule COL_COUNT_1 = {1, MAX_COUNT, true, true, false, "a whole number in 1..1000000000"};
const col_rule COL_COUNT_0 = {0, MAX_COUNT, true, true, false, "a whole number in 0..1000000000"};
const col_rule COL_OPT_COUNT_0 = {0, MAX_COUNT, true, false, false,
                                  "a whole number in 0..1000000000, or empty"};
const col_rule COL_OPT_NONNEG = {0, INFINITY, false, false, false, "a value >= 0, or empty"};
const col_rule COL_OPT_ANY = {-INFINITY, INFINITY, false, false, false, "a number, or empty"};

int col_require(col_file *f, const char *const *names, int *cols)
{
    return csv_require(f->t, f->path, names, cols, f->err, f->err_len);
}

int col_optional(const col_file *f, const char *name)
{
    return csv_col(f->t, name);
}

const char *col_text(const col_file *f, int row, int col)
{
    return csv_cell(f->t, row, col);
}

void col_error(col_file *f, int row, const char *fmt, ...)
{
    int used = snprintf(f->err, f->err_len, "%s:%d: ", f->path, csv_line(f->t, row));
    if (used < 0 || (size_t)used >= f->err_len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->err + used, f->err_len - (size_t)used, fmt, ap);
    va_end(ap);
}

int col_num(col_file *f, int row, int col, const col_rule *rule, double *out)
{
    const char *text = csv_cell(f->t, row, col);
    bool ok;
    *out = csv_num(f->t, row, col, &ok);
    if (!text[0] && !rule->required)
        return 0;
    if (!text[0]) {
        col_error(f, row, "column '%s' is empty (expected %s)", csv_header(f->t, col),
                  rule->accepted);
        return -1;
    }
    if (!ok) {
        col_error(f, row, "column '%s': '%s' is not a number", csv_header(f->t, col), text);
        return -1;
    }
    double v = *out;
    if (v < rule->min || v > rule->max || (rule->above_min && v == rule->min) ||
        (rule->whole && v != floor(v))) {
        col_error(f, row, "column '%s': '%s' is out of range (expected %s)",
                  csv_header(f->t, col), text, rule->accepted);
        return -1;
    }
    return 0;
}

int col_int(col_file *f, int row, int col, const col_rule *rule, int *out)
{
    double v;
    if (col_num(f, row, col, rule, &v))
        return -1;
    /* the rules bound whole numbers by 1e9, so the cast is exact */
    *out = isnan(v) ? -1 : (int)v;
    return 0;
}

int col_on_off(col_file *f, int row, int col, bool *out)
{
    const char *text = csv_cell(f->t, row, col);
    *out = strcmp(text, "on") == 0;
    if (*out || !text[0] || strcmp(text, "off") == 0)
        return 0;
    col_error(f, row, "column '%s': '%s' is not on or off", csv_header(f->t, col), text);
    return -1;
}

int col_oom(col_file *f)
{
    snprintf(f->err, f->err_len, "%s: out of memory", f->path);
    return -1;
}
