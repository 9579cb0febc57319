/* peaks.csv and the table bin/peaks prints. */
#ifndef ROOFLINE_PEAKS_CSV_H
#define ROOFLINE_PEAKS_CSV_H

#include <stdio.h>

#include "peak_table.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PEAKS_CSV_HEADER "env,device,ceiling,value,unit,method,spec_value,threads_or_sms,notes"

/* Writes the whole table to `path` through "<path>.tmp" and a rename, so a
 * reader never sees half a file. Returns 0, or -1 with the reason in err. */
int peaks_csv_write(const char *path, const char *env, const peak_table *t, char *err,
                    size_t err_len);

/* Aligned, human-readable: one line per row, with measured/spec in percent. */
void peaks_print_table(FILE *out, const char *env, const peak_table *t);

#ifdef __cplusplus
}
#endif

#endif
