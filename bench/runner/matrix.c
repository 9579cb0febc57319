#include "matrix.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../analysis/csv.h"
#include "../../models/zoo.h"

enum { MAX_CELLS = 32, MAX_FILE_BYTES = 1 << 20, MAX_ITERS = 1000000 };

typedef enum {
    COL_ENV, COL_BACKEND, COL_MODELS, COL_RES, COL_BATCH, COL_PRECISION, COL_GRAPH,
    COL_WARMUP, COL_ITERS, COL_REPEATS, COL_RANKS, COL_COUNTERS, COL_PEAKS, COL_NOTES,
    COL_COUNT
} column;

static const struct {
    const char *name;
    bool required;
} columns[COL_COUNT] = {
    {"ENV", true},       {"backend", true}, {"models", true},   {"res", true},
    {"batch", true},     {"precision", true}, {"graph", false}, {"warmup", true}, {"iters", true},
    {"repeats", true},   {"ranks", true},   {"counters", true}, {"peaks", false},
    {"notes", false},
};

/* Where an error is reported: the file, and the row being read. */
typedef struct {
    const char *path;
    char *err;
    size_t err_len;
    int line;
    const char *env; /* NULL until the row's ENV cell is read */
} parse_ctx;

static int fail(const parse_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(const parse_ctx *c, const char *fmt, ...)
{
    int used = snprintf(c->err, c->err_len, "%s:%d: ", c->path, c->line);
    if (used < 0 || (size_t)used >= c->err_len)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    int more = vsnprintf(c->err + used, c->err_len - (size_t)used, fmt, ap);
    va_end(ap);
    if (c->env && more >= 0 && (size_t)(used + more) < c->err_len)
        snprintf(c->err + used + more, c->err_len - (size_t)(used + more), " (ENV %s)", c->env);
    return -1;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* A whole unsigned decimal in [min, max]: no sign, blanks or fraction. */
static bool parse_int(const char *s, long min, long max, int *out)
{
    if (!isdigit((unsigned char)*s))
        return false;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return false;
    *out = (int)v;
    return true;
}

/* "| a | b |" -> trimmed cells, in place; the closing '|' is optional, as
 * Markdown allows. -1 for more than `max` cells. */
static int split_cells(char *line, char *cells[], int max)
{
    char *p = trim(line);
    if (*p == '|')
        p++;
    size_t n = strlen(p);
    if (n > 0 && p[n - 1] == '|')
        p[n - 1] = '\0';
    int count = 0;
    for (;;) {
        char *bar = strchr(p, '|');
        if (bar)
            *bar = '\0';
        if (count == max)
            return -1;
        cells[count++] = trim(p);
        if (!bar)
            return count;
        p = bar + 1;
    }
}

static bool is_table_line(const char *line)
{
    while (*line == ' ' || *line == '\t')
        line++;
    return *line == '|';
}

static bool is_separator_cell(const char *cell)
{
    size_t n = strlen(cell);
    if (n == 0)
        return false;
    size_t from = cell[0] == ':', to = n - (n > 1 && cell[n - 1] == ':');
    if (from >= to)
        return false;
    for (size_t i = from; i < to; i++)
        if (cell[i] != '-')
            return false;
    return true;
}

/* Splits a list cell on commas into trimmed items, in place. `-` alone is the
 * empty list where allow_none; an empty item is an error. Returns the count,
 * or -1 with the error reported. */
static int split_list(const parse_ctx *c, const char *col, char *cell, bool allow_none,
                      char *items[MATRIX_MAX_LIST])
{
    if (strcmp(cell, "-") == 0) {
        if (allow_none)
            return 0;
        return fail(c, "column '%s': '-' is not accepted here (give at least one value)", col);
    }
    if (!*cell)
        return fail(c, "column '%s' is empty (give a value%s)", col, allow_none ? " or '-'" : "");
    int n = 0;
    for (char *p = cell;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        char *item = trim(p);
        if (!*item)
            return fail(c, "column '%s': empty item in the comma-separated list", col);
        if (n == MATRIX_MAX_LIST)
            return fail(c, "column '%s': more than %d items", col, MATRIX_MAX_LIST);
        items[n++] = item;
        if (!comma)
            return n;
        p = comma + 1;
    }
}

static int int_cell(const parse_ctx *c, const char *col, const char *cell, long min, long max,
                    int *out)
{
    if (!parse_int(cell, min, max, out))
        return fail(c, "column '%s': '%s' is not an integer in %ld..%ld", col, cell, min, max);
    return 0;
}

static int int_list_cell(const parse_ctx *c, const char *col, char *cell, bool allow_none,
                         long min, long max, int *values, int *n)
{
    char *items[MATRIX_MAX_LIST];
    int count = split_list(c, col, cell, allow_none, items);
    if (count < 0)
        return -1;
    for (int i = 0; i < count; i++)
        if (int_cell(c, col, items[i], min, max, &values[i]))
            return -1;
    *n = count;
    return 0;
}

static int choice_cell(const parse_ctx *c, const char *col, const char *cell,
                       const char *const choices[], int n_choices, char *out, size_t out_len)
{
    for (int i = 0; i < n_choices; i++) {
        if (strcmp(cell, choices[i]) == 0) {
            snprintf(out, out_len, "%s", cell);
            return 0;
        }
    }
    char accepted[128] = "";
    for (int i = 0; i < n_choices; i++)
        snprintf(accepted + strlen(accepted), sizeof accepted - strlen(accepted), "%s%s",
                 i ? ", " : "", choices[i]);
    return fail(c, "column '%s': unknown '%s' (accepted: %s)", col, cell, accepted);
}

/* An ENV names the run's folder, runs/<ENV>/: '.', '..' or a leading '-'
 * would put it elsewhere or read as an option, so it starts with a letter or
 * digit. */
static bool valid_env_name(const char *s)
{
    if (!isalnum((unsigned char)*s) || strlen(s) >= MATRIX_NAME_LEN)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-')
            return false;
    return true;
}

/* `name`, `name@res`, `name/batch` or `name@res/batch`. */
static int model_item(const parse_ctx *c, char *item, matrix_model *m)
{
    char text[128];
    snprintf(text, sizeof text, "%s", item);
    char *slash = strchr(item, '/'), *at = strchr(item, '@');
    if (slash)
        *slash = '\0';
    if (at && (!slash || at < slash))
        *at = '\0';
    else
        at = NULL;
    char names[ZOO_NAMES_LEN];
    const model_info *info = zoo_find(item);
    if (!info)
        return fail(c, "column 'models': unknown model '%s' in '%s' (accepted: %s)", item, text,
                    zoo_names(names, sizeof names));
    snprintf(m->name, sizeof m->name, "%s", info->name);
    m->res = m->batch = 0;
    if (at && !parse_int(at + 1, 1, ZOO_MAX_RES, &m->res))
        return fail(c, "column 'models': '%s': the resolution after '@' is not an integer in 1..%d",
                    text, ZOO_MAX_RES);
    if (slash && !parse_int(slash + 1, 1, MATRIX_MAX_BATCH, &m->batch))
        return fail(c, "column 'models': '%s': the batch after '/' is not an integer in 1..%d",
                    text, MATRIX_MAX_BATCH);
    return 0;
}

/* Checks that need several cells: resolutions each model admits, a batch for
 * every model, precisions and counters the backend runs, no configuration
 * twice. */
static int check_row(const parse_ctx *c, const matrix_row *r)
{
    for (int i = 0; i < r->n_models; i++) {
        const matrix_model *m = &r->models[i];
        int min_res = zoo_min_res(m->name);
        if (m->res && m->res < min_res)
            return fail(c, "column 'models': '%s@%d': resolution %d is below %s's minimum %d",
                        m->name, m->res, m->res, m->name, min_res);
        if (!m->res)
            for (int k = 0; k < r->n_res; k++)
                if (r->res[k] < min_res)
                    return fail(c, "column 'res': %d is below %s's minimum %d (pin another "
                                "resolution with %s@RES)", r->res[k], m->name, min_res, m->name);
        if (!m->batch && r->n_batch == 0)
            return fail(c, "column 'batch': '-' but model %s pins no batch (write %s/N in "
                        "'models' or list batches)", m->name, m->name);
    }
    if (strcmp(r->backend, "cpu") == 0) {
        for (int i = 0; i < r->n_prec; i++)
            if (r->prec[i] != PREC_FP32)
                return fail(c, "column 'precision': '%s' needs backend cuda (the cpu backend "
                            "runs fp32)", precision_name(r->prec[i]));
        if (strcmp(r->counters, "cupti") == 0)
            return fail(c, "column 'counters': 'cupti' needs backend cuda (cpu: perf or off)");
        for (int i = 0; i < r->n_graph; i++)
            if (r->graph[i])
                return fail(c, "column 'graph': 'on' needs backend cuda (a CUDA graph replays "
                            "the step; the cpu backend runs it layer by layer: off)");
    } else if (strcmp(r->counters, "perf") == 0) {
        return fail(c, "column 'counters': 'perf' counts CPU events (cuda: cupti or off)");
    }
    int n = matrix_expand(r, NULL, 0);
    if (n > MATRIX_MAX_CONFIGS)
        return fail(c, "%d configurations, more than %d", n, MATRIX_MAX_CONFIGS);
    matrix_config *all = malloc((size_t)n * sizeof *all);
    if (!all)
        return fail(c, "out of memory expanding the row");
    matrix_expand(r, all, n);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++) {
            if (!strcmp(all[i].model, all[j].model) && all[i].res == all[j].res &&
                all[i].batch == all[j].batch && all[i].prec == all[j].prec &&
                all[i].graph == all[j].graph) {
                fail(c, "configuration %s res %d batch %d %s%s appears twice", all[i].model,
                     all[i].res, all[i].batch, precision_name(all[i].prec),
                     all[i].graph ? " graph" : "");
                free(all);
                return -1;
            }
        }
    }
    free(all);
    return 0;
}

/* The graph cell: `off`, `on` or both, in the order given; no cell: off. */
static int graph_cell(const parse_ctx *c, char *cell, matrix_row *r)
{
    if (!cell) {
        r->graph[0] = false;
        r->n_graph = 1;
        return 0;
    }
    char *items[MATRIX_MAX_LIST];
    int n = split_list(c, "graph", cell, false, items);
    if (n < 0)
        return -1;
    if (n > 2)
        return fail(c, "column 'graph': %d items (accepted: off, on, or both)", n);
    static const char *const modes[] = {"off", "on"};
    for (int i = 0; i < n; i++) {
        char mode[4];
        if (choice_cell(c, "graph", items[i], modes, 2, mode, sizeof mode))
            return -1;
        r->graph[i] = strcmp(mode, "on") == 0;
    }
    if (n == 2 && r->graph[0] == r->graph[1])
        return fail(c, "column 'graph': '%s' appears twice", r->graph[0] ? "on" : "off");
    r->n_graph = n;
    return 0;
}

static int parse_row(parse_ctx *c, char *cells[], const int col_of[COL_COUNT], matrix_row *r)
{
    static const char *const backends[] = {"cpu", "cuda"};
    static const char *const counters[] = {"perf", "cupti", "off"};
    static const char *const peaks[] = {"quick", "full", "off"};
    memset(r, 0, sizeof *r);
    r->line = c->line;
    const char *env = cells[col_of[COL_ENV]];
    if (!valid_env_name(env))
        return fail(c, "column 'ENV': '%s' is not a name of letters, digits, '.', '_', '-' "
                    "starting with a letter or digit (at most %d)", env, MATRIX_NAME_LEN - 1);
    if (strcmp(env, "local") == 0)
        return fail(c, "column 'ENV': 'local' is reserved (it picks a row for this machine)");
    snprintf(r->env, sizeof r->env, "%s", env);
    c->env = r->env;
    if (choice_cell(c, "backend", cells[col_of[COL_BACKEND]], backends, 2, r->backend,
                    sizeof r->backend) ||
        choice_cell(c, "counters", cells[col_of[COL_COUNTERS]], counters, 3, r->counters,
                    sizeof r->counters))
        return -1;
    if (col_of[COL_PEAKS] < 0)
        snprintf(r->peaks, sizeof r->peaks, "full");
    else if (choice_cell(c, "peaks", cells[col_of[COL_PEAKS]], peaks, 3, r->peaks, sizeof r->peaks))
        return -1;

    char *items[MATRIX_MAX_LIST];
    int n = split_list(c, "models", cells[col_of[COL_MODELS]], false, items);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (model_item(c, items[i], &r->models[i]))
            return -1;
    r->n_models = n;
    n = split_list(c, "precision", cells[col_of[COL_PRECISION]], false, items);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (!precision_parse(items[i], &r->prec[i]))
            return fail(c, "column 'precision': unknown '%s' (accepted: %s)", items[i],
                        precision_names());
    r->n_prec = n;
    if (graph_cell(c, col_of[COL_GRAPH] < 0 ? NULL : cells[col_of[COL_GRAPH]], r))
        return -1;
    if (int_list_cell(c, "res", cells[col_of[COL_RES]], true, 1, ZOO_MAX_RES, r->res, &r->n_res) ||
        int_list_cell(c, "batch", cells[col_of[COL_BATCH]], true, 1, MATRIX_MAX_BATCH, r->batch,
                      &r->n_batch) ||
        int_list_cell(c, "ranks", cells[col_of[COL_RANKS]], true, 1, MATRIX_MAX_RANKS, r->ranks,
                      &r->n_ranks) ||
        int_cell(c, "warmup", cells[col_of[COL_WARMUP]], 0, MAX_ITERS, &r->warmup) ||
        int_cell(c, "iters", cells[col_of[COL_ITERS]], 1, MAX_ITERS, &r->iters) ||
        int_cell(c, "repeats", cells[col_of[COL_REPEATS]], 1, 1000, &r->repeats))
        return -1;
    return check_row(c, r);
}

/* Maps header cells to columns: every name known, none twice, the required
 * ones present. */
static int parse_header(const parse_ctx *c, char *cells[], int n, int col_of[COL_COUNT])
{
    for (int k = 0; k < COL_COUNT; k++)
        col_of[k] = -1;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < COL_COUNT && strcmp(cells[i], columns[k].name) != 0)
            k++;
        if (k == COL_COUNT) {
            char accepted[256] = "";
            for (int j = 0; j < COL_COUNT; j++)
                snprintf(accepted + strlen(accepted), sizeof accepted - strlen(accepted), "%s%s",
                         j ? ", " : "", columns[j].name);
            return fail(c, "unknown column '%s' (accepted: %s)", cells[i], accepted);
        }
        if (col_of[k] >= 0)
            return fail(c, "column '%s' appears twice", cells[i]);
        col_of[k] = i;
    }
    for (int k = 0; k < COL_COUNT; k++)
        if (columns[k].required && col_of[k] < 0)
            return fail(c, "the header lacks column '%s'", columns[k].name);
    return 0;
}

/* The next line of text into buf (without its newline); NULL at the end. */
static const char *next_line(const char *p, char *buf, size_t len, bool *too_long)
{
    if (!*p)
        return NULL;
    size_t n = strcspn(p, "\n");
    *too_long = n >= len;
    size_t keep = *too_long ? len - 1 : n;
    memcpy(buf, p, keep);
    buf[keep] = '\0';
    if (keep > 0 && buf[keep - 1] == '\r')
        buf[keep - 1] = '\0';
    return p[n] ? p + n + 1 : p + n;
}

static int add_row(const parse_ctx *c, run_matrix *m, const matrix_row *r)
{
    if (matrix_find(m, r->env))
        return fail(c, "ENV '%s' appears twice", r->env);
    matrix_row *rows = realloc(m->rows, (size_t)(m->n_rows + 1) * sizeof *rows);
    if (!rows)
        return fail(c, "out of memory");
    m->rows = rows;
    m->rows[m->n_rows++] = *r;
    return 0;
}

static int parse_table(const char *text, const char *path, run_matrix *m, char *err,
                       size_t err_len)
{
    parse_ctx c = {.path = path, .err = err, .err_len = err_len};
    char line[4096];
    char *cells[MAX_CELLS];
    int col_of[COL_COUNT], n_cols = 0;
    enum { BEFORE, SEPARATOR, ROWS } state = BEFORE;
    bool too_long, in_other_table = false;
    const char *p = text;
    while ((p = next_line(p, line, sizeof line, &too_long))) {
        c.line++;
        c.env = NULL;
        if (state == BEFORE) {
            /* a header is the first line of a table, so a row of another
             * table that happens to start with ENV is not taken for one */
            bool first_of_table = is_table_line(line) && !in_other_table;
            in_other_table = is_table_line(line);
            if (!first_of_table)
                continue;
            int n = split_cells(line, cells, MAX_CELLS);
            if (n < 1 || strcmp(cells[0], "ENV") != 0)
                continue; /* another table, e.g. one documenting the columns */
            if (too_long)
                return fail(&c, "line longer than %zu characters", sizeof line - 1);
            if (parse_header(&c, cells, n, col_of))
                return -1;
            n_cols = n;
            state = SEPARATOR;
            continue;
        }
        if (!is_table_line(line)) {
            if (state == SEPARATOR)
                return fail(&c, "expected the |---|---| line under the header");
            break; /* the table ends at the first line that is not a row */
        }
        if (too_long)
            return fail(&c, "line longer than %zu characters", sizeof line - 1);
        int n = split_cells(line, cells, MAX_CELLS);
        const char *what = state == SEPARATOR ? "the |---| line" : "row";
        if (n < 0)
            return fail(&c, "%s has more than %d cells, the header has %d", what, MAX_CELLS,
                        n_cols);
        if (n != n_cols)
            return fail(&c, "%s has %d cells, the header has %d", what, n, n_cols);
        if (state == SEPARATOR) {
            for (int i = 0; i < n; i++)
                if (!is_separator_cell(cells[i]))
                    return fail(&c, "expected the |---|---| line under the header, found '%s'",
                                cells[i]);
            state = ROWS;
            continue;
        }
        matrix_row r;
        if (parse_row(&c, cells, col_of, &r) || add_row(&c, m, &r))
            return -1;
    }
    if (state == BEFORE) {
        snprintf(err, err_len, "%s: no table whose header starts with '| ENV |'", path);
        return -1;
    }
    if (m->n_rows == 0) {
        c.env = NULL;
        return fail(&c, "the table has no rows");
    }
    return 0;
}

int matrix_parse(const char *text, const char *path, run_matrix *m, char *err, size_t err_len)
{
    memset(m, 0, sizeof *m);
    if (parse_table(text, path, m, err, err_len) == 0)
        return 0;
    matrix_free(m);
    return -1;
}

int matrix_load(const char *path, run_matrix *m, char *err, size_t err_len)
{
    memset(m, 0, sizeof *m);
    /* a FIFO or a device given as the matrix is refused, not waited on */
    FILE *f = csv_open_read(path, false, err, err_len);
    if (!f)
        return -1;
    char *text = malloc(MAX_FILE_BYTES + 1);
    if (!text) {
        fclose(f);
        snprintf(err, err_len, "%s: out of memory", path);
        return -1;
    }
    size_t n = fread(text, 1, MAX_FILE_BYTES + 1, f);
    int read_error = ferror(f);
    fclose(f);
    int rc = -1;
    if (read_error)
        snprintf(err, err_len, "%s: read error", path);
    else if (n > MAX_FILE_BYTES)
        snprintf(err, err_len, "%s: larger than %d bytes", path, MAX_FILE_BYTES);
    else if (memchr(text, '\0', n))
        snprintf(err, err_len, "%s: not a text file (holds a NUL byte)", path);
    else {
        text[n] = '\0';
        rc = matrix_parse(text, path, m, err, err_len);
    }
    free(text);
    return rc;
}

void matrix_free(run_matrix *m)
{
    free(m->rows);
    m->rows = NULL;
    m->n_rows = 0;
}

const matrix_row *matrix_find(const run_matrix *m, const char *env)
{
    for (int i = 0; i < m->n_rows; i++)
        if (strcmp(m->rows[i].env, env) == 0)
            return &m->rows[i];
    return NULL;
}

const char *matrix_env_names(const run_matrix *m, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->n_rows && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", m->rows[i].env);
    return buf;
}

int matrix_expand(const matrix_row *row, matrix_config *out, int max)
{
    int n = 0;
    for (int i = 0; i < row->n_models; i++) {
        const matrix_model *m = &row->models[i];
        int default_res = zoo_find(m->name)->default_res;
        int n_res = m->res || row->n_res == 0 ? 1 : row->n_res;
        int n_batch = m->batch ? 1 : row->n_batch;
        for (int r = 0; r < n_res; r++) {
            int res = m->res ? m->res : row->n_res ? row->res[r] : default_res;
            for (int b = 0; b < n_batch; b++) {
                for (int p = 0; p < row->n_prec; p++) {
                    for (int g = 0; g < row->n_graph; g++, n++) {
                        if (!out || n >= max)
                            continue;
                        snprintf(out[n].model, sizeof out[n].model, "%s", m->name);
                        out[n].res = res;
                        out[n].batch = m->batch ? m->batch : row->batch[b];
                        out[n].prec = row->prec[p];
                        out[n].graph = row->graph[g];
                    }
                }
            }
        }
    }
    return n;
}

/* Lower-case letters and digits of s, the rest dropped: "RTX-4090" -> "rtx4090". */
static void fold(const char *s, char *out, size_t len)
{
    size_t n = 0;
    for (; *s && n + 1 < len; s++)
        if (isalnum((unsigned char)*s))
            out[n++] = (char)tolower((unsigned char)*s);
    out[n] = '\0';
}

/* Whether env is a word of gpu_name or adjacent words run together; words
 * are runs of letters and digits, so "a100" matches "A100-SXM4-80GB" but not
 * "RTX A1000". */
static bool env_names_gpu(const char *env, const char *gpu_name)
{
    char want[MATRIX_NAME_LEN];
    fold(env, want, sizeof want);
    size_t want_len = strlen(want);
    if (want_len == 0)
        return false;
    for (const char *p = gpu_name; *p;) {
        if (!isalnum((unsigned char)*p)) {
            p++;
            continue;
        }
        /* words from here, joined until the text is as long as the name */
        char joined[MATRIX_NAME_LEN * 2];
        size_t used = 0;
        const char *q = p;
        while (*q && used < want_len) {
            while (*q && !isalnum((unsigned char)*q))
                q++;
            while (isalnum((unsigned char)*q) && used + 1 < sizeof joined)
                joined[used++] = (char)tolower((unsigned char)*q++);
        }
        joined[used] = '\0';
        if (strcmp(joined, want) == 0)
            return true;
        while (isalnum((unsigned char)*p))
            p++;
    }
    return false;
}

const matrix_row *matrix_local_row(const run_matrix *m, const char *gpu_name)
{
    const matrix_row *best = NULL;
    if (gpu_name) {
        for (int i = 0; i < m->n_rows; i++) {
            const matrix_row *r = &m->rows[i];
            /* the generic row names no GPU, even one whose name has the word */
            if (strcmp(r->backend, "cuda") == 0 && strcmp(r->env, MATRIX_GENERIC_GPU) != 0 &&
                env_names_gpu(r->env, gpu_name) &&
                (!best || strlen(r->env) > strlen(best->env)))
                best = r;
        }
    }
    if (best)
        return best;
    const matrix_row *generic = gpu_name ? matrix_find(m, MATRIX_GENERIC_GPU) : NULL;
    if (generic && strcmp(generic->backend, "cuda") == 0)
        return generic;
    return matrix_find(m, "cpu");
}
