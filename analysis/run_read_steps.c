/* steps.csv (DESIGN.md §7): every timed iteration, grouped per configuration
 * (env, backend, model, res, batch, precision, world_size, graph); and
 * reference.csv, PyTorch's steps in the same format. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run_read.h"

static const char *const step_columns[] = {"env",  "backend", "model",   "res",
                                           "batch", "precision", "world_size", "rank",
                                           "repeat", "iter",   "step_ms", "images_per_s",
                                           NULL};
enum { S_ENV, S_BACKEND, S_MODEL, S_RES, S_BATCH, S_PREC, S_WORLD, S_RANK, S_REPEAT, S_ITER,
       S_MS, S_IPS, S_COUNT };

static const col_rule milliseconds = {0, INFINITY, false, true, true, "milliseconds > 0"};
static const col_rule images_per_s = {0, INFINITY, false, false, false, "images/s >= 0, or empty"};
static const col_rule bytes = {0, INFINITY, true, false, false, "a whole number of bytes, or empty"};

typedef struct {
    int row, config;
    int rank, repeat, iter;
    double ms, ips, mem;
} step_in;

static bool same_key(const run_key *k, const col_file *f, const int *cols, int row,
                     const run_key *parsed)
{
    return k->res == parsed->res && k->batch == parsed->batch &&
           k->world_size == parsed->world_size && k->graph == parsed->graph &&
           strcmp(k->model, col_text(f, row, cols[S_MODEL])) == 0 &&
           strcmp(k->precision, col_text(f, row, cols[S_PREC])) == 0 &&
           strcmp(k->env, col_text(f, row, cols[S_ENV])) == 0 &&
           strcmp(k->backend, col_text(f, row, cols[S_BACKEND])) == 0;
}

static int parse_row(col_file *f, const int *cols, int col_mem, int col_graph, int i, step_in *s,
                     run_key *key)
{
    s->row = i;
    if (col_int(f, i, cols[S_RES], &COL_COUNT_1, &key->res) ||
        col_int(f, i, cols[S_BATCH], &COL_COUNT_1, &key->batch) ||
        col_int(f, i, cols[S_WORLD], &COL_COUNT_1, &key->world_size) ||
        col_int(f, i, cols[S_RANK], &COL_COUNT_0, &s->rank) ||
        col_int(f, i, cols[S_REPEAT], &COL_COUNT_0, &s->repeat) ||
        col_int(f, i, cols[S_ITER], &COL_COUNT_0, &s->iter) ||
        col_num(f, i, cols[S_MS], &milliseconds, &s->ms) ||
        col_num(f, i, cols[S_IPS], &images_per_s, &s->ips) ||
        col_num(f, i, col_mem, &bytes, &s->mem) || col_on_off(f, i, col_graph, &key->graph))
        return -1;
    key->env = col_text(f, i, cols[S_ENV]);
    key->backend = col_text(f, i, cols[S_BACKEND]);
    key->model = col_text(f, i, cols[S_MODEL]);
    key->precision = col_text(f, i, cols[S_PREC]);
    return 0;
}

static int cmp_step(const void *pa, const void *pb)
{
    const step_in *a = *(const step_in *const *)pa, *b = *(const step_in *const *)pb;
    int d[] = {a->config - b->config, a->rank - b->rank, a->repeat - b->repeat,
               a->iter - b->iter, a->row - b->row};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        if (d[i])
            return d[i] < 0 ? -1 : 1;
    return 0;
}

/* Rank 0's rows of one configuration (sorted[0..m-1], in order) into c. */
static int fill_config(run_steps *c, step_in *const *sorted, int m)
{
    c->step_ms = malloc(((size_t)m + 1) * sizeof *c->step_ms);
    c->images_per_s = malloc(((size_t)m + 1) * sizeof *c->images_per_s);
    c->repeat = malloc(((size_t)m + 1) * sizeof *c->repeat);
    if (!c->step_ms || !c->images_per_s || !c->repeat)
        return -1;
    c->n = m;
    int run = 0;
    for (int i = 0; i < m; i++) {
        c->step_ms[i] = sorted[i]->ms;
        c->images_per_s[i] = sorted[i]->ips;
        c->repeat[i] = sorted[i]->repeat;
        bool new_repeat = i == 0 || c->repeat[i] != c->repeat[i - 1];
        c->repeats += new_repeat;
        run = new_repeat ? 1 : run + 1;
        if (run > c->iters)
            c->iters = run;
    }
    return 0;
}

/* Groups the parsed rows (their config set), checks that no (rank, repeat,
 * iter) of a configuration appears twice, and fills each configuration. */
static int group(run_steps *steps, col_file *f, step_in *in, int n)
{
    step_in **sorted = malloc(((size_t)n + 1) * sizeof *sorted);
    if (!sorted)
        return col_oom(f);
    for (int i = 0; i < n; i++)
        sorted[i] = &in[i];
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_step);
    int rc = 0;
    for (int i = 1; i < n && !rc; i++) {
        const step_in *a = sorted[i - 1], *b = sorted[i];
        if (a->config == b->config && a->rank == b->rank && a->repeat == b->repeat &&
            a->iter == b->iter) {
            col_error(f, b->row, "rank %d, repeat %d, iter %d of this configuration is already on line %d",
                      b->rank, b->repeat, b->iter, csv_line(f->t, a->row));
            rc = -1;
        }
    }
    for (int i = 0; i < n && !rc;) {
        int k = sorted[i]->config, end = i, rank0 = i;
        while (end < n && sorted[end]->config == k)
            end++;
        while (rank0 < end && sorted[rank0]->rank == 0)
            rank0++;
        run_steps *c = &steps[k];
        for (int j = i; j < end; j++)
            if (!isnan(sorted[j]->mem) && !(sorted[j]->mem <= c->peak_mem_bytes))
                c->peak_mem_bytes = sorted[j]->mem;
        if (fill_config(c, sorted + i, rank0 - i))
            rc = col_oom(f);
        i = end;
    }
    free(sorted);
    return rc;
}

static int read_steps(col_file *f, run_steps **out, int *n_out)
{
    int cols[S_COUNT];
    if (col_require(f, step_columns, cols))
        return -1;
    /* older runs lack them (every step then eager) */
    int col_mem = col_optional(f, "peak_mem_bytes"), col_graph = col_optional(f, "graph");
    int n = csv_rows(f->t);
    step_in *in = calloc((size_t)n + 1, sizeof *in);
    run_steps *steps = calloc((size_t)n + 1, sizeof *steps);
    *out = steps;
    if (!in || !steps) {
        free(in);
        return col_oom(f);
    }
    int rc = 0, n_steps = 0;
    for (int i = 0; i < n && !rc; i++) {
        run_key key;
        if (parse_row(f, cols, col_mem, col_graph, i, &in[i], &key)) {
            rc = -1;
            break;
        }
        /* rows come in runs of one configuration: try the last one first */
        int k = n_steps - 1;
        if (k < 0 || !same_key(&steps[k].key, f, cols, i, &key))
            for (k = 0; k < n_steps; k++)
                if (same_key(&steps[k].key, f, cols, i, &key))
                    break;
        if (k == n_steps)
            steps[n_steps++] = (run_steps){.key = key, .peak_mem_bytes = NAN};
        in[i].config = k;
    }
    *n_out = n_steps;
    if (!rc)
        rc = group(steps, f, in, n);
    free(in);
    return rc;
}

int run_read_steps(run_model *m, col_file *f)
{
    return read_steps(f, &m->steps, &m->n_steps);
}

int run_read_reference(run_model *m, col_file *f)
{
    return read_steps(f, &m->reference, &m->n_reference);
}
