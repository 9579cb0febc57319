/* Tensor-core peaks: the best cuBLASLt GEMM over square and skinny shapes and
 * every algorithm the heuristic offers for each (up to 16), for tf32, fp16,
 * bf16 and fp8 (e4m3) inputs, accumulating in fp32. The layout is "TN" (A
 * transposed), the one fp8 requires, so all precisions share it. The winner
 * is timed once more with the NVML sampler running: tensor GEMMs draw enough
 * power that the SM clock drops well below boost, and the row says where. */
#include <cublasLt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_bench.h"
#include "peak_check.h"

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
/* Square from 4096 to 16384, then flat, deep, tall and wide: the best tile
 * and wave quantisation differ between them. Every side is a multiple of
 * 256 (fp8 needs multiples of 16). Shapes that do not fit are skipped. */
static const gemm_shape full_shapes[] = {
    {4096, 4096, 4096},   {8192, 8192, 8192},  {12288, 12288, 12288}, {16384, 16384, 16384},
    {16384, 16384, 8192}, {8192, 8192, 32768}, {32768, 4096, 8192},   {4096, 32768, 8192},
};
static const gemm_shape quick_shapes[] = {{8192, 8192, 8192}, {16384, 16384, 8192}};

enum { WORKSPACE_BYTES = 64 << 20, MAX_ALGOS = 16, QUICK_ALGOS = 2 };

static void fill_inputs(const gpu_context &c, gpu_gemm_type type, void *p, size_t n)
{
    switch (type) {
    case GPU_GEMM_TF32: gpu_fill(c, (float *)p, n, -1.f, 1.f); break;
    case GPU_GEMM_FP16: gpu_fill(c, (__half *)p, n, -1.f, 1.f); break;
    case GPU_GEMM_BF16: gpu_fill(c, (__nv_bfloat16 *)p, n, -1.f, 1.f); break;
    default: gpu_fill(c, (__nv_fp8_e4m3 *)p, n, -1.f, 1.f); break;
    }
}

/* One shape's descriptors, operands and the heuristic's algorithms. */
struct gemm_problem {
    gemm_shape s;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a_desc, b_desc, c_desc;
    cublasLtMatmulHeuristicResult_t heur[MAX_ALGOS];
    int offered;
    cublasStatus_t status;
    void *a, *b, *d;
};

static void problem_open(const gpu_context &c, cublasLtHandle_t lt, gpu_gemm_type type,
                         gemm_shape s, gemm_problem *p)
{
    const gemm_kind &kind = kinds[type];
    memset(p, 0, sizeof *p);
    p->s = s;
    CUBLASLT_CHECK(cublasLtMatmulDescCreate(&p->op, kind.compute, CUDA_R_32F));
    cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                                  sizeof trans_a));
    CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                                  sizeof trans_b));
    if (type == GPU_GEMM_FP8) {
        /* the vendor's fp8 figure assumes accumulation without the periodic
         * promotion to full fp32 */
        int8_t fast = 1;
        CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_FAST_ACCUM,
                                                      &fast, sizeof fast));
    }
    /* column-major: A is k x m (used transposed), B is k x n, C = D is m x n */
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p->a_desc, kind.ab_type, s.k, s.m, s.k));
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p->b_desc, kind.ab_type, s.k, s.n, s.k));
    CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&p->c_desc, kind.cd_type, s.m, s.n, s.m));
    cublasLtMatmulPreference_t pref;
    CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = WORKSPACE_BYTES;
    CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    /* no algorithm for this type on this GPU is an answer, not an error */
    int want = c.quick ? QUICK_ALGOS : MAX_ALGOS;
    p->status = cublasLtMatmulAlgoGetHeuristic(lt, p->op, p->a_desc, p->b_desc, p->c_desc,
                                               p->c_desc, pref, want, p->heur, &p->offered);
    if (p->status != CUBLAS_STATUS_SUCCESS && p->status != CUBLAS_STATUS_NOT_SUPPORTED)
        CUBLASLT_CHECK(p->status);
    if (p->status != CUBLAS_STATUS_SUCCESS)
        p->offered = 0;
    CUBLASLT_CHECK(cublasLtMatmulPreferenceDestroy(pref));
    if (p->offered > 0) {
        CUDA_CHECK(cudaMalloc(&p->a, kind.ab_bytes * s.k * s.m));
        CUDA_CHECK(cudaMalloc(&p->b, kind.ab_bytes * s.k * s.n));
        CUDA_CHECK(cudaMalloc(&p->d, kind.cd_bytes * s.m * s.n));
        fill_inputs(c, type, p->a, (size_t)s.k * s.m);
        fill_inputs(c, type, p->b, (size_t)s.k * s.n);
        CUDA_CHECK(cudaMemset(p->d, 0, kind.cd_bytes * s.m * s.n));
        CUDA_CHECK(cudaDeviceSynchronize());
    }
}

static void problem_close(gemm_problem *p)
{
    if (p->a) {
        CUDA_CHECK(cudaFree(p->a));
        CUDA_CHECK(cudaFree(p->b));
        CUDA_CHECK(cudaFree(p->d));
    }
    CUBLASLT_CHECK(cublasLtMatrixLayoutDestroy(p->a_desc));
    CUBLASLT_CHECK(cublasLtMatrixLayoutDestroy(p->b_desc));
    CUBLASLT_CHECK(cublasLtMatrixLayoutDestroy(p->c_desc));
    CUBLASLT_CHECK(cublasLtMatmulDescDestroy(p->op));
}

/* Times `algo` on p: one call alone sizes the batches to about target_ms
 * each. */
static gpu_timing time_algo(cublasLtHandle_t lt, gemm_problem *p, const cublasLtMatmulAlgo_t *algo,
                            void *workspace, double target_ms, int trials)
{
    const float alpha = 1.0f, beta = 0.0f;
    auto call = [&] {
        CUBLASLT_CHECK(cublasLtMatmul(lt, p->op, &alpha, p->a, p->a_desc, p->b, p->b_desc, &beta,
                                      p->d, p->c_desc, p->d, p->c_desc, algo,
                                      workspace, WORKSPACE_BYTES, 0));
    };
    gpu_timing once = gpu_time(call, 1, 1);
    int reps = once.best_ms > 0 ? (int)ceil(target_ms / once.best_ms) : 1;
    reps = reps < 1 ? 1 : reps > 50 ? 50 : reps;
    return gpu_time(call, reps, trials);
}

/* "algo 23, tile 18, stages 11, split-k 1" from the algorithm's own
 * attributes; what cannot be read is left out. */
static void describe_algo(const cublasLtMatmulAlgo_t *algo, char *out, size_t len)
{
    int32_t id = -1, splitk = 0;
    uint32_t tile = 0, stages = 0;
    size_t written = 0;
    bool ok_id = cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, &id,
                                                      sizeof id, &written) ==
                 CUBLAS_STATUS_SUCCESS;
    bool ok_tile = cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                                        sizeof tile, &written) ==
                   CUBLAS_STATUS_SUCCESS;
    bool ok_stages = cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID,
                                                          &stages, sizeof stages, &written) ==
                     CUBLAS_STATUS_SUCCESS;
    bool ok_splitk = cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                                          &splitk, sizeof splitk, &written) ==
                     CUBLAS_STATUS_SUCCESS;
    snprintf(out, len, "algo %d", ok_id ? (int)id : -1);
    size_t used = strlen(out);
    if (ok_tile && used < len)
        used += (size_t)snprintf(out + used, len - used, ", tile %u", (unsigned)tile);
    if (ok_stages && used < len)
        used += (size_t)snprintf(out + used, len - used, ", stages %u", (unsigned)stages);
    if (ok_splitk && used < len)
        snprintf(out + used, len - used, ", split-k %d", (int)splitk);
}

struct gemm_winner {
    double gflops;
    gemm_shape shape;
    cublasLtMatmulAlgo_t algo_id; /* the algorithm itself: a plain struct, kept by value */
    int algo, offered;
    char algo_text[96];
};

gpu_result gpu_gemm_peak(const gpu_context &c, gpu_gemm_type type)
{
    const gemm_kind &kind = kinds[type];
    gpu_result r = gpu_result_empty();
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
    gemm_winner best;
    memset(&best, 0, sizeof best);
    best.algo = -1;
    cublasStatus_t last_status = CUBLAS_STATUS_SUCCESS;
    int skipped_for_memory = 0, runs = 0;
    r.algos_offered_min = r.algos_tried_min = MAX_ALGOS + 1;
    r.all_offered_tried = true;
    double target_ms = c.quick ? 5.0 : 20.0;
    int trials = (c.quick ? 1 : 3) + c.effort - 1;
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
        gemm_problem p;
        problem_open(c, lt, type, s, &p);
        last_status = p.status;
        if (p.offered > 0) {
            int tried = 0;
            for (int a = 0; a < p.offered; a++) {
                if (p.heur[a].state != CUBLAS_STATUS_SUCCESS ||
                    p.heur[a].workspaceSize > WORKSPACE_BYTES)
                    continue;
                gpu_timing t = time_algo(lt, &p, &p.heur[a].algo, workspace, target_ms, trials);
                double gflops = gpu_rate(t, 2.0 * s.m * s.n * (double)s.k, NULL);
                tried++;
                runs++;
                if (gflops > best.gflops) {
                    best.gflops = gflops;
                    best.shape = s;
                    best.algo = a;
                    best.algo_id = p.heur[a].algo;
                    best.offered = p.offered;
                    describe_algo(&p.heur[a].algo, best.algo_text, sizeof best.algo_text);
                }
            }
            r.shapes_tried++;
            r.algos_offered_min = p.offered < r.algos_offered_min ? p.offered : r.algos_offered_min;
            r.algos_tried_min = tried < r.algos_tried_min ? tried : r.algos_tried_min;
            r.all_offered_tried = r.all_offered_tried && tried == p.offered;
        }
        problem_close(&p);
    }
    if (r.shapes_tried == 0) {
        r.algos_offered_min = r.algos_tried_min = 0;
        r.all_offered_tried = false;
    }
    if (best.gflops > 0) {
        /* the winner again, long enough for the NVML sampler (20 ms period)
         * to see the clock it runs at; its trials also give the runner-up */
        gemm_problem p;
        problem_open(c, lt, type, best.shape, &p);
        if (p.offered > 0) {
            gpu_clock_watch w = gpu_clock_watch_start(c);
            gpu_timing t = time_algo(lt, &p, &best.algo_id, workspace, 100.0, 3 + c.effort - 1);
            gpu_clock_watch_stop(w, &r);
            double second, top = NAN;
            double again = gpu_rate(t, 2.0 * best.shape.m * best.shape.n * (double)best.shape.k,
                                    &second);
            check_top2(best.gflops, &top, &r.second);
            check_top2(again, &top, &r.second);
            check_top2(second, &top, &r.second);
            best.gflops = top;
        }
        problem_close(&p);
    }
    r.value = best.gflops;
    if (best.gflops > 0)
        snprintf(r.detail, sizeof r.detail,
                 "cuBLASLt TN GEMM %s in; fp32 accumulate%s; best %dx%dx%d (m x n x k), %s "
                 "(%d of %d the heuristic offered); %d shape(s) x every offered algorithm (at "
                 "most %d): %d runs",
                 kind.name, type == GPU_GEMM_FP8 ? " (fast accum)" : "", best.shape.m,
                 best.shape.n, best.shape.k, best.algo_text, best.algo + 1, best.offered,
                 r.shapes_tried, c.quick ? QUICK_ALGOS : MAX_ALGOS, runs);
    else if (skipped_for_memory == n_shapes)
        snprintf(r.detail, sizeof r.detail, "%s GEMM: no shape fits in device memory", kind.name);
    else
        snprintf(r.detail, sizeof r.detail, "cuBLASLt offers no %s GEMM here (%s)", kind.name,
                 cublasGetStatusString(last_status));
    CUDA_CHECK(cudaFree(workspace));
    CUBLASLT_CHECK(cublasLtDestroy(lt));
    return r;
}
