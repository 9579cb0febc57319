#include "run_load.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "csv.h"
#include "run_read.h"

enum { RUN_FILES = 11 };

struct run_storage {
    csv_table *tables[RUN_FILES];
};

/* In the order the env name is taken from (the first file that has one). */
static const struct {
    unsigned bit;
    const char *name;
    int (*read)(run_model *, col_file *);
} files[RUN_FILES] = {
    {RUN_SUMMARY, "summary.csv", run_read_summary},
    {RUN_ROOFLINE, "roofline.csv", run_read_roofline},
    {RUN_VARIABILITY, "variability.csv", run_read_variability},
    {RUN_PEAKS, "peaks.csv", run_read_peaks},
    {RUN_STEPS, "steps.csv", run_read_steps},
    {RUN_REFERENCE, "reference.csv", run_read_reference},
    {RUN_CONFIGS, "configs.csv", run_read_configs},
    {RUN_SCALING, "scaling.csv", run_read_scaling},
    {RUN_SCALING_MODEL, "scaling_model.csv", run_read_scaling_model},
    {RUN_KERNELS, "kernels.csv", run_read_kernels},
    {RUN_ENV_JSON, "env.json", NULL},
};

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void take_env_name(run_model *m, const csv_table *t)
{
    if (m->env_name[0] || csv_rows(t) == 0)
        return;
    const char *env = csv_cell(t, 0, csv_col(t, "env"));
    if (*env)
        snprintf(m->env_name, sizeof m->env_name, "%s", env);
}

/* env.json's "load" as numbers; a member absent or not a number stays unknown. */
static void take_start_load(run_model *m)
{
    m->start_load = (run_start_load){NAN, 0};
    const char *busy = run_env_get(&m->env, "load.busy_cpus"),
               *cpus = run_env_get(&m->env, "load.cpus");
    if (!busy || !cpus)
        return;
    char *busy_end, *cpus_end;
    double b = strtod(busy, &busy_end);
    long n = strtol(cpus, &cpus_end, 10);
    /* both or neither: a share of an unknown count says nothing */
    if (busy_end != busy && *busy_end == '\0' && isfinite(b) && b >= 0 && cpus_end != cpus &&
        *cpus_end == '\0' && n > 0 && n < 1 << 20)
        m->start_load = (run_start_load){b, (int)n};
}

/* Summary rows carry the peak memory of their configuration's steps. */
static void join_peak_memory(run_model *m)
{
    for (int i = 0; i < m->summary.n; i++) {
        summary_row *s = &m->summary.rows[i];
        for (int k = 0; k < m->n_steps && isnan(s->peak_mem_bytes); k++) {
            const run_key *key = &m->steps[k].key;
            if (key->res == s->res && key->batch == s->batch && key->world_size == s->world_size &&
                key->graph == s->graph &&
                strcmp(key->model, s->model) == 0 && strcmp(key->precision, s->precision) == 0 &&
                strcmp(key->env, s->env) == 0)
                s->peak_mem_bytes = m->steps[k].peak_mem_bytes;
        }
    }
}

static int check_folder(run_model *m, const char *dir, unsigned need, char *err, size_t err_len)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        snprintf(err, err_len, "RUN_DIR '%s': %s (a run folder runs/<ENV>/<ID> was expected)", dir,
                 strerror(errno));
        return RUN_LOAD_BAD_INPUT;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, err_len, "RUN_DIR '%s' is not a folder (a run folder runs/<ENV>/<ID> was expected)",
                 dir);
        return RUN_LOAD_BAD_INPUT;
    }
    if (strlen(dir) + 32 >= sizeof m->dir) {
        snprintf(err, err_len, "RUN_DIR '%.80s...' is too long", dir);
        return RUN_LOAD_BAD_INPUT;
    }
    snprintf(m->dir, sizeof m->dir, "%s", dir);
    if (need) /* the file that is needed says more than "no run files" */
        return RUN_LOAD_OK;
    for (int i = 0; i < RUN_FILES; i++) {
        char path[RUN_PATH_LEN + 32];
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        if (exists(path))
            return RUN_LOAD_OK;
    }
    snprintf(err, err_len, "RUN_DIR '%s' holds no run files (steps.csv, peaks.csv, kernels.csv, "
                           "configs.csv, env.json, ...): not a run folder", dir);
    return RUN_LOAD_BAD_INPUT;
}

int run_load(run_model *m, const char *dir, unsigned want, unsigned need, char *err,
             size_t err_len)
{
    memset(m, 0, sizeof *m);
    int status = check_folder(m, dir, need, err, err_len);
    if (status)
        return status;
    m->storage = calloc(1, sizeof *m->storage);
    if (!m->storage) {
        snprintf(err, err_len, "%s: out of memory", dir);
        return RUN_LOAD_FAILED;
    }
    for (int i = 0; i < RUN_FILES; i++) {
        if (!((want | need) & files[i].bit))
            continue;
        char path[RUN_PATH_LEN + 32];
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        if (!exists(path)) {
            if (need & files[i].bit) {
                snprintf(err, err_len, "%s: cannot open: %s", path, strerror(ENOENT));
                run_free(m);
                return RUN_LOAD_BAD_INPUT;
            }
            continue;
        }
        m->present |= files[i].bit;
        if (!files[i].read) {
            if (run_read_env(&m->env, path)) {
                snprintf(err, err_len, "%s: out of memory", path);
                run_free(m);
                return RUN_LOAD_FAILED;
            }
            continue;
        }
        csv_table *t = csv_read(path, err, err_len);
        if (!t) {
            run_free(m);
            return RUN_LOAD_BAD_INPUT;
        }
        m->storage->tables[i] = t;
        take_env_name(m, t);
        col_file f = {t, path, err, err_len};
        if (files[i].read(m, &f)) {
            run_free(m);
            return RUN_LOAD_BAD_INPUT;
        }
    }
    join_peak_memory(m);
    take_start_load(m);
    snprintf(m->label, sizeof m->label, "%s", m->env_name[0] ? m->env_name : "?");
    return RUN_LOAD_OK;
}

/* The last component of a folder's path ("runs/cpu/20261201-1200/" gives
 * "20261201-1200"), or the whole path, into out; what is not a plain name's
 * character (a newline, a quote) becomes '_', since labels go into figure
 * data and titles. */
static void folder_name(const char *dir, bool whole, char *out, size_t len)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t start = whole ? 0 : n;
    while (start > 0 && dir[start - 1] != '/')
        start--;
    snprintf(out, len, "%.*s", (int)(n - start), dir + start);
    for (char *c = out; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("._-+:@/", *c))
            *c = '_';
}

static bool label_shared(const run_model *runs, int n, int i, bool env_only)
{
    for (int j = 0; j < n; j++)
        if (j != i && strcmp(env_only ? runs[j].env_name : runs[j].label,
                             env_only ? runs[i].env_name : runs[i].label) == 0)
            return true;
    return false;
}

/* Two runs of one environment, told apart by their folders' names
 * (runs/ENV/ID), or by their paths where those are the same too. */
static int label_many(run_model *runs, int n)
{
    bool *shared = calloc((size_t)n + 1, sizeof *shared);
    if (!shared)
        return -1;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++)
            shared[i] = label_shared(runs, n, i, pass == 0);
        for (int i = 0; i < n; i++) {
            if (!shared[i])
                continue;
            char id[RUN_PATH_LEN];
            folder_name(runs[i].dir, pass == 1, id, sizeof id);
            snprintf(runs[i].label, sizeof runs[i].label, "%s (%.*s)",
                     runs[i].env_name[0] ? runs[i].env_name : "?",
                     RUN_LABEL_LEN - RUN_NAME_LEN - 8, id);
        }
    }
    free(shared);
    return 0;
}

static void free_steps(run_steps *steps, int n)
{
    for (int k = 0; steps && k < n; k++) {
        free(steps[k].step_ms);
        free(steps[k].images_per_s);
        free(steps[k].repeat);
    }
    free(steps);
}

void run_free(run_model *m)
{
    free(m->env.items);
    free(m->roofs);
    free_steps(m->steps, m->n_steps);
    free_steps(m->reference, m->n_reference);
    if (m->traces)
        free(m->traces[0].rows); /* one array, the traces slices of it */
    free(m->traces);
    free(m->attempts);
    free(m->scaling);
    free(m->predictions);
    for (int k = 0; m->roofline.configs && k < m->roofline.n; k++)
        free(m->roofline.configs[k].rows);
    free(m->roofline.configs);
    free(m->summary.rows);
    free(m->variability.rows);
    for (int i = 0; m->storage && i < RUN_FILES; i++)
        csv_free(m->storage->tables[i]);
    free(m->storage);
    memset(m, 0, sizeof *m);
}

run_model *run_load_many(char **dirs, int n, unsigned want, unsigned need, int *status,
                         char *err, size_t err_len)
{
    run_model *runs = calloc((size_t)n + 1, sizeof *runs);
    if (!runs) {
        snprintf(err, err_len, "out of memory");
        *status = RUN_LOAD_FAILED;
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        *status = run_load(&runs[i], dirs[i], want, need, err, err_len);
        if (*status) {
            run_free_many(runs, i);
            return NULL;
        }
    }
    if (label_many(runs, n)) {
        run_free_many(runs, n);
        snprintf(err, err_len, "out of memory");
        *status = RUN_LOAD_FAILED;
        return NULL;
    }
    *status = RUN_LOAD_OK;
    return runs;
}

void run_free_many(run_model *runs, int n)
{
    for (int i = 0; runs && i < n; i++)
        run_free(&runs[i]);
    free(runs);
}
