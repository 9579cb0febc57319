/* The content of a report as a list of blocks (headings, paragraphs, lists,
 * tables, figures), built once from the CSV files (report_build.c,
 * report_compare.c) and written by two writers that only format it:
 * report_md.c (report.md) and report_html.c (report.html, self-contained).
 * Text is plain: the writers escape what their format needs.
 *
 * The builders never check allocations one by one: a failure marks the
 * document, later calls do nothing, and the writers refuse a marked document
 * with "out of memory". */
#ifndef ROOFLINE_REPORT_DOC_H
#define ROOFLINE_REPORT_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum {
    DOC_HEADING,   /* level 1..3 */
    DOC_PARAGRAPH,
    DOC_NOTE,      /* a paragraph in small print: sources, caveats */
    DOC_LIST,      /* cells are the items */
    DOC_TABLE,     /* cells row by row, the first row the header */
    DOC_FIGURE     /* path of a PNG relative to the report's folder; alt a short name,
                      text the caption */
} doc_kind;

typedef struct {
    doc_kind kind;
    int level;
    char *text;
    char *path;
    char *alt;
    char **cells;
    int n_cells, cap_cells;
    int cols;
    char align[32]; /* table: 'l' or 'r' per column */
} doc_block;

typedef struct {
    char *title;
    doc_block *blocks;
    int n, cap;
    bool failed; /* an allocation failed: the document is incomplete */
} report_doc;

void doc_init(report_doc *d, const char *title);
void doc_free(report_doc *d);

void doc_heading(report_doc *d, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void doc_para(report_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void doc_note(report_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A list; doc_item adds to the last block, which must be a list. */
void doc_list(report_doc *d);
void doc_item(report_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A table of strlen(align) columns ('l' or 'r' each, at most 31) with the
 * given header cells; doc_cell fills it row by row. */
void doc_table(report_doc *d, const char *align, const char *const *header);
void doc_cell(report_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The number of data rows of the last table (0 when the last block is not one). */
int doc_table_rows(const report_doc *d);
/* Removes the last block when it is a table without data rows. */
void doc_drop_empty_table(report_doc *d);

void doc_figure(report_doc *d, const char *path, const char *alt, const char *caption_fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Writers: "<path>.tmp", then a rename. base_dir is the folder figure paths
 * are relative to (the HTML writer reads and embeds them). -1 with err. */
/* Opens "<path>.tmp" for one of the writers below (its name left in tmp);
 * NULL with err when building the document ran out of memory or the file
 * cannot be created. */
FILE *doc_create(const report_doc *d, const char *path, char *tmp, size_t tmp_len, char *err,
                 size_t err_len);

int doc_write_md(const report_doc *d, const char *path, char *err, size_t err_len);
int doc_write_html(const report_doc *d, const char *base_dir, const char *path, char *err,
                   size_t err_len);

#endif
