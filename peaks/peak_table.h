/* The measured ceilings of one bin/peaks run, one row per ceiling, in the
 * shape of peaks.csv (DESIGN.md §7). Plain C so that the .cu files can fill
 * it through the same functions. */
#ifndef ROOFLINE_PEAK_TABLE_H
#define ROOFLINE_PEAK_TABLE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { PEAK_TEXT = 96, PEAK_NOTES = 1024 };

typedef struct {
    char device[PEAK_TEXT];
    char ceiling[32];    /* fp32_fma, dram_triad, l2, hbm_copy, bf16_tensor ... */
    double value;
    char unit[12];       /* GFLOP/s, GB/s or GHz */
    char method[PEAK_TEXT];
    double spec_value;   /* NAN when there is nothing to set beside it */
    int threads_or_sms;
    char notes[PEAK_NOTES];
} peak_row;

typedef struct {
    peak_row *rows;
    int n, cap;
} peak_table;

/* Appends a row whose text fields are formatted by the caller; returns 0, or -1
 * when memory runs out (the table is left as it was). */
int peak_table_add(peak_table *t, const peak_row *row);

/* Fills a row: the strings are copied and cut to their field's size. */
peak_row peak_row_make(const char *device, const char *ceiling, double value, const char *unit,
                       const char *method, double spec_value, int threads_or_sms,
                       const char *notes);

void peak_table_free(peak_table *t);

#ifdef __cplusplus
}
#endif

#endif
