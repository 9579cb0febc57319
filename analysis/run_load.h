/* Reading a run folder into the run model (run.h), once. */
#ifndef ROOFLINE_RUN_LOAD_H
#define ROOFLINE_RUN_LOAD_H

#include <stddef.h>

#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What went wrong: the folder or a file in it (a usage error of the
 * programs: exit status 2), or the machine (memory, a read error: 1). */
enum { RUN_LOAD_OK = 0, RUN_LOAD_BAD_INPUT = -1, RUN_LOAD_FAILED = -2 };

/* Reads the files of dir named by `want` (RUN_* bits) that exist; a file in
 * `need` that is absent is an error, and so is a folder that holds none of
 * the run files at all. A file that exists is read whole and checked: its
 * first error is one line in err naming the file, the line and the column.
 * Returns RUN_LOAD_OK or one of the errors, with nothing left loaded. */
int run_load(run_model *m, const char *dir, unsigned want, unsigned need, char *err,
             size_t err_len);
void run_free(run_model *m);

/* run_load for each of n folders, in a calloc'd array, each labelled for a
 * comparison (run_model.label); NULL with err (and *status the error) naming
 * what failed, nothing left loaded. */
run_model *run_load_many(char **dirs, int n, unsigned want, unsigned need, int *status,
                         char *err, size_t err_len);
void run_free_many(run_model *runs, int n);

#ifdef __cplusplus
}
#endif

#endif
