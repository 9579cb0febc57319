/* The cuBLASLt calls of the CUDA backend, on the host: D = alpha op(A)
 * op(B) + beta C in column-major order as cuBLASLt defines it (rows, cols
 * and leading dimension per layout, TRANSA/TRANSB on the descriptor), sums
 * in double, and the BIAS and RELU_BIAS epilogues (a bias per row of D, of
 * D's type). The heuristic offers one algorithm, needing FAKE_GEMM_WORKSPACE
 * (or the preference's limit, if less); a GEMM given less than its algorithm
 * needs is refused, and one leaves NaNs over the workspace it uses. Work
 * goes to the stream passed (fake_cuda.cpp). */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cublasLt.h>

#include "host_elements.h"
#include "host_launch.h"

struct cublasLtContext {
    int unused = 0;
};

namespace {

constexpr size_t FAKE_GEMM_WORKSPACE = 1 << 20;

struct matmul_desc {
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    const void *bias = nullptr;
};
struct matrix_layout {
    cudaDataType type;
    uint64_t rows, cols;
    int64_t ld;
};

matmul_desc *desc_of(cublasLtMatmulDesc_t d) { return (matmul_desc *)d; }
matrix_layout *layout_of(cublasLtMatrixLayout_t l) { return (matrix_layout *)l; }

using emu_host::element;

element element_of(cudaDataType t)
{
    return t == CUDA_R_16F ? element::f16 : t == CUDA_R_16BF ? element::bf16 : element::f32;
}

double load(cudaDataType t, const void *p, size_t i)
{
    return emu_host::load_element(element_of(t), p, i);
}

/* element (i, j) of op(M) for a matrix stored as layout l */
double at(const matrix_layout &l, const void *p, cublasOperation_t op, uint64_t i, uint64_t j)
{
    return op == CUBLAS_OP_N ? load(l.type, p, i + j * (uint64_t)l.ld)
                             : load(l.type, p, j + i * (uint64_t)l.ld);
}

/* An attribute's value copied into its field; refused if its size is not
 * the field's, as cuBLASLt refuses it. */
template <typename F> cublasStatus_t set_field(F *field, const void *buf, size_t bytes)
{
    if (bytes != sizeof *field)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(field, buf, bytes);
    return CUBLAS_STATUS_SUCCESS;
}

} // namespace

extern "C" {

const char *cublasLtGetStatusString(cublasStatus_t status)
{
    static char text[64];
    snprintf(text, sizeof text, "CUBLAS_STATUS %d (host emulator)", (int)status);
    return text;
}
const char *cublasLtGetStatusName(cublasStatus_t status) { return cublasLtGetStatusString(status); }
cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle)
{
    *handle = new cublasLtContext;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle)
{
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute,
                                        cudaDataType_t scale)
{
    if (scale != CUDA_R_32F ||
        (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_TF32))
        return CUBLAS_STATUS_NOT_SUPPORTED; /* the backend asks for these only */
    matmul_desc *m = new matmul_desc;
    m->compute = compute;
    *d = (cublasLtMatmulDesc_t)m;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
    delete desc_of(d);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr, const void *buf,
                                              size_t bytes)
{
    matmul_desc *m = desc_of(d);
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA: return set_field(&m->trans_a, buf, bytes);
    case CUBLASLT_MATMUL_DESC_TRANSB: return set_field(&m->trans_b, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return set_field(&m->epilogue, buf, bytes);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return set_field(&m->bias, buf, bytes);
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld)
{
    if (ld < (int64_t)rows || rows == 0 || cols == 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    *l = (cublasLtMatrixLayout_t) new matrix_layout{type, rows, cols, ld};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
    delete layout_of(l);
    return CUBLAS_STATUS_SUCCESS;
}
/* a preference: the most workspace the algorithm may need (cuBLASLt's
 * default is none) */
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    *p = (cublasLtMatmulPreference_t) new size_t(0);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
    delete (size_t *)p;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *value, size_t size)
{
    if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) {
        if (size != sizeof(uint64_t))
            return CUBLAS_STATUS_INVALID_VALUE;
        uint64_t v;
        memcpy(&v, value, sizeof v);
        *(size_t *)p = (size_t)v;
    }
    return CUBLAS_STATUS_SUCCESS;
}

static bool has_bias(const matmul_desc &m)
{
    return m.epilogue == CUBLASLT_EPILOGUE_BIAS || m.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
}

/* The GEMM as CUPTI's metric pass would count it: m n k multiply-adds, on
 * the tensor cores for fp16 and bf16 inputs and for TF32 compute; A, B (and
 * C where beta is not 0, and the bias) read once, D written once. */
static emu_host::kernel_work work_of(const matmul_desc &m, const matrix_layout &a,
                                     const matrix_layout &b, const matrix_layout &d, uint64_t k,
                                     float beta)
{
    emu_host::kernel_work w;
    double macs = (double)d.rows * d.cols * k;
    if (a.type != CUDA_R_32F || m.compute == CUBLAS_COMPUTE_32F_FAST_TF32) {
        w.tensor_ops = 2 * macs;
        w.tensor_src = emu_host::tensor_source(element_of(a.type));
    } else
        w.ffma = macs;
    auto bytes = [](const matrix_layout &l) {
        return (double)l.rows * l.cols * emu_host::element_bytes(element_of(l.type));
    };
    w.bytes_read = bytes(a) + bytes(b) + (beta != 0.0f ? bytes(d) : 0.0) +
                   (has_bias(m) ? (double)d.rows * emu_host::element_bytes(element_of(d.type))
                                : 0.0);
    w.bytes_written = bytes(d);
    return w;
}

/* op(A) is m x k, op(B) k x n, C and D m x n */
static bool shapes_agree(const matmul_desc &m, const matrix_layout &a, const matrix_layout &b,
                         const matrix_layout &c)
{
    uint64_t am = m.trans_a == CUBLAS_OP_N ? a.rows : a.cols;
    uint64_t ak = m.trans_a == CUBLAS_OP_N ? a.cols : a.rows;
    uint64_t bk = m.trans_b == CUBLAS_OP_N ? b.rows : b.cols;
    uint64_t bn = m.trans_b == CUBLAS_OP_N ? b.cols : b.rows;
    return am == c.rows && ak == bk && bn == c.cols;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t d,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t *results,
                                              int *returned)
{
    if (requested < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!shapes_agree(*desc_of(d), *layout_of(a), *layout_of(b), *layout_of(c)))
        return CUBLAS_STATUS_INVALID_VALUE;
    memset(results, 0, sizeof *results);
    /* FAKE_CUBLASLT_OFFER_NONE=1: success with no result, as cuBLASLt
     * answers a layout it has no kernel for */
    const char *none = getenv("FAKE_CUBLASLT_OFFER_NONE");
    if (none && strcmp(none, "1") == 0) {
        *returned = 0;
        return CUBLAS_STATUS_SUCCESS;
    }
    size_t allowed = *(const size_t *)pref;
    results->workspaceSize = allowed < FAKE_GEMM_WORKSPACE ? allowed : FAKE_GEMM_WORKSPACE;
    /* the algorithm remembers what it needs */
    results->algo.data[0] = results->workspaceSize;
    results->state = CUBLAS_STATUS_SUCCESS;
    results->wavesCount = 1.0f;
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t d, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t ad, const void *B,
                              cublasLtMatrixLayout_t bd, const void *beta, const void *C,
                              cublasLtMatrixLayout_t cd, void *D, cublasLtMatrixLayout_t dd,
                              const cublasLtMatmulAlgo_t *algo, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream)
{
    size_t needs = algo ? (size_t)algo->data[0] : workspace_bytes;
    if (needs > workspace_bytes || (workspace_bytes && !workspace))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    matmul_desc m = *desc_of(d);
    matrix_layout a = *layout_of(ad), b = *layout_of(bd), c = *layout_of(cd), out = *layout_of(dd);
    if (!shapes_agree(m, a, b, c) || c.rows != out.rows || c.cols != out.cols)
        return CUBLAS_STATUS_INVALID_VALUE;
    bool bias = has_bias(m);
    bool relu = m.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS || m.epilogue == CUBLASLT_EPILOGUE_RELU;
    if (m.epilogue != CUBLASLT_EPILOGUE_DEFAULT && !bias && !relu)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (bias && !m.bias)
        return CUBLAS_STATUS_INVALID_VALUE;
    float al = *(const float *)alpha, be = *(const float *)beta;
    uint64_t k = m.trans_a == CUBLAS_OP_N ? a.cols : a.rows;
    emu_host::run_kernel(stream, "fake_cublasLt_gemm", dim3(1), dim3(1), [=]() {
        emu_host::leave_nans(workspace, needs);
        /* op(A) row by row and op(B) column by column in double first: the
         * loops then run over contiguous memory */
        std::vector<double> rows(out.rows * k), cols(out.cols * k);
        for (uint64_t i = 0; i < out.rows; i++)
            for (uint64_t p = 0; p < k; p++)
                rows[i * k + p] = at(a, A, m.trans_a, i, p);
        for (uint64_t j = 0; j < out.cols; j++)
            for (uint64_t p = 0; p < k; p++)
                cols[j * k + p] = at(b, B, m.trans_b, p, j);
        for (uint64_t j = 0; j < out.cols; j++)
            for (uint64_t i = 0; i < out.rows; i++) {
                double s = 0.0;
                for (uint64_t p = 0; p < k; p++)
                    s += rows[i * k + p] * cols[j * k + p];
                double v = al * s;
                if (be != 0.0f)
                    v += be * load(c.type, C, i + j * (uint64_t)c.ld);
                if (bias)
                    v += load(out.type, m.bias, i);
                if (relu && v < 0.0)
                    v = 0.0;
                emu_host::store_element(element_of(out.type), D, i + j * (uint64_t)out.ld, v);
            }
    }, work_of(m, a, b, out, k, be));
    return CUBLAS_STATUS_SUCCESS;
}

} // extern "C"
