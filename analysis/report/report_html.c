/* report.html: one self-contained page of a report_doc. Figures are embedded
 * as base64 PNG data URIs and the style sheet is inline, so the file can be
 * mailed or copied off a cluster alone; it loads nothing from anywhere. */
#include <stdio.h>
#include <string.h>

#include "../csv.h"
#include "report_doc.h"

static const char *const style =
    "body{margin:0;background:#f6f7f9;color:#1d2330;font:15px/1.5 system-ui,-apple-system,"
    "'Segoe UI',Roboto,'DejaVu Sans',sans-serif}\n"
    "main{max-width:1240px;margin:0 auto;padding:28px 36px 60px;background:#fff;"
    "box-shadow:0 0 0 1px #e3e6eb}\n"
    "h1{font-size:28px;margin:0 0 6px}h2{font-size:22px;margin:38px 0 10px;padding-top:12px;"
    "border-top:2px solid #e8ebf0}h3{font-size:17px;margin:26px 0 8px}h4{font-size:15px;margin:20px 0 6px}\n"
    "p.note{color:#5b6372;font-size:13px}\n"
    "nav{background:#f1f4f8;border-radius:6px;padding:8px 14px;margin:14px 0;font-size:14px}\n"
    "nav a{color:#24528a;text-decoration:none;margin-right:16px;white-space:nowrap}\n"
    "ul{padding-left:22px}li{margin:4px 0}\n"
    ".table{overflow-x:auto;margin:10px 0 18px}\n"
    "table{border-collapse:collapse;font-size:13.5px;font-variant-numeric:tabular-nums}\n"
    "th,td{padding:4px 10px;border-bottom:1px solid #e3e6eb;text-align:left;vertical-align:top}\n"
    "th{background:#eef1f5;font-weight:600;white-space:nowrap}\n"
    "td.r,th.r{text-align:right;white-space:nowrap}\n"
    "tbody tr:nth-child(even){background:#fafbfc}\n"
    "figure{margin:18px 0 26px}figure img{max-width:100%;height:auto;border:1px solid #e3e6eb}\n"
    "figcaption{color:#4a5261;font-size:13.5px;margin-top:6px}\n";

static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\n': fputs("<br>", f); break;
        default: fputc(*s, f);
        }
    }
}

/* Streams the file as base64; -1 with err when it cannot be read. */
static int put_base64_file(FILE *out, const char *path, char *err, size_t err_len)
{
    static const char digits[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    /* a figure is embedded whole into the report: a link planted in the
     * run folder (to a file the report should not publish) is refused */
    char why[4352];
    FILE *in = csv_open_read(path, true, why, sizeof why);
    if (!in) {
        snprintf(err, err_len, "cannot read figure %s", why);
        return -1;
    }
    unsigned char buf[3 * 1024];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        for (size_t i = 0; i < n; i += 3) {
            unsigned v = (unsigned)buf[i] << 16;
            if (i + 1 < n)
                v |= (unsigned)buf[i + 1] << 8;
            if (i + 2 < n)
                v |= buf[i + 2];
            fputc(digits[(v >> 18) & 63], out);
            fputc(digits[(v >> 12) & 63], out);
            fputc(i + 1 < n ? digits[(v >> 6) & 63] : '=', out);
            fputc(i + 2 < n ? digits[v & 63] : '=', out);
        }
        if (n < sizeof buf)
            break; /* a short read is the end (or an error, checked below) */
    }
    int failed = ferror(in);
    fclose(in);
    if (failed) {
        snprintf(err, err_len, "cannot read figure %s", path);
        return -1;
    }
    return 0;
}

static void write_table(FILE *f, const doc_block *b)
{
    int rows = b->n_cells / b->cols;
    fputs("<div class=\"table\"><table>\n<thead><tr>", f);
    for (int r = 0; r < rows; r++) {
        if (r == 1)
            fputs("<tbody>\n", f);
        if (r > 0)
            fputs("<tr>", f);
        for (int c = 0; c < b->cols; c++) {
            const char *tag = r == 0 ? "th" : "td";
            fprintf(f, "<%s%s>", tag, b->align[c] == 'r' ? " class=\"r\"" : "");
            put_escaped(f, b->cells[r * b->cols + c]);
            fprintf(f, "</%s>", tag);
        }
        fputs(r == 0 ? "</tr></thead>\n" : "</tr>\n", f);
    }
    fputs(rows > 1 ? "</tbody></table></div>\n" : "</table></div>\n", f);
}

/* Level-1 headings get ids (s1, s2, ...) for the contents line at the top. */
static void write_nav(FILE *f, const report_doc *d)
{
    fputs("<nav>", f);
    for (int i = 0, k = 0; i < d->n; i++)
        if (d->blocks[i].kind == DOC_HEADING && d->blocks[i].level == 1) {
            fprintf(f, "<a href=\"#s%d\">", ++k);
            put_escaped(f, d->blocks[i].text);
            fputs("</a>", f);
        }
    fputs("</nav>\n", f);
}

static int write_block(FILE *f, const doc_block *b, const char *base_dir, int *section,
                       char *err, size_t err_len)
{
    switch (b->kind) {
    case DOC_HEADING:
        if (b->level == 1)
            fprintf(f, "<h2 id=\"s%d\">", ++*section);
        else
            fprintf(f, "<h%d>", b->level + 1);
        put_escaped(f, b->text);
        fprintf(f, "</h%d>\n", b->level + 1);
        break;
    case DOC_PARAGRAPH:
    case DOC_NOTE:
        fputs(b->kind == DOC_NOTE ? "<p class=\"note\">" : "<p>", f);
        put_escaped(f, b->text);
        fputs("</p>\n", f);
        break;
    case DOC_LIST:
        fputs("<ul>\n", f);
        for (int i = 0; i < b->n_cells; i++) {
            fputs("<li>", f);
            put_escaped(f, b->cells[i]);
            fputs("</li>\n", f);
        }
        fputs("</ul>\n", f);
        break;
    case DOC_TABLE:
        write_table(f, b);
        break;
    case DOC_FIGURE: {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", base_dir, b->path);
        fputs("<figure><img alt=\"", f);
        put_escaped(f, b->alt);
        fputs("\" src=\"data:image/png;base64,", f);
        if (put_base64_file(f, path, err, err_len))
            return -1;
        fputs("\"><figcaption>", f);
        put_escaped(f, b->text);
        fputs("</figcaption></figure>\n", f);
        break;
    }
    }
    return 0;
}

int doc_write_html(const report_doc *d, const char *base_dir, const char *path, char *err,
                   size_t err_len)
{
    char tmp[4096];
    FILE *f = doc_create(d, path, tmp, sizeof tmp, err, err_len);
    if (!f)
        return -1;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          f);
    put_escaped(f, d->title);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n<h1>", style);
    put_escaped(f, d->title);
    fputs("</h1>\n", f);
    write_nav(f, d);
    int section = 0;
    for (int i = 0; i < d->n; i++)
        if (write_block(f, &d->blocks[i], base_dir, &section, err, err_len)) {
            csv_abort(f, tmp);
            return -1;
        }
    fputs("</main>\n</body>\n</html>\n", f);
    return csv_commit(f, tmp, path, err, err_len);
}
