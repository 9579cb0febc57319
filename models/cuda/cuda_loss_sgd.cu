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
#include <stdlib.h>

#include "cuda_loss_sgd_kernels.cuh"
#include "cuda_internal.h"

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
        n_chunks += sgd_cut(t, tensors[t].n, NULL);
    sgd_chunk *chunks = (sgd_chunk *)malloc((size_t)(n_chunks > 0 ? n_chunks : 1) * sizeof *chunks);
    if (!chunks) {
        free(tensors);
        return cuda_fail(b, "out of host memory");
    }
    int64_t k = 0;
    for (int t = 0; t < n; t++)
        k += sgd_cut(t, tensors[t].n, chunks + k);
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
