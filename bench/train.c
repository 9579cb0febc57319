/* bin/train: fixed-iteration training steps of a zoo model on one fixed
 * batch, on the CPU (oneDNN) or a GPU (cuDNN, cuBLASLt); one steps.csv row per
 * timed iteration and one summary line. Options are checked, outputs included,
 * before any work (bench/train/train_run.c does the work). */
#include <ctype.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../models/data.h"
#include "../models/zoo.h"
#include "cli.h"
#include "train/train_run.h"
#ifdef HAVE_DNNL
#include "../models/cpu/cpu_backend.h"
#endif
#ifdef HAVE_CUDA
#include "../models/cuda/cuda_backend.h"
#endif

static const char *const prog = "train";

typedef struct {
    train_options run;
    const char *backend;        /* cpu, cuda, auto */
    bool counters_given;
} options;

static void print_help(void)
{
    printf("usage: train --model M [--res R] [--classes K] [--batch N] [--precision P]\n"
           "             [--warmup W] [--iters I] [--threads T] [--seed S] [--lr X]\n"
           "             [--data synthetic|cifar10:DIR] [--repeat K] [--env NAME] [--out steps.csv]\n"
           "             [--backend cpu|cuda|auto] [--device D] [--graph] [--workspace-mb MB]\n"
           "             [--no-fusion] [--trace kernels.csv] [--counters perf|analytic|cupti]\n"
           "Fixed-iteration training steps (forward, backward, SGD momentum 0.9, weight\n"
           "decay 5e-4) on one fixed batch. Defaults: batch 32, warmup 5, iters 20,\n"
           "threads = all cores, seed 1, synthetic data, precision fp32, backend auto (the\n"
           "GPU when there is one), and lr = base x batch / 256 (the linear-scaling rule;\n"
           "base 0.1 as torchvision's recipe, 0.01 for vgg16): e.g. resnet50 at batch 8:\n"
           "0.003125, vgg16 at batch 4: 0.00015625, any model at batch 256: its base.\n"
           "Precisions: fp32 (no tensor cores; the cpu backend's only one), tf32, fp16\n"
           "(fp32 master weights, dynamic loss scale), bf16 (tensor cores, NHWC).\n"
           "cuda only: --graph captures the step once as a CUDA graph and replays it;\n"
           "--workspace-mb caps cuDNN's workspace (default 1024); --no-fusion runs every\n"
           "layer as its own kernels (to measure what fusion gains).\n"
           "--trace adds one step after the timed ones whose kernels (GPU: CUPTI, per\n"
           "kernel) or operations (CPU: each timed alone) go to kernels.csv; FLOPs from\n"
           "the counters (--counters perf on CPU, cupti on GPU) where allowed, else from\n"
           "the analytic model (--counters analytic, or when the counters are refused).\n");
}

static float parse_lr(const char *text)
{
    char *end;
    double v = strtod(text, &end);
    if (!*text || *end || !(v > 0.0 && v <= 100.0))
        cli_usage_error(prog, "--lr: '%s' is not a number in (0, 100]", text);
    return (float)v;
}

/* A label written unquoted into CSV files: letters, digits, '.', '_', '-'. */
static const char *parse_env(const char *text)
{
    bool ok = *text != '\0' && strlen(text) <= 64;
    for (const char *c = text; ok && *c; c++)
        ok = isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-';
    if (!ok)
        cli_usage_error(prog, "--env: '%s' is not a name of 1 to 64 letters, digits, '.', '_' "
                              "or '-'", text);
    return text;
}

/* An output file must be writable before minutes of training go into it:
 * an existing file writable, or a new one's folder. */
static const char *output_file(const char *option, const char *text)
{
    cli_file_option(prog, option, text);
    if (access(text, F_OK) == 0) {
        if (access(text, W_OK) != 0)
            cli_usage_error(prog, "%s: '%s' is not writable", option, text);
        return text;
    }
    char *copy = strdup(text);
    if (!copy)
        cli_usage_error(prog, "%s: out of memory", option);
    const char *dir = dirname(copy);
    bool ok = access(dir, W_OK | X_OK) == 0;
    if (!ok)
        cli_usage_error(prog, "%s: cannot create '%s': its folder '%s' is missing or not "
                              "writable", option, text, dir);
    free(copy);
    return text;
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
        {"counters", required_argument, 0, 'C'}, {"device", required_argument, 0, 'D'},
        {"graph", no_argument, 0, 'G'},         {"workspace-mb", required_argument, 0, 'W'},
        {"no-fusion", no_argument, 0, 'F'},     {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *accepted = "--model, --res, --classes, --batch, --precision, --warmup, --iters, "
                           "--threads, --seed, --lr, --data, --repeat, --env, --out, --backend, "
                           "--device, --graph, --workspace-mb, --no-fusion, --trace, --counters";
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cores = cores > 0 ? cores : 1;
    options o = {.run = {.batch = 32, .warmup = 5, .iters = 20, .threads = (int)cores,
                         .seed = 1, .prec = PREC_FP32, .env = "local"},
                 .backend = "auto"};
    const char *res = NULL, *classes = NULL, *counters = NULL;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        train_options *r = &o.run;
        switch (c) {
        case 'm': r->model = optarg; break;
        case 'r': res = optarg; break;
        case 'k': classes = optarg; break;
        case 'b': r->batch = cli_int_option(prog, "--batch", optarg, 1, CLI_MAX_BATCH); break;
        case 'p': r->prec = cli_precision_option(prog, optarg); break;
        case 'w': r->warmup = cli_int_option(prog, "--warmup", optarg, 0, 1000000); break;
        case 'i': r->iters = cli_int_option(prog, "--iters", optarg, 1, 1000000); break;
        case 't': r->threads = cli_int_option(prog, "--threads", optarg, 1, cores); break;
        case 's': r->seed = (uint64_t)cli_int_option(prog, "--seed", optarg, 0, 2147483647); break;
        case 'l': r->lr = parse_lr(optarg); break;
        case 'd':
            if (!strncmp(optarg, "cifar10:", 8) && optarg[8])
                r->cifar_dir = optarg + 8;
            else if (strcmp(optarg, "synthetic") != 0)
                cli_usage_error(prog, "--data: unknown '%s' (accepted: synthetic, cifar10:DIR)",
                                optarg);
            break;
        case 'R': r->repeat = cli_int_option(prog, "--repeat", optarg, 0, 1000000); break;
        case 'e': r->env = parse_env(optarg); break;
        case 'o': r->out = output_file("--out", optarg); break;
        case 'B':
            if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda") && strcmp(optarg, "auto"))
                cli_usage_error(prog, "--backend: unknown '%s' (accepted: cpu, cuda, auto)", optarg);
            o.backend = optarg;
            break;
        case 'T': r->trace = output_file("--trace", optarg); break;
        case 'C':
            if (strcmp(optarg, "perf") && strcmp(optarg, "analytic") && strcmp(optarg, "cupti"))
                cli_usage_error(prog, "--counters: unknown '%s' (accepted: perf, analytic, cupti)",
                                optarg);
            counters = optarg;
            o.counters_given = true;
            break;
        case 'D': r->device = cli_int_option(prog, "--device", optarg, 0, 63); break;
        case 'G': r->graph = true; break;
        case 'W':
            r->workspace_limit =
                (int64_t)cli_int_option(prog, "--workspace-mb", optarg, 1, 1 << 20) << 20;
            break;
        case 'F': r->no_fusion = true; break;
        case 'h': print_help(); exit(0);
        default: cli_bad_option(prog, c, argv[optind - 1], accepted);
        }
    }
    if (optind < argc)
        cli_usage_error(prog, "unexpected argument '%s' (accepted: %s)", argv[optind], accepted);
    train_options *r = &o.run;
    cli_model_options(prog, r->model, res, classes, &r->res, &r->classes);
    if (r->lr == 0.0f) /* not given: the model's recipe, scaled to the batch */
        r->lr = zoo_default_lr(zoo_find(r->model), r->batch);
    if (r->cifar_dir && (r->res != CIFAR10_SIDE || r->classes != CIFAR10_CLASSES))
        cli_usage_error(prog, "--data: cifar10 needs --res 32 and 10 classes (got %d and %d)",
                        r->res, r->classes);
    if (r->cifar_dir) {
        char first[4096];
        snprintf(first, sizeof first, "%s/data_batch_1.bin", r->cifar_dir);
        if (access(first, R_OK) != 0)
            cli_usage_error(prog, "--data: cifar10: cannot read %s; expected the binary "
                                  "version's data_batch_1.bin .. data_batch_5.bin", first);
    }
    if (r->out && r->trace && !strcmp(r->out, r->trace))
        cli_usage_error(prog, "--trace: '%s' is also --out (steps.csv and kernels.csv differ)",
                        r->trace);
    r->counters = !counters || !strcmp(counters, "perf") ? COUNTERS_PERF
                  : !strcmp(counters, "cupti")           ? COUNTERS_CUPTI
                                                         : COUNTERS_ANALYTIC;
    return o;
}

/* The backend asked for, or for auto the GPU when one opens; what cannot
 * run here is a usage error (exit 2) with the reason. */
static const backend_ops *choose_backend(options *o)
{
    train_options *r = &o->run;
    bool want_cuda = !strcmp(o->backend, "cuda"), automatic = !strcmp(o->backend, "auto");
    char why[200] = "this build has no CUDA backend (nvcc was not found when it was built)";
    const backend_ops *ops = NULL;
#ifdef HAVE_CUDA
    if (want_cuda || automatic) {
        int devices = cuda_device_count(why, sizeof why);
        if (devices > r->device)
            ops = &cuda_backend_ops;
        else if (devices > 0)
            snprintf(why, sizeof why, "no CUDA device %d (%d found)", r->device, devices);
    }
#endif
    if (!ops && want_cuda)
        cli_usage_error(prog, "--backend: cuda cannot run here: %s", why);
    if (!ops) {
#ifdef HAVE_DNNL
        ops = &cpu_backend_ops;
        if (automatic)
            fprintf(stderr, "%s: no usable GPU (%s): running on the cpu backend\n", prog, why);
#else
        cli_usage_error(prog, "--backend: %s cannot run here: no GPU (%s) and no CPU backend "
                              "(built without oneDNN: run 'make deps', then rebuild)",
                        o->backend, why);
#endif
    }
    bool cpu = !strcmp(ops->name, "cpu");
    if (cpu && r->prec != PREC_FP32)
        cli_usage_error(prog, "--precision: %s needs a GPU (the cpu backend runs fp32)",
                        precision_name(r->prec));
    if (cpu && (r->graph || r->no_fusion || r->workspace_limit))
        cli_usage_error(prog, "%s: only for the cuda backend",
                        r->graph ? "--graph" : r->no_fusion ? "--no-fusion" : "--workspace-mb");
    if (cpu && r->counters == COUNTERS_CUPTI)
        cli_usage_error(prog, "--counters: cupti needs the cuda backend (cpu: perf, analytic)");
    if (!cpu && r->counters == COUNTERS_PERF && o->counters_given)
        cli_usage_error(prog, "--counters: perf is for the cpu backend (cuda: cupti, analytic)");
    if (!cpu && r->counters == COUNTERS_PERF)
        r->counters = COUNTERS_CUPTI; /* the default counters of a GPU */
    return ops;
}

int main(int argc, char **argv)
{
    options o = parse_options(argc, argv);
    const backend_ops *ops = choose_backend(&o);
    return train_run(&o.run, ops);
}
