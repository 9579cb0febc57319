/* The files bin/analyze writes (analysis/README.md, "Outputs"): roofline.csv,
 * summary.csv and variability.csv, all or none. */
#ifndef ROOFLINE_OUTPUTS_H
#define ROOFLINE_OUTPUTS_H

#include <stddef.h>
#include <stdio.h>

#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ROOFLINE_CSV_HEADER                                                                  \
    "env,model,res,batch,precision,level,name,layer,layer_type,phase,count,duration_ns,"      \
    "time_share,flops,dram_bytes,l2_bytes,ai_dram,ai_l2,achieved_gflops,peak_ceiling,"       \
    "peak_gflops,dram_gbs,l2_gbs,ridge_ai,attainable_gflops,pct_of_attainable,bound,source,"  \
    "roof_ns,above_roof_ns"

#define SUMMARY_CSV_HEADER                                                                   \
    "env,backend,model,res,batch,precision,world_size,repeats,iters,images_per_s_median,"    \
    "images_per_s_q1,images_per_s_q3,step_ms_median,analytic_gflop_per_step,achieved_tflops," \
    "peak_ceiling,peak_gflops,pct_of_peak,mfu,mem_bound_time_share,status,graph,pct_of_roofs"

#define VARIABILITY_CSV_HEADER                                                               \
    "env,model,res,batch,precision,scope,n,mean,median,stddev,cv,min,max,ci95_lo,ci95_hi,"   \
    "drift_pct,outliers,graph"

/* Each file's header and rows (NULL: the header alone). */
void roofline_put(FILE *f, const roofline *rl);
void summary_put(FILE *f, const summary *s);
void variability_put(FILE *f, const variability *v);

/* Writes the three files into dir: every one to its temporary name first,
 * then, when all were written, each renamed into place; on any failure the
 * temporary files are removed and the files already in dir stay as they
 * were. Returns 0, or -1 with the reason in err. */
int outputs_write(const char *dir, const roofline *rl, const summary *s, const variability *v,
                  char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
