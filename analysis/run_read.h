/* The loader's readers, one per file of a run folder (run_read_*.c, called by
 * run_load.c). Each takes the file's table (kept by the model: the strings
 * it sets point into it) and fills its part of the model; -1 with one line
 * in f->err naming the file, the line and the column. */
#ifndef ROOFLINE_RUN_READ_H
#define ROOFLINE_RUN_READ_H

#include "run.h"
#include "run_columns.h"
#include "run_env.h"

int run_read_peaks(run_model *m, col_file *f);
int run_read_steps(run_model *m, col_file *f);
/* reference.csv: steps.csv's format, into m->reference */
int run_read_reference(run_model *m, col_file *f);
int run_read_kernels(run_model *m, col_file *f);
int run_read_configs(run_model *m, col_file *f);
int run_read_scaling(run_model *m, col_file *f);
int run_read_scaling_model(run_model *m, col_file *f);
int run_read_roofline(run_model *m, col_file *f);
int run_read_summary(run_model *m, col_file *f);
int run_read_variability(run_model *m, col_file *f);


#endif
