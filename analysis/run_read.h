/* The loader's readers, one per file of a run folder (run_read_*.c, called by
 * run_load.c). Each takes the file's table (kept by the model: the strings
 * it sets point into it) and fills its part of the model; -1 with one line
 * in f->err naming the file, the line and the column. */
#ifndef ROOFLINE_RUN_READ_H
#define ROOFLINE_RUN_READ_H

#include "run.h"
#include "run_columns.h"

int run_read_peaks(run_model *m, col_file *f);
int run_read_steps(run_model *m, col_file *f);
int run_read_kernels(run_model *m, col_file *f);
int run_read_configs(run_model *m, col_file *f);
int run_read_scaling(run_model *m, col_file *f);
int run_read_roofline(run_model *m, col_file *f);
int run_read_summary(run_model *m, col_file *f);
int run_read_variability(run_model *m, col_file *f);

/* env.json (never an error: see run_env in run.h); -1 only out of memory. */
int run_read_env(run_env *env, const char *path);
/* The scan of env.json's text buf[0..len-1] (need not end in a NUL). */
int run_env_parse(run_env *env, const char *buf, size_t len);

/* "out of memory" naming the file; returns -1. */
int run_read_oom(col_file *f);

#endif
