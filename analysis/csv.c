#include "csv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* All cells live in one buffer (the unquoted text, each NUL-terminated);
 * rows hold offsets into it, so reading costs two allocations that grow. */
struct csv_table {
    char *text;
    size_t text_len, text_cap;
    size_t *cells; /* (rows + 1) x cols offsets; row 0 is the header */
    size_t n_cells, cells_cap;
    int *lines; /* the line each data row starts on */
    size_t lines_cap;
    int cols;
    int rows; /* data rows */
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 256;
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem)
            return -1;
        n *= 2;
    }
    void *q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static int put_char(csv_table *t, char c)
{
    if (grow((void **)&t->text, &t->text_cap, t->text_len + 1, 1))
        return -1;
    t->text[t->text_len++] = c;
    return 0;
}

static int start_cell(csv_table *t)
{
    if (grow((void **)&t->cells, &t->cells_cap, t->n_cells + 1, sizeof *t->cells))
        return -1;
    t->cells[t->n_cells++] = t->text_len;
    return 0;
}

void csv_free(csv_table *t)
{
    if (!t)
        return;
    free(t->text);
    free(t->cells);
    free(t->lines);
    free(t);
}

/* One record: fields until an unquoted newline or end of file. Returns the
 * number of fields, 0 for a blank line, -1 at end of file before any
 * character, -2 for an unterminated quote, -3 out of memory. *line advances
 * by the newlines consumed (quoted newlines included). */
static int read_record(FILE *f, csv_table *t, int *line)
{
    int c = getc_unlocked(f);
    if (c == EOF)
        return -1;
    if (c == '\r')
        c = getc_unlocked(f); /* CR is dropped wherever it is unquoted */
    if (c == EOF)
        return -1;
    if (c == '\n') {
        (*line)++;
        return 0;
    }
    int fields = 0;
    for (;;) {
        if (start_cell(t))
            return -3;
        fields++;
        if (c == '"') {
            for (;;) {
                c = getc_unlocked(f);
                if (c == EOF)
                    return -2;
                if (c == '"') {
                    c = getc_unlocked(f);
                    if (c != '"')
                        break; /* closing quote; c is what follows */
                }
                if (c == '\n')
                    (*line)++;
                if (put_char(t, (char)c))
                    return -3;
            }
            /* text after a closing quote (`"a"b`) is kept, as most readers do */
        }
        while (c != ',' && c != '\n' && c != EOF) {
            if (c != '\r' && put_char(t, (char)c))
                return -3;
            c = getc_unlocked(f);
        }
        if (put_char(t, '\0'))
            return -3;
        if (c == ',') {
            c = getc_unlocked(f);
            continue;
        }
        if (c == '\n')
            (*line)++;
        return fields;
    }
}

FILE *csv_open_read(const char *path, bool no_links, char *err, size_t err_len)
{
    /* O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (no_links ? O_NOFOLLOW : 0));
    if (fd < 0) {
        snprintf(err, err_len, "%s: cannot open: %s", path,
                 errno == ELOOP && no_links ? "it is a symbolic link" : strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, err_len, "%s: cannot open: not a regular file", path);
        close(fd);
        return NULL;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "r");
    if (!f) {
        snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

csv_table *csv_read(const char *path, char *err, size_t err_len)
{
    FILE *f = csv_open_read(path, false, err, err_len);
    if (!f)
        return NULL;
    csv_table *t = calloc(1, sizeof *t);
    if (!t) {
        fclose(f);
        snprintf(err, err_len, "%s: out of memory", path);
        return NULL;
    }
    int line = 1; /* the line the next record starts on */
    for (;;) {
        int start = line;
        int n = read_record(f, t, &line);
        if (n == -1)
            break;
        if (n == 0)
            continue;
        if (n == -2) {
            snprintf(err, err_len, "%s:%d: unterminated quoted field", path, start);
            goto fail;
        }
        if (n == -3) {
            snprintf(err, err_len, "%s:%d: out of memory", path, start);
            goto fail;
        }
        if (t->cols == 0) {
            t->cols = n;
        } else if (n != t->cols) {
            snprintf(err, err_len, "%s:%d: %d fields, header has %d", path, start, n, t->cols);
            goto fail;
        } else {
            if (t->rows == INT_MAX ||
                grow((void **)&t->lines, &t->lines_cap, (size_t)t->rows + 1, sizeof *t->lines)) {
                snprintf(err, err_len, "%s:%d: out of memory", path, start);
                goto fail;
            }
            t->lines[t->rows++] = start;
        }
    }
    if (ferror(f)) {
        snprintf(err, err_len, "%s: read error: %s", path, strerror(errno));
        goto fail;
    }
    fclose(f);
    if (t->cols == 0) {
        snprintf(err, err_len, "%s: empty file (no header line)", path);
        csv_free(t);
        return NULL;
    }
    return t;
fail:
    fclose(f);
    csv_free(t);
    return NULL;
}

int csv_rows(const csv_table *t) { return t->rows; }
int csv_cols(const csv_table *t) { return t->cols; }

static const char *cell_at(const csv_table *t, int record, int col)
{
    return t->text + t->cells[(size_t)record * (size_t)t->cols + (size_t)col];
}

int csv_line(const csv_table *t, int row)
{
    return row >= 0 && row < t->rows ? t->lines[row] : 0;
}

const char *csv_header(const csv_table *t, int col)
{
    if (col < 0 || col >= t->cols)
        return "";
    return cell_at(t, 0, col);
}

int csv_col(const csv_table *t, const char *name)
{
    for (int i = 0; i < t->cols; i++)
        if (strcmp(cell_at(t, 0, i), name) == 0)
            return i;
    return -1;
}

int csv_require(const csv_table *t, const char *path, const char *const *names, int *cols,
                char *err, size_t err_len)
{
    for (int i = 0; names[i]; i++) {
        cols[i] = csv_col(t, names[i]);
        if (cols[i] < 0) {
            snprintf(err, err_len, "%s:1: no column '%s' in the header", path, names[i]);
            return -1;
        }
    }
    return 0;
}

const char *csv_cell(const csv_table *t, int row, int col)
{
    if (row < 0 || row >= t->rows || col < 0 || col >= t->cols)
        return "";
    return cell_at(t, row + 1, col);
}

double csv_num(const csv_table *t, int row, int col, bool *ok)
{
    const char *s = csv_cell(t, row, col);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    bool good = *s != '\0' && end != s && errno == 0 && isfinite(v);
    while (good && (*end == ' ' || *end == '\t'))
        end++;
    good = good && *end == '\0';
    if (ok)
        *ok = good;
    return good ? v : NAN;
}

int csv_get_num(const csv_table *t, int row, int col, const char *path, bool required,
                double *out, char *err, size_t err_len)
{
    bool ok;
    *out = csv_num(t, row, col, &ok);
    if (ok)
        return 0;
    const char *text = csv_cell(t, row, col);
    if (!text[0] && !required)
        return 0;
    if (!text[0])
        snprintf(err, err_len, "%s:%d: empty %s", path, csv_line(t, row), csv_header(t, col));
    else
        snprintf(err, err_len, "%s:%d: %s '%s' is not a number", path, csv_line(t, row),
                 csv_header(t, col), text);
    return -1;
}

FILE *csv_create(const char *path, char *tmp_path, size_t tmp_len, char *err, size_t err_len)
{
    if ((size_t)snprintf(tmp_path, tmp_len, "%s.tmp", path) >= tmp_len) {
        snprintf(err, err_len, "%s: path too long", path);
        return NULL;
    }
    /* Whatever is at the temporary name goes first (a link planted there is
     * removed, not followed), and O_EXCL | O_NOFOLLOW refuse one planted in
     * between; the rename in csv_commit replaces a link at path itself. */
    int fd = -1;
    if (unlink(tmp_path) == 0 || errno == ENOENT)
        fd = open(tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        snprintf(err, err_len, "cannot write %s: %s", tmp_path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp_path);
        }
    }
    return f;
}

int csv_close(FILE *f, const char *tmp_path, char *err, size_t err_len)
{
    bool failed = ferror(f) != 0;
    int saved = errno;
    if (fclose(f) != 0 && !failed) {
        failed = true;
        saved = errno;
    }
    if (failed) {
        snprintf(err, err_len, "cannot write %s: %s (disk full?)", tmp_path, strerror(saved));
        remove(tmp_path);
        return -1;
    }
    return 0;
}

int csv_commit(FILE *f, const char *tmp_path, const char *path, char *err, size_t err_len)
{
    if (csv_close(f, tmp_path, err, err_len))
        return -1;
    if (rename(tmp_path, path) != 0) {
        snprintf(err, err_len, "cannot rename %s to %s: %s", tmp_path, path, strerror(errno));
        remove(tmp_path);
        return -1;
    }
    return 0;
}

void csv_abort(FILE *f, const char *tmp_path)
{
    fclose(f);
    remove(tmp_path);
}

void csv_put_field(FILE *f, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\n\r")) {
        fputs_unlocked(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

const char *csv_format_num(char buf[CSV_NUM_LEN], double v)
{
    buf[0] = '\0';
    if (!isfinite(v))
        return buf;
    /* counts (FLOPs, bytes, ns) stay exact; everything else reads as measured */
    if (v == floor(v) && fabs(v) < 1e15 && !signbit(v)) {
        /* the digits of a count by hand: what "%.0f" writes, at a fraction of
         * its cost (roofline.csv holds hundreds of thousands of them) */
        long long n = (long long)v;
        char digits[24];
        int len = 0;
        do {
            digits[len++] = (char)('0' + n % 10);
            n /= 10;
        } while (n > 0);
        for (int i = 0; i < len; i++)
            buf[i] = digits[len - 1 - i];
        buf[len] = '\0';
    } else if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(buf, CSV_NUM_LEN, "%.0f", v);
    } else {
        snprintf(buf, CSV_NUM_LEN, "%.6g", v);
    }
    return buf;
}

void csv_put_num(FILE *f, double v)
{
    char buf[CSV_NUM_LEN];
    fputs_unlocked(csv_format_num(buf, v), f);
}
