/* bin/scaling_model: predicted data-parallel scaling (analysis/scaling_model)
 * from a one-rank run, beside the world sizes that were measured. Two sets of
 * rows: 'links', the projection to 64 ranks over 8 nodes on the given intra-
 * and inter-node links (NVLink 4 and NDR InfiniBand by default); and, given a
 * measured allreduce curve (bin/allreduce, 2 ranks or more), 'fit', with the
 * alpha-beta fit to that curve inside a node: the rows that can be checked
 * against the measured world sizes. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../analysis/csv.h"
#include "../analysis/scaling_model.h"
#include "../models/ddp/ddp_plan.h"
#include "../models/zoo.h"
#include "cli.h"

static const char *const prog = "scaling_model";

enum { MAX_BASES = 64, MAX_SIZES = 32, LABEL = 64 };

typedef struct {
    const char *scaling, *allreduce, *out;
    /* one baseline given on the command line instead of scaling.csv */
    const char *model, *env, *backend, *mode;
    int res, batch;
    double step_ms, exposed_ms;
    double bucket_mb;
    int comm_bytes;
    int gpus_per_node, max_ranks, fit_max_ranks;
    double intra_gbs, inter_gbs, alpha_intra_us, alpha_inter_us;
    double overlap;             /* < 0: by backend (cuda 1, cpu 0) */
    double fit_min_mb;          /* the curve's bandwidth from sizes of at least this */
} options;

/* A one-rank measurement the predictions start from. */
typedef struct {
    char env[LABEL], model[LABEL], mode[16], backend[16];
    int res, batch;
    double step_ms, exposed_ms, bucket_mb;
    int comm_bytes;
} baseline;

static void print_help(void)
{
    printf("usage: scaling_model [--scaling scaling.csv] [--allreduce allreduce.csv]\n"
           "                     [--model M [--res R] --batch B --step-ms T1 [--exposed-ms E]\n"
           "                      [--backend cpu|cuda] [--mode strong|weak|both] [--env NAME]]\n"
           "                     [--bucket-mb MB] [--comm-bytes 4|2] [--gpus-per-node G]\n"
           "                     [--max-ranks N] [--fit-max-ranks N] [--intra-gbs B] [--inter-gbs B]\n"
           "                     [--alpha-intra-us A] [--alpha-inter-us A] [--overlap E]\n"
           "                     [--fit-min-mb MB] [--out predictions.csv]\n"
           "step(N) = compute + max(0, allreduce(N, bytes) - overlap), from every one-rank row\n"
           "of --scaling (or the one given by --model/--batch/--step-ms), for 1, 2, 4, ... ranks\n"
           "and the world sizes --scaling measured (their measured step beside the prediction).\n"
           "Allreduce: alpha-beta ring or tree, hierarchical over nodes. Two sets of rows:\n"
           "  link 'links': the projection, to --max-ranks (default 64) ranks of --gpus-per-node\n"
           "    (default 8) per node, inside a node --intra-gbs (default 450, NVLink 4 per\n"
           "    direction) and --alpha-intra-us (1), across nodes --inter-gbs (50, an NDR port\n"
           "    per GPU) and --alpha-inter-us (5);\n"
           "  link 'fit' (with --allreduce): inside a node the fit to --allreduce's curve (rows\n"
           "    of 2 ranks or more; ranks per node as measured; alpha from its smallest size,\n"
           "    the bandwidth from the sizes of at least --fit-min-mb, default 8: a CPU runs\n"
           "    smaller ones from its caches), across nodes the links above; to --fit-max-ranks\n"
           "    (default --max-ranks): the rows that validate the model on what was measured.\n"
           "Strong scaling only where the batch splits into the ranks. Buckets as bin/train\n"
           "--ddp makes them (--bucket-mb 25, --comm-bytes 4). --overlap:\n"
           "the share of the backward that can hide communication (default 1 for cuda, 0 for\n"
           "cpu ranks, which progress MPI on the step's own core). Rows to --out (with the\n"
           "links, the overlap rule and the fit they used) and a table on stdout.\n");
}

static double parse_number(const char *option, const char *text, double min, double max)
{
    char *end;
    double v = strtod(text, &end);
    if (!*text || *end || !(v >= min && v <= max))
        cli_usage_error(prog, "%s: '%s' is not a number in [%g, %g]", option, text, min, max);
    return v;
}

/* An input that cannot be read is a bad value, found before any work. */
static const char *input_file(const char *option, const char *text)
{
    cli_file_option(prog, option, text);
    FILE *f = fopen(text, "r");
    if (!f)
        cli_usage_error(prog, "%s: %s: cannot open (%s)", option, text, strerror(errno));
    fclose(f);
    return text;
}

static options parse_options(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"scaling", required_argument, 0, 's'},      {"allreduce", required_argument, 0, 'a'},
        {"out", required_argument, 0, 'o'},          {"model", required_argument, 0, 'm'},
        {"res", required_argument, 0, 'r'},          {"batch", required_argument, 0, 'b'},
        {"step-ms", required_argument, 0, 'T'},      {"exposed-ms", required_argument, 0, 'E'},
        {"backend", required_argument, 0, 'B'},      {"mode", required_argument, 0, 'M'},
        {"env", required_argument, 0, 'e'},          {"bucket-mb", required_argument, 0, 'k'},
        {"comm-bytes", required_argument, 0, 'c'},   {"gpus-per-node", required_argument, 0, 'g'},
        {"max-ranks", required_argument, 0, 'n'},    {"intra-gbs", required_argument, 0, 'i'},
        {"inter-gbs", required_argument, 0, 'I'},    {"alpha-intra-us", required_argument, 0, 'x'},
        {"alpha-inter-us", required_argument, 0, 'X'}, {"overlap", required_argument, 0, 'O'},
        {"fit-min-mb", required_argument, 0, 'F'},  {"fit-max-ranks", required_argument, 0, 'N'},
        {"help", no_argument, 0, 'h'},               {0, 0, 0, 0},
    };
    const char *accepted = "--scaling, --allreduce, --out, --model, --res, --batch, --step-ms, "
                           "--exposed-ms, --backend, --mode, --env, --bucket-mb, --comm-bytes, "
                           "--gpus-per-node, --max-ranks, --intra-gbs, --inter-gbs, "
                           "--alpha-intra-us, --alpha-inter-us, --overlap, --fit-min-mb, --fit-max-ranks";
    options o = {.backend = "cuda", .mode = "both", .env = "model", .bucket_mb = 25,
                 .comm_bytes = 4, .gpus_per_node = 8, .max_ranks = 64, .intra_gbs = 450,
                 .inter_gbs = 50, .alpha_intra_us = 1, .alpha_inter_us = 5, .overlap = -1,
                 .fit_min_mb = 8};
    const char *res = NULL;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        switch (c) {
        case 's': o.scaling = input_file("--scaling", optarg); break;
        case 'a': o.allreduce = input_file("--allreduce", optarg); break;
        case 'o': o.out = cli_output_file(prog, "--out", optarg); break;
        case 'm': o.model = optarg; break;
        case 'r': res = optarg; break;
        case 'b': o.batch = cli_int_option(prog, "--batch", optarg, 1, CLI_MAX_BATCH); break;
        case 'T': o.step_ms = parse_number("--step-ms", optarg, 1e-6, 1e9); break;
        case 'E': o.exposed_ms = parse_number("--exposed-ms", optarg, 0, 1e9); break;
        case 'B':
            if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda"))
                cli_usage_error(prog, "--backend: unknown '%s' (accepted: cpu, cuda)", optarg);
            o.backend = optarg;
            break;
        case 'M':
            if (strcmp(optarg, "strong") && strcmp(optarg, "weak") && strcmp(optarg, "both"))
                cli_usage_error(prog, "--mode: unknown '%s' (accepted: strong, weak, both)",
                                optarg);
            o.mode = optarg;
            break;
        case 'e': o.env = optarg; break;
        case 'k': o.bucket_mb = parse_number("--bucket-mb", optarg, 0, 4096); break;
        case 'c':
            o.comm_bytes = cli_int_option(prog, "--comm-bytes", optarg, 2, 4);
            if (o.comm_bytes == 3)
                cli_usage_error(prog, "--comm-bytes: 3 (accepted: 4 fp32, 2 bf16)");
            break;
        case 'g': o.gpus_per_node = cli_int_option(prog, "--gpus-per-node", optarg, 1, 64); break;
        case 'n': o.max_ranks = cli_int_option(prog, "--max-ranks", optarg, 1, 65536); break;
        case 'i': o.intra_gbs = parse_number("--intra-gbs", optarg, 1e-3, 1e5); break;
        case 'I': o.inter_gbs = parse_number("--inter-gbs", optarg, 1e-3, 1e5); break;
        case 'x': o.alpha_intra_us = parse_number("--alpha-intra-us", optarg, 0, 1e6); break;
        case 'X': o.alpha_inter_us = parse_number("--alpha-inter-us", optarg, 0, 1e6); break;
        case 'O': o.overlap = parse_number("--overlap", optarg, 0, 1); break;
        case 'N': o.fit_max_ranks = cli_int_option(prog, "--fit-max-ranks", optarg, 1, 65536); break;
        case 'F': o.fit_min_mb = parse_number("--fit-min-mb", optarg, 0, 1 << 20); break;
        case 'h': print_help(); exit(0);
        default: cli_bad_option(prog, c, argv[optind - 1], accepted);
        }
    }
    if (optind < argc)
        cli_usage_error(prog, "unexpected argument '%s' (accepted: %s)", argv[optind], accepted);
    if (!o.fit_max_ranks)
        o.fit_max_ranks = o.max_ranks;
    if (!o.scaling && !o.model)
        cli_usage_error(prog, "give --scaling scaling.csv, or --model with --batch and --step-ms");
    if (o.model) {
        int classes = 0;
        cli_model_options(prog, o.model, res, NULL, &o.res, &classes);
        if (!o.batch || !o.step_ms)
            cli_usage_error(prog, "--model: give --batch and --step-ms (the one-rank step) too");
        if (o.exposed_ms >= o.step_ms)
            cli_usage_error(prog, "--exposed-ms: %g is not below --step-ms %g", o.exposed_ms,
                            o.step_ms);
    }
    return o;
}

/* ---- inputs --------------------------------------------------------------------- */

static void copy_cell(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src);
}

/* The one-rank rows of scaling.csv. */
static int read_baselines(const char *path, baseline *b, int *n, char *err, size_t err_len)
{
    csv_table *t = csv_read(path, err, err_len);
    if (!t)
        return -1;
    static const char *const names[] = {"env", "model", "res", "mode", "world_size",
                                        "per_rank_batch", "step_ms", "exposed_comm_ms", NULL};
    int col[8];
    int rc = csv_require(t, path, names, col, err, err_len);
    int backend = csv_col(t, "backend"), bucket = csv_col(t, "bucket_mb"),
        comm = csv_col(t, "comm_precision");
    *n = 0;
    for (int r = 0; rc == 0 && r < csv_rows(t); r++) {
        if (strcmp(csv_cell(t, r, col[4]), "1") != 0)
            continue;
        if (*n == MAX_BASES)
            break;
        baseline *x = &b[(*n)++];
        copy_cell(x->env, sizeof x->env, csv_cell(t, r, col[0]));
        copy_cell(x->model, sizeof x->model, csv_cell(t, r, col[1]));
        copy_cell(x->mode, sizeof x->mode, csv_cell(t, r, col[3]));
        copy_cell(x->backend, sizeof x->backend,
                  backend >= 0 ? csv_cell(t, r, backend) : "cuda");
        x->res = atoi(csv_cell(t, r, col[2]));
        x->batch = atoi(csv_cell(t, r, col[5]));
        x->bucket_mb = bucket >= 0 && *csv_cell(t, r, bucket) ? atof(csv_cell(t, r, bucket)) : 25;
        x->comm_bytes = comm >= 0 && !strcmp(csv_cell(t, r, comm), "bf16") ? 2 : 4;
        if (csv_get_num(t, r, col[6], path, true, &x->step_ms, err, err_len) ||
            csv_get_num(t, r, col[7], path, true, &x->exposed_ms, err, err_len))
            rc = -1;
    }
    csv_free(t);
    if (rc == 0 && *n == 0) {
        snprintf(err, err_len, "%s: no row of world_size 1 to start from", path);
        rc = -1;
    }
    return rc;
}

/* The measured step of a configuration at n ranks, or NaN. */
static double measured_step(const char *path, const baseline *b, int n)
{
    char err[256];
    csv_table *t = path ? csv_read(path, err, sizeof err) : NULL;
    if (!t)
        return NAN;
    int env = csv_col(t, "env"), model = csv_col(t, "model"), res = csv_col(t, "res"),
        mode = csv_col(t, "mode"), ws = csv_col(t, "world_size"), step = csv_col(t, "step_ms");
    double v = NAN;
    for (int r = 0; r < csv_rows(t); r++)
        if (!strcmp(csv_cell(t, r, env), b->env) && !strcmp(csv_cell(t, r, model), b->model) &&
            atoi(csv_cell(t, r, res)) == b->res && !strcmp(csv_cell(t, r, mode), b->mode) &&
            atoi(csv_cell(t, r, ws)) == n)
            v = csv_num(t, r, step, NULL); /* the last row of a repeated configuration */
    csv_free(t);
    return v;
}

/* The fit to the curve's rows of 2 ranks or more (correct ones only); -1
 * for a file that cannot be fitted (err names it), -2 out of memory. */
static int fit_curve(const char *path, double min_bytes, sm_fit *fit, int *ranks_per_node,
                     char *err, size_t err_len)
{
    csv_table *t = csv_read(path, err, err_len);
    if (!t)
        return -1;
    static const char *const names[] = {"world_size", "nodes", "bytes", "time_us", "correct",
                                        NULL};
    int col[5];
    int rc = csv_require(t, path, names, col, err, err_len);
    int n = 0, ranks = 0, nodes = 1;
    double *bytes = calloc((size_t)csv_rows(t) + 1, sizeof *bytes);
    double *secs = calloc((size_t)csv_rows(t) + 1, sizeof *secs);
    if (!bytes || !secs) {
        snprintf(err, err_len, "out of memory");
        rc = -2;
    }
    for (int r = 0; rc == 0 && r < csv_rows(t); r++) {
        int ws = atoi(csv_cell(t, r, col[0]));
        if (ws < 2 || strcmp(csv_cell(t, r, col[4]), "yes") != 0)
            continue;
        ranks = ws;
        nodes = atoi(csv_cell(t, r, col[1])) > 0 ? atoi(csv_cell(t, r, col[1])) : 1;
        bytes[n] = csv_num(t, r, col[2], NULL);
        secs[n++] = csv_num(t, r, col[3], NULL) * 1e-6;
    }
    if (rc == 0 && sm_fit_allreduce(bytes, secs, n, ranks, min_bytes, fit)) {
        snprintf(err, err_len, "%s: no allreduce curve of 2 ranks or more to fit (%d rows)", path,
                 n);
        rc = -1;
    }
    *ranks_per_node = ranks / nodes > 0 ? ranks / nodes : 1;
    free(bytes);
    free(secs);
    csv_free(t);
    return rc;
}

/* Bucket sizes in launch order and the backward's share of the compute. */
static int model_inputs(const baseline *b, double **buckets, int *n_buckets, double *bwd_share,
                        char *err, size_t err_len)
{
    network net;
    const model_info *info = zoo_find(b->model);
    if (!info || zoo_build(&net, b->model, b->res, info->default_classes) != NET_OK) {
        snprintf(err, err_len, "model %s at %d: %s", b->model, b->res,
                 info ? net.err : "not in the zoo");
        return -1;
    }
    ddp_plan p;
    int rc = ddp_plan_build(&p, &net, (int64_t)(b->bucket_mb * 1048576.0), DDP_FIRST_BUCKET_BYTES,
                            b->comm_bytes, err, err_len);
    if (rc == 0) {
        *buckets = malloc((size_t)p.n_buckets * sizeof **buckets);
        if (!*buckets) {
            snprintf(err, err_len, "out of memory");
            rc = -1;
        } else {
            for (int k = 0; k < p.n_buckets; k++)
                (*buckets)[k] = (double)p.buckets[k].elems * b->comm_bytes;
            *n_buckets = p.n_buckets;
        }
        step_cost c = cost_step(&net, b->batch, PREC_FP32, NULL);
        *bwd_share = (double)(c.flops[PASS_BWD_DATA] + c.flops[PASS_BWD_WEIGHTS]) /
                     (double)c.step_flops;
        ddp_plan_free(&p);
    }
    net_free(&net);
    return rc;
}

/* ---- predictions ---------------------------------------------------------------- */

/* One set of rows: the links it assumes, how far it goes, and the fit it came
 * from (NULL: the links given as parameters). */
typedef struct {
    const char *link;
    sm_topology topo;
    int max_ranks;
    const sm_fit *fit;
} row_set;

typedef struct {
    FILE *csv;
    const options *o;
} output;

static const char *const predictions_header =
    "env,model,res,mode,backend,link,world_size,nodes,ranks_per_node,per_rank_batch,"
    "global_batch,compute_ms,allreduce_ms,overlap_ms,exposed_ms,step_ms,images_per_s,"
    "efficiency,measured_step_ms,measured_efficiency,intra_alpha_us,intra_busbw_gbs,"
    "inter_alpha_us,inter_busbw_gbs,overlap_efficiency,backward_share,host_copy_ms,"
    "last_bucket_ms,fit_ranks,fit_points,fit_worst_pct,fit_min_mb\n";

static void predict_one(output *out, const row_set *set, const baseline *b, int n)
{
    /* strong scaling splits the batch: where it does not split into n (fewer
     * images than ranks, above all) there is nothing to predict, as the
     * runner skips that size */
    if (!strcmp(b->mode, "strong") && b->batch % n != 0)
        return;
    double *buckets = NULL, share = 0;
    int n_buckets = 0;
    char err[300];
    if (model_inputs(b, &buckets, &n_buckets, &share, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return;
    }
    bool cpu = !strcmp(b->backend, "cpu");
    sm_step_inputs in = {.compute1_ms = b->step_ms - b->exposed_ms, .step1_ms = b->step_ms,
                         .backward_share = share, .bucket_bytes = buckets,
                         .n_buckets = n_buckets,
                         .overlap_efficiency = out->o->overlap >= 0 ? out->o->overlap
                                               : cpu               ? 0.0
                                                                   : 1.0,
                         .host_copy_ms = cpu ? b->exposed_ms : 0.0,
                         .strong = !strcmp(b->mode, "strong")};
    const sm_topology *t = &set->topo;
    sm_prediction p = sm_predict(t, &in, n);
    double per_rank = in.strong ? (double)b->batch / n : b->batch;
    double global = in.strong ? b->batch : (double)b->batch * n;
    double measured = measured_step(out->o->scaling, b, n);
    double measured_eff = in.strong ? b->step_ms / (n * measured) : b->step_ms / measured;
    printf("%-8s %-18s %4d %-6s %-6s %6d %5d %9.3g %10.2f %10.2f %9.2f %9.2f %10.2f %6.3f",
           b->env, b->model, b->res, b->mode, set->link, n, p.nodes, per_rank, p.compute_ms,
           p.allreduce_ms, p.overlap_ms, p.exposed_ms, p.step_ms, p.efficiency);
    if (isfinite(measured))
        printf("   measured %.2f ms, efficiency %.3f (model %+.1f%%)", measured, measured_eff,
               100.0 * (p.step_ms / measured - 1.0));
    printf("\n");
    if (out->csv) {
        fprintf(out->csv, "%s,%s,%d,%s,%s,%s,%d,%d,%d,%g,%g,%.4f,%.4f,%.4f,%.4f,%.4f,%.3f,%.4f,",
                b->env, b->model, b->res, b->mode, b->backend, set->link, n, p.nodes,
                t->ranks_per_node, per_rank, global, p.compute_ms, p.allreduce_ms, p.overlap_ms,
                p.exposed_ms, p.step_ms, global / (p.step_ms * 1e-3), p.efficiency);
        if (isfinite(measured))
            fprintf(out->csv, "%.4f,%.4f,", measured, measured_eff);
        else
            fprintf(out->csv, ",,");
        fprintf(out->csv, "%.4f,%.4f,%.4f,%.4f,%g,%.4f,%.4f,%.4f,", t->intra.alpha_s * 1e6,
                t->intra.busbw_Bps / 1e9, t->inter.alpha_s * 1e6, t->inter.busbw_Bps / 1e9,
                in.overlap_efficiency, share, in.host_copy_ms, p.last_bucket_ms);
        if (set->fit)
            fprintf(out->csv, "%d,%d,%.1f,%g\n", set->fit->ranks, set->fit->points,
                    100.0 * set->fit->max_rel_err, out->o->fit_min_mb);
        else
            fprintf(out->csv, ",,,\n");
    }
    free(buckets);
}

/* The measured world sizes of a configuration, beyond the powers of two. */
static int measured_sizes(const char *path, const baseline *b, int *sizes, int cap)
{
    int n = 0;
    for (int w = 2; path && w <= 4096 && n < cap; w++)
        if (isfinite(measured_step(path, b, w)) && (w & (w - 1)))
            sizes[n++] = w;
    return n;
}

static void predict_all(output *out, const row_set *set, const baseline *b)
{
    for (int n = 1; n <= set->max_ranks; n *= 2)
        predict_one(out, set, b, n);
    int extra[MAX_SIZES];
    int k = measured_sizes(out->o->scaling, b, extra, MAX_SIZES);
    for (int i = 0; i < k; i++)
        predict_one(out, set, b, extra[i]);
}

static void print_links(const row_set *set)
{
    const sm_topology *t = &set->topo;
    printf("# %s: inside a node (%d ranks): alpha %.3f us, busbw %.1f GB/s; across nodes: "
           "alpha %.3f us, busbw %.1f GB/s per rank\n",
           set->link, t->ranks_per_node, t->intra.alpha_s * 1e6, t->intra.busbw_Bps / 1e9,
           t->inter.alpha_s * 1e6, t->inter.busbw_Bps / 1e9);
}

int main(int argc, char **argv)
{
    options o = parse_options(argc, argv);
    char err[600];
    baseline bases[MAX_BASES];
    int n_bases = 0;
    /* a file that is not what the option takes is bad input */
    if (o.scaling && read_baselines(o.scaling, bases, &n_bases, err, sizeof err)) {
        fprintf(stderr, "%s: --scaling: %s\n", prog, err);
        return 2;
    }
    if (o.model) {
        const char *modes[2] = {"strong", "weak"};
        for (int m = 0; m < 2 && n_bases < MAX_BASES; m++) {
            if (strcmp(o.mode, "both") && strcmp(o.mode, modes[m]))
                continue;
            baseline *b = &bases[n_bases++];
            *b = (baseline){.res = o.res, .batch = o.batch, .step_ms = o.step_ms,
                            .exposed_ms = o.exposed_ms, .bucket_mb = o.bucket_mb,
                            .comm_bytes = o.comm_bytes};
            copy_cell(b->env, sizeof b->env, o.env);
            copy_cell(b->model, sizeof b->model, o.model);
            copy_cell(b->mode, sizeof b->mode, modes[m]);
            copy_cell(b->backend, sizeof b->backend, o.backend);
        }
    }
    row_set links = {.link = "links",
                     .topo = {.intra = {.alpha_s = o.alpha_intra_us * 1e-6,
                                        .busbw_Bps = o.intra_gbs * 1e9},
                              .inter = {.alpha_s = o.alpha_inter_us * 1e-6,
                                        .busbw_Bps = o.inter_gbs * 1e9},
                              .ranks_per_node = o.gpus_per_node},
                     .max_ranks = o.max_ranks};
    row_set fitted = links;
    sm_fit fit;
    if (o.allreduce) {
        int per_node = 1;
        int rc = fit_curve(o.allreduce, o.fit_min_mb * 1048576.0, &fit, &per_node, err, sizeof err);
        if (rc) {
            fprintf(stderr, "%s: --allreduce: %s\n", prog, err);
            return rc == -2 ? 1 : 2;
        }
        fitted.link = "fit";
        fitted.topo.intra = fit.link;
        fitted.topo.ranks_per_node = per_node;
        fitted.max_ranks = o.fit_max_ranks;
        fitted.fit = &fit;
        printf("# fit to %s: %d points of %d ranks: alpha %.3f us per step, busbw %.3f GB/s, "
               "worst point %.0f%% off\n",
               o.allreduce, fit.points, fit.ranks, fit.link.alpha_s * 1e6,
               fit.link.busbw_Bps / 1e9, 100.0 * fit.max_rel_err);
        print_links(&fitted);
    }
    print_links(&links);
    printf("%-8s %-18s %4s %-6s %-6s %6s %5s %9s %10s %10s %9s %9s %10s %6s\n", "env", "model",
           "res", "mode", "link", "ranks", "nodes", "per_rank", "compute", "allreduce",
           "overlap", "exposed", "step_ms", "eff");
    output out = {.o = &o};
    char tmp[4096];
    if (o.out) {
        out.csv = csv_create(o.out, tmp, sizeof tmp, err, sizeof err);
        if (!out.csv) {
            fprintf(stderr, "%s: --out: %s\n", prog, err);
            return 1;
        }
        fputs(predictions_header, out.csv);
    }
    /* per configuration: the rows that meet the measurements, then the projection */
    for (int i = 0; i < n_bases; i++) {
        if (o.allreduce)
            predict_all(&out, &fitted, &bases[i]);
        predict_all(&out, &links, &bases[i]);
    }
    if (out.csv && csv_commit(out.csv, tmp, o.out, err, sizeof err)) {
        fprintf(stderr, "%s: --out: %s\n", prog, err);
        return 1;
    }
    return 0;
}
