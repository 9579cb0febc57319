/* report.md: GitHub-flavoured Markdown of a report_doc; figures are links to
 * the PNG files beside the report (figures/...). */
#include <stdio.h>
#include <string.h>

#include "../csv.h"
#include "report_doc.h"

/* Characters that would start markup inside running text. Underscores are
 * left alone: GFM ignores them inside words (fp32_fma). */
static void put_text(FILE *f, const char *s, bool in_table)
{
    bool line_start = true;
    for (; *s; s++) {
        char c = *s;
        if (c == '\n') {
            fputs(in_table ? " " : "  \n", f); /* a hard line break */
            line_start = true;
            continue;
        }
        if (strchr("\\*`<", c) || (in_table && c == '|') ||
            (line_start && !in_table && strchr("#+->", c)))
            fputc('\\', f);
        fputc(c, f);
        line_start = false;
    }
}

static void write_table(FILE *f, const doc_block *b)
{
    int rows = b->n_cells / b->cols;
    for (int r = 0; r < rows; r++) {
        fputc('|', f);
        for (int c = 0; c < b->cols; c++) {
            fputc(' ', f);
            put_text(f, b->cells[r * b->cols + c], true);
            fputs(" |", f);
        }
        fputc('\n', f);
        if (r == 0) {
            fputc('|', f);
            for (int c = 0; c < b->cols; c++)
                fputs(b->align[c] == 'r' ? "---:|" : "---|", f);
            fputc('\n', f);
        }
    }
    fputc('\n', f);
}

static void write_block(FILE *f, const doc_block *b)
{
    switch (b->kind) {
    case DOC_HEADING:
        fprintf(f, "%.*s ", b->level + 1, "####");
        put_text(f, b->text, true);
        fputs("\n\n", f);
        break;
    case DOC_PARAGRAPH:
        put_text(f, b->text, false);
        fputs("\n\n", f);
        break;
    case DOC_NOTE:
        fputc('*', f);
        put_text(f, b->text, false);
        fputs("*\n\n", f);
        break;
    case DOC_LIST:
        for (int i = 0; i < b->n_cells; i++) {
            fputs("- ", f);
            put_text(f, b->cells[i], true);
            fputc('\n', f);
        }
        fputc('\n', f);
        break;
    case DOC_TABLE:
        write_table(f, b);
        break;
    case DOC_FIGURE:
        fputs("![", f);
        put_text(f, b->alt, true);
        fprintf(f, "](%s)\n\n*", b->path);
        put_text(f, b->text, false);
        fputs("*\n\n", f);
        break;
    }
}

int doc_write_md(const report_doc *d, const char *path, char *err, size_t err_len)
{
    char tmp[4096];
    FILE *f = doc_create(d, path, tmp, sizeof tmp, err, err_len);
    if (!f)
        return -1;
    fputs("# ", f);
    put_text(f, d->title, true);
    fputs("\n\n", f);
    for (int i = 0; i < d->n; i++)
        write_block(f, &d->blocks[i]);
    return csv_commit(f, tmp, path, err, err_len);
}
