#include "variability.h"

#include <stdio.h>
#include <stdlib.h>

#include "csv.h"
#include "stats.h"

static void put_row(FILE *f, const step_config *c, const char *scope, const stats_summary *s)
{
    csv_put_field(f, c->env);
    fputc(',', f);
    csv_put_field(f, c->model);
    fprintf(f, ",%d,%d,", c->res, c->batch);
    csv_put_field(f, c->precision);
    fprintf(f, ",%s,%d", scope, s->n);
    const double v[] = {s->mean, s->median, s->stddev,  s->cv,      s->min,
                        s->max,  s->ci95_lo, s->ci95_hi, s->drift_pct};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        fputc(',', f);
        csv_put_num(f, v[i]);
    }
    fprintf(f, ",%d\n", s->outliers);
}

/* The rows of one configuration; -1 when out of memory. */
static int put_config(FILE *f, const step_config *c)
{
    stats_summary s;
    double *medians = malloc(((size_t)c->repeats + 1) * sizeof *medians);
    if (!medians)
        return -1;
    int k = 0;
    for (int i = 0, n; i < c->n; i += n) { /* a repeat's rows are contiguous */
        int start = steps_of_repeat(c, c->repeat[i], &n);
        if (stats_describe(c->step_ms + start, n, &s)) {
            free(medians);
            return -1;
        }
        char scope[32];
        snprintf(scope, sizeof scope, "repeat=%d", c->repeat[i]);
        put_row(f, c, scope, &s);
        medians[k++] = s.median;
    }
    int rc = stats_describe(c->step_ms, c->n, &s);
    if (!rc)
        put_row(f, c, "iterations", &s);
    if (!rc)
        rc = stats_describe(medians, k, &s);
    if (!rc)
        put_row(f, c, "repeats", &s);
    free(medians);
    return rc;
}

int variability_write(const step_table *steps, const char *path, char *err, size_t err_len)
{
    char tmp[4096];
    FILE *f = csv_create(path, tmp, sizeof tmp, err, err_len);
    if (!f)
        return -1;
    fputs(VARIABILITY_CSV_HEADER "\n", f);
    for (int k = 0; steps && k < steps->n; k++) {
        if (steps->configs[k].n == 0)
            continue;
        if (put_config(f, &steps->configs[k])) {
            csv_abort(f, tmp);
            snprintf(err, err_len, "%s: out of memory", path);
            return -1;
        }
    }
    return csv_commit(f, tmp, path, err, err_len);
}
