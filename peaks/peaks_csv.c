#include "peaks_csv.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* RFC 4180: quote only what needs it, so ordinary rows stay greppable. */
static void put_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void put_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
}

int peaks_csv_write(const char *path, const char *env, const peak_table *t, char *err,
                    size_t err_len)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        snprintf(err, err_len, "output path too long: %s", path);
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, err_len, "cannot write %s: %s", tmp, strerror(errno));
        return -1;
    }
    fputs(PEAKS_CSV_HEADER "\n", f);
    for (int i = 0; i < t->n; i++) {
        const peak_row *r = &t->rows[i];
        put_field(f, env);
        fputc(',', f);
        put_field(f, r->device);
        fputc(',', f);
        put_field(f, r->ceiling);
        fputc(',', f);
        put_number(f, r->value);
        fputc(',', f);
        put_field(f, r->unit);
        fputc(',', f);
        put_field(f, r->method);
        fputc(',', f);
        put_number(f, r->spec_value);
        fprintf(f, ",%d,", r->threads_or_sms);
        put_field(f, r->notes);
        fputc('\n', f);
    }
    /* a full disk shows up at fflush/fclose, not at fprintf */
    int failed = ferror(f) | fflush(f);
    failed |= fclose(f);
    if (failed) {
        snprintf(err, err_len, "writing %s failed: %s", tmp, strerror(errno));
        remove(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, err_len, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        remove(tmp);
        return -1;
    }
    return 0;
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
