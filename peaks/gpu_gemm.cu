/* Tensor-core peaks: the best cuBLASLt GEMM over a few large shapes, for
 * tf32, fp16, bf16 and fp8 (e4m3) inputs, accumulating in fp32. The layout is
 * "TN" (A transposed), the one fp8 requires, so all precisions share it. */
#include <cublasLt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_bench.h"

struct gemm_kind {
    const char *name;
    cudaDataType ab_type, cd_type;
    cublasComputeType_t compute;
    int min_cc;         /* first architecture whose tensor cores take these inputs */
    size_t ab_bytes, cd_bytes;
};

static const gemm_kind kinds[] = {
    /* GPU_GEMM_TF32 */ {"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 80, 4, 4},
    /* GPU_GEMM_FP16 */ {"fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 70, 2, 2},
    /* GPU_GEMM_BF16 */ {"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 80, 2, 2},
    /* GPU_GEMM_FP8 */ {"fp8 e4m3", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 89, 1, 2},
};

struct gemm_shape {
    int m, n, k;
};
static const gemm_shape full_shapes[] = {{8192, 8192, 8192}, {16384, 16384, 8192}};
static const gemm_shape quick_shapes[] = {{8192, 8192, 8192}};

enum { WORKSPACE_BYTES = 64 << 20, MAX_ALGOS = 8 };

static void fill_inputs(const gpu_context &c, gpu_gemm_type type, void *p, size_t n)
{
    switch (type) {
    case GPU_GEMM_TF32: gpu_fill(c, (float *)p, n, -1.f, 1.f); break;
    case GPU_GEMM_FP16: gpu_fill(c, (__half *)p, n, -1.f, 1.f); break;
    case GPU_GEMM_BF16: gpu_fill(c, (__nv_bfloat16 *)p, n, -1.f, 1.f); break;
    default: gpu_fill(c, (__nv_fp8_e4m3 *)p, n, -1.f, 1.f); break;
    }
}

struct shape_result {
    double gflops;
    int algo;       /* index in the heuristic's list */
    int algos;      /* how many the heuristic offered */
    bool supported;
    cublasStatus_t status;
};

static shape_result run_shape(const gpu_context &c, cublasLtHandle_t lt, gpu_gemm_type type,
                              gemm_shape s, void *workspace)
{
    const gemm_kind &kind = kinds[type];
    shape_result res = {0.0, -1, 0, false, CUBLAS_STATUS_SUCCESS};
    cublasLtMatmulDesc_t op;
    CUBLASLT_CHECK(cublasLtMatmulDescCreate(&op, kind.compute, CUDA_R_32F));
    cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                                  sizeof trans_a));
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                                  sizeof trans_b));
    if (type == GPU_GEMM_FP8) {
        /* the vendor's fp8 figure assumes accumulation without the periodic
         * promotion to full fp32 */
        int8_t fast = 1;
        CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                                      sizeof fast));
    }
    /* column-major: A is k x m (used transposed), B is k x n, C = D is m x n */
    cublasLtMatrixLayout_t a_desc, b_desc, c_desc;
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&a_desc, kind.ab_type, s.k, s.m, s.k));
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&b_desc, kind.ab_type, s.k, s.n, s.k));
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&c_desc, kind.cd_type, s.m, s.n, s.m));
    cublasLtMatmulPreference_t pref;
    CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = WORKSPACE_BYTES;
    CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t heur[MAX_ALGOS];
    int found = 0;
    /* no algorithm for this type on this GPU is an answer, not an error */
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, op, a_desc, b_desc, c_desc, c_desc,
                                                       pref, c.quick ? 1 : 4, heur, &found);
    if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED)
        CUBLASLT_CHECK(st);
    res.status = st;
    res.algos = st == CUBLAS_STATUS_SUCCESS ? found : 0;
    if (res.algos > 0) {
        res.supported = true;
        void *a, *b, *d;
        CUDA_CHECK(cudaMalloc(&a, kind.ab_bytes * s.k * s.m));
        CUDA_CHECK(cudaMalloc(&b, kind.ab_bytes * s.k * s.n));
        CUDA_CHECK(cudaMalloc(&d, kind.cd_bytes * s.m * s.n));
        fill_inputs(c, type, a, (size_t)s.k * s.m);
        fill_inputs(c, type, b, (size_t)s.k * s.n);
        CUDA_CHECK(cudaMemset(d, 0, kind.cd_bytes * s.m * s.n));
        CUDA_CHECK(cudaDeviceSynchronize());
        const float alpha = 1.0f, beta = 0.0f;
        int reps = c.quick ? 3 : 10, trials = c.quick ? 1 : 3;
        for (int i = 0; i < res.algos; i++) {
            if (heur[i].state != CUBLAS_STATUS_SUCCESS || heur[i].workspaceSize > ws)
                continue;
            float ms = gpu_best_ms(
                [&] {
                    CUBLASLT_CHECK(cublasLtMatmul(lt, op, &alpha, a, a_desc, b, b_desc, &beta, d,
                                                  c_desc, d, c_desc, &heur[i].algo, workspace,
                                                  ws, 0));
                },
                reps, trials);
            double gflops = ms > 0 ? 2.0 * s.m * s.n * (double)s.k / (ms * 1e-3) * 1e-9 : 0.0;
            if (gflops > res.gflops) {
                res.gflops = gflops;
                res.algo = i;
            }
        }
        CUDA_CHECK(cudaFree(a));
        CUDA_CHECK(cudaFree(b));
        CUDA_CHECK(cudaFree(d));
    }
    CUBLASLT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    CUBLASLT_CHECK(cublasLtMatrixLayoutDestroy(a_desc));
    CUBLASLT_CHECK(cublasLtMatrixLayoutDestroy(b_desc));
    CUBLASLT_CHECK(cublasLtMatrixLayoutDestroy(c_desc));
    CUBLASLT_CHECK(cublasLtMatmulDescDestroy(op));
    return res;
}

gpu_result gpu_gemm_peak(const gpu_context &c, gpu_gemm_type type)
{
    const gemm_kind &kind = kinds[type];
    gpu_result r = {};
    r.sm_mhz = r.mem_mhz = NAN;
    if (c.cc < kind.min_cc) {
        snprintf(r.detail, sizeof r.detail, "%s tensor-core GEMM needs compute capability %d.%d",
                 kind.name, kind.min_cc / 10, kind.min_cc % 10);
        return r;
    }
    const gemm_shape *shapes = c.quick ? quick_shapes : full_shapes;
    int n_shapes = c.quick ? (int)(sizeof quick_shapes / sizeof quick_shapes[0])
                           : (int)(sizeof full_shapes / sizeof full_shapes[0]);
    cublasLtHandle_t lt;
    CUBLASLT_CHECK(cublasLtCreate(&lt));
    void *workspace;
    CUDA_CHECK(cudaMalloc(&workspace, WORKSPACE_BYTES));
    gemm_shape best_shape = {0, 0, 0};
    shape_result best = {0.0, -1, 0, false, CUBLAS_STATUS_SUCCESS};
    cublasStatus_t last_status = CUBLAS_STATUS_SUCCESS;
    int skipped_for_memory = 0;
    gpu_clock_watch w = gpu_clock_watch_start(c);
    for (int i = 0; i < n_shapes; i++) {
        gemm_shape s = shapes[i];
        size_t need = kind.ab_bytes * (size_t)s.k * ((size_t)s.m + s.n) +
                      kind.cd_bytes * (size_t)s.m * s.n;
        size_t free_b = 0, total_b = 0;
        CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
        if (need > free_b / 10 * 9) {
            skipped_for_memory++;
            continue;
        }
        shape_result sr = run_shape(c, lt, type, s, workspace);
        last_status = sr.status;
        if (sr.gflops > best.gflops) {
            best = sr;
            best_shape = s;
        }
    }
    gpu_clock_watch_stop(w, &r);
    r.value = best.gflops;
    if (best.gflops > 0)
        snprintf(r.detail, sizeof r.detail,
                 "cuBLASLt TN GEMM %s in; fp32 accumulate%s; best %dx%dx%d (algo %d of %d); "
                 "best of %d shape(s)",
                 kind.name, type == GPU_GEMM_FP8 ? " (fast accum)" : "", best_shape.m,
                 best_shape.n, best_shape.k, best.algo + 1, best.algos, n_shapes);
    else if (skipped_for_memory == n_shapes)
        snprintf(r.detail, sizeof r.detail, "%s GEMM: no shape fits in device memory", kind.name);
    else
        snprintf(r.detail, sizeof r.detail, "cuBLASLt offers no %s GEMM here (%s)", kind.name,
                 cublasGetStatusString(last_status));
    CUDA_CHECK(cudaFree(workspace));
    CUBLASLT_CHECK(cublasLtDestroy(lt));
    return r;
}
