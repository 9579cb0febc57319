/* run_matrix.md: the experiment matrix, one Markdown table that is at once
 * the documentation and the configuration of `make bench ENV=...`. This
 * parses and validates the table and expands a row into the configurations
 * the runner trains (scripts/bench.sh through bin/matrix). */
#ifndef ROOFLINE_MATRIX_H
#define ROOFLINE_MATRIX_H

#include <stdbool.h>
#include <stddef.h>

#include "../../models/precision.h"

enum {
    MATRIX_NAME_LEN = 32,   /* ENV and model names, with the terminating NUL */
    MATRIX_MAX_LIST = 32,   /* items of one list cell */
    MATRIX_MAX_CONFIGS = 4096, /* configurations of one row */
    MATRIX_MAX_BATCH = 1 << 20,
    MATRIX_MAX_RANKS = 65536,
};

/* One item of the models cell: `name`, `name@res`, `name/batch` or
 * `name@res/batch`; 0 where nothing is pinned. */
typedef struct {
    char name[MATRIX_NAME_LEN];
    int res, batch;
} matrix_model;

typedef struct {
    int line; /* of the file, 1-based */
    char env[MATRIX_NAME_LEN];
    char backend[8];  /* cpu, cuda */
    char counters[8]; /* perf, cupti, off */
    char peaks[8];    /* quick, full, off */
    matrix_model models[MATRIX_MAX_LIST];
    int n_models;
    int res[MATRIX_MAX_LIST]; /* n_res 0: `-`, each model's default resolution */
    int n_res;
    int batch[MATRIX_MAX_LIST]; /* n_batch 0: `-`, every model pins its batch */
    int n_batch;
    precision prec[MATRIX_MAX_LIST];
    int n_prec;
    /* how the step runs: false launches it layer by layer (eager), true
     * replays one captured CUDA graph (bin/train --graph); column absent:
     * eager alone */
    bool graph[2];
    int n_graph;
    int warmup, iters, repeats;
    int ranks[MATRIX_MAX_LIST]; /* n_ranks 0: `-`, no scaling study */
    int n_ranks;
} matrix_row;

typedef struct {
    char model[MATRIX_NAME_LEN];
    int res, batch;
    precision prec;
    bool graph;
} matrix_config;

typedef struct {
    matrix_row *rows;
    int n_rows;
} run_matrix;

/* Parses `text` (the file's contents; `path` only names it in errors). The
 * table is the first one whose header's first cell is ENV. Returns 0, or -1
 * with one line in err: "run_matrix.md:14: column 'batch': '0' is not an
 * integer in 1..1048576 (ENV cpu)". Every model, number, precision, backend,
 * counter and peaks mode is checked here, so expanding a row cannot fail. */
int matrix_parse(const char *text, const char *path, run_matrix *m, char *err, size_t err_len);

/* matrix_parse of a file; -1 with "path: cannot open: ..." when unreadable. */
int matrix_load(const char *path, run_matrix *m, char *err, size_t err_len);

void matrix_free(run_matrix *m);

/* The row named env, or NULL. */
const matrix_row *matrix_find(const run_matrix *m, const char *env);

/* "cpu, cpu-full, h200, ..." into buf. */
const char *matrix_env_names(const run_matrix *m, char *buf, size_t len);

/* Writes the row's configurations to out (at most max; out may be NULL to
 * count) and returns how many there are: models in the order of the cell,
 * then resolutions, batches, precisions and graph modes, each crossed with
 * the next. */
int matrix_expand(const matrix_row *row, matrix_config *out, int max);

/* The generic GPU row: the one `local` stands for on a GPU that no row names. */
#define MATRIX_GENERIC_GPU "gpu"

/* The row `local` stands for: the cuda row whose name is a word, or adjacent
 * words run together, of the GPU's name ("NVIDIA H100 80GB HBM3" -> h100,
 * "NVIDIA GeForce RTX 4090" -> rtx4090); on a GPU no row names, the cuda row
 * MATRIX_GENERIC_GPU; else (no GPU, or no such row) the row named cpu.
 * gpu_name NULL: no GPU. NULL when none of them exists. */
const matrix_row *matrix_local_row(const run_matrix *m, const char *gpu_name);

#endif
