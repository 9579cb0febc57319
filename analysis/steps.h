/* steps.csv grouped per configuration: the step times summary.csv and
 * variability.csv are computed from. */
#ifndef ROOFLINE_STEPS_H
#define ROOFLINE_STEPS_H

#include <stddef.h>

#include "csv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One configuration (env, backend, model, res, batch, precision, world_size):
 * rank 0's rows, ordered by repeat, then iter. Every rank times the same
 * synchronous step, so rank 0 speaks for the configuration. Strings are
 * borrowed from the table. */
typedef struct {
    const char *env, *backend, *model, *precision;
    int res, batch, world_size;
    int n;
    double *step_ms;
    double *images_per_s;
    int *repeat;
    int repeats; /* distinct repeat values */
    int iters;   /* the most rows one repeat has */
} step_config;

typedef struct {
    step_config *configs; /* in order of first appearance */
    int n;
} step_table;

/* Returns 0, or -1 with one line in err naming path, the line, the column and
 * the value (a missing column, a step_ms that is not a positive number, a
 * rank or repeat that is not a whole number). */
int steps_group(const csv_table *t, const char *path, step_table *out, char *err,
                size_t err_len);
void steps_free(step_table *s);

/* The step times of repeat `repeat`, in iteration order: *n values from
 * c->step_ms + the returned offset. */
int steps_of_repeat(const step_config *c, int repeat, int *n);

#ifdef __cplusplus
}
#endif

#endif
