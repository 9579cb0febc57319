/* The files of one run folder that the figures and the report read
 * (DESIGN.md §7, analysis/README.md), loaded once, and the configuration key
 * (model, res, batch, precision) that joins their rows. */
#ifndef ROOFLINE_REPORT_RUN_H
#define ROOFLINE_REPORT_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "csv.h"

enum { REPORT_PATH_LEN = 1024, REPORT_NAME_LEN = 64 };

typedef struct {
    char dir[REPORT_PATH_LEN];
    char env[REPORT_NAME_LEN]; /* the env column of the first file that has one */
    /* NULL where the file is absent */
    csv_table *peaks, *steps, *configs, *scaling, *roofline, *summary, *variability;
    bool has_env_json;
} report_run;

typedef struct {
    char model[REPORT_NAME_LEN];
    int res, batch;
    char precision[16];
} report_config;

/* Reads every file of the folder that exists. Returns 0, or -1 with one line
 * in err when dir is not a readable folder, a file that exists is malformed
 * (csv_read's message, naming file and line) or memory runs out. */
int report_run_load(report_run *run, const char *dir, char *err, size_t err_len);
void report_run_free(report_run *run);

/* report_run_load for each of n folders (the compare mode), in a calloc'd
 * array; NULL with err naming what failed, nothing left loaded. */
report_run *report_runs_load(char **dirs, int n, char *err, size_t err_len);
void report_runs_free(report_run *runs, int n);

/* The key of row `row` of a table with model, res, batch, precision columns
 * (a column the table lacks reads as empty / 0). */
report_config report_config_of(const csv_table *t, int row);
bool report_config_eq(const report_config *a, const report_config *b);
/* True when row `row` of t belongs to configuration c. */
bool report_row_is(const csv_table *t, int row, const report_config *c);
/* "resnet50 @224, batch 8, fp32" */
void report_config_name(const report_config *c, char *out, size_t len);

/* A growable list of row indexes; push returns -1 out of memory. */
typedef struct {
    int *rows;
    int n, cap;
} report_rows;
int report_rows_push(report_rows *r, int row);
void report_rows_free(report_rows *r);

/* The distinct configurations of t's rows for which keep(t, row) is true
 * (NULL: all), in order of first appearance. -1 out of memory. */
typedef struct {
    report_config *items;
    int n, cap;
} report_configs;
int report_configs_distinct(const csv_table *t, bool (*keep)(const csv_table *, int),
                            report_configs *out);
void report_configs_free(report_configs *c);

/* The distinct values of column `name` of t, in order of first appearance,
 * as pointers into t. -1 out of memory. */
typedef struct {
    const char **items;
    int n, cap;
} report_strings;
int report_strings_distinct(const csv_table *t, const char *name, report_strings *out);
void report_strings_free(report_strings *s);

/* The first row of t that belongs to c and, when col is not NULL, whose
 * column col holds value; -1 when none. */
int report_find(const csv_table *t, const report_config *c, const char *col, const char *value);

/* Rows of t (may be NULL) that pass keep (NULL: all), ordered by the number
 * in column `key`, largest first (REPORT_DESCENDING) or smallest first
 * (REPORT_ASCENDING); NaN last either way, ties in file order. A malloc'd
 * array the caller frees, *n its length; NULL out of memory. */
enum { REPORT_DESCENDING = -1, REPORT_ASCENDING = 1 };
int *report_rows_by(const csv_table *t, const char *key, int order,
                    bool (*keep)(const csv_table *, int, const void *), const void *arg, int *n);

/* The cell of column `name` (empty when the column is missing). */
const char *report_cell(const csv_table *t, int row, const char *name);
/* The cell of column `name` as a number, NaN when empty or not a number. */
double report_num(const csv_table *t, int row, const char *name);

#endif
