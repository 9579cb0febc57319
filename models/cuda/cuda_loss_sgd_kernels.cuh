/* The loss and update kernels of cuda_loss_sgd.cu (which says what they do
 * and why), apart from their launches: the backend's .cu and the host
 * emulator's tests (tests/emu/) include the same code. The update's tables
 * (sgd_tensor, sgd_chunk) and the loss scale's state are the backend's
 * (cuda_internal.h, loss_scale.h). */
#ifndef ROOFLINE_CUDA_LOSS_SGD_KERNELS_CUH
#define ROOFLINE_CUDA_LOSS_SGD_KERNELS_CUH

#include <math.h>

#include "cuda_device.cuh"
#include "cuda_internal.h"

enum { LOSS_THREADS = 256, SGD_THREADS = 256 };

template <typename T> __device__ __forceinline__ float grad_at(const void *g, int64_t j)
{
    return to_float(((const T *)g)[j]);
}

__device__ __forceinline__ float load_any(const void *p, int elem, int64_t j)
{
    if (elem == ELEM_F16)
        return grad_at<__half>(p, j);
    if (elem == ELEM_BF16)
        return grad_at<__nv_bfloat16>(p, j);
    return grad_at<float>(p, j);
}

__device__ __forceinline__ void store_any(void *p, int elem, int64_t j, float v)
{
    if (elem == ELEM_F16)
        ((__half *)p)[j] = __float2half_rn(v);
    else if (elem == ELEM_BF16)
        ((__nv_bfloat16 *)p)[j] = __float2bfloat16_rn(v);
    else
        ((float *)p)[j] = v;
}

/* ---- loss --------------------------------------------------------------------- */

__device__ float block_reduce(float v, float *shared, bool is_max)
{
    shared[threadIdx.x] = v;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            float o = shared[threadIdx.x + half];
            shared[threadIdx.x] = is_max ? fmaxf(shared[threadIdx.x], o) : shared[threadIdx.x] + o;
        }
        __syncthreads();
    }
    float r = shared[0];
    __syncthreads();
    return r;
}

template <typename T>
__global__ void softmax_xent_kernel(const T *logits, T *dlogits, const int32_t *labels,
                                    float *loss_each, const loss_scale_state *scale,
                                    float *grad_scale, int classes, int batch)
{
    __shared__ float shared[LOSS_THREADS];
    int img = blockIdx.x;
    const T *z = logits + (int64_t)img * classes;
    T *dz = dlogits + (int64_t)img * classes;
    float top = -INFINITY;
    for (int c = threadIdx.x; c < classes; c += blockDim.x)
        top = fmaxf(top, to_float(z[c]));
    top = block_reduce(top, shared, true);
    float sum = 0.0f;
    for (int c = threadIdx.x; c < classes; c += blockDim.x)
        sum += expf(to_float(z[c]) - top);
    sum = block_reduce(sum, shared, false);
    float log_sum = top + logf(sum);
    int label = labels[img];
    float factor = scale->scale / (float)batch;
    for (int c = threadIdx.x; c < classes; c += blockDim.x) {
        float p = expf(to_float(z[c]) - log_sum);
        dz[c] = from_float<T>((p - (c == label ? 1.0f : 0.0f)) * factor);
    }
    if (threadIdx.x == 0)
        loss_each[img] = log_sum - to_float(z[label]);
    if (img == 0 && threadIdx.x == 0)
        *grad_scale = scale->scale; /* what this step's gradients are multiplied by */
}

/* The batch mean in a fixed order: thread t adds images t, t + 256, ... in
 * double, then a tree. */
__global__ void mean_kernel(const float *each, int batch, float *mean)
{
    __shared__ double shared[LOSS_THREADS];
    double s = 0.0;
    for (int k = threadIdx.x; k < batch; k += blockDim.x)
        s += each[k];
    shared[threadIdx.x] = s;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            shared[threadIdx.x] += shared[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *mean = (float)(shared[0] / batch);
}

/* ---- the fused update ----------------------------------------------------------- */

__global__ void find_non_finite_kernel(const sgd_tensor *tensors, const sgd_chunk *chunks,
                                       loss_scale_state *scale)
{
    sgd_chunk ch = chunks[blockIdx.x];
    const sgd_tensor t = tensors[ch.tensor];
    bool bad = false;
    for (int64_t j = ch.start + threadIdx.x; j < ch.start + ch.len; j += blockDim.x)
        bad |= !isfinite(load_any(t.grad, t.grad_elem, j));
    if (__syncthreads_or(bad) && threadIdx.x == 0)
        scale->found_inf = 1;
}

__global__ void sgd_kernel(const sgd_tensor *tensors, const sgd_chunk *chunks,
                           const loss_scale_state *scale, float lr, float momentum,
                           float weight_decay)
{
    if (scale->found_inf)
        return; /* this step is skipped: a gradient overflowed */
    sgd_chunk ch = chunks[blockIdx.x];
    const sgd_tensor t = tensors[ch.tensor];
    float unscale = 1.0f / scale->scale;
    for (int64_t j = ch.start + threadIdx.x; j < ch.start + ch.len; j += blockDim.x) {
        float w = t.master[j];
        float d = load_any(t.grad, t.grad_elem, j) * unscale + weight_decay * w;
        float v = momentum * t.momentum[j] + d;
        w -= lr * v;
        t.momentum[j] = v;
        t.master[j] = w;
        if (t.copy)
            store_any(t.copy, t.copy_elem, j, w);
    }
}

__global__ void loss_scale_kernel(loss_scale_state *scale)
{
    loss_scale_update(scale);
}

/* The update's cut of a tensor of n elements into thread blocks: chunks of
 * SGD_CHUNK elements in order, the last one shorter. Writes them, as chunks
 * of `tensor`, at out unless it is NULL; returns how many. */
static inline int64_t sgd_cut(int tensor, int64_t n, sgd_chunk *out)
{
    if (!out)
        return (n + SGD_CHUNK - 1) / SGD_CHUNK;
    int64_t k = 0;
    for (int64_t start = 0; start < n; start += SGD_CHUNK, k++) {
        out[k].tensor = tensor;
        out[k].start = start;
        out[k].len = n - start < (int64_t)SGD_CHUNK ? n - start : (int64_t)SGD_CHUNK;
    }
    return k;
}

#endif
