/* Shared by the unit tests: building zoo networks and running bin/ programs. */
#ifndef ROOFLINE_TEST_HELPERS_H
#define ROOFLINE_TEST_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../models/cost.h"
#include "../models/zoo.h"

/* zoo_build that fails the test on error. */
network build_or_fail(const char *model, int res, int classes);

/* snprintf that fails the test rather than truncate a path or command. */
void format_or_fail(char *out, size_t len, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Runs a shell command line; captures its stdout into buf and returns the
 * exit status. */
int run_capture(const char *cmd, char *buf, size_t len);

/* Runs a shell command (printf-style); its exit status (output to the test's
 * own stdout/stderr unless redirected). */
int sh(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Runs "bin/<command line>" through the shell; captures stdout or stderr
 * (want_stderr) into buf and returns the exit status. */
int run_bin(const char *args, int want_stderr, char *buf, size_t len);

/* Lines in text. */
int count_lines(const char *text);

/* Occurrences of needle in text, not overlapping. */
int count_of(const char *text, const char *needle);

/* Runs bin/<args> and expects exit status 2 and one line on stderr holding
 * `expect`. */
void expect_usage_error(const char *args, const char *expect);

/* A new empty folder under /tmp (malloc'd path); fails the test on error. */
char *temp_dir(void);

/* Removes a temp_dir() folder with all it holds and frees its path. */
void remove_temp_dir(char *dir);

/* The whole of dir/name, NUL-terminated (malloc'd), its length in *len
 * (without the NUL) unless len is NULL; fails the test when it is missing. */
void *read_bytes(const char *dir, const char *name, size_t *len);
/* read_bytes as a string */
char *read_text(const char *dir, const char *name);

/* Writes dir/name; fails the test on error. */
void write_bytes(const char *dir, const char *name, const void *data, size_t len);
void write_text(const char *dir, const char *name, const char *text);

/* Conv and FC training FLOPs (fwd + bwd_data + bwd_weights) per image. */
double gemm_train_gflop_per_image(const char *model);

/* Whether gnuplot is on the PATH (figure tests skip without it). */
bool have_gnuplot(void);

/* Width and height from a PNG's IHDR chunk (big-endian at bytes 16 and 20);
 * fails the test when the file is missing or not a PNG. */
void png_size(const char *path, uint32_t *w, uint32_t *h);

#endif
