/* Every option of every program answered with a bad value (issue 16): one
 * line on stderr naming the option (or the argument) and what is accepted,
 * and exit status 2, before any work. One table per program drives it:
 * (arguments, a fragment the line must hold). The arguments run in a scratch
 * folder that holds: emptydir/ (an empty folder), afile (a file), rundir/ (a
 * run folder with a steps.csv), badrun/ (its steps.csv has a bad cell),
 * vgg4096/ (a steps.csv row whose cost would overflow, for analyze),
 * badbatch.md and dotdot.md (run matrices with a bad cell). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

typedef struct {
    const char *args;   /* after the program's name, as the shell reads them */
    const char *expect; /* a fragment of the one line */
} bad_case;

static const char *const steps_header =
    "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,images_per_s,"
    "loss,peak_mem_bytes\n";

static char *scratch(void)
{
    char *dir = temp_dir();
    cr_assert_eq(sh("cd '%s' && mkdir emptydir rundir badrun vgg4096 && printf x > afile", dir), 0);
    char steps[1024];
    format_or_fail(steps, sizeof steps, "%scpu,cpu,resnet18-cifar,32,2,fp32,1,0,1,0,10.5,190,2.3,\n",
                   steps_header);
    write_text(dir, "rundir/steps.csv", steps);
    format_or_fail(steps, sizeof steps, "%scpu,cpu,resnet18-cifar,32,2,fp32,1,0,1,0,abc,190,2.3,\n",
                   steps_header);
    write_text(dir, "badrun/steps.csv", steps);
    const char *table = "| ENV | backend | models | res | batch | precision | warmup | iters | "
                        "repeats | ranks | counters |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
    char md[2048];
    format_or_fail(md, sizeof md, "%s| cpu | cpu | resnet18 | 224 | 0 | fp32 | 1 | 2 | 1 | - | off |\n",
                   table);
    write_text(dir, "badbatch.md", md);
    format_or_fail(md, sizeof md, "%s| .. | cpu | resnet18 | 224 | 2 | fp32 | 1 | 2 | 1 | - | off |\n",
                   table);
    write_text(dir, "dotdot.md", md);
    return dir;
}

/* Runs each case of prog in a scratch folder. */
static void check_cases(const char *prog, const bad_case *cases, int n)
{
    char *dir = scratch();
    static char err[1 << 14];
    for (int i = 0; i < n; i++) {
        const bad_case *c = &cases[i];
        char cmd[4096];
        format_or_fail(cmd, sizeof cmd, "cd '%s' && '%s/%s' %s 2>&1 >/dev/null </dev/null", dir,
                       ROOFLINE_BIN_DIR, prog, c->args);
        int status = run_capture(cmd, err, sizeof err);
        bool ok = status == 2 && count_lines(err) == 1 && strstr(err, c->expect) != NULL;
        cr_expect(ok, "%s %s: exit %d (2 expected), wanted one line with '%s', got:\n%s", prog,
                  c->args, status, c->expect, err);
    }
    cr_log_info("%s: %d (option, bad value) pairs", prog, n);
    remove_temp_dir(dir);
}

#define CHECK(prog, table) check_cases(prog, table, (int)(sizeof table / sizeof table[0]))

/* ---- bin/analyze -------------------------------------------------------------- */

static const bad_case analyze_cases[] = {
    {"", "missing RUN_DIR"},
    {"--bogus", "unknown option '--bogus' (accepted: --help, RUN_DIR)"},
    {"-x", "unknown option '-x'"},
    {"--help=1", "--help takes no value"},
    {"''", "RUN_DIR '' is not a directory"},
    {"nonexistent", "RUN_DIR 'nonexistent' is not a directory"},
    {"afile", "RUN_DIR 'afile' is not a directory"},
    {"rundir rundir", "unexpected argument 'rundir' (accepted: one RUN_DIR)"},
    {"emptydir", "emptydir/steps.csv: cannot open"},
    {"badrun", "badrun/steps.csv:2: column 'step_ms': 'abc' is not a number"},
};

Test(options, analyze, .timeout = 60) { CHECK("analyze", analyze_cases); }

/* ---- bin/complexity ------------------------------------------------------------ */

static const bad_case complexity_cases[] = {
    {"", "--model is required (one of: resnet18"},
    {"--model", "--model needs a value"},
    {"--model ''", "--model: unknown '' (accepted: resnet18"},
    {"--model resnet-50", "--model: unknown 'resnet-50' (accepted: resnet18"},
    {"--model resnet18 --res 0", "--res: '0' is not an integer in 1..4096"},
    {"--model resnet18 --res -1", "--res: '-1' is not an integer in 1..4096"},
    {"--model resnet18 --res 4097", "--res: '4097' is not an integer in 1..4096"},
    {"--model resnet18 --res 99999999999999999999", "--res: '99999999999999999999' is not an integer"},
    {"--model resnet18 --res 224.0", "--res: '224.0' is not an integer in 1..4096"},
    {"--model resnet18 --res ' 5'", "--res: ' 5' is not an integer"},
    {"--model resnet18 --res +5", "--res: '+5' is not an integer"},
    {"--model resnet18 --res 0x10", "--res: '0x10' is not an integer"},
    {"--model vgg16 --res 16", "--res: 16 is too small for vgg16 (minimum 32)"},
    {"--model resnet18 --classes 0", "--classes: '0' is not an integer in 1..1000000"},
    {"--model resnet18 --classes 1000001", "--classes: '1000001' is not an integer in 1..1000000"},
    {"--model resnet18 --classes x", "--classes: 'x' is not an integer"},
    {"--model resnet18 --batch 0", "--batch: '0' is not an integer in 1..1048576"},
    {"--model resnet18 --batch 1048577", "--batch: '1048577' is not an integer in 1..1048576"},
    {"--model resnet18 --batch ''", "--batch: '' is not an integer in 1..1048576"},
    {"--model resnet18 --batch 1e3", "--batch: '1e3' is not an integer"},
    /* issue 16, defect 4: the step's FLOPs wrapped around to -9.2e18 */
    {"--model vgg16 --res 4096 --batch 300000",
     "--batch: 300000 is too large for vgg16 at 4096x4096 (accepted: 1..299925"},
    {"--model vgg16 --res 4096 --batch 1048576", "--batch: 1048576 is too large for vgg16"},
    {"--model resnet18 --precision fp64", "--precision: unknown 'fp64' (accepted: fp32"},
    {"--model resnet18 --precision ''", "--precision: unknown '' (accepted: fp32"},
    {"--model resnet18 --csv=1", "--csv takes no value (got '--csv=1')"},
    {"--list=1", "--list takes no value"},
    {"--model resnet18 --frobnicate", "unknown option '--frobnicate' (accepted: --model"},
    {"--model resnet18 extra", "unexpected argument 'extra' (accepted: --model"},
};

Test(options, complexity, .timeout = 60) { CHECK("complexity", complexity_cases); }

/* ---- bin/envinfo --------------------------------------------------------------- */

static const bad_case envinfo_cases[] = {
    {"--out", "--out needs a value"},
    {"--out ''", "--out: '' is not a file name"},
    {"--out emptydir", "--out: 'emptydir' is a folder (a file name was expected)"},
    {"--env ''", "--env: '' is not a name of 1 to 63 letters, digits, '.', '_' or '-'"},
    {"--env ..", "--env: '..' is not a name of 1 to 63 letters"},
    {"--env 'a b'", "--env: 'a b' is not a name"},
    {"--env a,b", "--env: 'a,b' is not a name"},
    {"--env 0123456789012345678901234567890123456789012345678901234567890123",
     "is not a name of 1 to 63"},
    {"--backend rocm", "--backend: unknown 'rocm' (accepted: cpu, cuda)"},
    {"--backend ''", "--backend: unknown '' (accepted: cpu, cuda)"},
    {"--argv", "--argv needs a value"},
    {"--argv a --argv a --argv a --argv a --argv a --argv a --argv a --argv a --argv a --argv a "
     "--argv a --argv a --argv a --argv a --argv a --argv a --argv a --argv a --argv a --argv a "
     "--argv a --argv a --argv a --argv a --argv a --argv a --argv a --argv a --argv a --argv a "
     "--argv a --argv a --argv a",
     "--argv: more than 32 command lines"},
    {"--help=x", "--help takes no value"},
    {"--colour", "unknown option '--colour' (accepted: --out"},
    {"extra", "unexpected argument 'extra'"},
};

Test(options, envinfo, .timeout = 60) { CHECK("envinfo", envinfo_cases); }

/* ---- bin/matrix ----------------------------------------------------------------- */

static const bad_case matrix_cases[] = {
    {"", "give an ENV (a row of run_matrix.md, or local)"},
    {"--file", "--file needs a value"},
    {"--file '' cpu", ": cannot open: No such file or directory"},
    {"--file nonexistent.md cpu", "nonexistent.md: cannot open: No such file"},
    {"--file emptydir cpu", "emptydir: cannot open: not a regular file"},
    {"--file /dev/zero cpu", "/dev/zero: cannot open: not a regular file"},
    {"--file afile cpu", "afile"},
    {"--file badbatch.md cpu", "badbatch.md:3: column 'batch': '0' is not an integer in 1..1048576"},
    /* issue 16: an ENV '..' put the run folder outside RUNS_DIR */
    {"--file dotdot.md ..", "dotdot.md:3: column 'ENV': '..' is not a name of letters"},
    {"--file badbatch.md --list", "column 'batch'"},
    {"--file " ROOFLINE_SOURCE_DIR "/run_matrix.md nosuch", "unknown ENV 'nosuch' (known: cpu"},
    {"--file " ROOFLINE_SOURCE_DIR "/run_matrix.md ''", "unknown ENV '' (known: cpu"},
    {"--file " ROOFLINE_SOURCE_DIR "/run_matrix.md --resolve", "give an ENV"},
    {"--file " ROOFLINE_SOURCE_DIR "/run_matrix.md cpu extra", "unexpected argument 'extra'"},
    {"--list=1", "--list takes no value"},
    {"--bogus", "unknown option '--bogus' (accepted: --file"},
};

Test(options, matrix, .timeout = 60) { CHECK("matrix", matrix_cases); }

/* ---- bin/peaks ------------------------------------------------------------------- */

static const bad_case peaks_cases[] = {
    {"--threads", "--threads needs a value"},
    {"--threads 0", "--threads: '0' is not an integer in 1.."},
    {"--threads 4096", "--threads: '4096' is not an integer in 1.."},
    {"--threads ''", "--threads: '' is not an integer"},
    {"--threads x", "--threads: 'x' is not an integer"},
    {"--out ''", "--out: '' is not a file name"},
    {"--out emptydir", "--out: 'emptydir' is a directory"},
    {"--out nonexistent/p.csv", "--out: 'nonexistent/p.csv': folder 'nonexistent' does not exist"},
    {"--env ''", "--env: '' is not accepted (letters, digits"},
    {"--env 'a b'", "--env: 'a b' is not accepted"},
    {"--quick=1", "--quick takes no value"},
    {"--bogus", "unknown option '--bogus' (accepted: --cpu"},
    {"extra", "extra"},
};

Test(options, peaks, .timeout = 60) { CHECK("peaks", peaks_cases); }

/* ---- bin/plotdata and bin/report ------------------------------------------------- */

#define RUN_DIR_CASES                                                                        \
    {"", "expected one RUN_DIR (or --compare OUTDIR RUN_DIR...), got nothing"},        \
        {"''", "got ''"}, {"-", "got '-'"}, {"--bogus", "got '--bogus'"},  \
        {"rundir rundir", "got several arguments"},                                     \
        {"nonexistent", "RUN_DIR 'nonexistent': No such file or directory"},            \
        {"afile", "RUN_DIR 'afile' is not a folder"},                                   \
        {"emptydir", "RUN_DIR 'emptydir' holds no run files"},                          \
        {"badrun", "badrun/steps.csv:2: column 'step_ms': 'abc' is not a number"},      \
        {"--compare", "--compare needs OUTDIR and at least one RUN_DIR"},               \
        {"--compare out", "--compare needs OUTDIR and at least one RUN_DIR"},           \
        {"--compare '' rundir", "--compare: OUTDIR '' is not a folder name"},           \
        {"--compare -o rundir", "--compare: OUTDIR '-o' is not a folder name"},         \
        {"--compare out ''", "--compare: RUN_DIR '' is not a folder name"},             \
        {"--compare out nonexistent", "RUN_DIR 'nonexistent': No such file or directory"}

static const bad_case plotdata_cases[] = {RUN_DIR_CASES};

Test(options, plotdata, .timeout = 60) { CHECK("plotdata", plotdata_cases); }

static const bad_case report_cases[] = {
    RUN_DIR_CASES,
    {"--compare out rundir rundir rundir rundir rundir rundir rundir rundir rundir rundir rundir "
     "rundir rundir rundir rundir",
     "--compare: 15 run folders given, at most 14 are accepted"},
};

Test(options, report, .timeout = 60) { CHECK("report", report_cases); }

/* ---- bin/train --------------------------------------------------------------------- */

/* a configuration that trains in a second should a bad value slip through */
#define M "--model resnet18-cifar --batch 1 --iters 1 --warmup 0 "

static const bad_case train_cases[] = {
    {"", "--model is required (one of: resnet18"},
    {"--model", "--model needs a value"},
    {"--model x", "--model: unknown 'x' (accepted: resnet18"},
    {"--model=x", "--model: unknown 'x'"},
    {M "--res 0", "--res: '0' is not an integer in 1..4096"},
    {M "--res 31 --data cifar10:.", "--data: cifar10 needs --res 32"},
    {M "--classes 0", "--classes: '0' is not an integer in 1..1000000"},
    {M "--batch 0", "--batch: '0' is not an integer in 1..1048576"},
    {M "--batch=", "--batch: '' is not an integer in 1..1048576"},
    {M "--precision fp64", "--precision: unknown 'fp64'"},
    {M "--warmup -1", "--warmup: '-1' is not an integer in 0..1000000"},
    {M "--iters 0", "--iters: '0' is not an integer in 1..1000000"},
    {M "--threads 0", "--threads: '0' is not an integer in 1.."},
    {M "--threads 4096", "--threads: '4096' is not an integer in 1.."},
    {M "--seed -1", "--seed: '-1' is not an integer in 0..2147483647"},
    {M "--seed 2147483648", "--seed: '2147483648' is not an integer in 0..2147483647"},
    {M "--lr 0", "--lr: '0' is not a number in (0, 100]"},
    {M "--lr nan", "--lr: 'nan' is not a number in (0, 100]"},
    {M "--lr 1e400", "--lr: '1e400' is not a number in (0, 100]"},
    {M "--data x", "--data: unknown 'x' (accepted: synthetic, cifar10:DIR)"},
    {M "--data cifar10:", "--data: unknown 'cifar10:'"},
    {M "--res 32 --data cifar10:nonexistent", "--data: cifar10: cannot read nonexistent/"},
    {M "--repeat -1", "--repeat: '-1' is not an integer in 0..1000000"},
    {M "--env ''", "--env: '' is not a name of 1 to 63 letters"},
    {M "--env ..", "--env: '..' is not a name of 1 to 63 letters"},
    {M "--env a,b", "--env: 'a,b' is not a name"},
    {M "--out ''", "--out: '' is not a file name"},
    {M "--out nonexistent/x.csv", "--out: cannot create 'nonexistent/x.csv': its folder"},
    {M "--out emptydir", "--out: 'emptydir'"},
    {M "--out x.csv --trace x.csv", "--trace: 'x.csv' is also --out"},
    {M "--trace ''", "--trace: '' is not a file name"},
    {M "--trace /proc/x.csv", "--trace: cannot create '/proc/x.csv'"},
    {M "--backend rocm", "--backend: unknown 'rocm' (accepted: cpu, cuda, auto)"},
    {M "--counters x", "--counters: unknown 'x' (accepted: perf, analytic, cupti)"},
    {M "--backend cpu --counters cupti", "--counters: cupti needs the cuda backend"},
    {M "--backend cpu --precision bf16", "--precision: bf16 needs a GPU"},
    {M "--backend cpu --graph", "--graph: only for the cuda backend"},
    {M "--backend cpu --workspace-mb 64", "--workspace-mb: only for the cuda backend"},
    {M "--backend cpu --depthwise own", "--depthwise: only for the cuda backend"},
    {M "--backend cpu --algo-cache a.csv", "--algo-cache: only for the cuda backend"},
    {M "--algo-cache ''", "--algo-cache: '' is not a file name"},
    {M "--algo-cache emptydir", "--algo-cache: 'emptydir' is a folder"},
    {M "--depthwise gpu", "--depthwise: unknown 'gpu' (accepted: auto, cudnn, own)"},
    {M "--conv-bias fused", "--conv-bias: unknown 'fused' (accepted: auto, cudnn, own)"},
    {M "--backend cpu --conv-bias own", "--conv-bias: only for the cuda backend"},
    {M "--conv-api frontend", "--conv-api: unknown 'frontend' (accepted: auto, legacy, graph)"},
    {M "--backend cpu --conv-api graph", "--conv-api: only for the cuda backend"},
    {M "--graph", "--graph: only for the cuda backend"},
    {M "--device 64", "--device: '64' is not an integer in 0..63"},
    {M "--device -1", "--device: '-1' is not an integer in 0..63"},
    {M "--workspace-mb 0", "--workspace-mb: '0' is not an integer in 1..1048576"},
    {M "--graph=1", "--graph takes no value (got '--graph=1')"},
    {M "--help=1", "--help takes no value"},
    {M "--dropout 2", "--dropout: '2' is not a probability in [0, 1)"},
    {M "--shards 0", "--shards: '0' is not an integer in 1..4096"},
    {M "--save-weights ''", "--save-weights: '' is not a file name"},
    {M "--bucket-mb -1", "--bucket-mb: '-1' is not an integer in 0..4096"},
    {M "--comm-precision x", "--comm-precision: unknown 'x' (accepted: fp32, bf16)"},
    {M "--ddp-timeout 0", "--ddp-timeout: '0' is not an integer in 1..3600"},
    {M "--scaling-mode x", "--scaling-mode: unknown 'x' (accepted: strong, weak)"},
    {M "--baseline-ms -1", "--baseline-ms: '-1' is not a number in (0, 1e+09]"},
    {M "--scaling-out s.csv", "--scaling-out: only with --ddp"},
    {M "--fault-kill x", "--fault-kill: 'x' is not RANK:STEP"},
    {M "--frobnicate", "unknown option '--frobnicate' (accepted: --model"},
    {M "extra", "unexpected argument 'extra' (accepted: --model"},
};

Test(options, train, .timeout = 240) { CHECK("train", train_cases); }

/* ---- bin/allreduce and bin/scaling_model (the data-parallel study) ---------------- */

static const bad_case allreduce_cases[] = {
    {"--transport x", "--transport: unknown 'x' (accepted: mpi, nccl, auto)"},
    {"--transport", "--transport needs a value"},
    {"--min-bytes 0", "--min-bytes: '0' is not a size of 4 bytes to 4G in multiples of 4"},
    {"--min-bytes x", "--min-bytes: 'x' is not a size of 4 bytes to 4G"},
    {"--min-bytes 6", "--min-bytes: '6' is not a size of 4 bytes to 4G in multiples of 4"},
    {"--max-bytes 5G", "--max-bytes: '5G' is not a size of 4 bytes to 4G"},
    {"--min-bytes 2K --max-bytes 1K", "--min-bytes: 2048 is above --max-bytes 1024"},
    {"--min-bytes 99999999999G", "--min-bytes: '99999999999G' is not a size"},
    {"--factor 1", "--factor: '1' is not an integer in 2..16"},
    {"--warmup -1", "--warmup: '-1' is not an integer in 0..1000"},
    {"--device -1", "--device: '-1' is not an integer in 0..63"},
    {"--timeout 0", "--timeout: '0' is not an integer in 1..3600"},
    {"--env ''", "--env: '' is not a name of 1 to 63 letters"},
    {"--out ''", "--out: '' is not a file name"},
    {"--out nonexistent/x.csv", "--out: cannot create 'nonexistent/x.csv': its folder"},
    {"--quick --max-bytes 4K --out emptydir", "--out: 'emptydir'"},
    {"--peaks-out ''", "--peaks-out: '' is not a file name"},
    {"--quick=1", "--quick takes no value (got '--quick=1')"},
    {"--bogus", "unknown option '--bogus' (accepted: --transport"},
    {"extra", "unexpected argument 'extra'"},
};

Test(options, allreduce, .timeout = 120)
{
    if (access(ROOFLINE_BIN_DIR "/allreduce", X_OK) != 0)
        cr_skip_test("bin/allreduce is not built");
    CHECK("allreduce", allreduce_cases);
}

#define SM "--model resnet18 --batch 8 --step-ms 10 "

static const bad_case scaling_model_cases[] = {
    {"", "give --scaling scaling.csv, or --model with --batch and --step-ms"},
    {"--scaling ''", "--scaling: '' is not a file name"},
    {"--scaling nonexistent", "--scaling: nonexistent: cannot open"},
    {"--scaling rundir/steps.csv", "--scaling: rundir/steps.csv:1: no column 'mode'"},
    {SM "--allreduce rundir/steps.csv", "--allreduce: rundir/steps.csv:1: no column 'nodes'"},
    {"--model x", "--model: unknown 'x' (accepted: resnet18"},
    {"--model resnet18 --batch 0", "--batch: '0' is not an integer in 1..1048576"},
    {"--model resnet18 --batch 8", "--model: give --batch and --step-ms"},
    {"--model resnet18 --batch 8 --step-ms 0", "--step-ms: '0' is not a number in [1e-06, 1e+09]"},
    {"--model resnet18 --batch 8 --step-ms 1e308", "--step-ms: '1e308' is not a number"},
    {SM "--exposed-ms -1", "--exposed-ms: '-1' is not a number in [0, 1e+09]"},
    {SM "--backend x", "--backend: unknown 'x' (accepted: cpu, cuda)"},
    {SM "--mode x", "--mode: unknown 'x' (accepted: strong, weak, both)"},
    {SM "--bucket-mb -1", "--bucket-mb: '-1' is not a number in [0, 4096]"},
    {SM "--comm-bytes 3", "--comm-bytes: 3 (accepted: 4 fp32, 2 bf16)"},
    {SM "--gpus-per-node 0", "--gpus-per-node: '0' is not an integer in 1..64"},
    {SM "--max-ranks 100000000", "--max-ranks: '100000000' is not an integer in 1..65536"},
    {SM "--intra-gbs 0", "--intra-gbs: '0' is not a number in [0.001, 100000]"},
    {SM "--inter-gbs -1", "--inter-gbs: '-1' is not a number in [0.001, 100000]"},
    {SM "--alpha-intra-us -1", "--alpha-intra-us: '-1' is not a number in [0, 1e+06]"},
    {SM "--alpha-inter-us x", "--alpha-inter-us: 'x' is not a number in [0, 1e+06]"},
    {SM "--overlap 2", "--overlap: '2' is not a number in [0, 1]"},
    {SM "--out ''", "--out: '' is not a file name"},
    {SM "--bogus", "unknown option '--bogus' (accepted: --scaling"},
    {SM "extra", "unexpected argument 'extra'"},
};

Test(options, scaling_model, .timeout = 60)
{
    if (access(ROOFLINE_BIN_DIR "/scaling_model", X_OK) != 0)
        cr_skip_test("bin/scaling_model is not built");
    CHECK("scaling_model", scaling_model_cases);
}

/* ---- scripts/bench.sh (make bench) ------------------------------------------------ */

static const bad_case bench_cases[] = {
    {"", "give the environment first"},
    {"RUN=x", "give the environment first"},
    {"--list", "'--list' is not an environment"},
    {"-x cpu", "'-x' is not an environment"},
    {"cpu FOO=1",
     "unexpected argument 'FOO=1' (accepted: RUN=, MATRIX=, RUNS_DIR=, BIN=, THREADS=, REF=)"},
    {"cpu REF=yes", "REF: 'yes' is not auto or off"},
    {"cpu THREADS=0", "THREADS: '0' is not an integer in 1.."},
    {"cpu THREADS=4096", "THREADS: '4096' is not an integer in 1.."},
    {"cpu THREADS=x", "THREADS: 'x' is not an integer in 1.."},
    {"nosuch MATRIX=" ROOFLINE_SOURCE_DIR "/run_matrix.md", "unknown ENV 'nosuch' (known: cpu"},
    {"cpu MATRIX=badbatch.md", "badbatch.md:3: column 'batch'"},
    {".. MATRIX=dotdot.md", "column 'ENV': '..' is not a name"},
    {"cpu MATRIX=" ROOFLINE_SOURCE_DIR "/run_matrix.md RUN=afile", "RUN: 'afile' is not a run folder"},
    {"cpu MATRIX=" ROOFLINE_SOURCE_DIR "/run_matrix.md RUN=rundir",
     "RUN: 'rundir' is not a run folder of the runner (no matrix.tsv)"},
};

Test(options, bench_script, .timeout = 60)
{
    char *dir = scratch();
    static char err[1 << 14];
    for (size_t i = 0; i < sizeof bench_cases / sizeof bench_cases[0]; i++) {
        const bad_case *c = &bench_cases[i];
        char cmd[4096];
        format_or_fail(cmd, sizeof cmd,
                       "cd '%s' && '%s/scripts/bench.sh' %s BIN='%s' RUNS_DIR=runs 2>&1 >/dev/null",
                       dir, ROOFLINE_SOURCE_DIR, c->args, ROOFLINE_BIN_DIR);
        int status = run_capture(cmd, err, sizeof err);
        cr_expect(status == 2 && count_lines(err) == 1 && strstr(err, c->expect),
                  "bench.sh %s: exit %d (2 expected), wanted one line with '%s', got:\n%s", c->args,
                  status, c->expect, err);
    }
    char runs[1024];
    format_or_fail(runs, sizeof runs, "%s/runs", dir);
    cr_expect_eq(access(runs, F_OK), -1, "a bad command line made a run folder");
    remove_temp_dir(dir);
}

/* make bench refuses an unknown ENV before it installs or builds anything:
 * the matrix's own line, and make's exit 2 (its own "Error 2" line follows).
 * BIN holds bin/matrix alone and BUILD is empty, so a build would show. */
Test(options, make_bench_refuses_an_unknown_env_first, .timeout = 60)
{
    char *dir = scratch();
    sh("mkdir '%s/bin' && ln -s '%s/matrix' '%s/bin/matrix'", dir, ROOFLINE_BIN_DIR, dir);
    static char err[1 << 14];
    char cmd[4096];
    format_or_fail(cmd, sizeof cmd,
                   /* not the outer make's jobserver and command-line variables */
                   "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "
                   "make -s --no-print-directory -C '%s' bench ENV=nosuch DEPS=off BIN='%s/bin' "
                   "BUILD='%s/build' RUNS_DIR='%s/runs' 2>&1 >/dev/null",
                   ROOFLINE_SOURCE_DIR, dir, dir, dir);
    int status = run_capture(cmd, err, sizeof err);
    cr_expect(status == 2 && strstr(err, "unknown ENV 'nosuch' (known: cpu") &&
                  count_lines(err) <= 2,
              "make bench ENV=nosuch: exit %d (2 expected), got:\n%s", status, err);
    const char *made[] = {"build", "bin/train", "runs"};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
        char path[1024];
        format_or_fail(path, sizeof path, "%s/%s", dir, made[i]);
        cr_expect_eq(access(path, F_OK), -1, "an unknown ENV made %s", made[i]);
    }
    remove_temp_dir(dir);
}

/* ---- scripts/compare.sh and scripts/render.sh ------------------------------------ */

/* The programs' own line for a bad run folder is the script's only line. */
static void check_script_cases(const char *script, const bad_case *cases, int n)
{
    char *dir = scratch();
    static char err[1 << 14];
    for (int i = 0; i < n; i++) {
        const bad_case *c = &cases[i];
        char cmd[4096];
        format_or_fail(cmd, sizeof cmd, "cd '%s' && BIN='%s' '%s/scripts/%s' %s 2>&1 >/dev/null",
                       dir, ROOFLINE_BIN_DIR, ROOFLINE_SOURCE_DIR, script, c->args);
        int status = run_capture(cmd, err, sizeof err);
        cr_expect(status == 2 && count_lines(err) == 1 && strstr(err, c->expect),
                  "%s %s: exit %d (2 expected), wanted one line with '%s', got:\n%s", script,
                  c->args, status, c->expect, err);
    }
    remove_temp_dir(dir);
}

#define CHECK_SCRIPT(script, table)                                                       \
    check_script_cases(script, table, (int)(sizeof table / sizeof table[0]))

#define RUNDIR_15 "rundir rundir rundir rundir rundir rundir rundir rundir rundir rundir rundir " \
                  "rundir rundir rundir rundir"

static const bad_case compare_cases[] = {
    {"", "usage:"},
    {"out", "usage:"},
    {"-o rundir", "usage:"},
    {"out nonexistent", "nonexistent is not a folder"},
    {"afile rundir", "OUTDIR afile exists and is not a folder"},
    {"out badrun", "badrun/steps.csv:2: column 'step_ms': 'abc' is not a number"},
    {"out emptydir", "emptydir"},
    {"out rundir rundir/", "RUN_DIR 'rundir' is 'rundir' again"},
    {"out " RUNDIR_15, "15 run folders given, at most 14 are accepted"},
    {"out --env", "--env needs an environment name"},
    {"out --env ../x", "--env needs an environment name"},
    {"out --env cpu runs extra", "--env needs an environment name"},
    {"out --env nosuch runs", "no finished run of nosuch in runs/nosuch (a finished run holds "
                              "summary.csv: make bench ENV=nosuch)"},
};

Test(options, compare_script, .timeout = 60)
{
    CHECK_SCRIPT("compare.sh", compare_cases);
}

static const bad_case render_cases[] = {
    {"", "usage:"},
    {"rundir rundir", "usage:"},
    {"nonexistent", "nonexistent is not a folder"},
    {"badrun", "badrun/steps.csv:2: column 'step_ms': 'abc' is not a number"},
};

Test(options, render_script, .timeout = 60)
{
    CHECK_SCRIPT("render.sh", render_cases);
}

/* checked by pytorch_ref.py --check before jemalloc or torch is looked for */
static const bad_case compare_cpu_cases[] = {
    {"resnet18 32", "usage:"},
    {"nosuch 32 8 2", "--model: 'nosuch' is not one of resnet18"},
    {"resnet18 32 0 2", "--batch: '0' is not an integer"},
    {"resnet18 32 8 2 x", "--iters: 'x' is not an integer"},
};

Test(options, compare_cpu_script, .timeout = 60)
{
    CHECK_SCRIPT("compare_cpu.sh", compare_cpu_cases);
}
