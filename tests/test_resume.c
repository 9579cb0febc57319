/* `make bench` interrupted and resumed (issue 16): scripts/bench.sh killed
 * with SIGKILL at chosen points (the whole process group, as a batch
 * scheduler or a closed terminal does), then resumed with RUN=, must end with
 * every configuration's rows present exactly once and no temporary file left;
 * SIGTERM and SIGINT stop it at once, remove the partial files and say in one
 * line how to resume.
 *
 * The kill points are reached by interposition, with no hook in the runner:
 * `mv` and `mkdir` on PATH, bin/train and gnuplot are wrappers that do the
 * real work and then, when their argument matches the point asked for, kill
 * the process group. One configuration (resnet18-cifar, batch 2, two repeats
 * of two steps and a trace pass), no peaks and no figures keep a run to a few
 * seconds. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

static const char *const matrix =
    "| ENV | backend | models | res | batch | precision | warmup | iters | repeats | ranks | "
    "counters | peaks |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    "| resume | cpu | resnet18-cifar@32/2 | - | - | fp32 | 0 | 2 | 2 | - | off | off |\n";

/* The interposers: each does the real thing, then kills its process group
 * the KILL_N-th time its last argument matches KILL_GLOB (KILL_CMD names
 * which of them). */
static const char *const interpose =
    "#!/bin/bash\n"
    "name=${0##*/}\n"
    "command -p \"$name\" \"$@\"; status=$?\n"
    "if [[ ${KILL_CMD:-} == \"$name\" && ${!#} == $KILL_GLOB ]]; then\n"
    "    n=$(( $(cat \"$KILL_COUNT\" 2>/dev/null || echo 0) + 1 )); echo $n > \"$KILL_COUNT\"\n"
    "    if (( n == KILL_N )); then echo \"$name ${!#}\" > \"$KILL_COUNT.fired\"; kill -KILL 0; fi\n"
    "fi\n"
    "exit $status\n";

/* bin/train: killed while it trains (train-mid) or just after it exits (train-done) */
static const char *const train_wrapper =
    "#!/bin/bash\n"
    "real=\"$REAL_BIN/train\"\n"
    "if [[ ${KILL_CMD:-} == train-* ]]; then\n"
    "    n=$(( $(cat \"$KILL_COUNT\" 2>/dev/null || echo 0) + 1 )); echo $n > \"$KILL_COUNT\"\n"
    "    if (( n == KILL_N )); then\n"
    "        echo \"$KILL_CMD $*\" > \"$KILL_COUNT.fired\"\n"
    "        if [[ $KILL_CMD == train-mid ]]; then \"$real\" \"$@\" & sleep 0.5; kill -KILL 0; fi\n"
    "        \"$real\" \"$@\"; kill -KILL 0\n"
    "    fi\n"
    "fi\n"
    "exec \"$real\" \"$@\"\n";

/* gnuplot: killed at its first figure (gnuplot-mid); otherwise no figure is
 * drawn, which the report survives, and which keeps the test fast */
static const char *const gnuplot_wrapper =
    "#!/bin/bash\n"
    "if [[ ${KILL_CMD:-} == gnuplot ]]; then echo gnuplot > \"$KILL_COUNT.fired\"; kill -KILL 0; fi\n"
    "exit 1\n";

typedef struct {
    const char *name;     /* what the point is, for messages */
    const char *cmd;      /* KILL_CMD */
    const char *glob;     /* KILL_GLOB: the last argument of mv / mkdir */
    int n;                /* KILL_N */
} kill_point;

static const kill_point points[] = {
    /* defect 12: a folder without matrix.tsv that RUN= could not resume */
    {"the run folder made, matrix.tsv not yet", "mkdir", "*/runs/resume/*", 1},
    {"matrix.tsv written", "mv", "*/matrix.tsv", 1},
    {"during the first training process", "train-mid", "", 1},
    {"the first training process exited, nothing renamed", "train-done", "", 1},
    {"repeat 1's row written, its part not yet", "mv", "*.rep1.config.csv", 1},
    /* defect 3: the part renamed before its configs.csv row was written */
    {"repeat 1's part renamed", "mv", "*.rep1.steps.csv", 1},
    {"steps.csv assembled after repeat 1", "mv", "*/steps.csv", 1},
    {"during the second training process", "train-mid", "", 2},
    {"repeat 2's part renamed", "mv", "*.rep2.steps.csv", 1},
    {"the trace pass's part renamed", "mv", "*.kernels.csv", 1},
    {"configs.csv assembled the last time", "mv", "*/configs.csv", 4},
    {"the complete mark written", "mv", "*/complete", 1},
    {"rendering", "gnuplot", "", 1},
};

typedef struct {
    char *dir;          /* the scratch folder */
    char runs[1024];    /* RUNS_DIR */
    char env[4096];     /* the environment of every bench.sh */
} bench_env;

static void setup(bench_env *b)
{
    b->dir = temp_dir();
    const char *d = b->dir;
    write_text(d, "matrix.md", matrix);
    cr_assert_eq(sh("cd '%s' && mkdir interpose bin && for p in analyze envinfo matrix peaks "
                    "plotdata report; do ln -s '%s'/$p bin/$p || exit 1; done",
                    d, ROOFLINE_BIN_DIR),
                 0);
    write_text(d, "interpose/mv", interpose);
    write_text(d, "bin/train", train_wrapper);
    write_text(d, "gnuplot", gnuplot_wrapper);
    cr_assert_eq(sh("cd '%s' && cp interpose/mv interpose/mkdir && chmod +x interpose/* bin/train "
                    "gnuplot",
                    d),
                 0);
    format_or_fail(b->runs, sizeof b->runs, "%s/runs", d);
    format_or_fail(b->env, sizeof b->env,
                   "PATH='%s/interpose':\"$PATH\" REAL_BIN='%s' GNUPLOT='%s/gnuplot' "
                   "KILL_COUNT='%s/kill.count'",
                   d, ROOFLINE_BIN_DIR, d, d);
}

/* Starts bench.sh in a session of its own (so that a kill of its process
 * group reaches nothing else), output to dir/out.txt; its pid. */
static pid_t start_bench(const bench_env *b, const char *kill_env, const char *run)
{
    char cmd[8192];
    format_or_fail(cmd, sizeof cmd,
                   "exec env %s %s '%s/scripts/bench.sh' resume MATRIX='%s/matrix.md' "
                   "RUNS_DIR='%s' BIN='%s/bin' REF=off %s%s%s >'%s/out.txt' 2>&1 </dev/null",
                   b->env, kill_env, ROOFLINE_SOURCE_DIR, b->dir, b->runs, b->dir,
                   run ? "RUN='" : "", run ? run : "", run ? "'" : "", b->dir);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        setsid();
        /* as a terminal starts it: a shell that starts with SIGINT ignored
         * (the tests run in the background of a non-interactive shell) can
         * neither trap nor pass on a Ctrl-C (POSIX), and the runner would
         * run to its end */
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        execl("/bin/bash", "bash", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Its exit status (128 + signal when killed), or -1 after `seconds`, when the
 * whole group is killed. Returns once every process of its group is gone: a
 * process still dying of a SIGKILL holds the run's lock a moment longer. */
static int wait_bench(pid_t pid, int seconds)
{
    int code = -1;
    for (int i = 0; i < seconds * 20; i++) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        usleep(50000);
    }
    if (code == -1) {
        kill(-pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    for (int i = 0; i < 200 && kill(-pid, 0) == 0; i++)
        usleep(50000);
    return code;
}

/* The visible run folders of the runs: how many, the last one into run;
 * with hidden, every entry (a hidden one is a start that was interrupted). */
static int run_folders(const bench_env *b, char *run, size_t len, bool hidden)
{
    char cmd[2048], out[4096];
    format_or_fail(cmd, sizeof cmd, "ls %s '%s/resume' 2>/dev/null", hidden ? "-A" : "", b->runs);
    run_capture(cmd, out, sizeof out);
    int n = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        n++;
        format_or_fail(run, len, "%s/resume/%s", b->runs, line);
    }
    return n;
}

/* Every configuration's rows exactly once, nothing temporary left. */
static void expect_whole_run(const char *run, int kernel_rows, const char *why)
{
    char *configs = read_text(run, "configs.csv");
    cr_expect_eq(count_lines(configs), 4, "%s: configs.csv:\n%s", why, configs);
    cr_expect_eq(count_of(configs, "\n1/1,resnet18-cifar,32,2,fp32,1,ok,"), 1, "%s:\n%s", why,
                 configs);
    cr_expect_eq(count_of(configs, "\n1/1,resnet18-cifar,32,2,fp32,2,ok,"), 1, "%s:\n%s", why,
                 configs);
    cr_expect_eq(count_of(configs, "\n1/1,resnet18-cifar,32,2,fp32,trace,ok,"), 1, "%s:\n%s", why,
                 configs);
    char *steps = read_text(run, "steps.csv");
    cr_expect_eq(count_lines(steps), 1 + 2 * 2, "%s: steps.csv:\n%s", why, steps);
    for (int r = 1; r <= 2; r++)
        for (int i = 0; i < 2; i++) {
            char key[128];
            format_or_fail(key, sizeof key, "\nresume,cpu,resnet18-cifar,32,2,fp32,1,0,%d,%d,", r, i);
            cr_expect_eq(count_of(steps, key), 1, "%s: repeat %d iter %d:\n%s", why, r, i, steps);
        }
    char *kernels = read_text(run, "kernels.csv");
    if (kernel_rows > 0)
        cr_expect_eq(count_lines(kernels), kernel_rows, "%s: kernels.csv rows", why);
    char cmd[2048], out[4096];
    format_or_fail(cmd, sizeof cmd,
                   "cd '%s' && find . \\( -name '*.tmp' -o -name '*.tmp.*' -o -name '.*.new.*' \\) "
                   "-print; test -f complete && test -f report.html && echo whole",
                   run);
    run_capture(cmd, out, sizeof out);
    cr_expect_str_eq(out, "whole\n", "%s: left in %s: %s", why, run, out);
    free(configs);
    free(steps);
    free(kernels);
}

Test(resume, killed_at_each_point_then_resumed, .timeout = 900)
{
    bench_env b;
    setup(&b);
    char run[1024], kill_env[1024];
    /* an uninterrupted run: what a whole run holds */
    int status = wait_bench(start_bench(&b, "", NULL), 300);
    char *text = read_text(b.dir, "out.txt");
    cr_assert_eq(status, 0, "an uninterrupted run exited %d:\n%s", status, text);
    free(text);
    cr_assert_eq(run_folders(&b, run, sizeof run, false), 1);
    char *kernels = read_text(run, "kernels.csv");
    int kernel_rows = count_lines(kernels);
    free(kernels);
    expect_whole_run(run, kernel_rows, "uninterrupted");
    cr_assert_gt(kernel_rows, 50);

    for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
        const kill_point *p = &points[i];
        cr_assert_eq(sh("rm -rf '%s' '%s/kill.count' '%s/kill.count.fired'", b.runs, b.dir, b.dir),
                     0);
        format_or_fail(kill_env, sizeof kill_env, "KILL_CMD='%s' KILL_GLOB='%s' KILL_N=%d", p->cmd,
                       p->glob, p->n);
        status = wait_bench(start_bench(&b, kill_env, NULL), 300);
        text = read_text(b.dir, "out.txt");
        cr_expect_eq(status, 128 + SIGKILL, "%s: not killed (exit %d):\n%s", p->name, status, text);
        free(text);
        cr_expect_eq(sh("test -f '%s/kill.count.fired'", b.dir), 0, "%s: never reached", p->name);
        /* resumed with RUN= when a run folder is there, else as `make bench` would */
        int n = run_folders(&b, run, sizeof run, false);
        cr_expect_leq(n, 1, "%s: %d run folders", p->name, n);
        status = wait_bench(start_bench(&b, "", n == 1 ? run : NULL), 300);
        text = read_text(b.dir, "out.txt");
        cr_expect_eq(status, 0, "%s: the resume exited %d:\n%s", p->name, status, text);
        free(text);
        if (status != 0)
            continue;
        cr_expect_eq(run_folders(&b, run, sizeof run, true), 1,
                     "%s: not one run folder after the resume", p->name);
        expect_whole_run(run, kernel_rows, p->name);
    }
    remove_temp_dir(b.dir);
}

Test(resume, an_empty_run_folder_is_taken_over, .timeout = 300)
{
    bench_env b;
    setup(&b);
    /* what an interrupted start of an earlier runner left: an empty folder */
    char run[1024];
    format_or_fail(run, sizeof run, "%s/resume/20250101T000000Z", b.runs);
    cr_assert_eq(sh("mkdir -p '%s'", run), 0);
    int status = wait_bench(start_bench(&b, "", run), 300);
    char *text = read_text(b.dir, "out.txt");
    cr_expect_eq(status, 0, "%s", text);
    free(text);
    expect_whole_run(run, 0, "an empty folder taken over");
    remove_temp_dir(b.dir);
}

/* A folder begun by the runner before the graph column (matrix.tsv, the
 * steps and configs parts without it), resumed by this one: the parts it
 * holds and the runs it adds make one steps.csv and one configs.csv, every
 * row eager. */
Test(resume, a_folder_from_before_the_graph_column_resumes, .timeout = 300)
{
    bench_env b;
    setup(&b);
    char run[1024];
    int status = wait_bench(start_bench(&b, "", NULL), 300);
    char *text = read_text(b.dir, "out.txt");
    cr_assert_eq(status, 0, "%s", text);
    free(text);
    cr_assert_eq(run_folders(&b, run, sizeof run, false), 1);
    /* as the older runner left it, its second repeat not yet run */
    cr_assert_eq(sh("cd '%s' && grep -q \"$(printf '\\toff$')\" matrix.tsv && "
                    "sed -i \"s/$(printf '\\t')off$//\" matrix.tsv && "
                    "sed -i '1s/,graph$//; 2,$s/,off$//' parts/*.steps.csv && "
                    "sed -i 's/,off$//' parts/*.config.csv && "
                    "rm -f parts/*.rep2.* complete steps.csv configs.csv",
                    run),
                 0);
    status = wait_bench(start_bench(&b, "", run), 300);
    text = read_text(b.dir, "out.txt");
    cr_expect_eq(status, 0, "%s", text);
    cr_expect(strstr(text, "resuming") && strstr(text, "2 of 3 runs complete, 1 to run"), "%s", text);
    free(text);
    expect_whole_run(run, 0, "a folder from before the graph column");
    char *steps = read_text(run, "steps.csv"), *configs = read_text(run, "configs.csv");
    const char *header = "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,"
                         "step_ms,images_per_s,loss,peak_mem_bytes,graph\n";
    cr_expect(strncmp(steps, header, strlen(header)) == 0, "%s", steps);
    cr_expect_eq(count_of(steps, ",off\n"), 4, "every step eager:\n%s", steps);
    cr_expect(strstr(configs, ",log,graph\n") != NULL, "%s", configs);
    cr_expect_eq(count_of(configs, ",off\n"), 3, "every run eager:\n%s", configs);
    free(steps);
    free(configs);
    remove_temp_dir(b.dir);
}

/* Starts a run and signals it once its first training process runs: `group`
 * sends the signal to the whole process group (Ctrl-C in a terminal), else to
 * the runner alone (kill PID). */
static void interrupt_while_training(int sig, bool group)
{
    bench_env b;
    setup(&b);
    pid_t pid = start_bench(&b, "", NULL);
    char cmd[2048], out[4096];
    format_or_fail(cmd, sizeof cmd, "ls '%s'/resume/*/logs/*.rep1.log 2>/dev/null | wc -l", b.runs);
    bool training = false;
    for (int i = 0; i < 600 && !training; i++) {
        run_capture(cmd, out, sizeof out);
        training = atoi(out) > 0;
        if (!training)
            usleep(50000);
    }
    cr_assert(training, "the first training process never started");
    usleep(300000);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kill(group ? -pid : pid, sig);
    int status = wait_bench(pid, 60);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double seconds = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    char *text = read_text(b.dir, "out.txt");
    int code = sig == SIGINT ? 130 : 143;
    cr_expect_eq(status, code, "exit %d, %d expected:\n%s", status, code, text);
    cr_expect_lt(seconds, 10.0, "it took %.1f s to stop", seconds);
    /* its last line says how to resume */
    char run[1024];
    cr_assert_eq(run_folders(&b, run, sizeof run, false), 1);
    char expect[2048];
    format_or_fail(expect, sizeof expect,
                   "bench: interrupted by SIG%s: partial files removed; resume with: make bench "
                   "ENV=resume RUN=%s MATRIX=%s/matrix.md\n",
                   sig == SIGINT ? "INT" : "TERM", run, b.dir);
    size_t n = strlen(text), m = strlen(expect);
    cr_expect(n >= m && strcmp(text + n - m, expect) == 0, "the last line is not '%s':\n%s", expect,
              text);
    free(text);
    /* no process of the run is left, nor any temporary file */
    format_or_fail(cmd, sizeof cmd, "pgrep -g %d | wc -l; find '%s' -name '*.tmp' | wc -l", pid, run);
    usleep(200000);
    run_capture(cmd, out, sizeof out);
    cr_expect_str_eq(out, "0\n0\n", "processes and temporary files left: %s", out);
    int resumed = wait_bench(start_bench(&b, "", run), 300);
    text = read_text(b.dir, "out.txt");
    cr_expect_eq(resumed, 0, "%s", text);
    free(text);
    expect_whole_run(run, 0, "resumed after a signal");
    remove_temp_dir(b.dir);
}

Test(resume, sigterm_stops_at_once_and_says_how_to_resume, .timeout = 300)
{
    interrupt_while_training(SIGTERM, false);
}

Test(resume, ctrl_c_stops_at_once_and_says_how_to_resume, .timeout = 300)
{
    interrupt_while_training(SIGINT, true);
}
