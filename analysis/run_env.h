/* env.json in the run model (run_env in run.h): reading it, and looking a
 * key up (run_read_env.c). */
#ifndef ROOFLINE_RUN_ENV_H
#define ROOFLINE_RUN_ENV_H

#include <stddef.h>

#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads path (at most 4 MiB) into env: never an error for a file that is
 * missing, unreadable (env->error says why) or malformed (env->complete is
 * false); -1 only out of memory. */
int run_read_env(run_env *env, const char *path);
/* The scan of env.json's text buf[0..len-1] (need not end in a NUL). */
int run_env_parse(run_env *env, const char *buf, size_t len);

/* The value of a key ("cpu.model", "ranks[1].host"), or NULL. */
const char *run_env_get(const run_env *env, const char *key);

#ifdef __cplusplus
}
#endif

#endif
