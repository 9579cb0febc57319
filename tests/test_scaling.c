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

#include "../bench/runner/matrix.h"
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
                   "THREADS=2 scripts/bench.sh %s BIN='%s' REF=off 2>&1",
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
    /* the fit stops at the sizes run; the projection on the links goes to 64
     * ranks over 8 nodes */
    cr_expect(strstr(model, "\nddp,resnet18-cifar,32,weak,cpu,fit,4,") == NULL, "%s", model);
    cr_expect(strstr(model, "\nddp,resnet18-cifar,32,weak,cpu,links,64,8,8,") != NULL, "%s",
              model);
    /* strong scaling stops where the batch of 4 no longer splits */
    cr_expect(strstr(model, "\nddp,resnet18-cifar,32,strong,cpu,links,4,") != NULL, "%s", model);
    cr_expect(strstr(model, "\nddp,resnet18-cifar,32,strong,cpu,links,8,") == NULL, "%s", model);
    /* the report states the model, checks it at 2 ranks and projects it; the
     * figure draws the predictions beside the measured points */
    char *report = read_text(run, "report.md");
    cr_expect(strstr(report, "\n## Scaling\n") != NULL, "%.2000s", report);
    cr_expect(strstr(report, "\n### Scaling model\n") != NULL, "%.2000s", report);
    cr_expect(strstr(report, "never hidden") != NULL, "the last-bucket rule is stated");
    cr_expect(strstr(report, "fitted to this run's measured allreduce curve (allreduce.csv, "
                             "bin/allreduce on 2 ranks") != NULL, "the fit's curve is named");
    cr_expect(strstr(report, "| resnet18-cifar | 32 | weak | 2 | fit |") != NULL,
              "the 2-rank prediction beside its measurement:\n%s", report);
    cr_expect(strstr(report, "to 64 ranks over 8 nodes") != NULL, "%s", report);
    char *fig_model = read_text(run, "figures/data/scaling.model");
    cr_expect(strstr(fig_model, "# model (fit) resnet18-cifar @32 weak") != NULL, "%s", fig_model);
    cr_expect(strstr(fig_model, "\n64 ") != NULL, "the projection reaches 64 ranks:\n%s",
              fig_model);
    if (sh("command -v gnuplot >/dev/null") == 0) {
        char png[1200];
        format_or_fail(png, sizeof png, "%s/figures/scaling.png", run);
        cr_expect(access(png, R_OK) == 0, "no %s", png);
    }
    char *configs = read_text(run, "configs.csv");
    cr_expect(strstr(configs, "\nscaling,resnet18-cifar,32,4,fp32,strong-2,ok,") != NULL, "%s",
              configs);

    /* a resume trains nothing again and keeps the rows, in a folder as the
     * runner before the graph column left it too */
    cr_assert_eq(sh("cd '%s' && sed -i \"s/$(printf '\\t')off$//\" matrix.tsv && "
                    "sed -i '1s/,graph$//; 2,$s/,off$//' parts/*.steps.csv && "
                    "sed -i 's/,off$//' parts/*.config.csv && rm -f complete configs.csv",
                    run),
                 0);
    format_or_fail(args, sizeof args, "ddp MATRIX='%s' RUNS_DIR='%s' RUN='%s'", path, runs, run);
    char *before = read_text(run, "scaling.csv");
    status = bench(args, out, sizeof out);
    cr_expect_eq(status, 0, "%s", out);
    cr_expect(strstr(out, "rank(s)") == NULL, "trained again:\n%s", out);
    cr_expect_str_eq(read_text(run, "scaling.csv"), before);
    char *again = read_text(run, "configs.csv");
    cr_expect(strstr(again, "\nscaling,resnet18-cifar,32,4,fp32,weak-2,ok,") != NULL, "%s", again);
    cr_expect_eq(count_of(again, ",off\n"), count_lines(again) - 1, "every row eager:\n%s", again);

    /* inside a Slurm allocation of 2 nodes, one task each: srun gets the
     * nodes that hold each world size (a stand-in srun notes its arguments
     * and starts the ranks with mpirun) */
    write_text(dir, "srun",
               "#!/bin/bash\n"
               "echo \"$*\" >>\"${0%/*}/srun.log\"\n"
               "np=1\n"
               "while (($#)); do\n"
               "  case $1 in -n) np=$2; shift 2 ;; -N) shift 2 ;; -*) shift ;; *) break ;; esac\n"
               "done\n"
               "exec mpirun --bind-to none -np \"$np\" \"$@\"\n");
    cr_assert_eq(sh("cd '%s' && rm -f '%s'/parts/*.n2.scaling.csv && chmod +x '%s/srun' && "
                    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 THREADS=2 "
                    "BIN='%s' LAUNCHER='%s/srun' SLURM_JOB_ID=7 SLURM_NTASKS=2 "
                    "SLURM_NTASKS_PER_NODE=1 scripts/scaling.sh '%s' '1, 2, 64' "
                    ">'%s/slurm.out' 2>&1",
                    ROOFLINE_SOURCE_DIR, run, dir, ROOFLINE_BIN_DIR, dir, run, dir),
                 0, "%s", read_text(dir, "slurm.out"));
    char *slurm = read_text(dir, "slurm.out");
    cr_assert_eq(sh("test -f '%s/srun.log'", dir), 0, "srun never ran:\n%s", slurm);
    char *srun = read_text(dir, "srun.log");
    cr_expect(strstr(srun, "-n 2 -N 2 --ntasks-per-node=1 --cpus-per-task=1 ") != NULL, "%s",
              srun);
    cr_expect(strstr(slurm, "skipped (world size 64: only 2 tasks in Slurm job 7 here)") != NULL,
              "%s", slurm);
    cr_expect_eq(sh("test $(ls '%s'/parts/*.n2.scaling.csv | wc -l) -eq 2", run), 0,
                 "the 2-rank runs, weak and strong, measured again");
    /* an allocation without --ntasks-per-node: srun places the ranks */
    cr_assert_eq(sh("cd '%s' && rm -f '%s'/parts/*.weak.n2.scaling.csv '%s/srun.log' && "
                    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 THREADS=2 "
                    "BIN='%s' LAUNCHER='%s/srun' SLURM_JOB_ID=7 SLURM_NTASKS=2 "
                    "scripts/scaling.sh '%s' '1, 2' >'%s/slurm.out' 2>&1",
                    ROOFLINE_SOURCE_DIR, run, dir, ROOFLINE_BIN_DIR, dir, run, dir),
                 0, "%s", read_text(dir, "slurm.out"));
    srun = read_text(dir, "srun.log");
    cr_expect(strstr(srun, "-n 2 --cpus-per-task=1 ") != NULL, "%s", srun);
    remove_temp_dir(dir);
}

/* The shipped run matrix has a small CPU row with ranks, so that `make bench
 * ENV=scaling-smoke` runs the whole data-parallel study on any machine with
 * two cores (one rank per core): one configuration whose batch splits in two. */
Test(scaling_row, shipped_scaling_smoke_row)
{
    run_matrix m;
    char err[512] = "";
    cr_assert_eq(matrix_load(ROOFLINE_SOURCE_DIR "/run_matrix.md", &m, err, sizeof err), 0, "%s",
                 err);
    const matrix_row *row = matrix_find(&m, "scaling-smoke");
    cr_assert_not_null(row, "no scaling-smoke row in run_matrix.md");
    cr_expect_str_eq(row->backend, "cpu");
    cr_assert_eq(row->n_ranks, 2);
    cr_expect_eq(row->ranks[0], 1);
    cr_expect_eq(row->ranks[1], 2);
    matrix_config c[4];
    cr_assert_eq(matrix_expand(row, c, 4), 1);
    cr_expect_eq(c[0].batch % 2, 0, "strong scaling splits the batch over 2 ranks");
    cr_expect_leq(row->iters, 5, "a smoke row stays short");
    matrix_free(&m);
}

/* The report's Scaling section from a hand-made run folder (no mpirun): the
 * per-step breakdown with the hidden shares, the model's assumptions with
 * the numbers it used, predicted beside measured at 2 ranks, and the
 * projection to 64 ranks over 8 nodes. */
Test(scaling_report, breakdown_assumptions_validation_projection)
{
    char *dir = temp_dir();
    write_text(dir, "scaling.csv",
               "env,model,res,mode,world_size,nodes,per_rank_batch,global_batch,step_ms,"
               "images_per_s,comm_ms,exposed_comm_ms,efficiency,backend,precision,"
               "comm_precision,bucket_mb,transport,threads_per_rank,copy_ms,last_comm_ms,"
               "backward_comm_ms\n"
               "t,resnet18-cifar,32,weak,1,1,64,64,1200,53.3,0,5,1.0000,cpu,fp32,fp32,25,mpi,1,5,,\n"
               "t,resnet18-cifar,32,weak,2,1,64,128,1300,98.5,16,18,0.9231,cpu,fp32,fp32,25,mpi,"
               "1,6,10,4.5\n");
    /* hidden: 1 - (18 - 6) / 16 = 25%; all but the last: the reductions cost 4.5 ms in
     * the hooks + max(0, 12 - 4.5 - 10) of the final wait, over 16 - 10 ms: 25% */
    write_text(dir, "scaling_model.csv",
               "env,model,res,mode,backend,link,world_size,nodes,ranks_per_node,per_rank_batch,"
               "global_batch,compute_ms,allreduce_ms,overlap_ms,exposed_ms,step_ms,images_per_s,"
               "efficiency,measured_step_ms,measured_efficiency,intra_alpha_us,intra_busbw_gbs,"
               "inter_alpha_us,inter_busbw_gbs,overlap_efficiency,backward_share,host_copy_ms,"
               "last_bucket_ms,fit_ranks,fit_points,fit_worst_pct,fit_min_mb\n"
               "t,resnet18-cifar,32,weak,cpu,fit,1,1,2,64,64,1195,0,0,5,1200,53.3,1,1200,1,0.3,2.1,"
               "5,50,0,0.666,5,0,2,21,58,8\n"
               "t,resnet18-cifar,32,weak,cpu,fit,2,1,2,64,128,1195,21,0,26,1221,104.8,0.9828,1300,"
               "0.9231,0.3,2.1,5,50,0,0.666,5,12,2,21,58,8\n"
               "t,resnet18-cifar,32,weak,cpu,links,1,1,8,64,64,1195,0,0,5,1200,53.3,1,1200,1,1,450,"
               "5,50,0,0.666,5,0,,,,\n"
               "t,resnet18-cifar,32,weak,cpu,links,64,8,8,64,4096,1195,0.5,0,5.5,1200.5,3412,0.9996,"
               ",,1,450,5,50,0,0.666,5,0.1,,,,\n"
               "t,resnet18-cifar,32,strong,cpu,links,64,8,8,1,64,18.7,0.5,0,5.5,24.2,2645,0.775,"
               ",,1,450,5,50,0,0.666,5,0.1,,,,\n");
    char args[1200], out[4096];
    format_or_fail(args, sizeof args, "report %s", dir);
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "%s", out);
    char *md = read_text(dir, "report.md");
    cr_expect(strstr(md, "| resnet18-cifar | 32 | weak | 2 | 1 | 1 | 64 | 128 | 1300 | 98.5 | "
                         "1282 | 16.0 | 18.0 | 25% / 25% | 0.923 |") != NULL,
              "the measured breakdown:\n%s", md);
    cr_expect(strstr(md, "bin/allreduce on 2 ranks, 21 sizes") != NULL, "the fit's curve");
    cr_expect(strstr(md, "busbw 2.10 GB/s") != NULL, "the fit's bandwidth:\n%s", md);
    cr_expect(strstr(md, "450 GB/s") != NULL && strstr(md, "NVLink 4") != NULL, "the links");
    cr_expect(strstr(md, "never hidden") != NULL, "the last-bucket rule");
    cr_expect(strstr(md, "backward 67% of the compute, overlap efficiency 0") != NULL,
              "the configuration's inputs:\n%s", md);
    cr_expect(strstr(md, "| resnet18-cifar | 32 | weak | 2 | fit | 1221 | 1300 | -6.1% | 0.983 | "
                         "0.923 |") != NULL,
              "predicted beside measured:\n%s", md);
    cr_expect(strstr(md, "to 64 ranks over 8 nodes") != NULL, "%s", md);
    cr_expect(strstr(md, "| resnet18-cifar | 32 | 64 | 8 | 24.2 | 78% | 1200 | 100% |") != NULL,
              "the projection, strong beside weak:\n%s", md);
    cr_expect(strstr(md, "a what-if") != NULL, "a CPU run's projection is labelled");
    remove_temp_dir(dir);
}
