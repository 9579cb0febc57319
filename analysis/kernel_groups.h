/* A trace's kernel rows grouped as one roofline point each, the rows with
 * the same kernel, layer and phase, and what a group sums to (roofline.csv's
 * kernel rows, the GPU report's hierarchical roofline and cost check). */
#ifndef ROOFLINE_KERNEL_GROUPS_H
#define ROOFLINE_KERNEL_GROUPS_H

#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a group of kernel rows sums to; NaN until a measured value is added,
 * so a column empty in every row stays "not measured". */
typedef struct {
    double rows, duration_ns, fp64, fp32, fp16, tensor, dram_bytes, l2_bytes, l1_bytes;
} kernel_sums;

/* *acc += v, where NaN means "nothing measured yet" (a NaN v adds nothing). */
void nan_add(double *acc, double v);
kernel_sums kernel_sums_empty(void);
void kernel_sums_add(kernel_sums *s, const run_kernel *k);
/* FLOPs of every precision and unit; NaN when none was measured */
double kernel_sums_flops(const kernel_sums *s);

/* Groups numbered in order of their first row in the trace: group_of[i] is
 * row i's group, first_row[g] group g's first row (both t->n long). Returns
 * the number of groups, or -1 out of memory. */
int kernel_groups(const run_trace *t, int *group_of, int *first_row);

#ifdef __cplusplus
}
#endif

#endif
