/* Whole training steps on the CPU backend: every network learns a fixed small
 * batch, runs repeat bit for bit, and bin/train's data, CSV and errors. */
#ifdef HAVE_DNNL
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../models/cpu/cpu_backend.h"
#include "../models/cpu/cpu_internal.h"
#include "../models/data.h"
#include "../models/init.h"
#include "../models/step.h"
#include "helpers.h"

/* Losses of `steps` training steps of model at res 32, batch 4, 10 classes. */
static void train_losses_fused(const char *model, float lr, int steps, int threads,
                               bool no_fusion, float *losses)
{
    enum { BATCH = 4, RES = 32, CLASSES = 10 };
    network net = build_or_fail(model, RES, CLASSES);
    const backend_ops *ops = &cpu_backend_ops;
    char err[512];
    backend_config cfg = {.batch = BATCH, .threads = threads, .seed = 11, .no_fusion = no_fusion};
    backend *b = ops->create(&net, &cfg, err, sizeof err);
    cr_assert_not_null(b, "%s", err);
    float images[BATCH * 3 * RES * RES];
    int32_t labels[BATCH];
    data_synthetic(11, BATCH, 3, RES, CLASSES, images, labels);
    cr_assert_eq(init_parameters(ops, b, &net, 11, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ops->set_batch(b, images, labels), 0, "%s", ops->error(b));
    step_driver d;
    cr_assert_eq(step_init(&d, ops, b, &net, (sgd_params){lr, 0.9f, 5e-4f}), 0);
    for (int s = 0; s < steps; s++)
        cr_assert_eq(step_run(&d, &losses[s]), 0, "%s step %d: %s", model, s, step_error(&d));
    step_free(&d);
    ops->destroy(b);
    net_free(&net);
}

static void train_losses(const char *model, float lr, int steps, int threads, float *losses)
{
    train_losses_fused(model, lr, steps, threads, false, losses);
}

/* 30 steps on one batch of 4: the mean loss of the last five steps must end
 * below max_ratio x the first. A mean, because batch norm over 4 images makes
 * single steps jump (resnet50 goes 0.09, 0.63, 0.39 late in the run). */
static void expect_learns(const char *model, float lr, float max_ratio)
{
    float losses[30];
    train_losses(model, lr, 30, 1, losses);
    float late = 0.0f;
    for (int s = 25; s < 30; s++)
        late += losses[s] / 5;
    cr_expect(late < max_ratio * losses[0],
              "%s: mean loss %.4f over steps 26-30, %.4f at the start (%.2f %.2f %.2f %.2f %.2f)",
              model, late, losses[0], losses[25], losses[26], losses[27], losses[28], losses[29]);
}

Test(training, resnet18_learns, .timeout = 120) { expect_learns("resnet18", 0.01f, 0.1f); }
/* at 32x32 its last stage is 1x1: BN over 4 values wants a smaller step */
Test(training, resnet50_learns, .timeout = 120) { expect_learns("resnet50", 0.005f, 0.25f); }
/* Without BN and with dropout 0.5, VGG-16 starts slowly: 2.28 -> 1.46 here. */
Test(training, vgg16_learns, .timeout = 120) { expect_learns("vgg16", 0.01f, 0.75f); }
Test(training, mobilenet_v2_learns, .timeout = 120) { expect_learns("mobilenet_v2", 0.01f, 0.1f); }
Test(training, resnet18_cifar_learns, .timeout = 120) { expect_learns("resnet18-cifar", 0.01f, 0.1f); }
Test(training, resnet50_cifar_learns, .timeout = 120) { expect_learns("resnet50-cifar", 0.01f, 0.1f); }
Test(training, vgg16_cifar_learns, .timeout = 120) { expect_learns("vgg16-cifar", 0.01f, 0.1f); }
Test(training, mobilenet_v2_cifar_learns, .timeout = 120) { expect_learns("mobilenet_v2-cifar", 0.01f, 0.1f); }

Test(training, same_seed_one_thread_is_bit_identical, .timeout = 120)
{
    float first[6], second[6];
    train_losses("mobilenet_v2-cifar", 0.05f, 6, 1, first);
    train_losses("mobilenet_v2-cifar", 0.05f, 6, 1, second);
    cr_expect(memcmp(first, second, sizeof first) == 0, "losses differ: %.9g vs %.9g", first[5],
              second[5]);
}

/* The batch norms that apply the ReLU or ReLU6 after them compute what the
 * two layers compute alone, bit for bit: forward clips the same values, and
 * backward's mask from x * scale + shift agrees with the activation's test on
 * its output. */
static void expect_fusion_changes_nothing(const char *model)
{
    float fused[4], alone[4];
    train_losses_fused(model, 0.05f, 4, 2, false, fused);
    train_losses_fused(model, 0.05f, 4, 2, true, alone);
    for (int s = 0; s < 4; s++)
        cr_expect(fused[s] == alone[s], "%s step %d: %.9g fused, %.9g alone", model, s, fused[s],
                  alone[s]);
}

Test(training, fused_batch_norm_and_relu6_match_the_layers_alone, .timeout = 120)
{
    expect_fusion_changes_nothing("mobilenet_v2-cifar");
}

Test(training, fused_batch_norm_and_relu_match_the_layers_alone, .timeout = 120)
{
    expect_fusion_changes_nothing("resnet18-cifar");
}

/* A CIFAR-10 binary batch of `records` images: label r % 10, pixels r + j. */
static void write_cifar_file(const char *dir, int records, int truncate_by)
{
    char path[256];
    snprintf(path, sizeof path, "%s/data_batch_1.bin", dir);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    for (int r = 0; r < records; r++) {
        unsigned char rec[CIFAR10_RECORD];
        rec[0] = (unsigned char)(r % 10);
        for (int j = 1; j < CIFAR10_RECORD; j++)
            rec[j] = (unsigned char)(r + j);
        size_t len = (r == records - 1) ? sizeof rec - (size_t)truncate_by : sizeof rec;
        cr_assert_eq(fwrite(rec, 1, len, f), len);
    }
    cr_assert_eq(fclose(f), 0);
}

Test(training, cifar10_batches_load_and_normalise)
{
    char *dir = temp_dir();
    write_cifar_file(dir, 12, 0);
    static float images[13 * 3 * 32 * 32];
    int32_t labels[13];
    char err[512];
    cr_assert_eq(data_cifar10(dir, 8, images, labels, err, sizeof err), 0, "%s", err);
    cr_expect_eq(labels[7], 7);
    /* image 2, green channel, pixel 0 is byte 1 + 1024 of record 2: (2 + 1025) % 256 = 3 */
    float expect = (3 / 255.0f - 0.4822f) / 0.2435f;
    cr_expect_float_eq(images[(2 * 3 + 1) * 1024], expect, 1e-6f);
    /* a file of whole records but fewer than 10000 is short as well */
    cr_expect_neq(data_cifar10(dir, 13, images, labels, err, sizeof err), 0);
    cr_expect(strstr(err, "truncated") && strstr(err, "record 12"), "%s", err);
    write_cifar_file(dir, 3, 100);
    cr_expect_neq(data_cifar10(dir, 3, images, labels, err, sizeof err), 0);
    cr_expect(strstr(err, "truncated") && strstr(err, "data_batch_1.bin"), "%s", err);
    free(dir);
}

static int count_char(const char *s, char c)
{
    int n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

Test(training, bin_train_appends_one_row_per_iteration, .timeout = 120)
{
    char *dir = temp_dir();
    write_cifar_file(dir, 4, 0);
    char args[512], out[8192];
    snprintf(args, sizeof args,
             "train --model resnet18-cifar --batch 4 --warmup 1 --iters 3 --threads 1 "
             "--data cifar10:%s --repeat 2 --env test --out %s/steps.csv",
             dir, dir);
    cr_assert_eq(run_bin(args, 0, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "images/s") && strstr(out, "peak RSS"), "summary line: %s", out);
    cr_assert_eq(run_bin(args, 0, out, sizeof out), 0, "%s", out);
    char path[256];
    snprintf(path, sizeof path, "%s/steps.csv", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char line[512];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        cr_expect_eq(count_char(line, ','), 14, "row %d: %s", rows, line);
        if (rows == 0)
            cr_expect(strncmp(line, "env,backend,model,res,batch,precision,", 38) == 0 &&
                          strstr(line, ",peak_mem_bytes,graph\n"),
                      "%s", line);
        else
            cr_expect(strncmp(line, "test,cpu,resnet18-cifar,32,4,fp32,1,0,2,", 40) == 0 &&
                          strstr(line, ",off\n"),
                      "%s", line);
        rows++;
    }
    fclose(f);
    cr_expect_eq(rows, 1 + 2 * 3, "one header, then 3 rows per run");
    /* a steps.csv of other columns (an older bin/train's) is not appended to */
    FILE *old = fopen(path, "w");
    cr_assert_not_null(old);
    fputs("env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,"
          "images_per_s,loss,peak_mem_bytes\ntest,cpu,resnet18-cifar,32,4,fp32,1,0,1,0,9,444,2.3,"
          "1\n",
          old);
    cr_assert_eq(fclose(old), 0);
    snprintf(args, sizeof args, "train --model resnet18-cifar --batch 4 --out %s/steps.csv", dir);
    expect_usage_error(args, "--out: '");
    expect_usage_error(args, "steps.csv' has another header than the steps.csv this bin/train "
                             "writes");
    /* a FIFO or a pipe as --out has no header to check and is not read */
    cr_expect_eq(sh("cd '%s' && mkfifo rows && { cat rows > fifo.csv & } && "
                    "timeout 60 '%s/train' --model resnet18-cifar --batch 2 --warmup 0 --iters 1 "
                    "--threads 1 --out rows >/dev/null 2>&1 && wait && "
                    "grep -q ',peak_mem_bytes,graph$' fifo.csv && "
                    "timeout 60 '%s/train' --model resnet18-cifar --batch 2 --warmup 0 --iters 1 "
                    "--threads 1 --out /dev/stdout 2>/dev/null | grep -q ',off$'",
                    dir, ROOFLINE_BIN_DIR, ROOFLINE_BIN_DIR),
                 0, "--out to a FIFO or a pipe hung or wrote no rows");
    free(dir);
}


Test(training, bin_train_rejects_bad_input)
{
    expect_usage_error("train --model resnet-18", "--model: unknown 'resnet-18'");
    expect_usage_error("train --model resnet18 --batch 0", "--batch: '0'");
    expect_usage_error("train --model resnet18 --iters 5x", "--iters: '5x'");
    expect_usage_error("train --model resnet18 --lr abc", "--lr: 'abc'");
    expect_usage_error("train --model resnet18 --threads -1", "--threads");
    expect_usage_error("train --model resnet18 --backend cpu --precision fp16",
                       "--precision: fp16 needs a GPU");
    expect_usage_error("train --model resnet18 --backend cpu --graph", "--graph: only for the cuda");
    expect_usage_error("train --model resnet18 --backend tpu", "--backend: unknown 'tpu'");
    expect_usage_error("train --model resnet18 --threads 100000", "--threads");
    /* labels go unquoted into CSV files; outputs are checked before any work */
    expect_usage_error("train --model resnet18 --env a,b", "--env: 'a,b'");
    expect_usage_error("train --model resnet18 --env ''", "--env: ''");
    expect_usage_error("train --model resnet18 --out ''", "--out: '' is not a file name");
    expect_usage_error("train --model resnet18 --trace /proc/no/kernels.csv", "--trace: cannot create");
    expect_usage_error("train --model resnet18 --out /tmp/x.csv --trace /tmp/x.csv",
                       "also --out");
    expect_usage_error("train --model resnet18 --workspace-mb 0", "--workspace-mb");
    expect_usage_error("train --model resnet18 --data imagenet", "--data: unknown 'imagenet'");
    expect_usage_error("train --model resnet18 --data cifar10:/tmp", "needs --res 32");
    expect_usage_error("train --model vgg16 --res 16", "minimum 32");
    expect_usage_error("train --model resnet18-cifar --data cifar10:/no/such/dir",
                       "/no/such/dir/data_batch_1.bin");
    expect_usage_error("train --model resnet18 --bogus", "unknown option '--bogus'");
}

/* Without a GPU --backend cuda is a usage error naming why (a GPU machine
 * runs it: make test-gpu). */
Test(training, bin_train_cuda_without_a_gpu)
{
    char err[4096];
    int status = run_bin("train --model resnet18 --backend cuda --iters 1", 2, err, sizeof err);
    if (status == 0 || strstr(err, "cannot run here") == NULL)
        cr_skip("a CUDA device answered here: %s", err);
    cr_expect_eq(status, 2, "%s", err);
    cr_expect(strstr(err, "--backend: cuda cannot run here") != NULL, "%s", err);
}

/* The memory check comes before the batch is allocated and filled: a batch
 * of a million fails at once, not after minutes of filling 12 GB. */
Test(training, bin_train_refuses_a_huge_batch_before_allocating_it, .timeout = 60)
{
    char err[4096];
    int status = run_bin("train --model resnet18-cifar --backend cpu --batch 1048576 --iters 1",
                         1, err, sizeof err);
    cr_expect_eq(status, 1, "%s", err);
    cr_expect(strstr(err, "GiB") && strstr(err, "smaller --batch"), "%s", err);
}

Test(training, bin_train_says_when_a_batch_does_not_fit)
{
    char err[4096];
    int status = run_bin("train --model vgg16 --batch 100000 --iters 1 --warmup 0", 1, err,
                         sizeof err);
    cr_expect_eq(status, 1, "%s", err);
    cr_expect(strstr(err, "GiB") && strstr(err, "smaller --batch"), "%s", err);
}
#endif /* HAVE_DNNL */
