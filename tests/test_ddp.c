/* Data-parallel training (models/ddp, bin/train --ddp): the bucket plan
 * follows the backward order, bf16 rounds as the GPUs do, and under
 * `mpirun -np 2` (a child process: MPI never starts inside this binary):
 * - every rank ends with bit-identical weights, equal within 1e-5 relative to
 *   one process trained on the concatenated global batch. The check runs
 *   VGG-16 (no batch norm) with --dropout 0: batch norm normalises over each
 *   rank's own images (as PyTorch's DDP without SyncBatchNorm), and dropout
 *   draws its masks per rank, so with either the two runs differ by design;
 * - bucketed and unbucketed reductions give the same weights bit for bit;
 * - rank 0 writes every rank's steps.csv rows and the scaling.csv row;
 * - a rank killed in the middle of a step ends the other with one line well
 *   within 60 s, the launcher's way (SIGTERM) and its own (--ddp-timeout),
 *   and the rows already written stay. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../bench/train/train_data.h"
#include "../models/data.h"
#include "../models/ddp/ddp_bf16.h"
#include "../models/ddp/ddp_plan.h"
#include "../models/ddp/ddp_world.h"
#include "helpers.h"

/* ---- the bucket plan -------------------------------------------------------- */

static void expect_plan_invariants(const network *net, const ddp_plan *p, int64_t cap,
                                   int64_t first_cap)
{
    int64_t params = 0, sum = 0;
    for (int i = 0; i < net->n_layers; i++)
        params += net->layers[i].params;
    int prev_layer = net->n_layers;
    for (int t = 0; t < p->n_tensors; t++) {
        const ddp_tensor *x = &p->tensors[t];
        /* backward order: layers from the last, a layer's weight before its bias */
        cr_expect(x->layer < prev_layer ||
                      (x->layer == prev_layer && x->kind == BUF_BIAS_GRAD),
                  "tensor %d (layer %d) after layer %d", t, x->layer, prev_layer);
        prev_layer = x->layer;
        const ddp_bucket *b = &p->buckets[x->bucket];
        cr_expect(t >= b->first && t < b->first + b->count, "tensor %d outside its bucket", t);
        int64_t before = 0;
        for (int u = b->first; u < t; u++)
            before += p->tensors[u].elems;
        cr_expect_eq(x->offset, before, "tensor %d's offset", t);
        sum += x->elems;
    }
    cr_expect_eq(sum, params, "every parameter once: %lld of %lld", (long long)sum,
                 (long long)params);
    cr_expect_eq(p->total_elems, params);
    for (int k = 0; k < p->n_buckets; k++) {
        const ddp_bucket *b = &p->buckets[k];
        int64_t limit = k == 0 && first_cap < cap ? first_cap : cap;
        cr_expect(cap == 0 || b->count == 1 || b->elems * 4 <= limit,
                  "bucket %d: %lld elements over its cap of %lld bytes", k, (long long)b->elems,
                  (long long)limit);
        /* complete when its last tensor's layer is done: the lowest index */
        cr_expect_eq(b->ready_layer, p->tensors[b->first + b->count - 1].layer, "bucket %d", k);
        if (k > 0)
            cr_expect(b->ready_layer <= p->buckets[k - 1].ready_layer,
                      "buckets complete in backward order");
    }
}

Test(ddp_plan, resnet18_cifar_buckets_follow_the_backward)
{
    network net = build_or_fail("resnet18-cifar", 32, 10);
    ddp_plan p;
    char err[200];
    cr_assert_eq(ddp_plan_build(&p, &net, DDP_DEFAULT_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES, 4,
                                err, sizeof err), 0, "%s", err);
    expect_plan_invariants(&net, &p, DDP_DEFAULT_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES);
    /* the first tensor is the classifier's weight, the last the stem conv's */
    cr_expect_str_eq(net.layers[p.tensors[0].layer].name, "fc");
    cr_expect_eq(p.tensors[0].kind, BUF_WEIGHT_GRAD);
    cr_expect_str_eq(net.layers[p.tensors[p.n_tensors - 1].layer].name, "conv1");
    cr_expect_gt(p.n_buckets, 2, "44.7 MB in 25 MiB buckets after a 1 MiB first");
    ddp_plan_free(&p);
    net_free(&net);
}

Test(ddp_plan, small_caps_and_no_buckets)
{
    network net = build_or_fail("mobilenet_v2-cifar", 32, 10);
    ddp_plan p;
    char err[200];
    int64_t caps[] = {1 << 20, 4 << 20, 64 << 20};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        cr_assert_eq(ddp_plan_build(&p, &net, caps[c], DDP_FIRST_BUCKET_BYTES, 4, err,
                                    sizeof err), 0, "%s", err);
        expect_plan_invariants(&net, &p, caps[c], DDP_FIRST_BUCKET_BYTES);
        ddp_plan_free(&p);
    }
    /* cap 0: one bucket, complete only when the first layer's gradients are */
    cr_assert_eq(ddp_plan_build(&p, &net, 0, DDP_FIRST_BUCKET_BYTES, 4, err, sizeof err), 0);
    cr_expect_eq(p.n_buckets, 1);
    cr_expect_eq(p.buckets[0].ready_layer, 0, "conv at index 0 holds the last gradient");
    ddp_plan_free(&p);
    net_free(&net);
}

Test(ddp_plan, a_tensor_over_the_cap_travels_alone)
{
    network net = build_or_fail("vgg16", 32, 1000);
    ddp_plan p;
    char err[200];
    cr_assert_eq(ddp_plan_build(&p, &net, 25 << 20, DDP_FIRST_BUCKET_BYTES, 4, err, sizeof err),
                 0, "%s", err);
    expect_plan_invariants(&net, &p, 25 << 20, DDP_FIRST_BUCKET_BYTES);
    /* classifier.0's 25088 x 4096 weight (411 MB) is a bucket of its own */
    bool alone = false;
    for (int k = 0; k < p.n_buckets; k++) {
        const ddp_tensor *t = &p.tensors[p.buckets[k].first];
        alone |= p.buckets[k].count == 1 && !strcmp(net.layers[t->layer].name, "classifier.0") &&
                 t->kind == BUF_WEIGHT_GRAD;
    }
    cr_expect(alone);
    /* bf16 halves the bytes: fewer buckets */
    ddp_plan half;
    cr_assert_eq(ddp_plan_build(&half, &net, 25 << 20, DDP_FIRST_BUCKET_BYTES, 2, err,
                                sizeof err), 0);
    cr_expect_leq(half.n_buckets, p.n_buckets);
    ddp_plan_free(&half);
    ddp_plan_free(&p);
    net_free(&net);
}

Test(ddp_bf16, rounds_to_nearest_even)
{
    cr_expect_eq(ddp_to_bf16(1.0f), 0x3f80);
    cr_expect_eq(ddp_from_bf16(0x3f80), 1.0f);
    /* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to the even one, 1 */
    cr_expect_eq(ddp_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    /* 1 + 3 x 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: to the even, 1 + 2^-6 */
    cr_expect_eq(ddp_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    cr_expect_eq(ddp_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81, "above halfway: up");
    cr_expect_eq(ddp_to_bf16(-2.5f), 0xc020);
    cr_expect(isnan(ddp_from_bf16(ddp_to_bf16(NAN))));
    cr_expect(isinf(ddp_from_bf16(ddp_to_bf16(INFINITY))));
}

/* ---- the ranks' shards ---------------------------------------------------------- */

Test(ddp_data, synthetic_shards_concatenate_to_the_global_batch)
{
    network net = build_or_fail("resnet18-cifar", 32, 10);
    train_options o = {.res = 32, .classes = 10, .seed = 7};
    enum { PER = 3, IMG = 3 * 32 * 32 };
    static float global[2 * PER * IMG], shard[PER * IMG], plain[PER * IMG];
    int32_t global_labels[2 * PER], shard_labels[PER], plain_labels[PER];
    char err[200];
    cr_assert_eq(train_batch(&o, &net, 0, 2, PER, global, global_labels, err, sizeof err), 0);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(train_batch(&o, &net, r, 1, PER, shard, shard_labels, err, sizeof err), 0);
        cr_expect(memcmp(shard, global + r * PER * IMG, sizeof shard) == 0, "shard %d", r);
        cr_expect(memcmp(shard_labels, global_labels + r * PER, sizeof shard_labels) == 0);
    }
    /* shard 0 is what a run without shards draws: such runs are unchanged */
    data_synthetic(7, PER, 3, 32, 10, plain, plain_labels);
    cr_expect(memcmp(plain, global, sizeof plain) == 0);
    cr_expect(memcmp(shard, global, sizeof shard) != 0, "shard 1 differs from shard 0");
    net_free(&net);
}

Test(ddp_data, cifar_shards_are_disjoint_images)
{
    char *dir = temp_dir();
    unsigned char rec[CIFAR10_RECORD];
    char path[256];
    format_or_fail(path, sizeof path, "%s/data_batch_1.bin", dir);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    for (int r = 0; r < 8; r++) {
        rec[0] = (unsigned char)r;
        memset(rec + 1, r * 20, sizeof rec - 1);
        cr_assert_eq(fwrite(rec, 1, sizeof rec, f), sizeof rec);
    }
    cr_assert_eq(fclose(f), 0);
    network net = build_or_fail("resnet18-cifar", 32, 10);
    train_options o = {.res = 32, .classes = 10, .seed = 1, .cifar_dir = dir};
    static float images[2 * 3 * 32 * 32];
    int32_t labels[2];
    char err[300];
    /* rank 2 of 4 with 2 images each: records 4 and 5 */
    cr_assert_eq(train_batch(&o, &net, 2, 1, 2, images, labels, err, sizeof err), 0, "%s", err);
    cr_expect(labels[0] == 4 && labels[1] == 5, "labels %d %d", labels[0], labels[1]);
    cr_expect_float_eq(images[0], (80 / 255.0f - 0.4914f) / 0.2470f, 1e-6f);
    /* rank 4 would need records 8 and 9: the file has 8 */
    cr_expect_neq(train_batch(&o, &net, 4, 1, 2, images, labels, err, sizeof err), 0);
    net_free(&net);
    remove_temp_dir(dir);
}

/* ---- bin/train --ddp under mpirun -------------------------------------------- */

#ifdef HAVE_MPI

#define MPIRUN                                                                                \
    "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 mpirun "           \
    "--oversubscribe --bind-to none -np 2 "

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs `mpirun -np 2 bin/train ARGS` (or bin/train alone when ranks is 0),
 * stdout to dir/NAME.out and stderr to dir/NAME.err; its exit status. */
static int train(const char *dir, const char *name, int ranks, const char *args)
{
    return sh("cd '%s' && %s%s/train %s >%s.out 2>%s.err", dir, ranks ? MPIRUN : "",
              ROOFLINE_BIN_DIR, args, name, name);
}

static void expect_same_file(const char *dir, const char *a, const char *b)
{
    cr_expect_eq(sh("cd '%s' && cmp -s %s %s", dir, a, b), 0, "%s and %s differ", a, b);
}

static bool mpirun_found(void)
{
    return sh("command -v mpirun >/dev/null") == 0;
}

Test(ddp_mpi, two_ranks_equal_one_process_on_the_global_batch, .timeout = 300)
{
    if (!mpirun_found())
        cr_skip_test("no mpirun");
    char *dir = temp_dir();
    const char *common = "--model vgg16 --res 32 --dropout 0 --lr 0.01 --warmup 0 --iters 2 "
                         "--threads 1 --backend cpu";
    char args[512];
    format_or_fail(args, sizeof args, "%s --ddp --batch 2 --save-weights ddp", common);
    cr_assert_eq(train(dir, "ddp", 2, args), 0, "%s", read_text(dir, "ddp.err"));
    format_or_fail(args, sizeof args, "%s --batch 4 --shards 2 --save-weights one", common);
    cr_assert_eq(train(dir, "one", 0, args), 0, "%s", read_text(dir, "one.err"));
    char *out = read_text(dir, "ddp.out");
    cr_expect(strstr(out, "ddp: the weights are bit-identical on all 2 ranks") != NULL, "%s", out);
    expect_same_file(dir, "ddp.rank0.bin", "ddp.rank1.bin");

    size_t n, m;
    float *a = read_bytes(dir, "ddp.rank0.bin", &n), *b = read_bytes(dir, "one.rank0.bin", &m);
    n /= sizeof *a, m /= sizeof *b;
    cr_assert_eq(n, m, "%zu and %zu weights", n, m);
    cr_assert_eq(n, 138357544, "VGG-16's parameters");
    double worst = 0.0, scale = 0.0;
    size_t where = 0, changed = 0;
    for (size_t i = 0; i < n; i++)
        scale = fabs(b[i]) > scale ? fabs(b[i]) : scale;
    for (size_t i = 0; i < n; i++) {
        /* relative to the weight, and to the largest weight for those near 0 */
        double rel = fabs((double)a[i] - b[i]) / fmax(fabs(b[i]), 1e-3 * scale);
        if (rel > worst) {
            worst = rel;
            where = i;
        }
        changed += a[i] != b[i];
    }
    cr_expect_leq(worst, 1e-5, "weight %zu: %.9g (2 ranks) vs %.9g (one process), %.3g relative",
                  where, a[where], b[where], worst);
    /* the comparison must not be vacuous: the runs trained, in different orders */
    char *one = read_text(dir, "one.out");
    cr_expect(strstr(one, "batch 4") != NULL, "%s", one);
    cr_log_info("2 ranks vs one process: %zu of %zu weights differ, at most %.3g relative",
                changed, n, worst);
    free(a);
    free(b);
    remove_temp_dir(dir);
}

Test(ddp_mpi, bucketed_and_unbucketed_agree_and_rank0_writes_the_rows, .timeout = 300)
{
    if (!mpirun_found())
        cr_skip_test("no mpirun");
    char *dir = temp_dir();
    const char *common = "--ddp --model resnet18-cifar --batch 4 --warmup 1 --iters 2 "
                         "--threads 1 --backend cpu --env t1";
    const char *runs[][2] = {{"b25", "--bucket-mb 25 --out steps.csv --scaling-out scaling.csv "
                                     "--scaling-mode strong --baseline-ms 100"},
                             {"b1", "--bucket-mb 1"},
                             {"b0", "--bucket-mb 0"},
                             {"bf16", "--comm-precision bf16"}};
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        char args[512];
        format_or_fail(args, sizeof args, "%s %s --save-weights %s", common, runs[r][1],
                       runs[r][0]);
        char name[64];
        format_or_fail(name, sizeof name, "%s.err", runs[r][0]);
        cr_assert_eq(train(dir, runs[r][0], 2, args), 0, "%s: %s", runs[r][0],
                     read_text(dir, name));
    }
    expect_same_file(dir, "b25.rank0.bin", "b25.rank1.bin");
    expect_same_file(dir, "b25.rank0.bin", "b1.rank0.bin");
    expect_same_file(dir, "b25.rank0.bin", "b0.rank0.bin");
    expect_same_file(dir, "bf16.rank0.bin", "bf16.rank1.bin");
    char *b1 = read_text(dir, "b1.out"), *b0 = read_text(dir, "b0.out");
    cr_expect(strstr(b0, "no buckets: one reduction after the backward") != NULL, "%s", b0);
    int buckets = 0;
    const char *at = strstr(b1, "the first 1 MiB): ");
    cr_assert_not_null(at, "%s", b1);
    buckets = atoi(at + strlen("the first 1 MiB): "));
    /* a conv of 512 x 512 x 3 x 3 (9.4 MB) travels alone */
    cr_expect_gt(buckets, 15, "1 MiB buckets over 44.7 MB: %s", b1);

    /* rank 0 wrote both ranks' rows: header + 2 ranks x 2 steps */
    char *steps = read_text(dir, "steps.csv");
    cr_expect_eq(count_lines(steps), 5, "%s", steps);
    cr_expect(strstr(steps, "\nt1,cpu,resnet18-cifar,32,4,fp32,2,0,0,1,") != NULL, "%s", steps);
    cr_expect(strstr(steps, "\nt1,cpu,resnet18-cifar,32,4,fp32,2,1,0,1,") != NULL, "%s", steps);
    char *scaling = read_text(dir, "scaling.csv");
    const char *head = "env,model,res,mode,world_size,nodes,per_rank_batch,global_batch,step_ms,"
                       "images_per_s,comm_ms,exposed_comm_ms,efficiency,";
    cr_expect(strncmp(scaling, head, strlen(head)) == 0, "%s", scaling);
    cr_expect_eq(count_lines(scaling), 2, "%s", scaling);
    const char *row = strchr(scaling, '\n') + 1;
    cr_expect(strncmp(row, "t1,resnet18-cifar,32,strong,2,1,4,8,", 36) == 0, "%s", row);
    /* strong: efficiency = 100 / (2 x step_ms) */
    double step = 0, eff = 0;
    cr_assert_eq(sscanf(row, "t1,resnet18-cifar,32,strong,2,1,4,8,%lf,%*f,%*f,%*f,%lf", &step,
                        &eff), 2, "%s", row);
    cr_expect(fabs(eff - 100.0 / (2 * step)) < 1e-3, "efficiency %g for step %g ms", eff, step);
    remove_temp_dir(dir);
}

/* The lines of text that begin with prefix. */
static int lines_starting(const char *text, const char *prefix)
{
    int n = 0;
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line += !!line)
        n += strncmp(line, prefix, strlen(prefix)) == 0;
    return n;
}

Test(ddp_mpi, a_killed_rank_ends_the_other_with_one_line, .timeout = 300)
{
    if (!mpirun_found())
        cr_skip_test("no mpirun");
    char *dir = temp_dir();
    const char *common = "--ddp --model resnet18-cifar --batch 4 --warmup 0 --iters 4 "
                         "--threads 1 --backend cpu --fault-kill 1:1";
    /* the launcher's way: mpirun sees rank 1 die and stops rank 0 */
    char args[512];
    format_or_fail(args, sizeof args, "%s --out steps.csv", common);
    double t0 = now_s();
    int status = train(dir, "kill", 2, args);
    double took = now_s() - t0;
    char *err = read_text(dir, "kill.err");
    cr_expect_neq(status, 0, "mpirun exited 0 after a rank was killed:\n%s", err);
    cr_expect_lt(took, 60.0, "%.1f s", took);
    cr_expect_eq(lines_starting(err, "train:"), 1, "one line from the survivor:\n%s", err);
    cr_expect(strstr(err, "train: rank 0 of 2") != NULL, "%s", err);
    /* the step before the kill was written for both ranks */
    char *steps = read_text(dir, "steps.csv");
    cr_expect_eq(count_lines(steps), 3, "header + step 0 of 2 ranks:\n%s", steps);

    /* its own way: a launcher that leaves it running (--enable-recovery);
     * the bounded wait ends it (mpirun --enable-recovery itself exits 0) */
    format_or_fail(args, sizeof args, "%s --ddp-timeout 5 --out steps2.csv", common);
    t0 = now_s();
    sh("cd '%s' && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 mpirun "
       "--enable-recovery --oversubscribe --bind-to none -np 2 %s/train %s >own.out 2>own.err",
       dir, ROOFLINE_BIN_DIR, args);
    took = now_s() - t0;
    err = read_text(dir, "own.err");
    cr_expect_lt(took, 60.0, "%.1f s", took);
    cr_expect_eq(lines_starting(err, "train:"), 1, "%s", err);
    cr_expect(strstr(err, "no answer from the other ranks for 5 s while reducing gradient bucket")
                  != NULL, "%s", err);
    steps = read_text(dir, "steps2.csv");
    cr_expect_eq(count_lines(steps), 3, "%s", steps);
    remove_temp_dir(dir);
}

/* Ranks whose oneDNN chose other weight layouts (here: an AVX-512 rank and
 * one held to AVX2, 16- and 8-channel blocks) would sum gradients element by
 * element across two orders: they refuse before the first step. Needs an
 * AVX-512 machine, where the two layouts differ. */
Test(ddp_mpi, ranks_with_other_weight_layouts_refuse, .timeout = 300)
{
    if (!mpirun_found())
        cr_skip_test("no mpirun");
    if (sh("grep -qw avx512f /proc/cpuinfo") != 0)
        cr_skip_test("no AVX-512 here: every rank's oneDNN chooses 8-channel blocks");
    char *dir = temp_dir();
    const char *args = "--ddp --model resnet18-cifar --batch 2 --warmup 0 --iters 1 "
                       "--threads 1 --backend cpu --out steps.csv";
    int status = sh("cd '%s' && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                    "timeout 120 mpirun --oversubscribe --bind-to none -np 1 env "
                    "DNNL_MAX_CPU_ISA=AVX2 %s/train %s : -np 1 %s/train %s >mixed.out "
                    "2>mixed.err",
                    dir, ROOFLINE_BIN_DIR, args, ROOFLINE_BIN_DIR, args);
    char *err = read_text(dir, "mixed.err");
    cr_expect_neq(status, 0, "mixed layouts trained:\n%s", err);
    cr_expect(strstr(err, "the ranks keep their gradients in different memory layouts") != NULL,
              "%s", err);
    cr_expect_eq(sh("cd '%s' && test \"$(cat steps.csv 2>/dev/null | wc -l)\" -le 1", dir), 0,
                 "a step ran and was written");
    remove_temp_dir(dir);
}

#endif

Test(ddp_options, need_ddp_or_refuse_with_it)
{
    expect_usage_error("train --model resnet18-cifar --bucket-mb 5", "--bucket-mb: only with --ddp");
    expect_usage_error("train --model resnet18-cifar --comm-precision fp16",
                       "--comm-precision: unknown 'fp16' (accepted: fp32, bf16)");
    expect_usage_error("train --model resnet18-cifar --batch 5 --shards 2",
                       "--shards: the batch of 5 is not 2 equal shards");
    expect_usage_error("train --model resnet18-cifar --dropout 1", "--dropout: '1' is not a");
    expect_usage_error("train --model resnet18-cifar --fault-kill x", "--fault-kill: 'x' is not");
#ifdef HAVE_MPI
    expect_usage_error("train --model resnet18-cifar --ddp --trace k.csv",
                       "--trace: not with --ddp");
#else
    expect_usage_error("train --model resnet18-cifar --ddp", "--ddp: this build has no MPI");
#endif
}

/* A rank's GPU: its rank on the node among the GPUs it sees, wrapping where
 * each rank sees only its own; more ranks than GPUs, all seen by all, is
 * refused (NCCL would find two ranks on one GPU). */
Test(ddp_world, each_rank_its_gpu_on_the_node)
{
    ddp_world w = {.rank = 5, .size = 8, .local_rank = 5, .local_size = 8, .nodes = 1,
                   .host = "node7"};
    char err[DDP_ERR_LEN] = "";
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    char *saved = visible ? strdup(visible) : NULL;
    unsetenv("CUDA_VISIBLE_DEVICES");
    cr_expect_eq(ddp_world_gpu(&w, 8, err, sizeof err), 5);
    cr_expect_eq(ddp_world_gpu(&w, 4, err, sizeof err), -1);
    cr_expect(strstr(err, "8 ranks on node7 but 4 CUDA device(s)"), "%s", err);
    cr_expect_eq(ddp_world_gpu(&w, 0, err, sizeof err), -1);
    cr_expect(strstr(err, "no CUDA device on node7"), "%s", err);
    /* srun --gpus-per-task=1: each rank sees one GPU, its own */
    setenv("CUDA_VISIBLE_DEVICES", "5", 1);
    cr_expect_eq(ddp_world_gpu(&w, 1, err, sizeof err), 0);
    if (saved)
        setenv("CUDA_VISIBLE_DEVICES", saved, 1);
    else
        unsetenv("CUDA_VISIBLE_DEVICES");
    free(saved);
}
