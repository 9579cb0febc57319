/* Every layer type of the CPU backend on its own (tests/layer_check.c): the
 * forward against a direct loop in double, every gradient against central
 * differences of that loop, and the accumulate path. make test-gpu runs the
 * same cases on the CUDA backend. */
#ifdef HAVE_DNNL
#include <criterion/criterion.h>

#include "../models/cpu/cpu_backend.h"
#include "layer_check.h"

static void expect(void *ctx, bool ok, const char *message)
{
    (void)ctx;
    cr_expect(ok, "%s", message);
}

static void check(const char *name)
{
    const layer_case *c = layer_case_find(name);
    cr_assert_not_null(c, "no case %s", name);
    layer_check_env env = {
        .ops = &cpu_backend_ops,
        .cfg = {.batch = LAYER_CHECK_BATCH, .threads = 1, .seed = 5},
        /* fp32 against double: float rounding in sums of at most a few
         * hundred terms, and central differences of a piecewise-linear loss */
        .tol = {.forward = 1e-4, .gradient = 2e-3, .accumulate = 1e-5},
        .expect = expect,
    };
    layer_check_case(&env, c);
}

#define LAYER_TEST(name) \
    Test(layers, name, .timeout = 120) { check(#name); }

LAYER_TEST(conv3x3_bias_vgg)
LAYER_TEST(conv3x3_stride2_resnet)
LAYER_TEST(conv7x7_stride2_pad3_stem)
LAYER_TEST(conv1x1_stride2_downsample)
LAYER_TEST(conv1x1_pointwise)
LAYER_TEST(conv1x1_pointwise_wide)
LAYER_TEST(depthwise3x3_stride1)
LAYER_TEST(depthwise3x3_stride2)
LAYER_TEST(conv3x3_wide)
LAYER_TEST(conv1x1_stride2_wide)
LAYER_TEST(depthwise3x3_stride2_wide)
LAYER_TEST(conv7x7_stem_wide_output)
LAYER_TEST(grouped_conv)
LAYER_TEST(depthwise5x5_stride1)
LAYER_TEST(depthwise5x5_stride2)
LAYER_TEST(depthwise3x3_many_positions)
LAYER_TEST(fully_connected_flattens)
LAYER_TEST(fully_connected_bias_only)
LAYER_TEST(batch_norm_training)
LAYER_TEST(relu)
LAYER_TEST(relu6_clips_both_ends)
LAYER_TEST(maxpool3x3_stride2_pad1)
LAYER_TEST(maxpool2x2_stride2)
LAYER_TEST(global_avgpool)
LAYER_TEST(adaptive_avgpool_down)
LAYER_TEST(adaptive_avgpool_up)
LAYER_TEST(residual_add)
LAYER_TEST(dropout)

/* Every case of the harness has a test above. */
Test(layers, every_case_is_run)
{
    int n;
    layer_cases(&n);
    cr_expect_eq(n, 28, "add a LAYER_TEST for each new case");
}
#endif /* HAVE_DNNL */
