/* bin/complexity: the analytic cost of one training step of a model, per layer
 * and in total (models/cost.h). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../analysis/fmt.h"
#include "../analysis/roofs.h"
#include "../analysis/run_load.h"
#include "../analysis/step_roofs.h"
#include "../models/cost.h"
#include "../models/zoo.h"
#include "cli.h"

static const char *const prog = "complexity";

typedef struct {
    const char *model;
    int res, classes, batch;
    precision prec;
    bool csv, list;
    char roofs_dir[4096];        /* --roofs: the run folder whose peaks.csv holds them */
    const char *roofs_shown;     /* --roofs as given */
    step_bytes_source traffic;   /* --traffic */
} options;

static void print_help(void)
{
    printf("usage: complexity --model M [--res R] [--classes K] [--batch N] [--precision P] [--csv]\n"
           "                  [--roofs RUN_DIR|peaks.csv [--traffic model|cuda]]\n"
           "       complexity --list\n"
           "Per-layer analytic FLOPs, minimal DRAM bytes and memory of one training step.\n"
           "  --model M      one of --list\n"
           "  --res R        input resolution (default: 224, CIFAR variants 32)\n"
           "  --classes K    output classes (default: 1000, CIFAR variants 10)\n"
           "  --batch N      images per step (default 1)\n"
           "  --precision P  %s (default fp32)\n"
           "  --csv          one CSV row per layer, then the loss and the step total\n"
           "  --roofs R      then the step at the measured roofs of R (a run folder or its\n"
           "                 peaks.csv): per layer type and phase the time at max(FLOPs / peak,\n"
           "                 bytes / DRAM bandwidth), each operation alone, and the images/s\n"
           "                 the step cannot exceed with those bytes (analytic, not measured)\n"
           "  --traffic T    the bytes held against the roofs: model (default: each tensor\n"
           "                 once from DRAM per layer pass) or cuda (what the CUDA backend's\n"
           "                 kernels move by design, fusions included)\n",
           precision_names());
}

/* The run folder of --roofs into dir[len]: the folder itself, or the one
 * holding the peaks.csv named; a usage error for anything else. */
static void roofs_folder(const char *given, char *dir, size_t len)
{
    struct stat st;
    if (stat(given, &st) != 0)
        cli_usage_error(prog, "--roofs: '%s' does not exist (a run folder or its peaks.csv)",
                        given);
    const char *slash = strrchr(given, '/');
    const char *base = slash ? slash + 1 : given;
    if (!S_ISDIR(st.st_mode) && (!S_ISREG(st.st_mode) || strcmp(base, "peaks.csv") != 0))
        cli_usage_error(prog, "--roofs: '%s' is neither a folder nor a file named peaks.csv",
                        given);
    bool fits = S_ISDIR(st.st_mode) ? (size_t)snprintf(dir, len, "%s", given) < len
                                    : cli_folder_of(given, dir, len);
    if (!fits)
        cli_usage_error(prog, "--roofs: '%s' is too long a path", given);
}

static options parse_options(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"model", required_argument, 0, 'm'},     {"res", required_argument, 0, 'r'},
        {"classes", required_argument, 0, 'k'},   {"batch", required_argument, 0, 'b'},
        {"precision", required_argument, 0, 'p'}, {"csv", no_argument, 0, 'c'},
        {"list", no_argument, 0, 'l'},            {"help", no_argument, 0, 'h'},
        {"roofs", required_argument, 0, 'R'},     {"traffic", required_argument, 0, 't'},
        {0, 0, 0, 0},
    };
    const char *accepted = "--model, --res, --classes, --batch, --precision, --csv, --roofs, "
                           "--traffic, --list, --help";
    options o = {.batch = 1, .prec = PREC_FP32, .traffic = STEP_BYTES_MODEL};
    const char *res = NULL, *classes = NULL, *traffic = NULL;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': o.model = optarg; break;
        case 'r': res = optarg; break;
        case 'k': classes = optarg; break;
        case 'b': o.batch = cli_int_option(prog, "--batch", optarg, 1, CLI_MAX_BATCH); break;
        case 'p': o.prec = cli_precision_option(prog, optarg); break;
        case 'c': o.csv = true; break;
        case 'l': o.list = true; break;
        case 'R': o.roofs_shown = cli_file_option(prog, "--roofs", optarg); break;
        case 't': traffic = optarg; break;
        case 'h': print_help(); exit(0);
        default: cli_bad_option(prog, c, argv[optind - 1], accepted);
        }
    }
    if (optind < argc)
        cli_usage_error(prog, "unexpected argument '%s' (accepted: %s)", argv[optind], accepted);
    if (traffic && strcmp(traffic, "cuda") == 0)
        o.traffic = STEP_BYTES_CUDA;
    else if (traffic && strcmp(traffic, "model") != 0)
        cli_usage_error(prog, "--traffic: '%s' is not model or cuda", traffic);
    if (traffic && !o.roofs_shown)
        cli_usage_error(prog, "--traffic: only with --roofs (it says which bytes meet the roofs)");
    if (o.roofs_shown && o.csv)
        cli_usage_error(prog, "--roofs: prints a table, not with --csv");
    if (o.roofs_shown)
        roofs_folder(o.roofs_shown, o.roofs_dir, sizeof o.roofs_dir);
    if (o.list)
        return o;
    cli_model_options(prog, o.model, res, classes, &o.res, &o.classes);
    return o;
}

static void print_list(void)
{
    int n;
    const model_info *models = zoo_models(&n);
    for (int i = 0; i < n; i++)
        printf("%-20s %4d px %5d classes  %s\n", models[i].name, models[i].default_res,
               models[i].default_classes, models[i].summary);
}

static double intensity(int64_t flops, int64_t bytes)
{
    return bytes > 0 ? (double)flops / (double)bytes : 0.0;
}

static void print_csv(const network *net, const options *o, const layer_cost *costs,
                      const step_cost *s)
{
    printf("model,res,batch,precision,index,layer,type,inputs,out_c,out_h,out_w,params,macs,"
           "flops_fwd,flops_bwd_data,flops_bwd_weights,flops_update,"
           "bytes_fwd,bytes_bwd_data,bytes_bwd_weights,bytes_update,saved_bytes,intensity\n");
    const char *head_fmt = "%s,%d,%d,%s,";
    for (int i = 0; i < net->n_layers; i++) {
        const layer *l = &net->layers[i];
        const layer_cost *c = &costs[i];
        printf(head_fmt, o->model, o->res, o->batch, precision_name(o->prec));
        printf("%d,%s,%s,", i, l->name, layer_type_name(l->type));
        for (int k = 0; k < l->n_inputs; k++)
            printf("%s%d", k ? ";" : "", l->inputs[k]);
        printf(",%d,%d,%d,%lld,%lld", l->out_shape.c, l->out_shape.h, l->out_shape.w,
               (long long)l->params, (long long)c->macs);
        for (int p = 0; p < PASS_COUNT; p++)
            printf(",%lld", (long long)c->flops[p]);
        for (int p = 0; p < PASS_COUNT; p++)
            printf(",%lld", (long long)c->bytes[p]);
        printf(",%lld,%.4f\n", (long long)c->saved_bytes,
               intensity(layer_cost_flops(c), layer_cost_bytes(c)));
    }
    printf(head_fmt, o->model, o->res, o->batch, precision_name(o->prec));
    printf("%d,loss,softmax_xent,%d,%d,1,1,0,0,%lld,0,0,0,%lld,0,0,0,0,%.4f\n", net->n_layers,
           net->n_layers - 1, net->classes, (long long)s->loss_flops, (long long)s->loss_bytes,
           intensity(s->loss_flops, s->loss_bytes));
    printf(head_fmt, o->model, o->res, o->batch, precision_name(o->prec));
    printf("%d,total,step,,%d,1,1,%lld,%lld", net->n_layers + 1, net->classes,
           (long long)net_params(net), (long long)s->fwd_macs);
    for (int p = 0; p < PASS_COUNT; p++)
        printf(",%lld", (long long)(s->flops[p] + (p == PASS_FWD ? s->loss_flops : 0)));
    for (int p = 0; p < PASS_COUNT; p++)
        printf(",%lld", (long long)(s->bytes[p] + (p == PASS_FWD ? s->loss_bytes : 0)));
    printf(",%lld,%.4f\n", (long long)s->memory.saved_activations,
           intensity(s->step_flops, s->step_bytes));
}

/* 25557032 -> "25,557,032" */
static const char *grouped(int64_t v, char buf[32])
{
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%lld", (long long)(v < 0 ? -v : v));
    int out = 0;
    if (v < 0)
        buf[out++] = '-';
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[out++] = ',';
        buf[out++] = digits[i];
    }
    buf[out] = '\0';
    return buf;
}

static void print_table(const network *net, const options *o, const layer_cost *costs,
                        const step_cost *s)
{
    char g[32];
    printf("%s at %dx%d, %d classes, batch %d, %s: %s parameters, %d layers\n\n", o->model, o->res,
           o->res, o->classes, o->batch, precision_name(o->prec), grouped(net_params(net), g),
           net->n_layers);
    printf("%-32s %-7s %-14s %11s %10s %10s %10s %10s %10s %8s %9s\n", "layer", "type", "output",
           "params", "fwd MFLOP", "bwd_d", "bwd_w", "update", "bytes MB", "FLOP/B", "saved MB");
    int64_t gemm_train_flops = 0;
    for (int i = 0; i < net->n_layers; i++) {
        const layer *l = &net->layers[i];
        const layer_cost *c = &costs[i];
        char shape[32];
        snprintf(shape, sizeof shape, "%dx%dx%d", l->out_shape.c, l->out_shape.h, l->out_shape.w);
        printf("%-32s %-7s %-14s %11s", l->name, layer_type_name(l->type), shape,
               grouped(l->params, g));
        for (int p = 0; p < PASS_COUNT; p++)
            printf(" %10.2f", c->flops[p] / 1e6);
        printf(" %10.2f %8.2f %9.2f\n", layer_cost_bytes(c) / 1e6,
               intensity(layer_cost_flops(c), layer_cost_bytes(c)), c->saved_bytes / 1e6);
        if (l->type == LAYER_CONV || l->type == LAYER_FC)
            gemm_train_flops +=
                c->flops[PASS_FWD] + c->flops[PASS_BWD_DATA] + c->flops[PASS_BWD_WEIGHTS];
    }
    printf("%-32s %-7s %-14s %11s %10.2f %10s %10s %10s %10.2f\n\n", "loss", "softmax", "-", "0",
           s->loss_flops / 1e6, "-", "-", "-", s->loss_bytes / 1e6);

    double per_image = 1.0 / o->batch;
    printf("forward MACs per image (conv+fc)      %12.4f GMAC\n", s->fwd_macs * per_image / 1e9);
    printf("training FLOPs per image              %12.4f GFLOP  (conv+fc %.4f, the rest %.4f)\n",
           s->step_flops * per_image / 1e9, gemm_train_flops * per_image / 1e9,
           (s->step_flops - gemm_train_flops) * per_image / 1e9);
    printf("step FLOPs, batch %-8d            %12.4f GFLOP  (fwd %.2f, bwd_data %.2f, "
           "bwd_weights %.2f, update %.4f, loss %.4f)\n",
           o->batch, s->step_flops / 1e9, s->flops[PASS_FWD] / 1e9, s->flops[PASS_BWD_DATA] / 1e9,
           s->flops[PASS_BWD_WEIGHTS] / 1e9, s->flops[PASS_UPDATE] / 1e9, s->loss_flops / 1e9);
    printf("step minimal DRAM bytes               %12.4f GB     (fwd %.3f, bwd_data %.3f, "
           "bwd_weights %.3f, update %.3f)\n",
           s->step_bytes / 1e9, s->bytes[PASS_FWD] / 1e9, s->bytes[PASS_BWD_DATA] / 1e9,
           s->bytes[PASS_BWD_WEIGHTS] / 1e9, s->bytes[PASS_UPDATE] / 1e9);
    printf("step arithmetic intensity             %12.2f FLOP/B\n",
           intensity(s->step_flops, s->step_bytes));
    const footprint *m = &s->memory;
    printf("activations kept for backward         %12.2f MiB\n", m->saved_activations / 1048576.0);
    printf("step memory footprint                 %12.2f MiB    (weights %.1f, low-precision copy "
           "%.1f, grads %.1f, momentum %.1f, BN buffers %.2f, activations %.1f, batch %.1f, "
           "live gradients %.1f)\n",
           m->total / 1048576.0, m->weights / 1048576.0, m->master_copy / 1048576.0,
           m->grads / 1048576.0, m->momentum / 1048576.0, m->buffers / 1048576.0,
           m->saved_activations / 1048576.0, m->batch / 1048576.0, m->transient / 1048576.0);
}

/* The step at the roofs of --roofs, built before anything is printed so that
 * a folder without the roofs it needs prints nothing but its one line. */
typedef struct {
    run_model m;
    roofs r;
    step_roofs sr;
} step_at_roofs;

/* 0, or the exit status of what failed (no roofs the step needs: 2). */
static int build_roofs(const network *net, const options *o, step_at_roofs *v)
{
    char err[1024];
    int rc = run_load(&v->m, o->roofs_dir, RUN_PEAKS, RUN_PEAKS, err, sizeof err);
    if (rc != RUN_LOAD_OK) {
        fprintf(stderr, "%s: --roofs: %s\n", prog, err);
        return rc == RUN_LOAD_BAD_INPUT ? CLI_EXIT_USAGE : 1;
    }
    roofs_init(&v->r, v->m.roofs, v->m.n_roofs);
    rc = step_roofs_build(net, o->batch, o->prec, o->traffic, &v->r, &v->sr, err, sizeof err);
    if (rc != STEP_ROOFS_OK) {
        fprintf(stderr, "%s: --roofs %s: %s\n", prog, o->roofs_shown, err);
        run_free(&v->m);
        return rc == STEP_ROOFS_NO_ROOF ? CLI_EXIT_USAGE : 1;
    }
    return 0;
}

static void free_roofs(step_at_roofs *v)
{
    step_roofs_free(&v->sr);
    run_free(&v->m);
}

static void print_roofs(const step_at_roofs *v, const options *o)
{
    const step_roofs *sr = &v->sr;
    char gemm[ROOF_CEILING_LEN], a[FMT_LEN], b[FMT_LEN], c[FMT_LEN];
    roofs_precision_ceiling(&v->r, precision_name(o->prec), gemm);
    printf("\nThe step at the roofs of %s (analytic: every operation at max(FLOPs / peak, "
           "bytes / bandwidth), each alone)\n",
           o->roofs_shown);
    printf("  %s %s, conv and fc against %s %s, the rest against fp32_fma %s\n",
           roofs_memory_name(v->m.roofs, v->m.n_roofs), fmt_gbs(a, v->r.dram_gbs), gemm,
           fmt_gflops(b, roofs_peak(&v->r, gemm)), fmt_gflops(c, roofs_peak(&v->r, "fp32_fma")));
    printf("  bytes: %s\n\n", o->traffic == STEP_BYTES_CUDA
                                   ? "the CUDA backend's kernels by design, fusions included "
                                     "(models/cuda/cuda_traffic.h)"
                                   : "the cost model's, each tensor once from DRAM per layer pass");
    printf("%-10s %-12s %12s %10s %12s %12s %12s %7s\n", "type", "phase", "GFLOP", "GB",
           "ms at roofs", "compute ms", "memory ms", "share");
    for (int i = 0; i < sr->n; i++) {
        const step_roof_row *row = &sr->rows[i];
        printf("%-10s %-12s %12.3f %10.3f %12.3f %12.3f %12.3f %7s\n", row->layer_type,
               row->phase, row->flops / 1e9, row->bytes / 1e9, row->roof_ns / 1e6,
               row->compute_ns / 1e6, row->memory_ns / 1e6,
               fmt_share(a, sr->roof_ns > 0 ? row->roof_ns / sr->roof_ns : 0));
    }
    printf("%-10s %-12s %12.3f %10.3f %12.3f\n\n", "step", "", sr->flops / 1e9, sr->bytes / 1e9,
           sr->roof_ns / 1e6);
    printf("At these roofs the step takes at least %.3f ms: at most %.1f images/s at batch %d.\n",
           sr->roof_ns / 1e6, o->batch / (sr->roof_ns / 1e9), o->batch);
}

int main(int argc, char **argv)
{
    options o = parse_options(argc, argv);
    if (o.list) {
        print_list();
        return 0;
    }
    network net;
    int status = zoo_build(&net, o.model, o.res, o.classes);
    if (status != NET_OK) {
        fprintf(stderr, "%s: %s\n", prog, net.err);
        return status == NET_ENOMEM ? 1 : CLI_EXIT_USAGE;
    }
    int max_batch = cost_max_batch(&net, o.prec);
    if (o.batch > max_batch) {
        net_free(&net);
        cli_usage_error(prog, "--batch: %d is too large for %s at %dx%d (accepted: 1..%d, so "
                              "that the step's counts fit in 64 bits)",
                        o.batch, o.model, o.res, o.res, max_batch);
    }
    step_at_roofs at_roofs;
    int rc = o.roofs_shown ? build_roofs(&net, &o, &at_roofs) : 0;
    if (rc) {
        net_free(&net);
        return rc;
    }
    layer_cost *costs = calloc((size_t)net.n_layers, sizeof *costs);
    if (!costs) {
        fprintf(stderr, "%s: out of memory for %d layer costs\n", prog, net.n_layers);
        if (o.roofs_shown)
            free_roofs(&at_roofs);
        net_free(&net);
        return 1;
    }
    step_cost s = cost_step(&net, o.batch, o.prec, costs);
    if (o.csv)
        print_csv(&net, &o, costs, &s);
    else
        print_table(&net, &o, costs, &s);
    if (o.roofs_shown) {
        print_roofs(&at_roofs, &o);
        free_roofs(&at_roofs);
    }
    free(costs);
    net_free(&net);
    return 0;
}
