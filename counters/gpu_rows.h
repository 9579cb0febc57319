/* The kernels.csv rows of a GPU trace (DESIGN.md §7, header KERNELS_CSV_HEADER):
 * one per kernel the step launched, with the layer and phase of the operation
 * that launched it, its duration from the timing pass, and its FLOPs and bytes
 * either counted by the metric pass (source "cupti") or, where counters could
 * not be read, the analytic FLOPs and bytes of its operation (models/cost.h)
 * spread over the operation's kernels in proportion to their durations
 * (source "analytic", L2 and L1 bytes left empty: the model has none). */
#ifndef ROOFLINE_GPU_ROWS_H
#define ROOFLINE_GPU_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../models/step.h"
#include "gpu_kernels.h"
#include "gpu_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A kernel launched outside every operation of the step. */
enum { GPU_ROW_NO_LAYER = -100 };

typedef struct {
    int seq;                /* launch order within the step, from 0 */
    char *kernel;           /* readable (demangled) name, owned */
    int layer;              /* a layer, STEP_LOSS, STEP_ALL_LAYERS or GPU_ROW_NO_LAYER */
    gpu_phase phase;
    int64_t duration_ns;
    gpu_counts c;           /* NaN: not known (written as an empty cell) */
    bool counted;           /* c from the counters ("cupti"), else "analytic" */
} gpu_row;

/* The row's operation, from a kernel's op id (GPU_ROW_NO_LAYER for none);
 * an NCCL kernel is phase comm whatever launched it. */
void gpu_row_set_op(gpu_row *r, uint64_t op, const char *mangled_name);

/* The analytic FLOPs and bytes of one operation: the FLOPs its own and those
 * of the operations the backend fused into it (backend_ops.fused_into); the
 * DRAM bytes what the backend says its kernels move (backend_ops.op_bytes),
 * else the cost model's minimal bytes of those operations; communication
 * and unattributed kernels get 0 FLOPs and unknown bytes. Conv and FC FLOPs go
 * to flops_tensor in the tensor-core precisions, everything else to flops_fp32. */
gpu_counts gpu_op_analytic(const step_driver *d, int batch, precision prec, int layer,
                           gpu_phase phase);

/* Gives every row that is not counted its share of its operation's analytic
 * cost, by duration (equal shares where the durations sum to 0); the shares
 * of an operation add up exactly to its cost. Returns how many operations of
 * the step had analytic FLOPs but no kernel (their cost is in no row), or -1
 * out of memory. */
int gpu_rows_spread_analytic(const step_driver *d, int batch, precision prec, gpu_row *rows,
                             int n);

/* The kernel column: the name with commas made ';' and quotes '\'' so that the
 * row needs no quoting (as the CPU trace does). */
void gpu_kernel_field(const char *name, char *out, size_t len);

typedef struct {
    const char *env;
    int repeat;
    int batch;
    precision prec;
} gpu_csv_labels;

/* Appends the rows to the kernels.csv at path, the header first when the file
 * is new or empty. Returns 0, or -1 with one line in err. */
int gpu_rows_write(const char *path, const network *net, const gpu_csv_labels *labels,
                   const gpu_row *rows, int n, char *err, size_t err_len);

void gpu_rows_free(gpu_row *rows, int n);

#ifdef __cplusplus
}
#endif

#endif
