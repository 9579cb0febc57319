#include "steps.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char *const step_columns[] = {"env",  "backend", "model",   "res",
                                           "batch", "precision", "world_size", "rank",
                                           "repeat", "iter",   "step_ms", "images_per_s",
                                           NULL};
enum { S_ENV, S_BACKEND, S_MODEL, S_RES, S_BATCH, S_PREC, S_WORLD, S_RANK, S_REPEAT, S_ITER,
       S_MS, S_IPS, S_COUNT };

typedef struct {
    int row, config;
    double num[S_COUNT];
} step_in;

/* What a numeric column accepts: whole numbers from `min`, or positive reals. */
typedef struct {
    int col;
    double min;
    bool whole, required;
    const char *accepted;
} rule;

static const rule rules[] = {
    {S_RES, 1, true, true, "a whole number >= 1"},
    {S_BATCH, 1, true, true, "a whole number >= 1"},
    {S_WORLD, 1, true, true, "a whole number >= 1"},
    {S_RANK, 0, true, true, "a whole number >= 0"},
    {S_REPEAT, 0, true, true, "a whole number >= 0"},
    {S_ITER, 0, true, true, "a whole number >= 0"},
    {S_MS, 0, false, true, "milliseconds > 0"},
    {S_IPS, 0, false, false, "images/s >= 0, or empty"},
};

static int parse_row(const csv_table *t, const char *path, const int *cols, int i, step_in *s,
                     char *err, size_t err_len)
{
    s->row = i;
    for (size_t j = 0; j < sizeof rules / sizeof *rules; j++) {
        const rule *r = &rules[j];
        double *v = &s->num[r->col];
        if (csv_get_num(t, i, cols[r->col], path, r->required, v, err, err_len))
            return -1;
        bool bad = *v < r->min || (r->whole && (*v != floor(*v) || *v > 1e9)) ||
                   (r->col == S_MS && !(*v > 0));
        if (bad) {
            snprintf(err, err_len, "%s:%d: %s '%s' is out of range (expected %s)", path,
                     csv_line(t, i), step_columns[r->col], csv_cell(t, i, cols[r->col]),
                     r->accepted);
            return -1;
        }
    }
    return 0;
}

static bool same_config(const csv_table *t, const int *cols, int a, int b)
{
    static const int key[] = {S_ENV, S_BACKEND, S_MODEL, S_RES, S_BATCH, S_PREC, S_WORLD};
    for (size_t j = 0; j < sizeof key / sizeof *key; j++)
        if (strcmp(csv_cell(t, a, cols[key[j]]), csv_cell(t, b, cols[key[j]])) != 0)
            return false;
    return true;
}

static int cmp_step(const void *pa, const void *pb)
{
    const step_in *a = *(const step_in *const *)pa, *b = *(const step_in *const *)pb;
    if (a->num[S_REPEAT] != b->num[S_REPEAT])
        return a->num[S_REPEAT] < b->num[S_REPEAT] ? -1 : 1;
    if (a->num[S_ITER] != b->num[S_ITER])
        return a->num[S_ITER] < b->num[S_ITER] ? -1 : 1;
    return (a->row > b->row) - (a->row < b->row);
}

/* Rank 0's rows of config k, sorted, into c's arrays. */
static int fill_config(step_config *c, int k, step_in *in, int n, step_in **scratch)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (in[i].config == k && in[i].num[S_RANK] == 0)
            scratch[m++] = &in[i];
    qsort(scratch, (size_t)m, sizeof *scratch, cmp_step);
    c->step_ms = malloc(((size_t)m + 1) * sizeof *c->step_ms);
    c->images_per_s = malloc(((size_t)m + 1) * sizeof *c->images_per_s);
    c->repeat = malloc(((size_t)m + 1) * sizeof *c->repeat);
    if (!c->step_ms || !c->images_per_s || !c->repeat)
        return -1;
    c->n = m;
    int run = 0;
    for (int i = 0; i < m; i++) {
        c->step_ms[i] = scratch[i]->num[S_MS];
        c->images_per_s[i] = scratch[i]->num[S_IPS];
        c->repeat[i] = (int)scratch[i]->num[S_REPEAT];
        bool new_repeat = i == 0 || c->repeat[i] != c->repeat[i - 1];
        c->repeats += new_repeat;
        run = new_repeat ? 1 : run + 1;
        if (run > c->iters)
            c->iters = run;
    }
    return 0;
}

int steps_group(const csv_table *t, const char *path, step_table *out, char *err,
                size_t err_len)
{
    *out = (step_table){0};
    int cols[S_COUNT];
    if (csv_require(t, path, step_columns, cols, err, err_len))
        return -1;
    int n = csv_rows(t);
    step_in *in = calloc((size_t)n + 1, sizeof *in);
    step_in **scratch = malloc(((size_t)n + 1) * sizeof *scratch);
    int *first_row = malloc(((size_t)n + 1) * sizeof *first_row);
    out->configs = calloc((size_t)n + 1, sizeof *out->configs);
    int rc = -1;
    if (!in || !scratch || !first_row || !out->configs) {
        snprintf(err, err_len, "%s: out of memory", path);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        if (parse_row(t, path, cols, i, &in[i], err, err_len))
            goto done;
        int k = 0;
        while (k < out->n && !same_config(t, cols, first_row[k], i))
            k++;
        if (k == out->n) {
            first_row[out->n] = i;
            out->configs[out->n++] = (step_config){
                .env = csv_cell(t, i, cols[S_ENV]),
                .backend = csv_cell(t, i, cols[S_BACKEND]),
                .model = csv_cell(t, i, cols[S_MODEL]),
                .precision = csv_cell(t, i, cols[S_PREC]),
                .res = (int)in[i].num[S_RES],
                .batch = (int)in[i].num[S_BATCH],
                .world_size = (int)in[i].num[S_WORLD]};
        }
        in[i].config = k;
    }
    for (int k = 0; k < out->n; k++)
        if (fill_config(&out->configs[k], k, in, n, scratch)) {
            snprintf(err, err_len, "%s: out of memory", path);
            goto done;
        }
    rc = 0;
done:
    free(in);
    free(scratch);
    free(first_row);
    if (rc)
        steps_free(out);
    return rc;
}

void steps_free(step_table *s)
{
    for (int k = 0; s->configs && k < s->n; k++) {
        free(s->configs[k].step_ms);
        free(s->configs[k].images_per_s);
        free(s->configs[k].repeat);
    }
    free(s->configs);
    *s = (step_table){0};
}

int steps_of_repeat(const step_config *c, int repeat, int *n)
{
    int start = 0;
    while (start < c->n && c->repeat[start] != repeat)
        start++;
    int end = start;
    while (end < c->n && c->repeat[end] == repeat)
        end++;
    *n = end - start;
    return start;
}
