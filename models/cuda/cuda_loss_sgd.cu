/* Softmax cross-entropy and the fused SGD update.
 *
 * The loss: one block per image (max, sum of exponentials, the logits'
 * gradient times the loss scale), then one block adds the images' losses in
 * a fixed order; the mean goes to pinned host memory by the step's own copy,
 * so it is read after the step's sync, and a CUDA graph replays it too.
 *
 * The update: every parameter tensor of the network in one kernel, a thread
 * block per chunk of a tensor (PyTorch's form: g += wd w; v = m v + g;
 * w -= lr v), writing the fp32 master and its fp16/bf16 copy in the same
 * pass. With fp16 a first kernel looks for a non-finite gradient; the update
 * then skips the step, and a one-thread kernel moves the loss scale
 * (loss_scale.h). All of it reads the scale on the device: no host round
 * trip, nothing a graph could not replay. */
#include <math.h>
#include <stdlib.h>

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
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
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
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            shared[threadIdx.x] += shared[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *mean = (float)(shared[0] / batch);
}

int cuda_loss_run(backend *b)
{
    const network *net = b->net;
    int last = net->n_layers - 1, n = b->cfg.batch;
    cuda_layer *cl = &b->layers[last];
    if (cuda_elems(b, last) != (int64_t)n * net->classes)
        return cuda_fail(b, "the last layer does not output %d logits per image", net->classes);
    with_elem(b->pp.elem, [&](auto tag) {
        using T = decltype(tag);
        softmax_xent_kernel<T><<<n, LOSS_THREADS, 0, b->stream>>>(
            (const T *)cl->out, (T *)cl->grad, b->labels, b->loss_each, b->scale_dev,
            b->grad_scale, net->classes, n);
        return 0;
    });
    LAUNCH_TRY(b);
    mean_kernel<<<1, LOSS_THREADS, 0, b->stream>>>(b->loss_each, n, b->loss_dev);
    LAUNCH_TRY(b);
    CUDA_TRY(b, cudaMemcpyAsync(b->loss_host, b->loss_dev, sizeof(float), cudaMemcpyDeviceToHost,
                                b->stream));
    return 0;
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

static int add_tensor(sgd_tensor *list, int *n, float *master, const void *grad, elem_type ge,
                      float *mom, void *copy, elem_type ce, int64_t elems)
{
    if (elems == 0)
        return 0;
    sgd_tensor t;
    t.master = master;
    t.grad = grad;
    t.momentum = mom;
    t.copy = copy != (void *)master ? copy : NULL;
    t.grad_elem = ge;
    t.copy_elem = ce;
    t.n = elems;
    list[(*n)++] = t;
    return 0;
}

int cuda_sgd_setup(backend *b)
{
    const network *net = b->net;
    int cap = 2 * net->n_layers, n = 0;
    sgd_tensor *tensors = (sgd_tensor *)malloc((size_t)(cap > 0 ? cap : 1) * sizeof *tensors);
    if (!tensors)
        return cuda_fail(b, "out of host memory");
    for (int i = 0; i < net->n_layers; i++) {
        const layer *l = &net->layers[i];
        cuda_layer *cl = &b->layers[i];
        if (l->params == 0)
            continue;
        bool bn = l->type == LAYER_BN;
        elem_type ge = bn ? ELEM_F32 : b->pp.elem;
        add_tensor(tensors, &n, cl->w, cl->dw, ge, cl->vw, cl->w_copy, b->pp.elem,
                   backend_buffer_elems(net, i, b->cfg.batch, BUF_WEIGHT));
        add_tensor(tensors, &n, cl->bias, cl->dbias, ge, cl->vbias, cl->bias_copy, b->pp.elem,
                   backend_buffer_elems(net, i, b->cfg.batch, BUF_BIAS));
    }
    int64_t n_chunks = 0;
    for (int t = 0; t < n; t++)
        n_chunks += (tensors[t].n + SGD_CHUNK - 1) / SGD_CHUNK;
    sgd_chunk *chunks = (sgd_chunk *)malloc((size_t)(n_chunks > 0 ? n_chunks : 1) * sizeof *chunks);
    if (!chunks) {
        free(tensors);
        return cuda_fail(b, "out of host memory");
    }
    int64_t k = 0;
    for (int t = 0; t < n; t++)
        for (int64_t start = 0; start < tensors[t].n; start += SGD_CHUNK) {
            chunks[k].tensor = t;
            chunks[k].start = start;
            chunks[k].len = tensors[t].n - start < (int64_t)SGD_CHUNK ? tensors[t].n - start
                                                                : (int64_t)SGD_CHUNK;
            k++;
        }
    int rc = 0;
    if (n_chunks > 0x7fffffff)
        rc = cuda_fail(b, "too many parameters for one update kernel");
    if (rc == 0)
        rc = cuda_alloc(b, (void **)&b->sgd_tensors, (size_t)n * sizeof *tensors, "the update");
    if (rc == 0)
        rc = cuda_alloc(b, (void **)&b->sgd_chunks, (size_t)n_chunks * sizeof *chunks,
                        "the update");
    /* on the backend's stream, after the zeroing cuda_alloc queued there (the
     * stream does not synchronise with the legacy default stream) */
    if (rc == 0 && n > 0 &&
        cudaMemcpyAsync(b->sgd_tensors, tensors, (size_t)n * sizeof *tensors,
                        cudaMemcpyHostToDevice, b->stream) != cudaSuccess)
        rc = cuda_fail(b, "copying the update's tables: %s",
                       cudaGetErrorString(cudaGetLastError()));
    if (rc == 0 && n_chunks > 0 &&
        cudaMemcpyAsync(b->sgd_chunks, chunks, (size_t)n_chunks * sizeof *chunks,
                        cudaMemcpyHostToDevice, b->stream) != cudaSuccess)
        rc = cuda_fail(b, "copying the update's tables: %s",
                       cudaGetErrorString(cudaGetLastError()));
    /* the host tables are freed below: the copies must be done */
    if (rc == 0 && cudaStreamSynchronize(b->stream) != cudaSuccess)
        rc = cuda_fail(b, "copying the update's tables: %s",
                       cudaGetErrorString(cudaGetLastError()));
    b->n_sgd_tensors = n;
    b->n_sgd_chunks = (int)n_chunks;
    free(tensors);
    free(chunks);
    return rc;
}

int cuda_sgd_run(backend *b, const sgd_params *sgd)
{
    if (b->n_sgd_chunks == 0)
        return 0;
    if (b->pp.loss_scaling) {
        find_non_finite_kernel<<<b->n_sgd_chunks, SGD_THREADS, 0, b->stream>>>(
            b->sgd_tensors, b->sgd_chunks, b->scale_dev);
        LAUNCH_TRY(b);
    }
    sgd_kernel<<<b->n_sgd_chunks, SGD_THREADS, 0, b->stream>>>(
        b->sgd_tensors, b->sgd_chunks, b->scale_dev, sgd->lr, sgd->momentum, sgd->weight_decay);
    LAUNCH_TRY(b);
    if (b->pp.loss_scaling) {
        loss_scale_kernel<<<1, 1, 0, b->stream>>>(b->scale_dev);
        LAUNCH_TRY(b);
    }
    return 0;
}
