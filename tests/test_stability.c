/* The default study must not depend on luck: every model of the `cpu` row of
 * run_matrix.md trains stably, at the learning rate bin/train picks by
 * default, for that row's warm-up + timed steps under each repeat's seed
 * (scripts/bench.sh gives repeat k the seed k). A diverging configuration is
 * an error in bin/train, so this is what keeps `make bench` passing. */
#ifdef HAVE_DNNL
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "../models/cpu/cpu_backend.h"
#include "../models/data.h"
#include "../models/init.h"
#include "../models/step.h"
#include "../models/zoo.h"
#include "helpers.h"

/* The cpu row's warm-up + iters and repeats. */
enum { ROW_STEPS = 3 + 10, ROW_REPEATS = 3 };

/* Losses of `steps` steps of one bin/train process: seed for the data, the
 * initial weights and the dropout masks, and the default learning rate. */
static void default_run_losses(const char *model, int res, int batch, uint64_t seed,
                               float *losses, int steps)
{
    network net = build_or_fail(model, res, zoo_find(model)->default_classes);
    const backend_ops *ops = &cpu_backend_ops;
    char err[512];
    backend_config cfg = {.batch = batch, .threads = 1, .seed = seed};
    backend *b = ops->create(&net, &cfg, err, sizeof err);
    cr_assert_not_null(b, "%s", err);
    int64_t pixels = (int64_t)batch * shape_elems(net.input);
    float *images = malloc((size_t)pixels * sizeof *images);
    int32_t *labels = malloc((size_t)batch * sizeof *labels);
    cr_assert(images && labels);
    data_synthetic(seed, batch, net.input.c, res, net.classes, images, labels);
    cr_assert_eq(init_parameters(ops, b, &net, seed, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ops->set_batch(b, images, labels), 0, "%s", ops->error(b));
    step_driver d;
    float lr = zoo_default_lr(zoo_find(model), batch);
    cr_assert_eq(step_init(&d, ops, b, &net, (sgd_params){lr, 0.9f, 5e-4f}), 0);
    for (int s = 0; s < steps; s++) {
        losses[s] = NAN;
        if (step_run(&d, &losses[s]))
            break; /* a diverged loss is reported by the caller */
    }
    step_free(&d);
    ops->destroy(b);
    free(images);
    free(labels);
    net_free(&net);
}

/* Every loss finite and at most twice the first, for each repeat's seed. */
static void expect_stable(const char *model, int res, int batch)
{
    for (uint64_t seed = 1; seed <= ROW_REPEATS; seed++) {
        float losses[ROW_STEPS];
        default_run_losses(model, res, batch, seed, losses, ROW_STEPS);
        for (int s = 0; s < ROW_STEPS; s++)
            cr_expect(isfinite(losses[s]) && losses[s] <= 2.0f * losses[0],
                      "%s res %d batch %d seed %d (lr %g): step %d loss %g, first %g", model,
                      res, batch, (int)seed, zoo_default_lr(zoo_find(model), batch), s,
                      losses[s], losses[0]);
    }
}

/* The row's models and batches (the CIFAR ResNet-18 at 16 instead of 64, the
 * ImageNet models at 64x64 instead of 224x224) to stay fast. Without the
 * batch scaling (the recipes' rates at batch 256: 0.1, and 0.01 for VGG-16)
 * VGG-16 and ResNet-50 fail as the row does at 224: measured on the 2-core
 * machine, VGG-16 reaches NaN (seed 3) or 4x its first loss and ResNet-50
 * 2.6x to 11x. */
Test(stability, resnet18_cifar_cpu_row, .timeout = 300) { expect_stable("resnet18-cifar", 32, 16); }
Test(stability, resnet50_cpu_row, .timeout = 300) { expect_stable("resnet50", 64, 8); }
Test(stability, vgg16_cpu_row, .timeout = 300) { expect_stable("vgg16", 64, 4); }
Test(stability, mobilenet_v2_cpu_row, .timeout = 300) { expect_stable("mobilenet_v2", 64, 16); }
#endif
