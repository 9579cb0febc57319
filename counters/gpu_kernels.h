/* What the two GPU passes over a step hand back, in plain C so that the join,
 * the rows and their tests need no GPU: the timing pass's kernels (Activity
 * API), and the metric pass's launches (launch callbacks) with the counter
 * values of their ranges (Range Profiler, one range per kernel). */
#ifndef ROOFLINE_GPU_KERNELS_H
#define ROOFLINE_GPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One kernel of the timing pass. */
typedef struct {
    char *name;             /* as launched (mangled), owned by the list */
    uint64_t op;            /* gpu_op_id of the launching operation, 0: none */
    uint64_t start_ns, end_ns;
    uint32_t correlation;   /* of the API call that launched it: increases in call order */
    uint32_t stream;
    int grid[3], block[3];
} gpu_kernel;

typedef struct {
    gpu_kernel *v;
    int n, cap;
    size_t dropped;         /* activity records CUPTI could not store */
} gpu_kernel_list;

/* Appends a copy of *k (its name duplicated). 0, or -1 out of memory. */
int gpu_kernel_list_add(gpu_kernel_list *l, const gpu_kernel *k);
void gpu_kernel_list_free(gpu_kernel_list *l);
/* Puts the kernels in launch order: by correlation id, then start time. */
void gpu_kernel_list_sort(gpu_kernel_list *l);

/* FLOPs and bytes of one kernel, as counted or as estimated. NaN: not known. */
typedef struct {
    double flops_fp64, flops_fp32, flops_fp16, flops_tensor;
    double dram_read, dram_write, l2, l1;
} gpu_counts;

/* One launch seen by the metric pass's callbacks. */
typedef struct {
    char *name;             /* the launch's symbol name (mangled), owned; "" where the
                               callback gave none */
    uint64_t op;
} gpu_launch;

typedef struct {
    gpu_launch *launch;     /* kernel launches in call order */
    int n_launches, cap_launches;
    gpu_counts *counts;     /* per range, in execution order (= launch order: */
    int n_ranges;           /* auto range serialises every kernel) */
    size_t dropped;         /* ranges the counter data image could not hold */
    int graph_launches;     /* cuGraphLaunch calls: their kernels have no launch of their own */
    int memory_ops;         /* memset/memcpy calls, to explain a count mismatch */
    int unnamed;            /* launches whose callback gave no symbol name */
} gpu_metric_pass;

/* Appends a launch (name duplicated; NULL or "": unnamed, counted). 0, or -1
 * out of memory. */
int gpu_metric_pass_add_launch(gpu_metric_pass *m, const char *name, uint64_t op);
void gpu_metric_pass_free(gpu_metric_pass *m);

#ifdef __cplusplus
}
#endif

#endif
