/* roofline.csv: one line per roof_row, in the order roofline_build made them. */
#include <stdio.h>

#include "roofline_table.h"

static void put_row(FILE *f, const roof_config *c, const roof_row *r)
{
    const roof_point *p = &r->pt;
    const char *text[] = {c->env, c->model};
    for (int i = 0; i < 2; i++) {
        csv_put_field(f, text[i]);
        fputc(',', f);
    }
    fprintf(f, "%d,%d,", c->res, c->batch);
    const char *more[] = {c->precision, r->level, r->name, r->layer, r->layer_type, r->phase};
    for (int i = 0; i < 6; i++) {
        csv_put_field(f, more[i]);
        fputc(',', f);
    }
    const double nums[] = {r->count,     p->duration_ns, r->time_share,     p->flops,
                           p->dram_bytes, p->l2_bytes,   p->ai_dram,        p->ai_l2,
                           p->achieved_gflops};
    for (int i = 0; i < 9; i++) {
        csv_put_num(f, nums[i]);
        fputc(',', f);
    }
    csv_put_field(f, r->ceiling);
    fputc(',', f);
    const double roof[] = {p->peak_gflops, p->dram_gbs, p->l2_gbs, p->ridge_ai,
                           p->attainable_gflops, p->pct_of_attainable};
    for (int i = 0; i < 6; i++) {
        csv_put_num(f, roof[i]);
        fputc(',', f);
    }
    fprintf(f, "%s,", roof_bound_name(p->bound));
    csv_put_field(f, r->source);
    fputc('\n', f);
}

int roofline_write(const roofline *rl, const char *path, char *err, size_t err_len)
{
    char tmp[4096];
    FILE *f = csv_create(path, tmp, sizeof tmp, err, err_len);
    if (!f)
        return -1;
    fputs(ROOFLINE_CSV_HEADER "\n", f);
    for (int k = 0; rl && k < rl->n; k++)
        for (int i = 0; i < rl->configs[k].n; i++)
            put_row(f, &rl->configs[k], &rl->configs[k].rows[i]);
    return csv_commit(f, tmp, path, err, err_len);
}
