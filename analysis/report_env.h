/* env.json as the report reads it: a tolerant scan into flat (key, value)
 * pairs in file order, so the report shows whatever bin/envinfo recorded
 * without knowing its schema. Nested keys are joined with '.', elements of
 * arrays of objects are named key[i], arrays of plain values are one entry
 * with the values joined by ", ". A file that breaks off or is malformed
 * gives the entries read up to that point. */
#ifndef ROOFLINE_REPORT_ENV_H
#define ROOFLINE_REPORT_ENV_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char key[128];
    char value[1024]; /* longer values (a command line) are cut */
} env_entry;

typedef struct {
    env_entry *items;
    int n, cap;
    bool complete; /* false: the scan stopped at malformed JSON */
} env_entries;

/* Reads path (at most 4 MiB). -1 with err when it cannot be read or memory
 * runs out; a malformed file is not an error (see complete). */
int report_env_read(const char *path, env_entries *out, char *err, size_t err_len);
void report_env_free(env_entries *e);

/* The value of key, or NULL. */
const char *report_env_get(const env_entries *e, const char *key);

#endif
