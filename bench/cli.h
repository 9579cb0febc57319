/* Option parsing shared by the executables in bench/: every bad value gets one
 * line on stderr naming the option, the value and what is accepted, and exit
 * status 2 (DESIGN.md §9). */
#ifndef ROOFLINE_CLI_H
#define ROOFLINE_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "../models/precision.h"

enum { CLI_EXIT_USAGE = 2, CLI_MAX_BATCH = 1 << 20 };

/* Parses a whole decimal integer in [min, max]; false on anything else
 * (empty, trailing characters, out of range). */
bool cli_parse_long(const char *text, long min, long max, long *out);

/* Prints "prog: message" and exits with status 2. */
_Noreturn void cli_usage_error(const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* cli_parse_long or a usage error naming `option`. */
int cli_int_option(const char *prog, const char *option, const char *text, long min, long max);

/* --precision's value, or a usage error listing the precisions. */
precision cli_precision_option(const char *prog, const char *text);

/* The usage error for what getopt_long returned as ':' (a missing value) or
 * '?' (an unknown option); `arg` is the offending argv element. */
_Noreturn void cli_bad_option(const char *prog, int getopt_code, const char *arg,
                              const char *accepted);

/* A file name given to `option` (--out FILE), or a usage error when empty. */
const char *cli_file_option(const char *prog, const char *option, const char *text);

/* The folder part of path into dir[len], as dirname(3) gives it ("." for a
 * bare name, "/" for a name at the root) without changing path; false when
 * it does not fit. */
bool cli_folder_of(const char *path, char *dir, size_t len);

/* A file to be written at the end (--out FILE), checked before any work: not
 * empty, not a folder, and an existing file writable or a new one's folder
 * there and writable; else a usage error naming the option. */
const char *cli_output_file(const char *prog, const char *option, const char *text);

enum { CLI_NAME_MAX = 63 };
/* A label that names rows and folders (--env NAME): 1..CLI_NAME_MAX letters,
 * digits, '.', '_' or '-', starting with a letter or digit; else a usage error. */
const char *cli_name_option(const char *prog, const char *option, const char *text);

/* A comparison's table row has 2 + 2 columns a run: at most this many runs. */
enum { CLI_MAX_COMPARE_RUNS = 14 };

/* The main() of the programs that read run folders (plotdata, report):
 * "--help"/"-h" calls help and returns 0, "RUN_DIR" returns one(RUN_DIR),
 * "--compare OUTDIR RUN_DIR..." returns compare(OUTDIR, the RUN_DIRs, their
 * count: 1 to CLI_MAX_COMPARE_RUNS distinct folders); anything else is a
 * usage error. */
int cli_run_dirs_main(const char *prog, int argc, char **argv, void (*help)(void),
                      int (*one)(const char *run_dir),
                      int (*compare)(const char *out_dir, char **run_dirs, int n_runs));

/* Checks --model (required, a zoo name) and turns --res and --classes (NULL:
 * the model's defaults) into numbers the model admits, or a usage error. */
void cli_model_options(const char *prog, const char *model, const char *res_text,
                       const char *classes_text, int *res, int *classes);

#endif
