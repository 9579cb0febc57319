/* End-to-end smoke test of `make bench` (scripts/bench.sh) on a tiny matrix
 * under a temporary RUNS_DIR: the run folder's files, resuming without
 * training again, a failing configuration that becomes a row while the
 * matrix goes on, and, when scripts/render.sh exists, the report. About 20 s
 * on 2 cores, most of it quick peaks and rendering. */
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
    "| smoke | cpu | resnet18-cifar@32/2 | - | - | fp32 | 1 | 2 | 2 | 1 | perf | quick |\n"
    "| smokefail | cuda | resnet18-cifar@32/2 | - | - | fp32 | 0 | 1 | 1 | 1, 2 | cupti | off |\n";

/* Runs scripts/bench.sh with `args` from the source folder; stdout and stderr
 * into out; returns the exit status. */
static int bench(const char *args, char *out, size_t len)
{
    char cmd[2048];
    format_or_fail(cmd, sizeof cmd, "cd '%s' && scripts/bench.sh %s BIN='%s' REF=off 2>&1",
                   ROOFLINE_SOURCE_DIR, args, ROOFLINE_BIN_DIR);
    return run_capture(cmd, out, len);
}

static bool exists(const char *dir, const char *name)
{
    char path[1024];
    format_or_fail(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* The only run folder under runs/ENV, into out; fails unless exactly one. */
static void only_run(const char *runs, const char *env, char *out, size_t len)
{
    char parent[1024];
    format_or_fail(parent, sizeof parent, "%s/%s", runs, env);
    DIR *d = opendir(parent);
    cr_assert_not_null(d, "no %s", parent);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        format_or_fail(out, len, "%s/%s", parent, e->d_name);
        n++;
    }
    closedir(d);
    cr_assert_eq(n, 1, "%d run folders under %s", n, parent);
}

Test(bench, smoke_run_resume_and_failure, .timeout = 120)
{
    char *dir = temp_dir();
    char path[1024], runs[1024], args[2048], run[1024];
    static char out[1 << 16];
    write_text(dir, "matrix.md", matrix);
    format_or_fail(path, sizeof path, "%s/matrix.md", dir);
    format_or_fail(runs, sizeof runs, "%s/runs", dir);
    bool can_render = access(ROOFLINE_SOURCE_DIR "/scripts/render.sh", X_OK) == 0;

    /* a new run */
    format_or_fail(args, sizeof args, "smoke MATRIX='%s' RUNS_DIR='%s'", path, runs);
    int status = bench(args, out, sizeof out);
    cr_expect_eq(status, 0, "bench exited %d:\n%s", status, out);
    cr_expect(strstr(out, "configuration 1 of 1, repeat 2 of 2 (run 2 of 3)") != NULL, "%s", out);
    cr_expect(strstr(out, "est. time left") != NULL, "%s", out);
    cr_expect(strstr(out, "scaling: skipped (") != NULL, "%s", out);
    only_run(runs, "smoke", run, sizeof run);
    char *steps = read_text(run, "steps.csv");
    cr_expect_eq(count_lines(steps), 1 + 2 * 2, "header + 2 repeats x 2 iterations:\n%s", steps);
    cr_expect(strncmp(steps, "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,",
                      66) == 0, "%s", steps);
    cr_expect(strstr(steps, "\nsmoke,cpu,resnet18-cifar,32,2,fp32,1,0,2,1,") != NULL, "%s", steps);
    char *configs = read_text(run, "configs.csv");
    const char *first = "config,model,res,batch,precision,repeat,status,seconds,log,graph\n"
                        "1/1,resnet18-cifar,32,2,fp32,1,ok,";
    cr_expect(strncmp(configs, first, strlen(first)) == 0, "%s", configs);
    cr_expect(strstr(configs, "\n1/1,resnet18-cifar,32,2,fp32,2,ok,") != NULL, "%s", configs);
    cr_expect(strstr(configs, "\n1/1,resnet18-cifar,32,2,fp32,trace,ok,") != NULL, "%s", configs);
    cr_expect_eq(count_lines(configs), 4, "%s", configs);
    char *kernels = read_text(run, "kernels.csv");
    cr_expect_gt(count_lines(kernels), 50, "one row per operation of the traced step");
    cr_expect(strstr(kernels, "\nsmoke,resnet18-cifar,32,2,fp32,0,") != NULL, "%.300s", kernels);
    cr_expect(exists(run, "env.json") && exists(run, "peaks.csv") && exists(run, "complete"),
              "env.json, peaks.csv and the complete mark in %s", run);
    cr_expect(exists(run, "logs/resnet18-cifar_r32_b2_fp32.rep1.log"));
    if (can_render) {
        cr_expect(exists(run, "report.md"), "no report.md in %s:\n%s", run, out);
        cr_expect(exists(run, "report.html"), "no report.html in %s", run);
    } else {
        cr_expect(strstr(out, "report: rendering is not available") != NULL, "%s", out);
    }

    /* resuming a run whose configurations are complete trains nothing */
    format_or_fail(args, sizeof args, "smoke MATRIX='%s' RUNS_DIR='%s' RUN='%s'", path, runs,
                   run);
    status = bench(args, out, sizeof out);
    cr_expect_eq(status, 0, "resume exited %d:\n%s", status, out);
    cr_expect(strstr(out, "3 of 3 runs complete, 0 to run") != NULL, "%s", out);
    cr_expect(strstr(out, "configuration 1 of 1") == NULL, "trained again:\n%s", out);
    char *again = read_text(run, "steps.csv");
    cr_expect_str_eq(again, steps, "steps.csv changed on resume");

    /* the latest unfinished run is resumed when no RUN is given */
    format_or_fail(args, sizeof args, "%s/complete", run);
    cr_assert_eq(unlink(args), 0);
    format_or_fail(args, sizeof args, "smoke MATRIX='%s' RUNS_DIR='%s'", path, runs);
    status = bench(args, out, sizeof out);
    cr_expect_eq(status, 0, "%s", out);
    cr_expect(strstr(out, "0 to run") != NULL, "%s", out);
    only_run(runs, "smoke", run, sizeof run);

    /* a configuration that fails is a row with its status; the matrix goes on */
    format_or_fail(args, sizeof args, "smokefail MATRIX='%s' RUNS_DIR='%s'", path, runs);
    status = bench(args, out, sizeof out);
    cr_expect_eq(status, 1, "%s", out);
    cr_expect(strstr(out, "1 of 2 runs failed") != NULL, "%s", out);
    cr_expect(strstr(out, "scaling: skipped (") != NULL, "the matrix went on:\n%s", out);
    only_run(runs, "smokefail", run, sizeof run);
    char *failed = read_text(run, "configs.csv");
    cr_expect(strstr(failed, "\n1/1,resnet18-cifar,32,2,fp32,1,failed (exit 2),") != NULL, "%s",
              failed);
    cr_expect(strstr(failed, "\n1/1,resnet18-cifar,32,2,fp32,trace,skipped (every repeat failed),")
              != NULL, "%s", failed);

    /* an unknown ENV lists the known ones */
    format_or_fail(args, sizeof args, "nosuch MATRIX='%s' RUNS_DIR='%s'", path, runs);
    status = bench(args, out, sizeof out);
    cr_expect_eq(status, 2, "%s", out);
    cr_expect(strstr(out, "unknown ENV 'nosuch' (known: smoke, smokefail, local;") != NULL, "%s",
              out);
    cr_expect_eq(count_lines(out), 1, "%s", out);

    free(steps);
    free(configs);
    free(kernels);
    free(again);
    free(failed);
    remove_temp_dir(dir);
}

/* A configuration the machine cannot run at all (bin/train's exit 3: here a
 * stand-in bin/train refuses every batch of 8 as a GPU short of memory
 * would) is skipped, not failed: one process tries it, its other repeat and
 * its trace pass are rows of the same status, its reason (commas and all) is
 * one quoted cell, the scaling stage does not scale it, the report says so
 * apart from failures, the run exits 0, and a resume keeps it that way. */
Test(bench, what_the_machine_cannot_run_is_skipped_not_failed, .timeout = 300)
{
    /* the scaling stage where this build has --ddp and mpirun is there (not
     * under make test-asan, which builds without MPI) */
    bool ddp = sh("command -v mpirun >/dev/null && ! '%s/train' --help | "
                  "grep -q -- '--ddp is not in this build'",
                  ROOFLINE_BIN_DIR) == 0;
    int skips = ddp ? 4 : 3;
    char *dir = temp_dir();
    char path[1024], runs[1024], run[1024];
    static char out[1 << 16];
    write_text(dir, "matrix.md",
               "| ENV | backend | models | res | batch | precision | warmup | iters | repeats | "
               "ranks | counters | peaks |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
               "| skip | cpu | resnet18-cifar@8/4, resnet18-cifar@8/8 | - | - | fp32 | 0 | 1 | 2 | "
               "1, 2 | perf | quick |\n");
    write_text(dir, "train",
               "#!/bin/bash\n"
               "case \" $* \" in\n"
               "*' --batch 8 '*)\n"
               "  echo \"$*\" >>\"${0%/*}/refused.log\"\n"
               "  echo 'train: cannot run here: a batch of 8 needs 1.50 GiB of device memory for "
               "activations, gradients and parameters; 0.75 GiB is free of 0.75: use a smaller "
               "--batch' >&2\n"
               "  exit 3 ;;\n"
               "esac\n"
               "exec \"$REAL_TRAIN\" \"$@\"\n");
    cr_assert_eq(sh("cd '%s' && mkdir bin && ln -s '%s'/* bin/ && rm bin/train && mv train bin/ "
                    "&& chmod +x bin/train",
                    dir, ROOFLINE_BIN_DIR),
                 0);
    format_or_fail(path, sizeof path, "%s/matrix.md", dir);
    format_or_fail(runs, sizeof runs, "%s/runs", dir);
    char cmd[4096];
    format_or_fail(cmd, sizeof cmd,
                   "cd '%s' && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 THREADS=2 "
                   "REAL_TRAIN='%s/train' scripts/bench.sh skip MATRIX='%s' RUNS_DIR='%s' "
                   "BIN='%s/bin' REF=off 2>&1",
                   ROOFLINE_SOURCE_DIR, ROOFLINE_BIN_DIR, path, runs, dir);
    int status = run_capture(cmd, out, sizeof out);
    cr_assert_eq(status, 0, "bench exited %d:\n%s", status, out);
    const char *why = "a batch of 8 needs 1.50 GiB of device memory for activations, gradients "
                      "and parameters; 0.75 GiB is free of 0.75: use a smaller --batch";
    char want[1024];
    format_or_fail(want, sizeof want, "bench:   skipped here (%s)\n", why);
    cr_expect_eq(count_of(out, want), 1, "%s", out);
    format_or_fail(want, sizeof want, "bench: scaling:   skipped here (%s)\n", why);
    cr_expect_eq(count_of(out, want), ddp, "%s", out);
    cr_expect_eq(count_of(out, "skipped (resnet18-cifar res 8 batch 8 fp32 at more ranks: one "
                               "rank cannot run it)"),
                 ddp, "%s", out);
    if (!ddp)
        cr_expect(strstr(out, "scaling: skipped (") != NULL, "%s", out);
    format_or_fail(want, sizeof want, " runs ok; %d skipped: this machine cannot run them", skips);
    cr_expect(strstr(out, want) != NULL, "%s", out);
    /* one process tried it alone, and one under mpirun at one rank */
    char *refused = read_text(dir, "bin/refused.log");
    cr_expect_eq(count_lines(refused), 1 + ddp, "%s", refused);
    cr_expect_eq(count_of(refused, "--ddp"), ddp, "%s", refused);

    format_or_fail(run, sizeof run, "%s/skip", runs);
    cr_assert_eq(sh("cd '%s' && ln -s '%s'/2* run", dir, run), 0);
    format_or_fail(run, sizeof run, "%s/run", dir);
    char *configs = read_text(run, "configs.csv");
    static const char *const tags[] = {"1", "2", "trace"};
    for (size_t i = 0; i < 3; i++) {
        format_or_fail(want, sizeof want, "\n2/2,resnet18-cifar,8,8,fp32,%s,\"skipped here (%s)\",",
                       tags[i], why);
        cr_expect(strstr(configs, want) != NULL, "no row '%s' in:\n%s", want + 1, configs);
    }
    if (ddp) {
        format_or_fail(want, sizeof want,
                       "\nscaling,resnet18-cifar,8,8,fp32,weak-1,\"skipped here (%s)\",", why);
        cr_expect(strstr(configs, want) != NULL, "%s", configs);
        cr_expect(strstr(configs, "\nscaling,resnet18-cifar,8,4,fp32,strong-2,ok,") != NULL,
                  "%s", configs);
    }
    cr_expect_eq(count_of(configs, "failed"), 0, "%s", configs);
    char *complete = read_text(run, "complete");
    format_or_fail(want, sizeof want, "failed 0, skipped %d (this machine cannot run them)", skips);
    cr_expect(strstr(complete, want) != NULL, "%s", complete);
    char *md = read_text(run, "report.md");
    cr_expect(strstr(md, "1 configuration of the matrix was skipped here, not failed: this "
                         "machine cannot run it") != NULL,
              "%s", md);
    format_or_fail(want, sizeof want, "did not complete: 0 failed, and %d were skipped here", skips);
    cr_expect(strstr(md, want) != NULL, "%s", md);
    cr_expect(strstr(md, "runs did not complete, ") == NULL, "a skip reads as a failure:\n%s", md);
    /* the study is whole: what the machine cannot run is no gap */
    status = sh("cd '%s' && scripts/check_run.sh '%s' >'%s/check.out' 2>&1", ROOFLINE_SOURCE_DIR,
                run, dir);
    char *check = read_text(dir, "check.out");
    cr_expect_eq(status, 0, "%s", check);
    format_or_fail(want, sizeof want, "every run ok or skipped here (%d: the machine cannot run them)",
                   skips);
    cr_expect(strstr(check, want) != NULL, "%s", check);
    free(check);
    free(md);
    free(complete);
    free(refused);
    free(configs);

    /* a resume asks once more, and the rows stay one each */
    format_or_fail(cmd, sizeof cmd,
                   "cd '%s' && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 THREADS=2 "
                   "REAL_TRAIN='%s/train' scripts/bench.sh skip MATRIX='%s' RUNS_DIR='%s' "
                   "BIN='%s/bin' RUN='%s' REF=off 2>&1",
                   ROOFLINE_SOURCE_DIR, ROOFLINE_BIN_DIR, path, runs, dir, run);
    cr_expect_eq(run_capture(cmd, out, sizeof out), 0, "%s", out);
    configs = read_text(run, "configs.csv");
    cr_expect_eq(count_of(configs, "skipped here ("), skips, "%s", configs);
    free(configs);
    remove_temp_dir(dir);
}

/* The reference stage (REF=auto): PyTorch on the row's configurations through
 * the python3 PY names, here a stand-in for python3 and scripts/pytorch_ref.py
 * (tests/fakes/pytorch_ref_fake.sh: two rows per configuration, 4 images/s at
 * batch 2); reference.csv gains
 * the graph column, the report its section; a resume keeps the part; no
 * python3 with torch is one line and the run still ends ok. */
Test(bench, pytorch_runs_beside_the_matrix_where_it_imports, .timeout = 300)
{
    char *dir = temp_dir();
    char path[1024], runs[1024], args[2048], run[1024];
    static char out[1 << 16];
    write_text(dir, "matrix.md", matrix);
    /* the stand-in logs beside itself: a link in the scratch folder */
    cr_assert_eq(sh("ln -s '%s/tests/fakes/pytorch_ref_fake.sh' '%s/python3'", ROOFLINE_SOURCE_DIR,
                    dir),
                 0);
    format_or_fail(path, sizeof path, "%s/matrix.md", dir);
    format_or_fail(runs, sizeof runs, "%s/runs", dir);
    format_or_fail(args, sizeof args,
                   "cd '%s' && PY='%s/python3' scripts/bench.sh smoke MATRIX='%s' RUNS_DIR='%s' "
                   "BIN='%s' 2>&1",
                   ROOFLINE_SOURCE_DIR, dir, path, runs, ROOFLINE_BIN_DIR);
    int status = run_capture(args, out, sizeof out);
    cr_expect_eq(status, 0, "bench exited %d:\n%s", status, out);
    cr_expect(strstr(out, "bench: reference: PyTorch 9.9-stand-in (") != NULL, "%s", out);
    cr_expect(strstr(out, ", 1 eager configuration(s)") != NULL, "%s", out);
    cr_expect(strstr(out, "bench: reference:   resnet18-cifar res=32 batch=2 precision=fp32 "
                          "images_per_s=4") != NULL,
              "%s", out);
    only_run(runs, "smoke", run, sizeof run);
    char *ref = read_text(run, "reference.csv");
    cr_expect_str_eq(ref,
                     "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,"
                     "images_per_s,loss,peak_mem_bytes,graph\n"
                     "smoke,pytorch-9.9-stand-in,resnet18-cifar,32,2,fp32,1,0,0,0,500,4,2.3,1048576,"
                     "off\n"
                     "smoke,pytorch-9.9-stand-in,resnet18-cifar,32,2,fp32,1,0,0,1,500,4,2.3,1048576,"
                     "off\n");
    char *log = read_text(dir, "python.log");
    cr_expect(strstr(log, "--device cpu") && strstr(log, "--mode eager") &&
                  strstr(log, "--threads "),
              "%s", log);
    cr_expect(strstr(log, "--channels-last") == NULL, "channels_last is for GPUs: %s", log);
    if (access(ROOFLINE_SOURCE_DIR "/scripts/render.sh", X_OK) == 0) {
        char *md = read_text(run, "report.md");
        cr_expect(strstr(md, "\n## Against PyTorch\n") != NULL, "%s", md);
        cr_expect(strstr(md, "PyTorch (pytorch-9.9-stand-in) on the same configurations") != NULL,
                  "%s", md);
        cr_expect(strstr(md, "- Against PyTorch on this machine, in this run: ") != NULL, "%s", md);
        free(md);
    }
    free(log);

    /* a resume measures nothing again */
    cr_assert_eq(sh("rm '%s/python.log' '%s/complete'", dir, run), 0);
    status = run_capture(args, out, sizeof out);
    cr_expect_eq(status, 0, "%s", out);
    cr_expect(strstr(out, "reference: eager: kept from before") != NULL, "%s", out);
    cr_expect(access(ROOFLINE_SOURCE_DIR "/python.log", F_OK) != 0 &&
                  sh("test ! -e '%s/python.log'", dir) == 0,
              "PyTorch ran again:\n%s", out);
    char *again = read_text(run, "reference.csv");
    cr_expect_str_eq(again, ref);

    /* no python3 that imports torch: one line, the run is ok (the same folder
     * resumed without its reference, so that nothing trains again) */
    cr_assert_eq(sh("rm -f '%s/complete' '%s/reference.csv' '%s'/parts/reference.*", run, run, run),
                 0);
    format_or_fail(args, sizeof args,
                   "cd '%s' && PY=/nonexistent/python3 scripts/bench.sh smoke RUN='%s' "
                   "MATRIX='%s' RUNS_DIR='%s' BIN='%s' 2>&1",
                   ROOFLINE_SOURCE_DIR, run, path, runs, ROOFLINE_BIN_DIR);
    status = run_capture(args, out, sizeof out);
    cr_expect_eq(status, 0, "%s", out);
    cr_expect(strstr(out, "bench: reference: skipped (no python3 that imports torch and "
                          "torchvision: apt-get install -y python3-torch python3-torchvision, or "
                          "PY=...)")
                  != NULL,
              "%s", out);
    cr_expect(sh("test ! -e '%s/reference.csv'", run) == 0, "a reference.csv without PyTorch");
    free(ref);
    free(again);
    remove_temp_dir(dir);
}
