#include "peaks_csv.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../analysis/csv.h"

int peaks_csv_write(const char *path, const char *env, const peak_table *t, char *err,
                    size_t err_len)
{
    char tmp[4096];
    FILE *f = csv_create(path, tmp, sizeof tmp, err, err_len);
    if (!f)
        return -1;
    fputs(PEAKS_CSV_HEADER "\n", f);
    for (int i = 0; i < t->n; i++) {
        const peak_row *r = &t->rows[i];
        csv_put_field(f, env);
        fputc(',', f);
        csv_put_field(f, r->device);
        fputc(',', f);
        csv_put_field(f, r->ceiling);
        fputc(',', f);
        csv_put_num(f, r->value);
        fputc(',', f);
        csv_put_field(f, r->unit);
        fputc(',', f);
        csv_put_field(f, r->method);
        fputc(',', f);
        csv_put_num(f, r->spec_value);
        fprintf(f, ",%d,", r->threads_or_sms);
        csv_put_field(f, r->notes);
        fputc('\n', f);
    }
    return csv_commit(f, tmp, path, err, err_len);
}

void peaks_print_table(FILE *out, const char *env, const peak_table *t)
{
    int dev_w = 6, method_w = 6;
    for (int i = 0; i < t->n; i++) {
        int d = (int)strlen(t->rows[i].device), m = (int)strlen(t->rows[i].method);
        dev_w = d > dev_w ? d : dev_w;
        method_w = m > method_w ? m : method_w;
    }
    fprintf(out, "env %s\n", env);
    fprintf(out, "%-*s  %-18s %12s %-8s %12s %7s %5s  %-*s  %s\n", dev_w, "device", "ceiling",
            "value", "unit", "spec", "%spec", "thr", method_w, "method", "notes");
    for (int i = 0; i < t->n; i++) {
        const peak_row *r = &t->rows[i];
        char spec[32] = "-", pct[16] = "-";
        if (isfinite(r->spec_value) && r->spec_value > 0) {
            snprintf(spec, sizeof spec, "%.2f", r->spec_value);
            snprintf(pct, sizeof pct, "%.1f", 100.0 * r->value / r->spec_value);
        }
        fprintf(out, "%-*s  %-18s %12.2f %-8s %12s %7s %5d  %-*s  %s\n", dev_w, r->device,
                r->ceiling, r->value, r->unit, spec, pct, r->threads_or_sms, method_w, r->method,
                r->notes);
    }
}
