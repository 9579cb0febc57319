/* Softmax cross-entropy (mean over the batch) and SGD with momentum and weight
 * decay in PyTorch's form: g += wd * w; v = momentum * v + g; w -= lr * v. */
#include <math.h>

#include "cpu_internal.h"

int cpu_loss(backend *b)
{
    int last = b->net->n_layers - 1, n = b->cfg.batch, classes = b->net->classes;
    if (backend_buffer_elems(b->net, last, n, BUF_OUTPUT) != (int64_t)n * classes)
        return cpu_fail(b, "the last layer does not output %d logits per image", classes);
    const float *z = b->layers[last].out;
    float *dz = b->layers[last].grad;
    double total = 0.0;
    for (int k = 0; k < n; k++) {
        const float *zk = z + (int64_t)k * classes;
        float *dzk = dz + (int64_t)k * classes;
        double top = zk[0], sum = 0.0;
        for (int c = 1; c < classes; c++)
            top = zk[c] > top ? zk[c] : top;
        for (int c = 0; c < classes; c++)
            sum += exp(zk[c] - top);
        double log_sum = top + log(sum);
        total += log_sum - zk[b->labels[k]];
        for (int c = 0; c < classes; c++)
            dzk[c] = (float)((exp(zk[c] - log_sum) - (c == b->labels[k])) / n);
    }
    b->loss = (float)(total / n);
    return 0;
}

int cpu_read_loss(backend *b, float *loss)
{
    *loss = b->loss;
    return 0;
}

static void sgd(float *w, const float *g, float *v, int64_t n, const sgd_params *p)
{
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < n; j++) {
        float d = g[j] + p->weight_decay * w[j];
        v[j] = p->momentum * v[j] + d;
        w[j] -= p->lr * v[j];
    }
}

int cpu_update(backend *b, int i, const sgd_params *p)
{
    cpu_layer *cl = &b->layers[i];
    int64_t nw = backend_buffer_elems(b->net, i, b->cfg.batch, BUF_WEIGHT);
    int64_t nb = backend_buffer_elems(b->net, i, b->cfg.batch, BUF_BIAS);
    if (nw)
        sgd(cl->w, cl->dw, cl->vw, nw, p);
    if (nb)
        sgd(cl->bias, cl->dbias, cl->vbias, nb, p);
    return 0;
}
