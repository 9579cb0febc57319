/* A trace's kernel rows grouped as one roofline point each: the rows with
 * the same kernel, layer and phase (roofline.csv's kernel rows, the GPU
 * report's hierarchical roofline). */
#ifndef ROOFLINE_KERNEL_GROUPS_H
#define ROOFLINE_KERNEL_GROUPS_H

#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Groups numbered in order of their first row in the trace: group_of[i] is
 * row i's group, first_row[g] group g's first row (both t->n long). Returns
 * the number of groups, or -1 out of memory. */
int kernel_groups(const run_trace *t, int *group_of, int *first_row);

#ifdef __cplusplus
}
#endif

#endif
