#include "report_run.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A missing file is not an error (the stage that writes it may not have run);
 * a malformed one is. */
static int load_optional(const char *dir, const char *name, csv_table **out, char *err,
                         size_t err_len)
{
    char path[REPORT_PATH_LEN + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    *out = csv_read(path, err, err_len);
    return *out ? 0 : -1;
}

static void take_env(report_run *run, const csv_table *t)
{
    if (!t || run->env[0])
        return;
    const char *env = report_cell(t, 0, "env");
    if (*env)
        snprintf(run->env, sizeof run->env, "%s", env);
}

int report_run_load(report_run *run, const char *dir, char *err, size_t err_len)
{
    memset(run, 0, sizeof *run);
    struct stat st;
    if (stat(dir, &st) != 0) {
        snprintf(err, err_len, "%s: cannot read the run folder: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, err_len, "%s: not a folder (a run folder runs/<ENV>/<ID> was expected)", dir);
        return -1;
    }
    if (strlen(dir) >= sizeof run->dir) {
        snprintf(err, err_len, "%s: path too long", dir);
        return -1;
    }
    snprintf(run->dir, sizeof run->dir, "%s", dir);
    struct {
        const char *name;
        csv_table **slot;
    } files[] = {
        {"summary.csv", &run->summary},   {"roofline.csv", &run->roofline},
        {"variability.csv", &run->variability}, {"peaks.csv", &run->peaks},
        {"steps.csv", &run->steps},       {"configs.csv", &run->configs},
        {"scaling.csv", &run->scaling},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (load_optional(dir, files[i].name, files[i].slot, err, err_len) != 0) {
            report_run_free(run);
            return -1;
        }
        take_env(run, *files[i].slot);
    }
    char path[REPORT_PATH_LEN + 16];
    snprintf(path, sizeof path, "%s/env.json", dir);
    run->has_env_json = stat(path, &st) == 0;
    return 0;
}

void report_run_free(report_run *run)
{
    csv_free(run->peaks);
    csv_free(run->steps);
    csv_free(run->configs);
    csv_free(run->scaling);
    csv_free(run->roofline);
    csv_free(run->summary);
    csv_free(run->variability);
    run->peaks = run->steps = run->configs = run->scaling = NULL;
    run->roofline = run->summary = run->variability = NULL;
}

const char *report_cell(const csv_table *t, int row, const char *name)
{
    return csv_cell(t, row, csv_col(t, name));
}

double report_num(const csv_table *t, int row, const char *name)
{
    return csv_num(t, row, csv_col(t, name), NULL);
}

report_config report_config_of(const csv_table *t, int row)
{
    report_config c = {0};
    snprintf(c.model, sizeof c.model, "%s", report_cell(t, row, "model"));
    snprintf(c.precision, sizeof c.precision, "%s", report_cell(t, row, "precision"));
    double res = report_num(t, row, "res"), batch = report_num(t, row, "batch");
    c.res = isnan(res) ? 0 : (int)res;
    c.batch = isnan(batch) ? 0 : (int)batch;
    return c;
}

bool report_config_eq(const report_config *a, const report_config *b)
{
    return a->res == b->res && a->batch == b->batch && strcmp(a->model, b->model) == 0 &&
           strcmp(a->precision, b->precision) == 0;
}

bool report_row_is(const csv_table *t, int row, const report_config *c)
{
    report_config r = report_config_of(t, row);
    return report_config_eq(&r, c);
}

int report_find(const csv_table *t, const report_config *c, const char *col, const char *value)
{
    int k = col ? csv_col(t, col) : -1;
    for (int row = 0; t && row < csv_rows(t); row++)
        if (report_row_is(t, row, c) && (!col || strcmp(csv_cell(t, row, k), value) == 0))
            return row;
    return -1;
}

void report_config_name(const report_config *c, char *out, size_t len)
{
    snprintf(out, len, "%s @%d, batch %d, %s", c->model, c->res, c->batch, c->precision);
}

/* Doubles a list's capacity; -1 out of memory. */
static int grow(void **items, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *p = realloc(*items, (size_t)n * elem);
    if (!p)
        return -1;
    *items = p;
    *cap = n;
    return 0;
}

int report_rows_push(report_rows *r, int row)
{
    if (grow((void **)&r->rows, &r->cap, r->n + 1, sizeof *r->rows))
        return -1;
    r->rows[r->n++] = row;
    return 0;
}

void report_rows_free(report_rows *r)
{
    free(r->rows);
    *r = (report_rows){0};
}

int report_configs_distinct(const csv_table *t, bool (*keep)(const csv_table *, int),
                            report_configs *out)
{
    *out = (report_configs){0};
    for (int row = 0; t && row < csv_rows(t); row++) {
        if (keep && !keep(t, row))
            continue;
        report_config c = report_config_of(t, row);
        bool seen = false;
        for (int i = 0; i < out->n && !seen; i++)
            seen = report_config_eq(&out->items[i], &c);
        if (seen)
            continue;
        if (grow((void **)&out->items, &out->cap, out->n + 1, sizeof *out->items)) {
            report_configs_free(out);
            return -1;
        }
        out->items[out->n++] = c;
    }
    return 0;
}

void report_configs_free(report_configs *c)
{
    free(c->items);
    *c = (report_configs){0};
}

int report_strings_distinct(const csv_table *t, const char *name, report_strings *out)
{
    *out = (report_strings){0};
    int col = t ? csv_col(t, name) : -1;
    for (int row = 0; col >= 0 && row < csv_rows(t); row++) {
        const char *v = csv_cell(t, row, col);
        bool seen = false;
        for (int i = 0; i < out->n && !seen; i++)
            seen = strcmp(out->items[i], v) == 0;
        if (seen)
            continue;
        if (grow((void **)&out->items, &out->cap, out->n + 1, sizeof *out->items)) {
            report_strings_free(out);
            return -1;
        }
        out->items[out->n++] = v;
    }
    return 0;
}

void report_strings_free(report_strings *s)
{
    free(s->items);
    *s = (report_strings){0};
}

typedef struct {
    double key;
    int row;
    int order;
} keyed_row;

static int by_key(const void *a, const void *b)
{
    const keyed_row *x = a, *y = b;
    if (isnan(x->key) || isnan(y->key)) {
        if (isnan(x->key) != isnan(y->key))
            return isnan(x->key) - isnan(y->key);
    } else if (x->key != y->key) {
        return x->order * ((x->key > y->key) - (x->key < y->key));
    }
    return (x->row > y->row) - (x->row < y->row); /* qsort is not stable */
}

int *report_rows_by(const csv_table *t, const char *key, int order,
                    bool (*keep)(const csv_table *, int, const void *), const void *arg, int *n)
{
    *n = 0;
    int rows = t ? csv_rows(t) : 0;
    keyed_row *k = malloc(((size_t)rows + 1) * sizeof *k);
    int *out = malloc(((size_t)rows + 1) * sizeof *out);
    if (!k || !out) {
        free(k);
        free(out);
        return NULL;
    }
    int col = t ? csv_col(t, key) : -1;
    for (int row = 0; row < rows; row++)
        if (!keep || keep(t, row, arg))
            k[(*n)++] = (keyed_row){csv_num(t, row, col, NULL), row, order};
    qsort(k, (size_t)*n, sizeof *k, by_key);
    for (int i = 0; i < *n; i++)
        out[i] = k[i].row;
    free(k);
    return out;
}

report_run *report_runs_load(char **dirs, int n, char *err, size_t err_len)
{
    report_run *runs = calloc((size_t)n, sizeof *runs);
    if (!runs) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        if (report_run_load(&runs[i], dirs[i], err, err_len)) {
            report_runs_free(runs, i);
            return NULL;
        }
    }
    return runs;
}

void report_runs_free(report_run *runs, int n)
{
    for (int i = 0; i < n; i++)
        report_run_free(&runs[i]);
    free(runs);
}
