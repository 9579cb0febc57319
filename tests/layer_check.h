/* Every layer type of a backend checked on its own, backend-independent: the
 * forward against a direct loop in double (tests/reference.c), every gradient
 * against central differences of that loop, and the accumulate path, on
 * small shapes with the groups, strides and padding the four networks use.
 * The CPU's Criterion tests (test_layers.c) and the GPU's test program
 * (tests/gpu/cuda_layers_check.cu) run the same cases. */
#ifndef ROOFLINE_TEST_LAYER_CHECK_H
#define ROOFLINE_TEST_LAYER_CHECK_H

#include <stdbool.h>

#include "../models/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { LAYER_CHECK_BATCH = 2 };

typedef struct {
    const char *name;
    float lo, hi;              /* range of the tested layer's input values */
    /* max pool: inputs distinct within every window and exact in bf16, so
     * that rounding makes no ties (a tie has no derivative to check) */
    bool distinct_windows;
    /* builds the network and returns the tested layer's index */
    int (*build)(network *net);
} layer_case;

const layer_case *layer_cases(int *count);
const layer_case *layer_case_find(const char *name);

typedef struct {
    double forward;     /* |y - ref| / (1 + |ref|) */
    double gradient;    /* |grad - central difference| / the gradient's largest value */
    double accumulate;  /* |sum - (base + grad)| / (1 + |base + grad|) */
} layer_tolerance;

typedef struct {
    const backend_ops *ops;
    backend_config cfg;        /* batch must be LAYER_CHECK_BATCH */
    layer_tolerance tol;
    /* significant bits of the copy a backend computes conv and fc with (fp16
     * 11, bf16 8; 0: the fp32 master itself): the reference rounds the
     * master weights and biases the same way, so that the check measures the
     * layer and not the copy's rounding */
    int weight_bits;
    void (*expect)(void *ctx, bool ok, const char *message);
    void *ctx;
} layer_check_env;

/* Runs one case through env->expect; 0, or -1 when the backend failed. */
int layer_check_case(const layer_check_env *env, const layer_case *c);

#ifdef __cplusplus
}
#endif

#endif
