#include "peak_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int peak_table_add(peak_table *t, const peak_row *row)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 32;
        peak_row *rows = realloc(t->rows, (size_t)cap * sizeof *rows);
        if (!rows)
            return -1;
        t->rows = rows;
        t->cap = cap;
    }
    t->rows[t->n++] = *row;
    return 0;
}

peak_row peak_row_make(const char *device, const char *ceiling, double value, const char *unit,
                       const char *method, double spec_value, int threads_or_sms,
                       const char *notes)
{
    peak_row r;
    memset(&r, 0, sizeof r);
    snprintf(r.device, sizeof r.device, "%s", device ? device : "");
    snprintf(r.ceiling, sizeof r.ceiling, "%s", ceiling ? ceiling : "");
    snprintf(r.unit, sizeof r.unit, "%s", unit ? unit : "");
    snprintf(r.method, sizeof r.method, "%s", method ? method : "");
    snprintf(r.notes, sizeof r.notes, "%s", notes ? notes : "");
    r.value = value;
    r.spec_value = spec_value;
    r.threads_or_sms = threads_or_sms;
    return r;
}

void peak_table_free(peak_table *t)
{
    free(t->rows);
    t->rows = NULL;
    t->n = t->cap = 0;
}
