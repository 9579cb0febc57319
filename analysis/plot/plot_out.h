/* Writing the data files gnuplot reads (bin/plotdata): whitespace-separated
 * columns, blocks separated by two blank lines (gnuplot's `index`), and a
 * ".vars" file of gnuplot assignments (ranges, ceilings, names, colours) that
 * the script loads, so gnuplot never parses CSV. Every file is written under a
 * temporary name and renamed when complete. */
#ifndef ROOFLINE_PLOT_OUT_H
#define ROOFLINE_PLOT_OUT_H

#include <stdio.h>

#include "../run.h"

typedef struct {
    FILE *f;
    char path[RUN_PATH_LEN + 64];
    char tmp[RUN_PATH_LEN + 72];
} plot_file;

/* Opens "<prefix><suffix>" for writing (through a temporary file). -1 with err. */
int plot_file_open(plot_file *pf, const char *prefix, const char *suffix, char *err,
                   size_t err_len);
/* Closes and renames; -1 with err when any write failed. */
int plot_file_close(plot_file *pf, char *err, size_t err_len);
void plot_file_abort(plot_file *pf);

/* mkdir -p base, then each folder of sub ("figures/data") inside it, which
 * must be a real folder: a link planted in a run folder (figures -> /etc)
 * would send the files outside it. -1 with err. */
int plot_make_dirs(const char *base, const char *sub, char *err, size_t err_len);

/* name = "value" with gnuplot's escapes; name = number (NaN as NaN). */
void plot_var_str(FILE *f, const char *name, const char *value);
void plot_var_num(FILE *f, const char *name, double value);
/* name_<i> = ... */
void plot_var_str_i(FILE *f, const char *name, int i, const char *value);
void plot_var_num_i(FILE *f, const char *name, int i, double value);

/* A string as one whitespace-free field of a data file: double-quoted with
 * quotes replaced (gnuplot's data strings have no escapes). */
void plot_data_str(FILE *f, const char *s);

/* Powers of ten at or below / at or above v (v > 0). */
double plot_decade_below(double v);
double plot_decade_above(double v);
/* The smallest of 1, 2, 5 x a power of ten at or above v (v > 0). */
double plot_nice_above(double v);
/* The largest of 1, 2, 5 x a power of ten at or below v (v > 0). */
double plot_nice_below(double v);

/* The unit of a roofline's rate axis: GFLOP/s, or TFLOP/s once the largest
 * rate reaches 10000 GFLOP/s (a GPU's). Returns the factor from GFLOP/s. */
double plot_rate_unit(double top_gflops, const char **unit);

/* The colour of a layer type, the same in every figure ("#rrggbb"); types
 * outside the known set take spare colours in turn (*spare counts them). */
const char *plot_type_color(const char *layer_type, int *spare);
/* The i-th colour of a set of series (models, environments). */
const char *plot_series_color(int i);
/* The i-th point type of a set of series (gnuplot pt numbers). */
int plot_series_point(int i);

#endif
