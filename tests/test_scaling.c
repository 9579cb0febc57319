/* The runner's scaling stage (scripts/scaling.sh from scripts/bench.sh) on a
 * tiny matrix: world sizes 1 and 2 run under mpirun in weak and strong
 * scaling, 64 is skipped with one line, scaling.csv holds the rows with their
 * efficiency, the allreduce rows join peaks.csv, the model's predictions are
 * written, and a resume runs nothing again. About 60 s on 2 cores. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

static const char *const matrix =
    "| ENV | backend | models | res | batch | precision | warmup | iters | repeats | ranks | "
    "counters | peaks |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    "| ddp | cpu | resnet18-cifar@32/4 | - | - | fp32 | 1 | 2 | 1 | 1, 2, 64 | perf | quick |\n";

static int bench(const char *args, char *out, size_t len)
{
    char cmd[2048];
    format_or_fail(cmd, sizeof cmd,
                   "cd '%s' && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                   "THREADS=2 scripts/bench.sh %s BIN='%s' 2>&1",
                   ROOFLINE_SOURCE_DIR, args, ROOFLINE_BIN_DIR);
    return run_capture(cmd, out, len);
}

static void only_run(const char *runs, char *out, size_t len)
{
    char parent[1024];
    format_or_fail(parent, sizeof parent, "%s/ddp", runs);
    DIR *d = opendir(parent);
    cr_assert_not_null(d, "no %s", parent);
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            format_or_fail(out, len, "%s/%s", parent, e->d_name);
    closedir(d);
}

Test(scaling_stage, weak_strong_skip_model_and_resume, .timeout = 300)
{
    if (sh("command -v mpirun >/dev/null") != 0)
        cr_skip_test("no mpirun");
    char *dir = temp_dir();
    char path[1024], runs[1024], args[2048], run[1024];
    static char out[1 << 16];
    write_text(dir, "matrix.md", matrix);
    format_or_fail(path, sizeof path, "%s/matrix.md", dir);
    format_or_fail(runs, sizeof runs, "%s/runs", dir);
    format_or_fail(args, sizeof args, "ddp MATRIX='%s' RUNS_DIR='%s'", path, runs);
    int status = bench(args, out, sizeof out);
    cr_assert_eq(status, 0, "bench exited %d:\n%s", status, out);
    cr_expect(strstr(out, "scaling: skipped (world size 64: only ") != NULL, "%s", out);
    only_run(runs, run, sizeof run);

    char *scaling = read_text(run, "scaling.csv");
    cr_expect_eq(count_lines(scaling), 5, "header + strong and weak at 1 and 2 ranks:\n%s",
                 scaling);
    cr_expect(strstr(scaling, "\nddp,resnet18-cifar,32,weak,1,1,4,4,") != NULL, "%s", scaling);
    cr_expect(strstr(scaling, "\nddp,resnet18-cifar,32,strong,1,1,4,4,") != NULL, "%s", scaling);
    cr_expect(strstr(scaling, "\nddp,resnet18-cifar,32,weak,2,1,4,8,") != NULL, "%s", scaling);
    cr_expect(strstr(scaling, "\nddp,resnet18-cifar,32,strong,2,1,2,4,") != NULL, "%s", scaling);
    /* every row has its efficiency (column 13) */
    for (const char *line = strchr(scaling, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
        const char *c = line;
        for (int k = 0; k < 12; k++)
            c = strchr(c, ',') + 1;
        cr_expect(*c != ',', "no efficiency: %.120s", line);
    }
    char *peaks = read_text(run, "peaks.csv");
    cr_expect(strstr(peaks, "\nddp,cpu,allreduce,") != NULL, "%s", peaks);
    cr_expect(strstr(peaks, "\nddp,cpu,allreduce_latency,") != NULL, "%s", peaks);
    char *model = read_text(run, "scaling_model.csv");
    cr_expect(strstr(model, "\nddp,resnet18-cifar,32,weak,cpu,fit,2,1,2,") != NULL, "%s", model);
    char *configs = read_text(run, "configs.csv");
    cr_expect(strstr(configs, "\nscaling,resnet18-cifar,32,4,fp32,strong-2,ok,") != NULL, "%s",
              configs);

    /* a resume trains nothing again and keeps the rows */
    format_or_fail(args, sizeof args, "ddp MATRIX='%s' RUNS_DIR='%s' RUN='%s'", path, runs, run);
    char *before = read_text(run, "scaling.csv");
    status = bench(args, out, sizeof out);
    cr_expect_eq(status, 0, "%s", out);
    cr_expect(strstr(out, "rank(s)") == NULL, "trained again:\n%s", out);
    cr_expect_str_eq(read_text(run, "scaling.csv"), before);
    char *again = read_text(run, "configs.csv");
    cr_expect(strstr(again, "\nscaling,resnet18-cifar,32,4,fp32,weak-2,ok,") != NULL, "%s", again);
    remove_temp_dir(dir);
}
