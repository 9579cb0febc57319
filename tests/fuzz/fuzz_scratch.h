/* The scratch folder the fuzz targets write run files into: the loaders read
 * files by path, so an input becomes a file first. */
#ifndef ROOFLINE_FUZZ_SCRATCH_H
#define ROOFLINE_FUZZ_SCRATCH_H

#include <stddef.h>

/* This process's scratch folder, emptied: made once (on /dev/shm when it is
 * writable) and removed at exit. Aborts when it cannot be made. */
const char *scratch_empty(void);

/* Writes dir/name (name may hold one '/': its folder is made); aborts on
 * failure, which is the harness's, not the input's. */
void scratch_write(const char *dir, const char *name, const void *data, size_t size);

/* data[0..size-1] as a NUL-terminated string (malloc'd; aborts out of memory). */
char *scratch_string(const void *data, size_t size);

#endif
