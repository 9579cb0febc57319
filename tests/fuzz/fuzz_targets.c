#include "fuzz_targets.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../analysis/analyze.h"
#include "../../analysis/csv.h"
#include "../../analysis/outputs.h"
#include "../../analysis/plot/plot_data.h"
#include "../../analysis/plot/plot_figures.h"
#include "../../analysis/plot/plot_out.h"
#include "../../analysis/report/report_build.h"
#include "../../analysis/roofs.h"
#include "../../analysis/run_env.h"
#include "../../analysis/run_load.h"
#include "../../bench/runner/matrix.h"
#include "../../peaks/specs.h"
#include "fuzz_scratch.h"

enum { ERR_LEN = 2048 };

const fuzz_target fuzz_targets[] = {
    {"matrix", fuzz_matrix},           {"csv", fuzz_csv},
    {"peaks", fuzz_peaks},             {"steps", fuzz_steps},
    {"kernels", fuzz_kernels},         {"configs", fuzz_configs},
    {"scaling", fuzz_scaling},         {"summary", fuzz_summary},
    {"roofline", fuzz_roofline},       {"variability", fuzz_variability},
    {"env_json", fuzz_env_json},       {"run", fuzz_run},
    {"specs", fuzz_specs},             {"train_options", fuzz_train_options},
    {NULL, NULL},
};

const fuzz_target *fuzz_find(const char *name)
{
    for (const fuzz_target *t = fuzz_targets; t->name; t++)
        if (strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

/* ---- run_matrix.md ---------------------------------------------------------- */

int fuzz_matrix(const uint8_t *data, size_t size)
{
    char *text = scratch_string(data, size);
    run_matrix m;
    char err[ERR_LEN], names[1024];
    if (matrix_parse(text, "fuzz.md", &m, err, sizeof err) == 0) {
        matrix_env_names(&m, names, sizeof names);
        for (int i = 0; i < m.n_rows; i++) {
            const matrix_row *r = &m.rows[i];
            if (matrix_find(&m, r->env) != r)
                abort(); /* ENV names are unique: the parser says so */
            int n = matrix_expand(r, NULL, 0);
            if (n < 1 || n > MATRIX_MAX_CONFIGS)
                abort(); /* "expanding a row cannot fail" (matrix.h) */
            matrix_config *configs = malloc((size_t)n * sizeof *configs);
            if (!configs)
                abort();
            if (matrix_expand(r, configs, n) != n)
                abort();
            free(configs);
        }
        matrix_local_row(&m, NULL);
        matrix_local_row(&m, "NVIDIA H100 80GB HBM3");
        matrix_local_row(&m, "NVIDIA GeForce RTX 4090");
        matrix_free(&m);
    }
    free(text);
    return 0;
}

/* ---- CSV ---------------------------------------------------------------------- */

/* Written back with the suite's writer, a table reads back cell for cell
 * (single-column tables aside: an empty cell there is a blank line). */
static void check_round_trip(const csv_table *t, const char *dir)
{
    if (csv_cols(t) < 2)
        return;
    char path[512], tmp[600], err[ERR_LEN];
    snprintf(path, sizeof path, "%s/back.csv", dir);
    FILE *f = csv_create(path, tmp, sizeof tmp, err, sizeof err);
    if (!f)
        abort();
    for (int r = -1; r < csv_rows(t); r++)
        for (int c = 0; c < csv_cols(t); c++) {
            csv_put_field(f, r < 0 ? csv_header(t, c) : csv_cell(t, r, c));
            fputc(c + 1 < csv_cols(t) ? ',' : '\n', f);
        }
    if (csv_commit(f, tmp, path, err, sizeof err))
        abort();
    csv_table *back = csv_read(path, err, sizeof err);
    if (!back || csv_rows(back) != csv_rows(t) || csv_cols(back) != csv_cols(t)) {
        fprintf(stderr, "fuzz: csv round trip: %s\n", back ? "shape differs" : err);
        abort();
    }
    for (int r = 0; r < csv_rows(t); r++)
        for (int c = 0; c < csv_cols(t); c++)
            if (strcmp(csv_cell(t, r, c), csv_cell(back, r, c)) != 0) {
                fprintf(stderr, "fuzz: csv round trip: row %d col %d '%s' read back as '%s'\n", r,
                        c, csv_cell(t, r, c), csv_cell(back, r, c));
                abort();
            }
    csv_free(back);
}

int fuzz_csv(const uint8_t *data, size_t size)
{
    const char *dir = scratch_empty();
    scratch_write(dir, "x.csv", data, size);
    char path[512], err[ERR_LEN];
    snprintf(path, sizeof path, "%s/x.csv", dir);
    csv_table *t = csv_read(path, err, sizeof err);
    if (!t)
        return 0;
    static const char *const names[] = {"env", "model", "value", NULL};
    int cols[3];
    csv_require(t, path, names, cols, err, sizeof err);
    for (int r = -1; r <= csv_rows(t); r++) {
        csv_line(t, r);
        for (int c = -1; c <= csv_cols(t); c++) {
            double v;
            char buf[CSV_NUM_LEN];
            csv_header(t, c);
            csv_cell(t, r, c);
            csv_format_num(buf, csv_num(t, r, c, NULL));
            csv_get_num(t, r, c, path, r & 1, &v, err, sizeof err);
        }
    }
    check_round_trip(t, dir);
    csv_free(t);
    return 0;
}

/* ---- run folders --------------------------------------------------------------- */

/* What the programs do with a loaded run: the analysis when it has inputs,
 * the figures' data and both reports written into its folder. */
static void exercise(run_model *m, bool analyse)
{
    char err[ERR_LEN];
    if (analyse && run_analyze(m, err, sizeof err))
        return;
    roof_lines lines;
    roof_lines_of(m->roofs, m->n_roofs, &lines);
    roofs_memory_name(m->roofs, m->n_roofs);
    plot_figure_list figs;
    if (plot_figures_of_run(m, &figs))
        return;
    char data_dir[RUN_PATH_LEN + 32], prefix[RUN_PATH_LEN + 256];
    snprintf(data_dir, sizeof data_dir, "%s/figures/data", m->dir);
    if (plot_make_dirs(m->dir, "figures/data", err, sizeof err) == 0)
        for (int i = 0; i < figs.n; i++) {
            snprintf(prefix, sizeof prefix, "%s/%s", data_dir, figs.items[i].stem);
            plot_write_figure(m, &figs.items[i], prefix, err, sizeof err);
        }
    report_doc doc;
    doc_init(&doc, "fuzz");
    report_build_run(&doc, m, &figs);
    char path[RUN_PATH_LEN + 32];
    snprintf(path, sizeof path, "%s/report.md", m->dir);
    doc_write_md(&doc, path, err, sizeof err);
    snprintf(path, sizeof path, "%s/report.html", m->dir);
    doc_write_html(&doc, m->dir, path, err, sizeof err);
    doc_free(&doc);
    plot_figure_list_free(&figs);
}

static int fuzz_run_file(const char *name, unsigned bit, const uint8_t *data, size_t size)
{
    const char *dir = scratch_empty();
    scratch_write(dir, name, data, size);
    run_model m;
    char err[ERR_LEN];
    if (run_load(&m, dir, bit, 0, err, sizeof err) != RUN_LOAD_OK)
        return 0;
    exercise(&m, (bit & RUN_INPUTS) != 0);
    run_free(&m);
    return 0;
}

int fuzz_peaks(const uint8_t *d, size_t n) { return fuzz_run_file("peaks.csv", RUN_PEAKS, d, n); }
int fuzz_steps(const uint8_t *d, size_t n) { return fuzz_run_file("steps.csv", RUN_STEPS, d, n); }
int fuzz_kernels(const uint8_t *d, size_t n)
{
    return fuzz_run_file("kernels.csv", RUN_KERNELS, d, n);
}
int fuzz_configs(const uint8_t *d, size_t n)
{
    return fuzz_run_file("configs.csv", RUN_CONFIGS, d, n);
}
int fuzz_scaling(const uint8_t *d, size_t n)
{
    return fuzz_run_file("scaling.csv", RUN_SCALING, d, n);
}
int fuzz_summary(const uint8_t *d, size_t n)
{
    return fuzz_run_file("summary.csv", RUN_SUMMARY, d, n);
}
int fuzz_roofline(const uint8_t *d, size_t n)
{
    return fuzz_run_file("roofline.csv", RUN_ROOFLINE, d, n);
}
int fuzz_variability(const uint8_t *d, size_t n)
{
    return fuzz_run_file("variability.csv", RUN_VARIABILITY, d, n);
}

int fuzz_env_json(const uint8_t *data, size_t size)
{
    /* an exact-size copy, so a read past the end is a heap overflow ASan sees */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        abort();
    memcpy(buf, data, size);
    run_env env = {0};
    if (run_env_parse(&env, buf, size) == 0) {
        run_env_get(&env, "cpu.model");
        run_env_get(&env, "ranks[0].host");
        free(env.items);
    }
    free(buf);
    return 0;
}

/* ---- a whole run folder ---------------------------------------------------------- */

static const char *const run_files[] = {"env.json",    "peaks.csv",    "steps.csv",
                                        "kernels.csv", "configs.csv",  "scaling.csv",
                                        "summary.csv", "roofline.csv", "variability.csv"};

static bool known_file(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof run_files / sizeof run_files[0]; i++)
        if (strlen(run_files[i]) == len && memcmp(run_files[i], name, len) == 0)
            return true;
    return false;
}

/* "#file NAME\n" starts each file; text before the first such line is left out. */
static void write_sections(const char *dir, const char *text, size_t size)
{
    static const char mark[] = "#file ";
    const char *end = text + size, *p = text;
    while (p < end) {
        const char *at = memmem(p, (size_t)(end - p), mark, sizeof mark - 1);
        if (!at)
            return;
        const char *name = at + sizeof mark - 1;
        const char *eol = memchr(name, '\n', (size_t)(end - name));
        if (!eol)
            return;
        const char *body = eol + 1;
        const char *next = memmem(body, (size_t)(end - body), mark, sizeof mark - 1);
        const char *stop = next ? next : end;
        char file[32];
        if (known_file(name, (size_t)(eol - name))) {
            snprintf(file, sizeof file, "%.*s", (int)(eol - name), name);
            scratch_write(dir, file, body, (size_t)(stop - body));
        }
        p = stop;
    }
}

int fuzz_run(const uint8_t *data, size_t size)
{
    const char *dir = scratch_empty();
    write_sections(dir, (const char *)data, size);
    char err[ERR_LEN];
    run_model m;
    if (run_load(&m, dir, RUN_INPUTS, 0, err, sizeof err) == RUN_LOAD_OK) {
        if (run_analyze(&m, err, sizeof err) == 0)
            outputs_write(dir, &m.roofline, &m.summary, &m.variability, err, sizeof err);
        run_free(&m);
    }
    /* the analysis read back, as bin/plotdata and bin/report load it */
    if (run_load(&m, dir, RUN_INPUTS | RUN_OUTPUTS, 0, err, sizeof err) != RUN_LOAD_OK)
        return 0;
    exercise(&m, false);
    char *dirs[2] = {(char *)dir, (char *)dir};
    int status;
    run_model *runs = run_load_many(dirs, 2, RUN_INPUTS | RUN_OUTPUTS, 0, &status, err, sizeof err);
    if (runs) {
        char prefix[RUN_PATH_LEN + 64];
        snprintf(prefix, sizeof prefix, "%s/figures/data/roofline_compare", dir);
        plot_write_roofline_compare(runs, 2, prefix, err, sizeof err);
        /* one folder twice: one environment measured twice, its run to run */
        snprintf(prefix, sizeof prefix, "%s/figures/data/run_to_run", dir);
        plot_write_run_to_run(runs, 2, prefix, err, sizeof err);
        report_doc doc;
        doc_init(&doc, "fuzz compare");
        report_build_compare(&doc, runs, 2, dir);
        doc_free(&doc);
        run_free_many(runs, 2);
    }
    run_free(&m);
    return 0;
}

/* ---- peaks/specs.csv ---------------------------------------------------------------- */

int fuzz_specs(const uint8_t *data, size_t size)
{
    static const char *const ceilings[] = {
        "fp64_fma",    "fp32_fma",    "fp16_fma",  "tf32_tensor", "fp16_tensor", "bf16_tensor",
        "fp8_tensor",  "hbm_copy",    "hbm_triad", "hbm_read",    "hbm_write",   "l2",
        "sm_clock_ghz", "pcie_h2d",   ""};
    const char *dir = scratch_empty();
    scratch_write(dir, "specs.csv", data, size);
    char path[512], err[ERR_LEN];
    snprintf(path, sizeof path, "%s/specs.csv", dir);
    gpu_spec_table t;
    if (specs_load(path, &t, err, sizeof err))
        return 0;
    for (int i = 0; i < t.n; i++)
        for (size_t k = 0; k < sizeof ceilings / sizeof ceilings[0]; k++) {
            specs_value(&t.rows[i], ceilings[k]);
            specs_clock_mhz(&t.rows[i], ceilings[k]);
        }
    specs_match(&t, "NVIDIA H100 80GB HBM3");
    specs_match(&t, "NVIDIA A100-SXM4-40GB");
    specs_match(&t, "");
    if (t.n > 0)
        specs_match(&t, t.rows[0].gpu);
    specs_free(&t);
    return 0;
}
