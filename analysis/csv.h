/* CSV with a header line (RFC 4180), as every file of a run folder is written:
 * a whole-file reader for the analysis and report programs, and an atomic
 * writer ("<path>.tmp", then a rename) so a reader never sees half a file. */
#ifndef ROOFLINE_CSV_H
#define ROOFLINE_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct csv_table csv_table;

/* Reads the whole file. Fields may be quoted ("a,b", "say ""hi""", embedded
 * newlines); CRLF line ends are accepted; a trailing newline is optional and
 * blank lines are skipped. Every row must have as many fields as the header.
 * Returns NULL with one line in err on failure, naming the file and the line:
 *   "runs/x/steps.csv: cannot open: No such file or directory"
 *   "runs/x/steps.csv:7: 3 fields, header has 13"
 *   "runs/x/steps.csv:4: unterminated quoted field"
 *   "runs/x/steps.csv: empty file (no header line)" */
csv_table *csv_read(const char *path, char *err, size_t err_len);

/* Opens a file to read only when it is a regular file: a FIFO or a device put
 * in a run folder is refused rather than waited on or read forever; no_links
 * also refuses a symbolic link (a figure embedded into a report). NULL with
 * "path: cannot open: why" in err. */
FILE *csv_open_read(const char *path, bool no_links, char *err, size_t err_len);

void csv_free(csv_table *t);

/* Data rows (the header is not counted) and columns. */
int csv_rows(const csv_table *t);
int csv_cols(const csv_table *t);

/* Index of the header field `name` (exact match), or -1. */
int csv_col(const csv_table *t, const char *name);

/* The line of the file on which data row `row` starts (the header is line 1),
 * for error messages; 0 out of range. */
int csv_line(const csv_table *t, int row);

/* Looks up every name of the NULL-terminated list `names` into cols[] (in
 * order). Returns 0, or -1 with "path:1: no column 'x' in the header" for the
 * first one missing. */
int csv_require(const csv_table *t, const char *path, const char *const *names, int *cols,
                char *err, size_t err_len);

/* Header name of column `col`, or "" out of range. */
const char *csv_header(const csv_table *t, int col);

/* The cell, unquoted; "" for an empty cell and for row/col out of range
 * (so a column the file lacks, col = -1, reads as empty everywhere). */
const char *csv_cell(const csv_table *t, int row, int col);

/* The cell as a number. *ok (may be NULL) is false, and the result NaN, when
 * the cell is empty, out of range, or not entirely a finite number. */
double csv_num(const csv_table *t, int row, int col, bool *ok);

/* csv_num with the error message a reader of run files needs: an empty cell
 * gives NaN when !required, else "path:LINE: empty <column>"; text that is not
 * a number gives "path:LINE: <column> 'abc' is not a number". Returns 0, or -1
 * with err set. */
int csv_get_num(const csv_table *t, int row, int col, const char *path, bool required,
                double *out, char *err, size_t err_len);

/* Atomic writer. csv_create opens "<path>.tmp" (its name left in tmp_path)
 * for writing, as a new file: never through a link planted at either name;
 * NULL with the reason in err. csv_commit closes it, checks that
 * every write succeeded, and renames it to path; on any failure it removes the
 * temporary file and returns -1 with the reason in err, else 0. Pass every
 * FILE from csv_create to csv_commit or csv_abort exactly once. */
FILE *csv_create(const char *path, char *tmp_path, size_t tmp_len, char *err, size_t err_len);
int csv_commit(FILE *f, const char *tmp_path, const char *path, char *err, size_t err_len);
void csv_abort(FILE *f, const char *tmp_path);
/* csv_commit without the rename, for several files that replace their
 * predecessors together: 0 when every write to f succeeded, else -1 with the
 * reason in err and the temporary file removed. */
int csv_close(FILE *f, const char *tmp_path, char *err, size_t err_len);

/* Writes s as one field, quoted only when it holds a comma, quote, CR or LF
 * (quotes doubled), so ordinary rows stay greppable. NULL writes nothing. */
void csv_put_field(FILE *f, const char *s);

/* Writes a number: whole numbers below 1e15 in full (counts of FLOPs, bytes
 * and nanoseconds stay exact), anything else with 6 significant digits
 * ("%.6g"). NaN and infinities write nothing, which reads back as an empty
 * ("not measured") cell. */
void csv_put_num(FILE *f, double v);

/* The text csv_put_num writes ("" for NaN), for a cell shown as the file
 * holds it. Returns buf. */
enum { CSV_NUM_LEN = 32 };
const char *csv_format_num(char buf[CSV_NUM_LEN], double v);

#ifdef __cplusplus
}
#endif

#endif
