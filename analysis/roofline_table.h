/* roofline.csv: kernels.csv grouped per configuration into points per
 * kernel, per layer type and per whole step (analysis/README.md). */
#ifndef ROOFLINE_ROOFLINE_TABLE_H
#define ROOFLINE_ROOFLINE_TABLE_H

#include <stddef.h>

#include "csv.h"
#include "roofline.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ROOFLINE_CSV_HEADER                                                                  \
    "env,model,res,batch,precision,level,name,layer,layer_type,phase,count,duration_ns,"      \
    "time_share,flops,dram_bytes,l2_bytes,ai_dram,ai_l2,achieved_gflops,peak_ceiling,"       \
    "peak_gflops,dram_gbs,l2_gbs,ridge_ai,attainable_gflops,pct_of_attainable,bound,source"

/* One output row. Strings are borrowed from the kernels table (or are
 * literals), so the table must outlive the roofline. */
typedef struct {
    const char *level;      /* kernel, layer_type, step */
    const char *name;       /* kernel name, layer type, or "step" */
    const char *layer, *layer_type, *phase, *source;
    double count;           /* kernel rows per traced step */
    double time_share;      /* of the traced step's time */
    char ceiling[ROOF_CEILING_LEN];
    roof_point pt;          /* per traced step: sums over repeats / repeats */
} roof_row;

typedef struct {
    const char *env, *model, *precision;
    int res, batch;
    int repeats;            /* distinct `repeat` values traced (1 without the column) */
    roof_row *rows;         /* kernels in order of first appearance, then layer types, then the step */
    int n;
    double mem_bound_share; /* step time in memory-bound kernels; NaN when no kernel has a bound */
} roof_config;

typedef struct {
    roof_config *configs;
    int n;
} roofline;

/* Groups kernels.csv (path for messages) into configurations (env, model,
 * res, batch, precision) and, within one, kernel rows with the same kernel,
 * layer and phase. Returns 0, or -1 with one line in err naming the file, the
 * line and the value (a missing column, a count that is not a number). */
int roofline_build(const csv_table *kernels, const char *path, const roofs *r, roofline *out,
                   char *err, size_t err_len);
void roofline_free(roofline *rl);

/* The configuration with this key, or NULL. */
const roof_config *roofline_find(const roofline *rl, const char *env, const char *model,
                                 int res, int batch, const char *precision);

/* Writes roofline.csv atomically; rl = NULL writes the header alone. */
int roofline_write(const roofline *rl, const char *path, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
