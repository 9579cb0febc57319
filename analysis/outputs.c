#include "outputs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "csv.h"

static void put_text(FILE *f, const char *s)
{
    csv_put_field(f, s);
    fputc(',', f);
}

static void put_num(FILE *f, double v)
{
    csv_put_num(f, v);
    fputc(',', f);
}

/* Empty for a count that is absent (-1). */
static void put_count(FILE *f, int v)
{
    if (v >= 0)
        fprintf(f, "%d", v);
    fputc(',', f);
}

static void put_roof_row(FILE *f, const roof_config *c, const roof_row *r)
{
    const roof_point *p = &r->pt;
    put_text(f, c->env);
    put_text(f, c->model);
    fprintf(f, "%d,%d,", c->res, c->batch);
    const char *text[] = {c->precision, r->level, r->name, r->layer, r->layer_type, r->phase};
    for (int i = 0; i < 6; i++)
        put_text(f, text[i]);
    const double nums[] = {r->count,      p->duration_ns, r->time_share, p->flops,
                           p->dram_bytes, p->l2_bytes,    p->ai_dram,    p->ai_l2,
                           p->achieved_gflops};
    for (int i = 0; i < 9; i++)
        put_num(f, nums[i]);
    put_text(f, r->ceiling);
    const double roof[] = {p->peak_gflops, p->dram_gbs, p->l2_gbs, p->ridge_ai,
                           p->attainable_gflops, p->pct_of_attainable};
    for (int i = 0; i < 6; i++)
        put_num(f, roof[i]);
    fprintf(f, "%s,", roof_bound_name(p->bound));
    csv_put_field(f, r->source);
    fputc(',', f);
    csv_put_num(f, r->roof_ns);
    fputc(',', f);
    csv_put_num(f, r->above_roof_ns);
    fputc('\n', f);
}

void roofline_put(FILE *f, const roofline *rl)
{
    fputs(ROOFLINE_CSV_HEADER "\n", f);
    for (int k = 0; rl && k < rl->n; k++)
        for (int i = 0; i < rl->configs[k].n; i++)
            put_roof_row(f, &rl->configs[k], &rl->configs[k].rows[i]);
}

static void put_summary_row(FILE *f, const summary_row *s)
{
    put_text(f, s->env);
    put_text(f, s->backend);
    put_text(f, s->model);
    fprintf(f, "%d,%d,", s->res, s->batch);
    put_text(f, s->precision);
    put_count(f, s->world_size);
    put_count(f, s->repeats);
    put_count(f, s->iters);
    const double v[] = {s->ips_median, s->ips_q1, s->ips_q3, s->step_ms_median,
                        s->analytic_gflop, s->achieved_tflops};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        put_num(f, v[i]);
    put_text(f, s->ceiling);
    const double w[] = {s->peak_gflops, s->pct_of_peak, s->mfu, s->mem_bound_share};
    for (size_t i = 0; i < sizeof w / sizeof *w; i++)
        put_num(f, w[i]);
    csv_put_field(f, s->status);
    fprintf(f, ",%s,", s->graph ? "on" : "off");
    csv_put_num(f, s->pct_of_roofs);
    fputc('\n', f);
}

void summary_put(FILE *f, const summary *s)
{
    fputs(SUMMARY_CSV_HEADER "\n", f);
    for (int i = 0; s && i < s->n; i++)
        put_summary_row(f, &s->rows[i]);
}

static void put_variability_row(FILE *f, const variability_row *r)
{
    put_text(f, r->env);
    csv_put_field(f, r->model);
    fprintf(f, ",%d,%d,", r->res, r->batch);
    csv_put_field(f, r->precision);
    fprintf(f, ",%s,%d", r->scope, r->n);
    const double v[] = {r->mean, r->median, r->stddev,  r->cv,      r->min,
                        r->max,  r->ci95_lo, r->ci95_hi, r->drift_pct};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        fputc(',', f);
        csv_put_num(f, v[i]);
    }
    fprintf(f, ",%d,%s\n", r->outliers, r->graph ? "on" : "off");
}

void variability_put(FILE *f, const variability *v)
{
    fputs(VARIABILITY_CSV_HEADER "\n", f);
    for (int i = 0; v && i < v->n; i++)
        put_variability_row(f, &v->rows[i]);
}

enum { OUTPUTS = 3, OUT_PATH_LEN = 4096 };

typedef struct {
    char path[OUT_PATH_LEN], tmp[OUT_PATH_LEN + 8];
    bool written; /* tmp holds a complete file not yet renamed */
} out_file;

/* One file to its temporary name; -1 with err (nothing left behind). */
static int write_tmp(out_file *o, const char *dir, const char *name, int which,
                     const roofline *rl, const summary *s, const variability *v, char *err,
                     size_t err_len)
{
    if ((size_t)snprintf(o->path, sizeof o->path, "%s/%s", dir, name) >= sizeof o->path) {
        snprintf(err, err_len, "%s: path too long", dir);
        return -1;
    }
    FILE *f = csv_create(o->path, o->tmp, sizeof o->tmp, err, err_len);
    if (!f)
        return -1;
    if (which == 0)
        roofline_put(f, rl);
    else if (which == 1)
        summary_put(f, s);
    else
        variability_put(f, v);
    if (csv_close(f, o->tmp, err, err_len))
        return -1;
    o->written = true;
    return 0;
}

int outputs_write(const char *dir, const roofline *rl, const summary *s, const variability *v,
                  char *err, size_t err_len)
{
    static const char *const names[OUTPUTS] = {"roofline.csv", "summary.csv", "variability.csv"};
    out_file files[OUTPUTS] = {0};
    int rc = 0;
    for (int i = 0; i < OUTPUTS && !rc; i++)
        rc = write_tmp(&files[i], dir, names[i], i, rl, s, v, err, err_len);
    /* all three are complete before any replaces what was there */
    for (int i = 0; i < OUTPUTS && !rc; i++)
        if (rename(files[i].tmp, files[i].path) != 0) {
            snprintf(err, err_len, "cannot rename %s to %s: %s", files[i].tmp, files[i].path,
                     strerror(errno));
            rc = -1;
        } else {
            files[i].written = false;
        }
    for (int i = 0; i < OUTPUTS; i++)
        if (files[i].written)
            remove(files[i].tmp);
    return rc;
}
