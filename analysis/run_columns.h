/* Typed cells of one CSV file of a run folder, for the loader's files
 * (run_load.c, run_read_*.c) alone: the columns a file must have, and each
 * cell checked against what its column accepts. Every error is one line
 * naming the file, the line and the column:
 *   "runs/x/steps.csv:1: no column 'step_ms' in the header"
 *   "runs/x/steps.csv:7: column 'step_ms': 'abc' is not a number"
 *   "runs/x/steps.csv:7: column 'res': '1e308' is out of range (expected a whole number in 1..1000000000)" */
#ifndef ROOFLINE_RUN_COLUMNS_H
#define ROOFLINE_RUN_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>

#include "csv.h"

typedef struct {
    const csv_table *t;
    const char *path;
    char *err;
    size_t err_len;
} col_file;

/* What a numeric column accepts. */
typedef struct {
    double min, max;
    bool whole;        /* integers only */
    bool required;     /* an empty cell is an error (else NaN) */
    bool above_min;    /* min itself is not accepted */
    const char *accepted;
} col_rule;

extern const col_rule COL_COUNT_1;     /* whole number 1..1e9, required (res, batch) */
extern const col_rule COL_COUNT_0;     /* whole number 0..1e9, required (rank, repeat) */
extern const col_rule COL_OPT_COUNT_0; /* whole number 0..1e9, or empty */
extern const col_rule COL_OPT_NONNEG;  /* any value >= 0, or empty */
extern const col_rule COL_OPT_ANY;     /* any finite number, or empty */

/* cols[i] = the index of names[i] (a NULL-terminated list); -1 with err for
 * the first one the header lacks. */
int col_require(col_file *f, const char *const *names, int *cols);
/* The index of an optional column, -1 when the header lacks it. */
int col_optional(const col_file *f, const char *name);

/* The cell's text ("" for col -1). */
const char *col_text(const col_file *f, int row, int col);
/* The cell as a number under rule (NaN when empty and allowed; NaN for col
 * -1 unless required). -1 with err. */
int col_num(col_file *f, int row, int col, const col_rule *rule, double *out);
/* col_num for whole-number rules, as an int (-1 for an empty cell). */
int col_int(col_file *f, int row, int col, const col_rule *rule, int *out);
/* An on/off cell (steps.csv's graph): "on" true; "off", "" or col -1 false
 * (files from before the column). -1 with err for anything else. */
int col_on_off(col_file *f, int row, int col, bool *out);

/* "path:LINE: " + message, for the errors the files' own rules find. */
void col_error(col_file *f, int row, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* "path: out of memory"; returns -1. */
int col_oom(col_file *f);

#endif
