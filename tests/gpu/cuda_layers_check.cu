/* make test-gpu: every layer type of the CUDA backend on its own, in every
 * precision the GPU has, against the direct-loop reference in double (the
 * cases and checks of tests/layer_check.c, which the CPU backend passes in
 * make test). Layers run unfused here (--no-fusion); the fused kernels are
 * checked by whole steps in cuda_train_check.cu.
 *
 * Tolerances, relative (tests/layer_check.h says to what):
 *   fp32  1e-4 forward and gradients: no tensor cores, fp32 sums
 *   tf32  1.5e-2: every product's inputs rounded to 11 significant bits
 *         inside the tensor cores, activations and weights alike (a Monte
 *         Carlo of these cases gives up to 8.7e-3 with truncation)
 *   fp16  5e-3 forward, 1e-2 gradients: activations stored in fp16 (11
 *         significant bits), sums in fp32; the reference computes with the
 *         weights rounded as the fp16 copy is
 *   bf16  3e-2 forward, 5e-2 gradients: 8 significant bits, likewise
 *
 * The depthwise cases run three times: --depthwise auto, own (the suite's
 * kernels, cuda_depthwise.cu) and cudnn, each against the reference; the
 * other convolution cases likewise under --conv-api auto, graph and legacy. */
#include <stdio.h>
#include <string.h>

#include "gpu_test.h"

extern "C" {
#include "../../models/cuda/cuda_backend.h"
#include "../layer_check.h"
}

struct run_ctx {
    gpu_tally *tally;
    const char *prec;
    const char *name;
};

static void expect(void *ctx, bool ok, const char *message)
{
    run_ctx *r = (run_ctx *)ctx;
    char what[640];
    snprintf(what, sizeof what, "[%s] %s: %s", r->prec, r->name, message);
    gpu_expect(r->tally, ok, what);
}

int main(void)
{
    if (gpu_test_skip())
        return 0;
    gpu_tally tally = {0, 0};
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
        printf("FAIL: cudaGetDeviceProperties\n");
        return 1;
    }
    struct {
        precision prec;
        layer_tolerance tol;
        int weight_bits;
        int min_cc;
    } precisions[] = {
        {PREC_FP32, {1e-4, 1e-4, 1e-5}, 0, 0},
        {PREC_TF32, {1.5e-2, 1.5e-2, 1e-5}, 0, 80},
        {PREC_FP16, {5e-3, 1e-2, 2e-3}, 11, 70},
        {PREC_BF16, {3e-2, 5e-2, 1e-2}, 8, 80},
    };
    int cc = 10 * prop.major + prop.minor, n_cases;
    const layer_case *cases = layer_cases(&n_cases);
    for (size_t p = 0; p < sizeof precisions / sizeof *precisions; p++) {
        const char *name = precision_name(precisions[p].prec);
        if (cc < precisions[p].min_cc) {
            printf("skipped: %s needs compute capability %d.%d\n", name,
                   precisions[p].min_cc / 10, precisions[p].min_cc % 10);
            continue;
        }
        for (int k = 0; k < n_cases; k++) {
            /* depthwise cases: also each side of --depthwise forced, other
             * convolutions each side of --conv-api (auto may take either on
             * these small shapes; the graph API's backward data is also
             * checked adding to a gradient, which the step of these layers
             * does not: the same engine's plan for that beta) */
            bool depthwise = !strncmp(cases[k].name, "depthwise", 9);
            bool conv = !depthwise && !strncmp(cases[k].name, "conv", 4);
            static const char *const sides[] = {"", " [own kernels]", " [cuDNN]"};
            static const char *const api_sides[] = {"", " [graph API]", " [legacy calls]"};
            for (int side = 0; side < (depthwise || conv ? 3 : 1); side++) {
                char label[160];
                snprintf(label, sizeof label, "%s%s", cases[k].name,
                         conv ? api_sides[side] : sides[side]);
                run_ctx ctx = {&tally, name, label};
                layer_check_env env;
                memset(&env, 0, sizeof env);
                env.ops = &cuda_backend_ops;
                env.cfg.batch = LAYER_CHECK_BATCH;
                env.cfg.seed = 5;
                env.cfg.prec = precisions[p].prec;
                env.cfg.no_fusion = true;
                env.cfg.initial_loss_scale = 1.0f; /* room for the test's gradients in fp16 */
                env.cfg.depthwise = depthwise && side == 1   ? DEPTHWISE_OWN
                                    : depthwise && side == 2 ? DEPTHWISE_CUDNN
                                                             : DEPTHWISE_AUTO;
                env.cfg.conv_api = conv && side == 1   ? CONV_API_GRAPH
                                   : conv && side == 2 ? CONV_API_LEGACY
                                                       : CONV_API_AUTO;
                env.tol = precisions[p].tol;
                env.weight_bits = precisions[p].weight_bits;
                env.expect = expect;
                env.ctx = &ctx;
                layer_check_case(&env, &cases[k]);
            }
        }
    }
    /* on the emulator, cuDNN's workspace query refusing the algorithms Find
     * has just run: the backend keeps Find's figures and the layer still
     * checks (a real cuDNN has not been seen to refuse, but may) */
    if (gpu_test_emulated()) {
        setenv("FAKE_CUDNN_REFUSE_WORKSPACE_QUERY", "1", 1);
        for (int k = 0; k < n_cases; k++) {
            if (strncmp(cases[k].name, "conv", 4) != 0)
                continue;
            char label[160];
            snprintf(label, sizeof label, "%s [workspace query refused]", cases[k].name);
            run_ctx ctx = {&tally, "fp32", label};
            layer_check_env env;
            memset(&env, 0, sizeof env);
            env.ops = &cuda_backend_ops;
            env.cfg.batch = LAYER_CHECK_BATCH;
            env.cfg.seed = 5;
            env.cfg.prec = PREC_FP32;
            env.cfg.no_fusion = true;
            env.cfg.initial_loss_scale = 1.0f;
            env.tol = precisions[0].tol;
            env.expect = expect;
            env.ctx = &ctx;
            layer_check_case(&env, &cases[k]);
            break;
        }
        unsetenv("FAKE_CUDNN_REFUSE_WORKSPACE_QUERY");
    }
    return gpu_test_finish(&tally);
}
