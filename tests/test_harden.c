/* Regression tests of issue 16 (hardening): the cost model's counts never wrap
 * around, outputs never leave the run folder nor follow a link planted in
 * it, inputs that are not regular files are refused rather than waited on, a
 * run folder whose path holds a quote still renders. The option table is in
 * test_options.c, interrupted runs in test_resume.c, the fuzzers' crash
 * inputs in test_fuzz_regress.c. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../analysis/csv.h"
#include "../analysis/plot/plot_out.h"
#include "../bench/runner/matrix.h"
#include "../models/cost.h"
#include "helpers.h"

/* ---- defect 4: signed 64-bit overflow in the cost model ------------------------- */

Test(harden, cost_counts_saturate_instead_of_wrapping)
{
    network net = build_or_fail("vgg16", 4096, 1000);
    int max = cost_max_batch(&net, PREC_FP32);
    cr_assert(max > 1000 && max < 300000, "vgg16 at 4096: the largest batch is %d", max);
    step_cost fits = cost_step(&net, max, PREC_FP32, NULL);
    cr_expect(!fits.saturated && fits.step_flops > 0 && fits.step_bytes > 0 &&
                  fits.memory.total > 0,
              "batch %d: %lld FLOPs", max, (long long)fits.step_flops);
    /* the case: -9221318834 GFLOP before */
    layer_cost *layers = calloc((size_t)net.n_layers, sizeof *layers);
    cr_assert_not_null(layers);
    step_cost big = cost_step(&net, 300000, PREC_FP32, layers);
    cr_expect(big.saturated && big.step_flops == INT64_MAX && big.memory.total == INT64_MAX);
    for (int i = 0; i < net.n_layers; i++) {
        cr_expect(layers[i].flops[PASS_FWD] >= 0 && layer_cost_flops(&layers[i]) >= 0,
                  "layer %d", i);
        /* a single layer may still fit where the whole step does not */
        layer_cost alone = cost_layer(&net, i, 300000, PREC_FP32);
        cr_expect_eq(alone.saturated, layers[i].saturated, "layer %d", i);
    }
    step_cost over = cost_step(&net, max + 1, PREC_FP32, NULL);
    cr_expect(over.saturated, "batch %d is beyond the largest", max + 1);
    free(layers);
    net_free(&net);
    /* every zoo model at its largest resolution and class count holds batch 1 */
    int n;
    const model_info *models = zoo_models(&n);
    for (int i = 0; i < n; i++) {
        network big_net = build_or_fail(models[i].name, ZOO_MAX_RES, ZOO_MAX_CLASSES);
        for (int p = 0; p < PREC_COUNT; p++)
            cr_expect_geq(cost_max_batch(&big_net, (precision)p), 1, "%s", models[i].name);
        net_free(&big_net);
    }
}

Test(harden, analyze_leaves_an_overflowing_analytic_cell_empty, .timeout = 60)
{
    char *dir = temp_dir();
    write_text(dir, "steps.csv",
               "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,"
               "images_per_s,loss,peak_mem_bytes\n"
               "x,cpu,vgg16,4096,300000,fp32,1,0,1,0,1000,,2.3,\n");
    char cmd[1024], out[4096];
    format_or_fail(cmd, sizeof cmd, "'%s/analyze' '%s' 2>&1", ROOFLINE_BIN_DIR, dir);
    cr_assert_eq(run_capture(cmd, out, sizeof out), 0, "%s", out);
    char *summary = read_text(dir, "summary.csv");
    /* before: analytic_gflop_per_step -9221318834.4... */
    cr_expect(strstr(summary, ",-") == NULL, "a negative cell:\n%s", summary);
    cr_expect(strstr(summary, "x,cpu,vgg16,4096,300000,fp32,1,1,1,") != NULL, "%s", summary);
    free(summary);
    remove_temp_dir(dir);
}

/* ---- ENV '..' ----------------------------------------------------------------------- */

Test(harden, matrix_env_cannot_name_a_folder_outside_runs)
{
    static const char *const names[] = {"..", ".", ".hidden", "-x", "a/b"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char text[1024], err[512];
        format_or_fail(text, sizeof text,
                       "| ENV | backend | models | res | batch | precision | warmup | iters | "
                       "repeats | ranks | counters |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
                       "| %s | cpu | resnet18 | 224 | 2 | fp32 | 1 | 2 | 1 | - | off |\n",
                       names[i]);
        run_matrix m;
        cr_expect_eq(matrix_parse(text, "m.md", &m, err, sizeof err), -1, "ENV '%s' accepted",
                     names[i]);
        cr_expect(strstr(err, "column 'ENV'") != NULL, "%s", err);
    }
}

/* ---- outputs: temporary file and rename, never through a planted link ------------- */

static bool file_is(const char *path, const char *text)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char buf[256] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strcmp(buf, text) == 0;
}

static bool is_link(const char *dir, const char *name)
{
    char path[1024];
    format_or_fail(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

Test(harden, writer_never_follows_a_link_at_either_name)
{
    char *dir = temp_dir();
    char victim[1024], path[1024], tmp[1100], err[1024];
    format_or_fail(victim, sizeof victim, "%s/victim", dir);
    write_text(dir, "victim", "keep me");
    format_or_fail(path, sizeof path, "%s/out.csv", dir);
    cr_assert_eq(sh("cd '%s' && ln -s victim out.csv.tmp && ln -s victim out.csv", dir), 0);
    FILE *f = csv_create(path, tmp, sizeof tmp, err, sizeof err);
    cr_assert_not_null(f, "%s", err);
    fputs("a,b\n", f);
    cr_assert_eq(csv_commit(f, tmp, path, err, sizeof err), 0, "%s", err);
    cr_expect(file_is(victim, "keep me"), "the link's target was written");
    cr_expect(file_is(path, "a,b\n"));
    cr_expect(!is_link(dir, "out.csv"), "out.csv is still a link");
    remove_temp_dir(dir);
}

/* The golden inputs in dir/run, with links planted where the programs write. */
static void planted_run(const char *dir)
{
    cr_assert_eq(sh("cd '%s' && mkdir run outside && printf secret > outside/secret && "
                    "for f in env.json peaks.csv steps.csv kernels.csv configs.csv; do "
                    "cp '%s/tests/golden/run/'$f run/ || exit 1; done && cd run && "
                    "for f in summary.csv.tmp roofline.csv.tmp variability.csv.tmp report.md.tmp "
                    "report.html.tmp report.md; do ln -s ../outside/secret $f || exit 1; done",
                    dir, ROOFLINE_SOURCE_DIR),
                 0);
}

Test(harden, programs_write_only_inside_the_run_folder, .timeout = 60)
{
    char *dir = temp_dir();
    planted_run(dir);
    char cmd[2048], out[8192];
    format_or_fail(cmd, sizeof cmd, "cd '%s' && '%s/analyze' run && '%s/report' run 2>&1", dir,
                   ROOFLINE_BIN_DIR, ROOFLINE_BIN_DIR);
    cr_expect_eq(run_capture(cmd, out, sizeof out), 0, "%s", out);
    char secret[1024];
    format_or_fail(secret, sizeof secret, "%s/outside/secret", dir);
    cr_expect(file_is(secret, "secret"), "a file outside the run folder was written");
    char run[1024];
    format_or_fail(run, sizeof run, "%s/run", dir);
    cr_expect(!is_link(run, "report.md"), "report.md is still a link");
    /* figures/ planted as a link to a folder outside: plotdata refuses it */
    cr_assert_eq(sh("cd '%s' && ln -s ../outside run/figures", dir), 0);
    format_or_fail(cmd, sizeof cmd, "cd '%s' && '%s/plotdata' run 2>&1", dir, ROOFLINE_BIN_DIR);
    int status = run_capture(cmd, out, sizeof out);
    cr_expect_eq(status, 1, "%s", out);
    cr_expect(strstr(out, "run/figures is not a folder (a link or a file)") != NULL, "%s", out);
    cr_expect_eq(count_lines(out), 1, "%s", out);
    cr_expect_eq(sh("test -z \"$(ls '%s/outside' | grep -v '^secret$')\"", dir), 0,
                 "plotdata wrote outside the run folder");
    remove_temp_dir(dir);
}

Test(harden, report_embeds_no_figure_through_a_link, .timeout = 60)
{
    char *dir = temp_dir();
    planted_run(dir);
    char cmd[2048], out[8192];
    /* every figure of the run a link to a file outside */
    format_or_fail(cmd, sizeof cmd,
                   "cd '%s' && '%s/analyze' run >/dev/null && '%s/plotdata' run >/dev/null && "
                   "for s in $(cut -f2 run/figures/figures.tsv); do "
                   "ln -s ../../outside/secret run/figures/$s.png; done && '%s/report' run 2>&1",
                   dir, ROOFLINE_BIN_DIR, ROOFLINE_BIN_DIR, ROOFLINE_BIN_DIR);
    int status = run_capture(cmd, out, sizeof out);
    cr_expect_eq(status, 1, "%s", out);
    cr_expect(strstr(out, "it is a symbolic link") != NULL, "%s", out);
    char html[1024];
    format_or_fail(html, sizeof html, "%s/run/report.html", dir);
    cr_expect_neq(access(html, F_OK), 0, "report.html was written with the linked file in it");
    remove_temp_dir(dir);
}

Test(harden, envinfo_writes_through_no_planted_link, .timeout = 60)
{
    char *dir = temp_dir();
    write_text(dir, "victim", "keep me");
    cr_assert_eq(sh("cd '%s' && ln -s victim env.json.tmp", dir), 0);
    char cmd[1024], out[4096];
    format_or_fail(cmd, sizeof cmd, "cd '%s' && '%s/envinfo' --out env.json --env t 2>&1", dir,
                   ROOFLINE_BIN_DIR);
    cr_expect_eq(run_capture(cmd, out, sizeof out), 0, "%s", out);
    char victim[1024];
    format_or_fail(victim, sizeof victim, "%s/victim", dir);
    cr_expect(file_is(victim, "keep me"));
    char *json = read_text(dir, "env.json");
    cr_expect(strstr(json, "\"env\": \"t\"") != NULL, "%.200s", json);
    free(json);
    remove_temp_dir(dir);
}

Test(harden, make_dirs_refuses_a_link_inside_but_not_above)
{
    char *dir = temp_dir();
    char err[1024], base[1024];
    cr_assert_eq(sh("cd '%s' && mkdir real outside && ln -s real above && ln -s ../outside real/figures",
                    dir),
                 0);
    /* the caller's own path may go through links ... */
    format_or_fail(base, sizeof base, "%s/above", dir);
    cr_expect_eq(plot_make_dirs(base, "data/deeper", err, sizeof err), 0, "%s", err);
    /* ... what is inside the run folder may not */
    cr_expect_eq(plot_make_dirs(base, "figures/data", err, sizeof err), -1);
    cr_expect(strstr(err, "figures is not a folder") != NULL, "%s", err);
    cr_expect_eq(sh("test ! -e '%s/outside/data'", dir), 0, "a folder was made through the link");
    remove_temp_dir(dir);
}

/* ---- inputs that are not regular files ------------------------------------------------ */

Test(harden, a_fifo_or_device_as_input_is_refused_not_waited_on, .timeout = 30)
{
    char *dir = temp_dir();
    cr_assert_eq(sh("cd '%s' && mkfifo steps.csv && ln -s /dev/zero peaks.csv", dir), 0);
    char cmd[1024], out[4096];
    format_or_fail(cmd, sizeof cmd, "timeout 10 '%s/analyze' '%s' 2>&1", ROOFLINE_BIN_DIR, dir);
    int status = run_capture(cmd, out, sizeof out);
    cr_expect_eq(status, 2, "%s", out);
    cr_expect(strstr(out, "not a regular file") != NULL, "%s", out);
    char path[1024], err[1024];
    format_or_fail(path, sizeof path, "%s/peaks.csv", dir);
    cr_expect_null(csv_read(path, err, sizeof err));
    cr_expect(strstr(err, "peaks.csv: cannot open: not a regular file") != NULL, "%s", err);
    remove_temp_dir(dir);
}

/* ---- a run folder whose path holds a quote renders (gnuplot's strings) ---------------- */

Test(harden, render_quotes_paths_for_gnuplot, .timeout = 120)
{
    if (access("/usr/bin/gnuplot", X_OK) != 0 && system("command -v gnuplot >/dev/null") != 0)
        cr_skip_test("gnuplot is not installed");
    char *dir = temp_dir();
    char cmd[4096], out[1 << 14];
    cr_assert_eq(sh("mkdir \"%s/it's run\" && for f in env.json peaks.csv steps.csv kernels.csv "
                    "configs.csv; do cp '%s/tests/golden/run/'$f \"%s/it's run/\" || exit 1; done",
                    dir, ROOFLINE_SOURCE_DIR, dir),
                 0);
    format_or_fail(cmd, sizeof cmd, "BIN='%s' '%s/scripts/render.sh' \"%s/it's run\" 2>&1",
                   ROOFLINE_BIN_DIR, ROOFLINE_SOURCE_DIR, dir);
    int status = run_capture(cmd, out, sizeof out);
    cr_expect_eq(status, 0, "%s", out);
    cr_expect(strstr(out, "could not draw") == NULL, "%s", out);
    format_or_fail(cmd, sizeof cmd,
                   "cd \"%s/it's run/figures\" && ls *.png | wc -l && "
                   "find . -name '*.tmp*' | wc -l",
                   dir);
    run_capture(cmd, out, sizeof out);
    int pngs = 0, tmps = -1;
    cr_expect_eq(sscanf(out, "%d %d", &pngs, &tmps), 2, "%s", out);
    cr_expect_geq(pngs, 3, "%s", out);
    cr_expect_eq(tmps, 0, "temporary figures left behind");
    remove_temp_dir(dir);
}
