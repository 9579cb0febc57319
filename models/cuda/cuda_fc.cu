/* Fully connected layers on cuBLASLt. Row-major X [N][Fi], W [Fo][Fi] and
 * Y [N][Fo] are, to column-major cuBLASLt, X^T, W^T and Y^T, so
 *   forward      Y^T  = W^T^T X^T   A = W (Fi x Fo, transposed), B = X (Fi x N)
 *   bwd_data     dX^T = W^T dY^T     A = W (Fi x Fo),             B = dY (Fo x N)
 *   bwd_weights  dW^T = X^T dY       A = X (Fi x N),              B = dY (Fo x N, transposed)
 * The forward adds the bias (and a fused ReLU) in cuBLASLt's epilogue where
 * its heuristic offers an algorithm for it, else in an own kernel; the bias
 * gradient is an own per-channel sum. Each GEMM's algorithm is the
 * heuristic's first within CUDA_FC_WORKSPACE, chosen once (where it offers
 * none, cuBLASLt chooses at each call); its workspace is the operation's
 * region of the arena. */
#include <stdlib.h>

#include "cuda_internal.h"

static cudaDataType_t blas_type(elem_type e)
{
    return e == ELEM_F16 ? CUDA_R_16F : e == ELEM_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

static int make_desc(backend *b, cublasLtMatmulDesc_t *desc, cublasOperation_t ta,
                     cublasOperation_t tb)
{
    cublasComputeType_t compute =
        b->pp.prec == PREC_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    CUBLAS_TRY(b, cublasLtMatmulDescCreate(desc, compute, CUDA_R_32F));
    CUBLAS_TRY(b, cublasLtMatmulDescSetAttribute(*desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CUBLAS_TRY(b, cublasLtMatmulDescSetAttribute(*desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    return 0;
}

/* The heuristic's first algorithm for GEMM p within the search workspace
 * (at most CUDA_FC_WORKSPACE), and the workspace to give it, what it needs;
 * 1 when it offers none. */
static int choose(backend *b, cuda_fc *f, int p, cublasLtMatmulAlgo_t *algo)
{
    cublasLtMatmulPreference_t pref;
    CUBLAS_TRY(b, cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = b->search_workspace_bytes < (size_t)CUDA_FC_WORKSPACE ? b->search_workspace_bytes
                                                                     : (size_t)CUDA_FC_WORKSPACE;
    cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(b->lt, f->desc[p], f->a[p], f->b[p], f->c[p], f->c[p],
                                            pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    /* a returned result's algo is valid only where its own state is SUCCESS
     * (cublasLt.h, cublasLtMatmulHeuristicResult_t::state) */
    if (st == CUBLAS_STATUS_NOT_SUPPORTED ||
        (st == CUBLAS_STATUS_SUCCESS && (found == 0 || result.state != CUBLAS_STATUS_SUCCESS)))
        return 1;
    CUBLAS_TRY(b, st);
    *algo = result.algo;
    f->workspace[p] = result.workspaceSize;
    return 0;
}

int cuda_fc_setup(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cuda_layer *cl = &b->layers[i];
    cuda_fc *f = (cuda_fc *)calloc(1, sizeof *f);
    if (!f)
        return cuda_fail(b, "out of host memory");
    cl->fc = f;
    uint64_t n = (uint64_t)b->cfg.batch, fi = (uint64_t)shape_elems(l->in_shape),
             fo = (uint64_t)l->out_channels;
    cudaDataType_t t = blas_type(b->pp.elem);
    /* forward */
    if (make_desc(b, &f->desc[0], CUBLAS_OP_T, CUBLAS_OP_N))
        return -1;
    CUBLAS_TRY(b, cublasLtMatrixLayoutCreate(&f->a[0], t, fi, fo, (int64_t)fi));
    CUBLAS_TRY(b, cublasLtMatrixLayoutCreate(&f->b[0], t, fi, n, (int64_t)fi));
    CUBLAS_TRY(b, cublasLtMatrixLayoutCreate(&f->c[0], t, fo, n, (int64_t)fo));
    /* backward data */
    if (make_desc(b, &f->desc[1], CUBLAS_OP_N, CUBLAS_OP_N))
        return -1;
    CUBLAS_TRY(b, cublasLtMatrixLayoutCreate(&f->a[1], t, fi, fo, (int64_t)fi));
    CUBLAS_TRY(b, cublasLtMatrixLayoutCreate(&f->b[1], t, fo, n, (int64_t)fo));
    CUBLAS_TRY(b, cublasLtMatrixLayoutCreate(&f->c[1], t, fi, n, (int64_t)fi));
    /* backward weights */
    if (make_desc(b, &f->desc[2], CUBLAS_OP_N, CUBLAS_OP_T))
        return -1;
    CUBLAS_TRY(b, cublasLtMatrixLayoutCreate(&f->a[2], t, fi, n, (int64_t)fi));
    CUBLAS_TRY(b, cublasLtMatrixLayoutCreate(&f->b[2], t, fo, n, (int64_t)fo));
    CUBLAS_TRY(b, cublasLtMatrixLayoutCreate(&f->c[2], t, fi, fo, (int64_t)fi));

    /* the bias and a fused ReLU in the forward's epilogue, where offered */
    if (l->has_bias && b->fusion[i].act != ACT_RELU6) {
        cublasLtEpilogue_t epi = b->fusion[i].act == ACT_RELU ? CUBLASLT_EPILOGUE_RELU_BIAS
                                                              : CUBLASLT_EPILOGUE_BIAS;
        const void *bias = cl->bias_copy;
        CUBLAS_TRY(b, cublasLtMatmulDescSetAttribute(f->desc[0], CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                     &epi, sizeof epi));
        CUBLAS_TRY(b, cublasLtMatmulDescSetAttribute(f->desc[0], CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                     &bias, sizeof bias));
        int rc = choose(b, f, 0, &f->algo[0]);
        if (rc < 0)
            return -1;
        b->bias_in_call[i] = rc == 0;
        if (!b->bias_in_call[i]) {
            cublasLtEpilogue_t none = CUBLASLT_EPILOGUE_DEFAULT;
            CUBLAS_TRY(b, cublasLtMatmulDescSetAttribute(f->desc[0], CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                         &none, sizeof none));
        }
    }
    static const char *const gemm_names[3] = {"forward", "backward-data", "backward-weights"};
    for (int p = 0; p < 3; p++) {
        if (p == 0 && b->bias_in_call[i])
            continue;
        if (p == 1 && !l->computes_input_grad)
            continue;
        int rc = choose(b, f, p, &f->algo[p]);
        if (rc < 0)
            return -1;
        /* cublasLtMatmul given no algorithm would ask the same heuristic,
         * with no workspace at all: say so here, not at the first step */
        if (rc == 1)
            return cuda_fail(b, "cuBLASLt's heuristic offers no algorithm for its %s GEMM",
                             gemm_names[p]);
    }
    return 0;
}

void cuda_fc_destroy(cuda_fc *f)
{
    for (int p = 0; p < 3; p++) {
        if (f->desc[p])
            cublasLtMatmulDescDestroy(f->desc[p]);
        if (f->a[p])
            cublasLtMatrixLayoutDestroy(f->a[p]);
        if (f->b[p])
            cublasLtMatrixLayoutDestroy(f->b[p]);
        if (f->c[p])
            cublasLtMatrixLayoutDestroy(f->c[p]);
    }
}

static const float one = 1.0f, zero = 0.0f;

static int gemm(backend *b, int i, int p, const void *a, const void *bm, void *c,
                bool accumulate)
{
    cuda_fc *f = b->layers[i].fc;
    cuda_workspace ws = cuda_workspace_of(b, i, p != 0);
    CUBLAS_TRY(b, cublasLtMatmul(b->lt, f->desc[p], &one, a, f->a[p], bm, f->b[p],
                                 accumulate ? &one : &zero, c, f->c[p], c, f->c[p],
                                 &f->algo[p], ws.ptr, ws.bytes,
                                 b->stream));
    return 0;
}

int cuda_fc_forward(backend *b, int i)
{
    cuda_layer *cl = &b->layers[i];
    if (gemm(b, i, 0, cl->w_copy, cuda_input(b, i, 0), cl->out, false))
        return -1;
    if (b->net->layers[i].has_bias && !b->bias_in_call[i])
        return cuda_bias_act(b, i, b->fusion[i].act);
    return 0;
}

int cuda_fc_backward_data(backend *b, int i, bool accumulate)
{
    cuda_layer *cl = &b->layers[i];
    return gemm(b, i, 1, cl->w_copy, cl->grad, cuda_input_grad(b, i, 0), accumulate);
}

int cuda_fc_backward_weights(backend *b, int i)
{
    cuda_layer *cl = &b->layers[i];
    if (gemm(b, i, 2, cuda_input(b, i, 0), cl->grad, cl->dw, false))
        return -1;
    if (fusion_own_bias_grad(&b->net->layers[i], &b->fusion[i]))
        return cuda_bias_grad(b, i, cl->dbias, b->pp.elem);
    return 0;
}
