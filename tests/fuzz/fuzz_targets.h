/* The suite's parsers as fuzz targets (issue 16): one function per parser,
 * each taking arbitrary bytes. The same functions serve libFuzzer
 * (fuzz_main.c, `make fuzz`) and the regression runner of `make test`
 * (fuzz_regress.c), so a crash input found once is replayed forever. A target
 * returns 0; a defect shows as a sanitizer report or a crash. */
#ifndef ROOFLINE_FUZZ_TARGETS_H
#define ROOFLINE_FUZZ_TARGETS_H

#include <stddef.h>
#include <stdint.h>

typedef int (*fuzz_fn)(const uint8_t *data, size_t size);

typedef struct {
    const char *name; /* also the folder of its corpus and regression inputs */
    fuzz_fn fn;
} fuzz_target;

/* run_matrix.md: matrix_parse, then every row expanded and resolved. */
int fuzz_matrix(const uint8_t *data, size_t size);
/* Any CSV file: csv_read and every accessor. */
int fuzz_csv(const uint8_t *data, size_t size);
/* One file of a run folder through run_load, then the analysis and the report
 * built from what loaded. */
int fuzz_peaks(const uint8_t *data, size_t size);
int fuzz_steps(const uint8_t *data, size_t size);
int fuzz_kernels(const uint8_t *data, size_t size);
int fuzz_configs(const uint8_t *data, size_t size);
int fuzz_scaling(const uint8_t *data, size_t size);
int fuzz_summary(const uint8_t *data, size_t size);
int fuzz_roofline(const uint8_t *data, size_t size);
int fuzz_variability(const uint8_t *data, size_t size);
/* env.json's scanner. */
int fuzz_env_json(const uint8_t *data, size_t size);
/* A whole run folder ("#file NAME" lines start each file): load, analyse,
 * write the outputs, the figures' data and both reports. */
int fuzz_run(const uint8_t *data, size_t size);
/* peaks/specs.csv: specs_load, then matching and every figure. */
int fuzz_specs(const uint8_t *data, size_t size);
/* bin/train's command line (NUL- or newline-separated arguments), parsed by
 * bin/train's own main() up to the point where it would train. */
int fuzz_train_options(const uint8_t *data, size_t size);

/* Every target, ending with {NULL, NULL}. */
extern const fuzz_target fuzz_targets[];

/* The target of that name, or NULL. */
const fuzz_target *fuzz_find(const char *name);

#endif
