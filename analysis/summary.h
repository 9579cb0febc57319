/* summary.csv: one row per configuration (analysis/README.md): throughput
 * from steps.csv, the runner's status from configs.csv, analytic FLOPs from
 * the cost model, the compute roof from peaks.csv and the memory-bound time
 * share from the roofline. */
#ifndef ROOFLINE_SUMMARY_H
#define ROOFLINE_SUMMARY_H

#include <stddef.h>

#include "csv.h"
#include "roofline.h"
#include "roofline_table.h"
#include "steps.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SUMMARY_CSV_HEADER                                                                   \
    "env,backend,model,res,batch,precision,world_size,repeats,iters,images_per_s_median,"    \
    "images_per_s_q1,images_per_s_q3,step_ms_median,analytic_gflop_per_step,achieved_tflops," \
    "peak_ceiling,peak_gflops,pct_of_peak,mfu,mem_bound_time_share,status"

enum { SUMMARY_STATUS_LEN = 128 };

/* NaN (and -1 for the counts) means empty: a configuration the runner
 * attempted without a step row, or a model the cost model does not know. */
typedef struct {
    const char *env, *backend, *model, *precision; /* borrowed from the input tables */
    int res, batch, world_size;
    int repeats, iters;
    double ips_median, ips_q1, ips_q3;
    double step_ms_median;
    double analytic_gflop;      /* per step of one rank's batch */
    double achieved_tflops;     /* analytic_gflop / step_ms_median */
    char ceiling[ROOF_CEILING_LEN];
    double peak_gflops;
    double pct_of_peak, mfu;    /* percent */
    double mem_bound_share;     /* 0..1, from the traced step */
    char status[SUMMARY_STATUS_LEN];
} summary_row;

typedef struct {
    summary_row *rows;
    int n;
} summary;

/* Builds the rows: every configuration of steps, then each configuration of
 * configs.csv (configs_path for messages; configs may be NULL) that has no
 * step rows, with its status and empty numbers. rl and r may be NULL or
 * empty. Returns 0, or -1 with one line in err. */
int summary_build(const step_table *steps, const csv_table *configs, const char *configs_path,
                  const roofline *rl, const roofs *r, summary *out, char *err, size_t err_len);
void summary_free(summary *s);

/* Analytic FLOPs of one training step from the cost model (GFLOP), or NaN for
 * a model, resolution or precision it cannot build. */
double summary_analytic_gflop(const char *model, int res, int batch, const char *prec_name);

/* Writes summary.csv atomically; s = NULL writes the header alone. */
int summary_write(const summary *s, const char *path, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
