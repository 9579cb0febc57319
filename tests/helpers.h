/* Shared by the unit tests: building zoo networks and running bin/ programs. */
#ifndef ROOFLINE_TEST_HELPERS_H
#define ROOFLINE_TEST_HELPERS_H

#include <stddef.h>

#include "../models/cost.h"
#include "../models/zoo.h"

/* zoo_build that fails the test on error. */
network build_or_fail(const char *model, int res, int classes);

/* Runs "bin/<command line>" through the shell; captures stdout or stderr
 * (want_stderr) into buf and returns the exit status. */
int run_bin(const char *args, int want_stderr, char *buf, size_t len);

/* Lines in text. */
int count_lines(const char *text);

/* Runs bin/<args> and expects exit status 2 and one line on stderr holding
 * `expect`. */
void expect_usage_error(const char *args, const char *expect);

/* A new empty folder under /tmp (malloc'd path); fails the test on error. */
char *temp_dir(void);

/* Conv and FC training FLOPs (fwd + bwd_data + bwd_weights) per image. */
double gemm_train_gflop_per_image(const char *model);

#endif
