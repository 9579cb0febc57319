#include "report_doc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../csv.h"

static char *vformat(const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (s)
        vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

void doc_init(report_doc *d, const char *title)
{
    memset(d, 0, sizeof *d);
    d->title = strdup(title);
    d->failed = d->title == NULL;
}

void doc_free(report_doc *d)
{
    for (int i = 0; i < d->n; i++) {
        doc_block *b = &d->blocks[i];
        free(b->text);
        free(b->path);
        free(b->alt);
        for (int c = 0; c < b->n_cells; c++)
            free(b->cells[c]);
        free(b->cells);
    }
    free(d->blocks);
    free(d->title);
    memset(d, 0, sizeof *d);
}

/* A new zeroed block, or NULL (and the document marked) out of memory. */
static doc_block *add_block(report_doc *d, doc_kind kind)
{
    if (d->failed)
        return NULL;
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 64;
        doc_block *p = realloc(d->blocks, (size_t)cap * sizeof *p);
        if (!p) {
            d->failed = true;
            return NULL;
        }
        d->blocks = p;
        d->cap = cap;
    }
    doc_block *b = &d->blocks[d->n++];
    memset(b, 0, sizeof *b);
    b->kind = kind;
    return b;
}

static void add_text_block(report_doc *d, doc_kind kind, int level, const char *fmt, va_list ap)
{
    doc_block *b = add_block(d, kind);
    if (!b)
        return;
    b->level = level;
    b->text = vformat(fmt, ap);
    if (!b->text)
        d->failed = true;
}

void doc_heading(report_doc *d, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_text_block(d, DOC_HEADING, level < 1 ? 1 : level > 3 ? 3 : level, fmt, ap);
    va_end(ap);
}

void doc_para(report_doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_text_block(d, DOC_PARAGRAPH, 0, fmt, ap);
    va_end(ap);
}

void doc_note(report_doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_text_block(d, DOC_NOTE, 0, fmt, ap);
    va_end(ap);
}

static void add_cell(report_doc *d, doc_kind kind, char *text)
{
    doc_block *b = d->n > 0 ? &d->blocks[d->n - 1] : NULL;
    if (d->failed || !text || !b || b->kind != kind) {
        free(text);
        d->failed = true; /* a cell without its block is a bug in the builder */
        return;
    }
    if (b->n_cells == b->cap_cells) {
        int cap = b->cap_cells ? 2 * b->cap_cells : 16;
        char **p = realloc(b->cells, (size_t)cap * sizeof *p);
        if (!p) {
            free(text);
            d->failed = true;
            return;
        }
        b->cells = p;
        b->cap_cells = cap;
    }
    b->cells[b->n_cells++] = text;
}

void doc_list(report_doc *d)
{
    add_block(d, DOC_LIST);
}

void doc_item(report_doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = vformat(fmt, ap);
    va_end(ap);
    add_cell(d, DOC_LIST, text);
}

void doc_table(report_doc *d, const char *align, const char *const *header)
{
    doc_block *b = add_block(d, DOC_TABLE);
    if (!b)
        return;
    size_t cols = strlen(align);
    if (cols == 0 || cols >= sizeof b->align) {
        d->failed = true;
        return;
    }
    memcpy(b->align, align, cols + 1);
    b->cols = (int)cols;
    for (size_t c = 0; c < cols; c++)
        add_cell(d, DOC_TABLE, strdup(header[c]));
}

void doc_cell(report_doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = vformat(fmt, ap);
    va_end(ap);
    add_cell(d, DOC_TABLE, text);
}

int doc_table_rows(const report_doc *d)
{
    const doc_block *b = d->n > 0 ? &d->blocks[d->n - 1] : NULL;
    if (!b || b->kind != DOC_TABLE || b->cols == 0)
        return 0;
    return b->n_cells / b->cols - 1;
}

void doc_drop_empty_table(report_doc *d)
{
    if (d->n == 0 || d->blocks[d->n - 1].kind != DOC_TABLE || doc_table_rows(d) > 0)
        return;
    doc_block *b = &d->blocks[--d->n];
    for (int c = 0; c < b->n_cells; c++)
        free(b->cells[c]);
    free(b->cells);
    free(b->text);
    free(b->path);
    free(b->alt);
}

void doc_figure(report_doc *d, const char *path, const char *alt, const char *caption_fmt, ...)
{
    doc_block *b = add_block(d, DOC_FIGURE);
    if (!b)
        return;
    va_list ap;
    va_start(ap, caption_fmt);
    b->text = vformat(caption_fmt, ap);
    va_end(ap);
    b->path = strdup(path);
    b->alt = strdup(alt);
    if (!b->text || !b->path || !b->alt)
        d->failed = true;
}

FILE *doc_create(const report_doc *d, const char *path, char *tmp, size_t tmp_len, char *err,
                 size_t err_len)
{
    if (d->failed) {
        snprintf(err, err_len, "%s: out of memory while building the report", path);
        return NULL;
    }
    return csv_create(path, tmp, tmp_len, err, err_len);
}
