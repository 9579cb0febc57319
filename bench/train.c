/* bin/train: fixed-iteration training steps of a zoo model on synthetic data;
 * one steps.csv row per timed iteration and one summary line. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "../models/init.h"
#include "../models/data.h"
#include "../models/step.h"
#include "../models/zoo.h"
#include "../counters/step_trace.h"
#include "cli.h"
#ifdef HAVE_DNNL
#include "../models/cpu/cpu_backend.h"
#endif

static const char *const prog = "train";

typedef struct {
    const char *model, *out, *env, *backend;
    const char *trace;          /* kernels.csv of one traced step, or NULL */
    bool use_perf;              /* --counters perf: try the CPU's FLOP counters */
    const char *cifar_dir;      /* NULL: synthetic data */
    int res, classes, batch, warmup, iters, threads, repeat;
    uint64_t seed;
    float lr;
    precision prec;
} options;

static void print_help(void)
{
    printf("usage: train --model M [--res R] [--classes K] [--batch N] [--precision fp32]\n"
           "             [--warmup W] [--iters I] [--threads T] [--seed S] [--lr X]\n"
           "             [--data synthetic|cifar10:DIR] [--repeat K] [--env NAME] [--out steps.csv]\n"
           "             [--backend cpu|cuda|auto] [--trace kernels.csv] [--counters perf|analytic]\n"
           "Fixed-iteration training steps (forward, backward, SGD momentum 0.9, weight\n"
           "decay 5e-4). Defaults: batch 32, warmup 5, iters 20, threads = all cores,\n"
           "seed 1, synthetic data, backend auto, and lr = base x batch / 256 (the\n"
           "linear-scaling rule; base 0.1 as torchvision's recipe, 0.01 for vgg16):\n"
           "e.g. resnet50 at batch 8: 0.003125, vgg16 at batch 4: 0.00015625.\n"
           "--trace adds one step after the timed ones in which every layer's passes are\n"
           "timed alone; its rows go to kernels.csv with FLOPs from the CPU's counters\n"
           "(--counters perf, the default, where the PMU allows) or the analytic model.\n");
}

static float parse_lr(const char *text)
{
    char *end;
    double v = strtod(text, &end);
    if (!*text || *end || !(v > 0.0 && v <= 100.0))
        cli_usage_error(prog, "--lr: '%s' is not a number in (0, 100]", text);
    return (float)v;
}

static options parse_options(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'},   {"res", required_argument, 0, 'r'},
        {"classes", required_argument, 0, 'k'}, {"batch", required_argument, 0, 'b'},
        {"precision", required_argument, 0, 'p'}, {"warmup", required_argument, 0, 'w'},
        {"iters", required_argument, 0, 'i'},   {"threads", required_argument, 0, 't'},
        {"seed", required_argument, 0, 's'},    {"lr", required_argument, 0, 'l'},
        {"data", required_argument, 0, 'd'},    {"repeat", required_argument, 0, 'R'},
        {"env", required_argument, 0, 'e'},     {"out", required_argument, 0, 'o'},
        {"backend", required_argument, 0, 'B'}, {"trace", required_argument, 0, 'T'},
        {"counters", required_argument, 0, 'C'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *accepted = "--model, --res, --classes, --batch, --precision, --warmup, --iters, "
                           "--threads, --seed, --lr, --data, --repeat, --env, --out, --backend, --trace, --counters";
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    options o = {.batch = 32, .warmup = 5, .iters = 20, .threads = cores > 0 ? (int)cores : 1,
                 .seed = 1, .lr = 0.0f, .prec = PREC_FP32, .env = "local", .backend = "auto",
                 .use_perf = true};
    const char *res = NULL, *classes = NULL;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': o.model = optarg; break;
        case 'r': res = optarg; break;
        case 'k': classes = optarg; break;
        case 'b': o.batch = cli_int_option(prog, "--batch", optarg, 1, CLI_MAX_BATCH); break;
        case 'p': o.prec = cli_precision_option(prog, optarg); break;
        case 'w': o.warmup = cli_int_option(prog, "--warmup", optarg, 0, 1000000); break;
        case 'i': o.iters = cli_int_option(prog, "--iters", optarg, 1, 1000000); break;
        case 't': o.threads = cli_int_option(prog, "--threads", optarg, 1, 4096); break;
        case 's': o.seed = (uint64_t)cli_int_option(prog, "--seed", optarg, 0, 2147483647); break;
        case 'l': o.lr = parse_lr(optarg); break;
        case 'd':
            if (!strncmp(optarg, "cifar10:", 8) && optarg[8])
                o.cifar_dir = optarg + 8;
            else if (strcmp(optarg, "synthetic") != 0)
                cli_usage_error(prog, "--data: unknown '%s' (accepted: synthetic, cifar10:DIR)",
                                optarg);
            break;
        case 'R': o.repeat = cli_int_option(prog, "--repeat", optarg, 0, 1000000); break;
        case 'e': o.env = optarg; break;
        case 'o': o.out = optarg; break;
        case 'B':
            if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda") && strcmp(optarg, "auto"))
                cli_usage_error(prog, "--backend: unknown '%s' (accepted: cpu, cuda, auto)", optarg);
            o.backend = optarg;
            break;
        case 'T': o.trace = optarg; break;
        case 'C':
            if (strcmp(optarg, "perf") && strcmp(optarg, "analytic"))
                cli_usage_error(prog, "--counters: unknown '%s' (accepted: perf, analytic)",
                                optarg);
            o.use_perf = !strcmp(optarg, "perf");
            break;
        case 'h': print_help(); exit(0);
        default: cli_bad_option(prog, c, argv[optind - 1], accepted);
        }
    }
    if (optind < argc)
        cli_usage_error(prog, "unexpected argument '%s' (accepted: %s)", argv[optind], accepted);
    cli_model_options(prog, o.model, res, classes, &o.res, &o.classes);
    if (o.lr == 0.0f) /* not given: the model's recipe */
        o.lr = zoo_default_lr(zoo_find(o.model), o.batch);
    if (o.prec != PREC_FP32)
        cli_usage_error(prog, "--precision: %s needs the cuda backend (the cpu backend runs fp32)",
                        precision_name(o.prec));
    if (o.cifar_dir && (o.res != CIFAR10_SIDE || o.classes != CIFAR10_CLASSES))
        cli_usage_error(prog, "--data: cifar10 needs --res 32 and 10 classes (got %d and %d)",
                        o.res, o.classes);
    if (!strcmp(o.backend, "cuda"))
        cli_usage_error(prog, "--backend: cuda is not built yet (accepted today: cpu, auto)");
    return o;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The process's peak resident memory so far (the CPU backend's footprint). */
static long long peak_memory_bytes(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (long long)ru.ru_maxrss * 1024;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Appends rows to steps.csv: the header only for a new or empty file, and a
 * flush per row so an interrupted run keeps every measured iteration. */
static FILE *open_steps_csv(const char *path)
{
    FILE *f = fopen(path, "a");
    if (!f)
        return NULL;
    if (ftell(f) == 0)
        fprintf(f, "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,"
                   "images_per_s,loss,peak_mem_bytes\n");
    return f;
}

#ifdef HAVE_DNNL
static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One traced step after the timed ones, so that tracing never slows them;
 * its operations' durations are set against the untraced median. */
static int run_trace(const options *o, step_driver *drv, const network *net,
                     double median)
{
    trace_options topt = {.env = o->env, .repeat = o->repeat, .use_perf = o->use_perf};
    trace_result tr;
    char err[400];
    if (trace_step(drv, o->batch, o->prec, &topt, o->trace, &tr, err, sizeof err)) {
        fprintf(stderr, "%s: --trace: %s\n", prog, err);
        return 1;
    }
    if (tr.perf_why[0] && o->use_perf)
        fprintf(stderr, "%s: trace: FLOPs from the analytic model: %s\n", prog, tr.perf_why);
    step_cost cost = cost_step(net, o->batch, o->prec, NULL);
    printf("trace: %d rows to %s (FLOPs %s); operations sum to %.2f ms = %.1f%% of the "
           "median untraced step (%.2f ms); %.3f GFLOP = %.1f%% of the analytic step\n",
           tr.rows, o->trace, tr.source, tr.total_ms, 100.0 * tr.total_ms / median, median,
           tr.flops / 1e9, 100.0 * (double)tr.flops / (double)cost.step_flops);
    return 0;
}

/* Warm-up and timed steps; rows to steps.csv as they are measured. On
 * success *median_ms is the median step, then the trace step when asked. */
static int run_steps(const options *o, const backend_ops *ops, backend *b, const network *net,
                     double *step_ms, double *median_ms)
{
    step_driver drv;
    if (step_init(&drv, ops, b, net, (sgd_params){o->lr, 0.9f, 5e-4f})) {
        fprintf(stderr, "%s: out of memory for the step driver\n", prog);
        return 1;
    }
    FILE *csv = NULL;
    if (o->out && !(csv = open_steps_csv(o->out))) {
        fprintf(stderr, "%s: cannot open %s for appending\n", prog, o->out);
        step_free(&drv);
        return 1;
    }
    bool progress = isatty(STDERR_FILENO);
    int rc = 0;
    for (int it = -o->warmup; it < o->iters && rc == 0; it++) {
        float loss;
        double t0 = now_seconds();
        if (step_run(&drv, &loss)) {
            fprintf(stderr, "%s: step %d: %s\n", prog, it, step_error(&drv));
            rc = 1;
            break;
        }
        double ms = (now_seconds() - t0) * 1e3;
        if (it >= 0) {
            step_ms[it] = ms;
            if (csv) {
                fprintf(csv, "%s,%s,%s,%d,%d,%s,1,0,%d,%d,%.4f,%.3f,%.6f,%lld\n", o->env,
                        ops->name, o->model, o->res, o->batch, precision_name(o->prec), o->repeat,
                        it, ms, o->batch / (ms * 1e-3), loss, peak_memory_bytes());
                fflush(csv);
            }
        }
        if (progress)
            fprintf(stderr, "\r%s %s: %s %d/%d  %.1f ms  loss %.4f   ", prog, o->model,
                    it < 0 ? "warm-up" : "step", it < 0 ? it + o->warmup + 1 : it + 1,
                    it < 0 ? o->warmup : o->iters, ms, loss);
    }
    if (progress)
        fputc('\n', stderr);
    if (csv && fclose(csv)) {
        fprintf(stderr, "%s: writing %s failed\n", prog, o->out);
        rc = 1;
    }
    if (rc == 0) /* sorts step_ms: its rows are written already */
        *median_ms = median_of(step_ms, o->iters);
    if (rc == 0 && o->trace)
        rc = run_trace(o, &drv, net, *median_ms);
    step_free(&drv);
    return rc;
}

static void print_summary(const options *o, const network *net, double median)
{
    step_cost cost = cost_step(net, o->batch, o->prec, NULL);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%s res %d batch %d %s threads %d: median step %.2f ms, %.2f images/s, "
           "%.1f GFLOP/s (analytic FLOPs), peak RSS %.0f MiB (analytic footprint %.0f MiB)\n",
           o->model, o->res, o->batch, precision_name(o->prec), o->threads, median,
           o->batch / (median * 1e-3), cost.step_flops / (median * 1e-3) / 1e9,
           ru.ru_maxrss / 1024.0, cost.memory.total / 1048576.0);
}
#endif

int main(int argc, char **argv)
{
    options o = parse_options(argc, argv);
#ifndef HAVE_DNNL
    fprintf(stderr, "%s: built without oneDNN: no CPU backend (run 'make deps', then rebuild)\n", prog);
    return 1;
#else
    const backend_ops *ops = &cpu_backend_ops;
    network net;
    if (zoo_build(&net, o.model, o.res, o.classes) != NET_OK) {
        fprintf(stderr, "%s: %s\n", prog, net.err);
        return 1;
    }
    int64_t image_elems = (int64_t)o.batch * shape_elems(net.input);
    float *images = malloc((size_t)image_elems * sizeof *images);
    int32_t *labels = malloc((size_t)o.batch * sizeof *labels);
    double *step_ms = malloc((size_t)o.iters * sizeof *step_ms);
    backend *b = NULL;
    char err[512] = "";
    int rc = 1;
    if (!images || !labels || !step_ms) {
        fprintf(stderr, "%s: a batch of %d images at %dx%d needs %.2f GiB, more than can be "
                "allocated: use a smaller --batch\n", prog, o.batch, o.res, o.res,
                image_elems * 4.0 / 1073741824.0);
        goto done;
    }
    /* one fixed batch: the step's cost, not data loading, is what is measured */
    if (!o.cifar_dir) {
        data_synthetic(o.seed, o.batch, net.input.c, o.res, o.classes, images, labels);
    } else if (data_cifar10(o.cifar_dir, o.batch, images, labels, err, sizeof err)) {
        fprintf(stderr, "%s: --data: %s\n", prog, err);
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    backend_config cfg = {.batch = o.batch, .threads = o.threads, .seed = o.seed};
    if (!(b = ops->create(&net, &cfg, err, sizeof err))) {
        fprintf(stderr, "%s: %s\n", prog, err);
        goto done;
    }
    if (init_parameters(ops, b, &net, o.seed, err, sizeof err) ||
        ops->set_batch(b, images, labels)) {
        fprintf(stderr, "%s: %s\n", prog, err[0] ? err : ops->error(b));
        goto done;
    }
    double median_ms = 0.0;
    rc = run_steps(&o, ops, b, &net, step_ms, &median_ms);
    if (rc == 0)
        print_summary(&o, &net, median_ms);
done:
    if (b)
        ops->destroy(b);
    free(images);
    free(labels);
    free(step_ms);
    net_free(&net);
    return rc;
#endif
}
