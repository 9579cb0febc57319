/* bin/train: fixed-iteration training steps of a zoo model on one fixed
 * batch, on the CPU (oneDNN) or a GPU (cuDNN, cuBLASLt); one steps.csv row per
 * timed iteration and one summary line. Options are checked, outputs included,
 * before any work (bench/train/train_run.c does the work). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../models/data.h"
#include "../models/ddp/ddp_world.h"
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
    bool counters_given, threads_given, device_given, depthwise_given, conv_bias_given,
        conv_api_given;
    const char *ddp_only;       /* an option given that needs --ddp, or NULL */
} options;

static void print_help(void)
{
    printf("usage: train --model M [--res R] [--classes K] [--batch N] [--precision P]\n"
           "             [--warmup W] [--iters I] [--threads T] [--seed S] [--lr X]\n"
           "             [--data synthetic|cifar10:DIR] [--repeat K] [--env NAME] [--out FILE]\n"
           "             [--backend cpu|cuda|auto] [--device D] [--graph] [--workspace-mb MB]\n"
           "             [--no-fusion] [--depthwise auto|cudnn|own] [--conv-bias auto|cudnn|own]\n"
           "             [--conv-api auto|legacy|graph] [--algo-cache FILE]\n"
           "             [--trace kernels.csv]\n"
           "             [--counters perf|analytic|cupti]\n"
           "             [--dropout P] [--shards N] [--save-weights PREFIX]\n"
           "             [--ddp [--bucket-mb MB] [--comm-precision fp32|bf16] [--ddp-timeout S]\n"
           "              [--scaling-out scaling.csv [--scaling-mode strong|weak]\n"
           "              [--baseline-ms T1]] [--fault-kill RANK:STEP]]\n"
           "Fixed-iteration training steps (forward, backward, SGD momentum 0.9, weight\n"
           "decay 5e-4) on one fixed batch; --out FILE appends a steps.csv row per timed\n"
           "step (without it no file is written). Defaults: batch 32, warmup 5, iters 20,\n"
           "threads = all cores, seed 1, synthetic data, precision fp32, backend auto (the\n"
           "GPU when there is one), and lr = base x batch / 256 (the linear-scaling rule;\n"
           "base 0.1 as torchvision's recipe, 0.01 for vgg16): e.g. resnet50 at batch 8:\n"
           "0.003125, vgg16 at batch 4: 0.00015625, any model at batch 256: its base.\n"
           "Precisions: fp32 (no tensor cores; the cpu backend's only one), tf32, fp16\n"
           "(fp32 master weights, dynamic loss scale), bf16 (tensor cores, NHWC).\n"
           "--no-fusion runs every layer as its own kernels or loops (to measure what\n"
           "fusion gains; on cpu: the ReLU/ReLU6 after a batch norm or an add).\n"
           "cuda only: --graph captures the step once as a CUDA graph and replays it;\n"
           "--workspace-mb caps the workspace an algorithm of cuDNN's may need (default\n"
           "1024; each pass's lives in the step's memory while it runs); --depthwise runs\n"
           "depthwise convolutions on cuDNN, on the suite's own kernels, or (auto, the\n"
           "default) per pass on whichever was faster at plan time once its result\n"
           "matched cuDNN's (the choice is printed after the summary); --conv-bias adds a\n"
           "convolution's bias and the ReLU fused into it (VGG-16) in cuDNN's call\n"
           "(cudnn: its fused convolution+bias+ReLU wherever cuDNN takes it), in the\n"
           "suite's own kernel after cuDNN's convolution (own), or (auto, the default)\n"
           "per shape by whichever was faster at plan time once the two results agreed;\n"
           "--conv-api runs the other convolution passes on cuDNN's legacy calls (the\n"
           "algorithm cudnnFind chose), on its graph API (the fastest of the engine\n"
           "configurations its heuristics rank first, as PyTorch's cudnn.benchmark), or\n"
           "(auto, the default) per pass on whichever was faster at plan time once its\n"
           "result matched the legacy one's;\n"
           "--algo-cache FILE reuses the convolution algorithms that earlier runs chose\n"
           "for the same device, cuDNN version, precision, workspace and shape, and adds\n"
           "those it searches (delete FILE to search again).\n"
           "--trace adds one step after the timed ones whose kernels (GPU: CUPTI, per\n"
           "kernel) or operations (CPU: each timed alone) go to kernels.csv; FLOPs from\n"
           "the counters (--counters perf on CPU, cupti on GPU) where allowed, else from\n"
           "the analytic model (--counters analytic, or when the counters are refused).\n"
           "--dropout P sets every dropout layer's probability (0: none); --shards N makes\n"
           "the batch the concatenation of N ranks' shards (the global batch of N ranks);\n"
           "--save-weights writes every parameter as raw fp32 to PREFIX.rank<R>.bin.\n"
           "--ddp: data-parallel over the ranks of mpirun or srun (MPI; NCCL for GPU\n"
           "ranks, one GPU per rank): --batch is per rank, rank r trains on shard r (its own\n"
           "synthetic seed, or CIFAR-10 images [r x batch, (r+1) x batch)); gradients are\n"
           "averaged in buckets of --bucket-mb (default 25; the first 1 MiB; 0: one reduction\n"
           "after the whole backward) launched as backward produces them, in\n"
           "--comm-precision (default fp32); a wait for the other ranks longer than\n"
           "--ddp-timeout seconds (default 30) ends the run with one line. Threads default\n"
           "to the cores / the ranks on the node, the GPU to the rank on the node. Rank 0\n"
           "writes every rank's steps.csv rows and, with --scaling-out, one scaling.csv row\n"
           "(mode weak by default; efficiency against --baseline-ms, the 1-rank step:\n"
           "strong T1/(N x TN), weak T1/TN). --fault-kill RANK:STEP (tests): that rank\n"
           "kills itself (SIGKILL) halfway through the backward of that step.\n");
    /* the runner reads this line: no scaling stage from a build that cannot run it */
    if (!ddp_world_available())
        printf("--ddp is not in this build (no MPI: mpicc was not found when it was built).\n");
}

static float parse_lr(const char *text)
{
    char *end;
    double v = strtod(text, &end);
    if (!*text || *end || !(v > 0.0 && v <= 100.0))
        cli_usage_error(prog, "--lr: '%s' is not a number in (0, 100]", text);
    return (float)v;
}

/* A number in (0, max]. */
static double parse_positive(const char *option, const char *text, double max)
{
    char *end;
    double v = strtod(text, &end);
    if (!*text || *end || !(v > 0.0 && v <= max))
        cli_usage_error(prog, "%s: '%s' is not a number in (0, %g]", option, text, max);
    return v;
}

static float parse_dropout(const char *text)
{
    char *end;
    double v = strtod(text, &end);
    if (!*text || *end || !(v >= 0.0 && v < 1.0))
        cli_usage_error(prog, "--dropout: '%s' is not a probability in [0, 1)", text);
    return (float)v;
}

/* RANK:STEP, STEP as the steps count (warm-up steps are negative). */
static void parse_fault(const char *text, int *rank, int *step)
{
    const char *colon = strchr(text, ':');
    char head[32];
    long r = 0, s = 0;
    bool ok = colon && (size_t)(colon - text) < sizeof head;
    if (ok) {
        memcpy(head, text, (size_t)(colon - text));
        head[colon - text] = '\0';
        ok = cli_parse_long(head, 0, 65535, &r) && cli_parse_long(colon + 1, -1000000, 1000000, &s);
    }
    if (!ok)
        cli_usage_error(prog, "--fault-kill: '%s' is not RANK:STEP (a rank from 0, a step, "
                              "negative in the warm-up)", text);
    *rank = (int)r;
    *step = (int)s;
}

/* What --ddp changes and refuses, and the options that need it. */
static void check_ddp_options(const options *o)
{
    const train_options *r = &o->run;
    if (!r->ddp) {
        if (o->ddp_only)
            cli_usage_error(prog, "%s: only with --ddp", o->ddp_only);
        if (r->batch % r->shards)
            cli_usage_error(prog, "--shards: the batch of %d is not %d equal shards", r->batch,
                            r->shards);
        return;
    }
    if (!ddp_world_available())
        cli_usage_error(prog, "--ddp: this build has no MPI (mpicc was not found when it was "
                              "built: run 'make deps', then rebuild)");
    if (r->trace || r->graph || r->shards > 1)
        cli_usage_error(prog, "%s: not with --ddp (%s)",
                        r->trace ? "--trace" : r->graph ? "--graph" : "--shards",
                        r->trace    ? "trace one process without --ddp"
                        : r->graph ? "the reductions are not captured in a CUDA graph yet"
                                   : "each rank trains on its own shard");
}

/* --depthwise and --conv-bias: auto, cudnn or own, as the value both enums
 * give that word (models/backend.c keeps their order alike). */
static int parse_who_runs(const char *option, const char *text)
{
    for (int k = DEPTHWISE_AUTO; k <= DEPTHWISE_OWN; k++)
        if (!strcmp(text, depthwise_choice_name((depthwise_choice)k)))
            return k;
    cli_usage_error(prog, "%s: unknown '%s' (accepted: auto, cudnn, own)", option, text);
}

/* An output file must be writable before minutes of training go into it:
 * cli_output_file's checks (a folder, an unwritable file or folder), and for
 * a new file a probe, created and removed, where access() cannot tell (root
 * is granted W_OK on /proc, where nothing can be created). Another rank
 * probing the same name at once finds it there (EEXIST): no false error. */
static const char *output_file(const char *option, const char *text)
{
    cli_output_file(prog, option, text);
    int fd = open(text, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
        close(fd);
        unlink(text);
    } else if (errno != EEXIST) {
        cli_usage_error(prog, "%s: cannot create '%s': %s", option, text, strerror(errno));
    }
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
        {"depthwise", required_argument, 0, 1011},
        {"algo-cache", required_argument, 0, 1012},
        {"conv-bias", required_argument, 0, 1013},
        {"conv-api", required_argument, 0, 1014},
        {"ddp", no_argument, 0, 1000},          {"bucket-mb", required_argument, 0, 1001},
        {"comm-precision", required_argument, 0, 1002},
        {"ddp-timeout", required_argument, 0, 1003},
        {"scaling-out", required_argument, 0, 1004},
        {"scaling-mode", required_argument, 0, 1005},
        {"baseline-ms", required_argument, 0, 1006},
        {"fault-kill", required_argument, 0, 1007},
        {"shards", required_argument, 0, 1008}, {"dropout", required_argument, 0, 1009},
        {"save-weights", required_argument, 0, 1010},
        {0, 0, 0, 0},
    };
    const char *accepted = "--model, --res, --classes, --batch, --precision, --warmup, --iters, "
                           "--threads, --seed, --lr, --data, --repeat, --env, --out, --backend, "
                           "--device, --graph, --workspace-mb, --no-fusion, --depthwise, --conv-bias, "
                           "--conv-api, "
                           "--algo-cache, --trace, "
                           "--counters, "
                           "--dropout, --shards, --save-weights, --ddp, --bucket-mb, "
                           "--comm-precision, --ddp-timeout, --scaling-out, --scaling-mode, "
                           "--baseline-ms, --fault-kill, --help";
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    cores = cores > 0 ? cores : 1;
    options o = {.run = {.batch = 32, .warmup = 5, .iters = 20, .threads = (int)cores,
                         .seed = 1, .prec = PREC_FP32, .env = "local", .dropout = -1.0f,
                         .shards = 1, .bucket_bytes = DDP_DEFAULT_BUCKET_BYTES,
                         .comm = DDP_COMM_FP32, .ddp_timeout_s = 30.0, .scaling_mode = "weak",
                         .fault_rank = -1},
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
        case 't':
            r->threads = cli_int_option(prog, "--threads", optarg, 1, cores);
            o.threads_given = true;
            break;
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
        case 'e': r->env = cli_name_option(prog, "--env", optarg); break;
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
        case 'D':
            r->device = cli_int_option(prog, "--device", optarg, 0, 63);
            o.device_given = true;
            break;
        case 'G': r->graph = true; break;
        case 'W':
            r->workspace_limit =
                (int64_t)cli_int_option(prog, "--workspace-mb", optarg, 1, 1 << 20) << 20;
            break;
        case 'F': r->no_fusion = true; break;
        case 1011:
            r->depthwise = (depthwise_choice)parse_who_runs("--depthwise", optarg);
            o.depthwise_given = true;
            break;
        case 1013:
            r->conv_bias = (conv_bias_choice)parse_who_runs("--conv-bias", optarg);
            o.conv_bias_given = true;
            break;
        case 1014: {
            int k = CONV_API_AUTO;
            while (k <= CONV_API_GRAPH && strcmp(optarg, conv_api_choice_name((conv_api_choice)k)))
                k++;
            if (k > CONV_API_GRAPH)
                cli_usage_error(prog, "--conv-api: unknown '%s' (accepted: auto, legacy, graph)",
                                optarg);
            r->conv_api = (conv_api_choice)k;
            o.conv_api_given = true;
            break;
        }
        case 1012: r->algo_cache = output_file("--algo-cache", optarg); break;
        case 1000: r->ddp = true; break;
        case 1001:
            r->bucket_bytes = (int64_t)cli_int_option(prog, "--bucket-mb", optarg, 0, 4096) << 20;
            o.ddp_only = "--bucket-mb";
            break;
        case 1002:
            if (strcmp(optarg, "fp32") && strcmp(optarg, "bf16"))
                cli_usage_error(prog, "--comm-precision: unknown '%s' (accepted: fp32, bf16)",
                                optarg);
            r->comm = !strcmp(optarg, "bf16") ? DDP_COMM_BF16 : DDP_COMM_FP32;
            o.ddp_only = "--comm-precision";
            break;
        case 1003:
            r->ddp_timeout_s = cli_int_option(prog, "--ddp-timeout", optarg, 1, 3600);
            o.ddp_only = "--ddp-timeout";
            break;
        case 1004:
            r->scaling_out = output_file("--scaling-out", optarg);
            o.ddp_only = "--scaling-out";
            break;
        case 1005:
            if (strcmp(optarg, "strong") && strcmp(optarg, "weak"))
                cli_usage_error(prog, "--scaling-mode: unknown '%s' (accepted: strong, weak)",
                                optarg);
            r->scaling_mode = optarg;
            o.ddp_only = "--scaling-mode";
            break;
        case 1006:
            r->baseline_ms = parse_positive("--baseline-ms", optarg, 1e9);
            o.ddp_only = "--baseline-ms";
            break;
        case 1007:
            parse_fault(optarg, &r->fault_rank, &r->fault_step);
            o.ddp_only = "--fault-kill";
            break;
        case 1008: r->shards = cli_int_option(prog, "--shards", optarg, 1, 4096); break;
        case 1009: r->dropout = parse_dropout(optarg); break;
        case 1010: r->save_weights = output_file("--save-weights", optarg); break;
        case 'h': print_help(); exit(0);
        default: cli_bad_option(prog, c, argv[optind - 1], accepted);
        }
    }
    if (optind < argc)
        cli_usage_error(prog, "unexpected argument '%s' (accepted: %s)", argv[optind], accepted);
    train_options *r = &o.run;
    cli_model_options(prog, r->model, res, classes, &r->res, &r->classes);
    /* not given: the model's recipe, scaled to the batch (with --ddp the
     * global batch, once the ranks are counted) */
    if (r->lr == 0.0f && !r->ddp)
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
    char why[512];
    if (r->out && !train_steps_file_ok(r->out, why, sizeof why))
        cli_usage_error(prog, "--out: %s", why);
    if (r->out && r->trace && !strcmp(r->out, r->trace))
        cli_usage_error(prog, "--trace: '%s' is also --out (steps.csv and kernels.csv differ)",
                        r->trace);
    check_ddp_options(&o);
    r->counters = !counters || !strcmp(counters, "perf") ? COUNTERS_PERF
                  : !strcmp(counters, "cupti")           ? COUNTERS_CUPTI
                                                         : COUNTERS_ANALYTIC;
    return o;
}

/* Variables of the environment that make a GPU run measure something else
 * than it says: one line each (env.json records them too). */
static void warn_cuda_environment(precision prec)
{
    const char *blocking = getenv("CUDA_LAUNCH_BLOCKING");
    if (blocking && strcmp(blocking, "1") == 0)
        fprintf(stderr, "%s: CUDA_LAUNCH_BLOCKING=1 is set: every launch waits for its kernel, "
                        "so the step times hold the launch gaps asynchronous launches hide\n",
                prog);
    const char *tf32 = getenv("NVIDIA_TF32_OVERRIDE");
    if (prec == PREC_TF32 && tf32 && strcmp(tf32, "0") == 0)
        fprintf(stderr, "%s: NVIDIA_TF32_OVERRIDE=0 is set: cuDNN and cuBLAS compute this tf32 "
                        "run in full fp32 (unset it to measure tf32)\n",
                prog);
}

/* The backend asked for, or for auto the GPU when one opens; what cannot
 * run here is a usage error (exit 2) with the reason. */
static const backend_ops *choose_backend(options *o, const ddp_world *w)
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
    if (cpu &&
        (r->graph || r->workspace_limit || o->depthwise_given || o->conv_bias_given ||
         o->conv_api_given || r->algo_cache))
        cli_usage_error(prog, "%s: only for the cuda backend",
                        r->graph             ? "--graph"
                        : o->depthwise_given ? "--depthwise"
                        : o->conv_bias_given ? "--conv-bias"
                        : o->conv_api_given  ? "--conv-api"
                        : r->algo_cache      ? "--algo-cache"
                                             : "--workspace-mb");
    if (cpu && r->counters == COUNTERS_CUPTI)
        cli_usage_error(prog, "--counters: cupti needs the cuda backend (cpu: perf, analytic)");
    if (!cpu && r->counters == COUNTERS_PERF && o->counters_given)
        cli_usage_error(prog, "--counters: perf is for the cpu backend (cuda: cupti, analytic)");
    if (!cpu && r->counters == COUNTERS_PERF)
        r->counters = COUNTERS_CUPTI; /* the default counters of a GPU */
    /* after the checks: a refused option is then the only line */
    if (cpu && automatic)
        fprintf(stderr, "%s: no usable GPU (%s): running on the cpu backend\n", prog, why);
#ifdef HAVE_CUDA
    if (w && !cpu) {
        int devices = cuda_device_count(why, sizeof why);
        char gpu_err[DDP_ERR_LEN];
        int gpu = ddp_world_gpu(w, devices, gpu_err, sizeof gpu_err);
        if (gpu < 0)
            cli_usage_error(prog, "--ddp: %s; run CPU ranks with --backend cpu", gpu_err);
        if (!o->device_given)
            r->device = gpu;
    }
#endif
    /* after every refusal: a refused run gets its one line alone */
    if (!cpu)
        warn_cuda_environment(r->prec);
    (void)w;
    return ops;
}

/* Every rank of a DDP run parses the same options: only rank 0's stderr
 * stays open while they are checked, so a bad option is one line, not one
 * per rank. Returns the saved stderr to restore, or -1. */
static int quiet_other_ranks(int rank)
{
    if (rank == 0)
        return -1;
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    FILE *null = fopen("/dev/null", "w");
    if (saved < 0 || !null || dup2(fileno(null), STDERR_FILENO) < 0) {
        if (null)
            fclose(null);
        if (saved >= 0)
            close(saved);
        return -1;
    }
    fclose(null);
    return saved;
}

static void restore_stderr(int saved)
{
    if (saved < 0)
        return;
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
}

static bool wants_ddp(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--ddp"))
            return true;
    return false;
}

int main(int argc, char **argv)
{
    int saved = quiet_other_ranks(wants_ddp(argc, argv) ? ddp_launcher_rank() : 0);
    options o = parse_options(argc, argv);
    restore_stderr(saved);
    ddp_world world, *w = NULL;
    if (o.run.ddp) {
        char err[DDP_ERR_LEN];
        if (ddp_world_init(&world, &argc, &argv, o.run.ddp_timeout_s, "--ddp-timeout", err,
                           sizeof err)) {
            fprintf(stderr, "%s: --ddp: %s\n", prog, err);
            return 1;
        }
        w = &world;
        ddp_install_stop_handler(w, prog);
        /* one rank per GPU, or per share of the node's cores */
        if (!o.threads_given) {
            long cores = sysconf(_SC_NPROCESSORS_ONLN);
            int share = (int)(cores > 0 ? cores : 1) / w->local_size;
            o.run.threads = share > 0 ? share : 1;
        }
        /* the average over the ranks is the gradient of the global batch */
        if (o.run.lr == 0.0f)
            o.run.lr = zoo_default_lr(zoo_find(o.run.model), o.run.batch * w->size);
    }
    saved = quiet_other_ranks(w ? w->rank : 0);
    const backend_ops *ops = choose_backend(&o, w);
    restore_stderr(saved);
    int rc = train_run(&o.run, ops, w);
    if (w) {
        if (rc != 0) /* the other ranks may be waiting for this one */
            ddp_world_abort(w, rc);
        ddp_world_finalize(w);
    }
    return rc;
}
