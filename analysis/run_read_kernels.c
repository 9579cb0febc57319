/* kernels.csv (DESIGN.md §7): the traced steps, one row per kernel, grouped
 * per configuration (env, model, res, batch, precision). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run_read.h"

static const char *const kernel_columns[] = {
    "env", "model", "res", "batch", "precision", "kernel", "layer", "layer_type", "phase",
    "duration_ns", "flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor",
    "dram_read_bytes", "dram_write_bytes", "l2_bytes", "source", NULL};
enum { K_ENV, K_MODEL, K_RES, K_BATCH, K_PREC, K_KERNEL, K_LAYER, K_LTYPE, K_PHASE, K_DUR,
       K_F64, K_F32, K_F16, K_TENSOR, K_DRAM_R, K_DRAM_W, K_L2, K_SOURCE, K_COUNT };

static bool same_trace(const run_trace *t, const col_file *f, const int *cols, int row, int res,
                       int batch)
{
    return t->res == res && t->batch == batch &&
           strcmp(t->model, col_text(f, row, cols[K_MODEL])) == 0 &&
           strcmp(t->precision, col_text(f, row, cols[K_PREC])) == 0 &&
           strcmp(t->env, col_text(f, row, cols[K_ENV])) == 0;
}

static int parse_numbers(col_file *f, const int *cols, int col_l1, int i, run_kernel *k)
{
    struct {
        int col;
        double *out;
    } nums[] = {{cols[K_DUR], &k->duration_ns},     {cols[K_F64], &k->flops_fp64},
                {cols[K_F32], &k->flops_fp32},      {cols[K_F16], &k->flops_fp16},
                {cols[K_TENSOR], &k->flops_tensor}, {cols[K_DRAM_R], &k->dram_read_bytes},
                {cols[K_DRAM_W], &k->dram_write_bytes}, {cols[K_L2], &k->l2_bytes},
                {col_l1, &k->l1_bytes}};
    for (size_t j = 0; j < sizeof nums / sizeof nums[0]; j++)
        if (col_num(f, i, nums[j].col, &COL_OPT_NONNEG, nums[j].out))
            return -1;
    return 0;
}

int run_read_kernels(run_model *m, col_file *f)
{
    int cols[K_COUNT];
    if (col_require(f, kernel_columns, cols))
        return -1;
    int col_repeat = col_optional(f, "repeat"), col_l1 = col_optional(f, "l1_bytes");
    int n = csv_rows(f->t);
    run_kernel *parsed = calloc((size_t)n + 1, sizeof *parsed);
    int *trace_of = malloc(((size_t)n + 1) * sizeof *trace_of);
    m->traces = calloc((size_t)n + 1, sizeof *m->traces);
    run_kernel *rows = calloc((size_t)n + 1, sizeof *rows);
    int rc = -1;
    if (!parsed || !trace_of || !m->traces || !rows) {
        col_oom(f);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        int res, batch;
        run_kernel *k = &parsed[i];
        if (col_int(f, i, cols[K_RES], &COL_COUNT_1, &res) ||
            col_int(f, i, cols[K_BATCH], &COL_COUNT_1, &batch) ||
            parse_numbers(f, cols, col_l1, i, k))
            goto done;
        k->kernel = col_text(f, i, cols[K_KERNEL]);
        k->layer = col_text(f, i, cols[K_LAYER]);
        k->layer_type = col_text(f, i, cols[K_LTYPE]);
        k->phase = col_text(f, i, cols[K_PHASE]);
        k->source = col_text(f, i, cols[K_SOURCE]);
        k->repeat = col_text(f, i, col_repeat);
        /* a trace's rows come together: try the last one first */
        int t = m->n_traces - 1;
        if (t < 0 || !same_trace(&m->traces[t], f, cols, i, res, batch))
            for (t = 0; t < m->n_traces; t++)
                if (same_trace(&m->traces[t], f, cols, i, res, batch))
                    break;
        if (t == m->n_traces)
            m->traces[m->n_traces++] = (run_trace){.env = col_text(f, i, cols[K_ENV]),
                                                   .model = col_text(f, i, cols[K_MODEL]),
                                                   .precision = col_text(f, i, cols[K_PREC]),
                                                   .res = res,
                                                   .batch = batch};
        trace_of[i] = t;
        m->traces[t].n++;
    }
    /* each trace a slice of one array, in file order within it */
    int start = 0;
    for (int t = 0; t < m->n_traces; t++) {
        m->traces[t].rows = rows + start;
        start += m->traces[t].n;
        m->traces[t].n = 0;
    }
    for (int i = 0; i < n; i++) {
        run_trace *t = &m->traces[trace_of[i]];
        t->rows[t->n++] = parsed[i];
    }
    if (m->n_traces == 0)
        free(rows);
    rows = NULL;
    rc = 0;
done:
    free(rows);
    free(parsed);
    free(trace_of);
    return rc;
}
