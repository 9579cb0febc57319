/* Batch norm in training mode over NCHW, one channel per OpenMP iteration, so
 * that every sum has one fixed order whatever the thread count. Sums are kept
 * in double. Running statistics follow PyTorch: momentum 0.1, the unbiased
 * variance. Backward is split as the step driver calls it: backward_weights
 * makes d-gamma and d-beta, backward_data uses them for dx. */
#include <math.h>

#include "cpu_internal.h"

static const double bn_eps = 1e-5, bn_momentum = 0.1;

/* Sums run in LANES independent double chains, combined in one fixed order:
 * a single chain is bound by the add latency (about 4 GB/s a thread), and
 * the compiler may not reorder a floating-point sum by itself. */
enum { LANES = 16 };

static double combine(const double *lanes)
{
    double total = 0.0;
    for (int l = 0; l < LANES; l++)
        total += lanes[l];
    return total;
}

/* Adds the sum and the sum of squares of x[0..n) to *sum and *sq. */
static void add_sums(const float *x, int64_t n, double *sum, double *sq)
{
    double s[LANES] = {0}, q[LANES] = {0};
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) {
            double v = x[j + l];
            s[l] += v;
            q[l] += v * v;
        }
    for (int l = 0; j < n; j++, l++) {
        double v = x[j];
        s[l] += v;
        q[l] += v * v;
    }
    *sum += combine(s);
    *sq += combine(q);
}

/* Adds sum(dy) and sum(dy * (x - mean)) over [0..n) to *dbeta and *dxc. */
static void add_grad_sums(const float *dy, const float *x, double mean, int64_t n,
                          double *dbeta, double *dxc)
{
    double s[LANES] = {0}, p[LANES] = {0};
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) {
            double g = dy[j + l];
            s[l] += g;
            p[l] += g * (x[j + l] - mean);
        }
    for (int l = 0; j < n; j++, l++) {
        double g = dy[j];
        s[l] += g;
        p[l] += g * (x[j] - mean);
    }
    *dbeta += combine(s);
    *dxc += combine(p);
}

int cpu_bn_forward(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *x = cpu_input(b, i, 0);
    int n = b->cfg.batch, channels = l->in_shape.c;
    int64_t plane = (int64_t)l->in_shape.h * l->in_shape.w, m = n * plane;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < channels; c++) {
        /* one pass: in double, E[x^2] - mean^2 loses nothing that matters here */
        double sum = 0.0, sq = 0.0;
        for (int k = 0; k < n; k++)
            add_sums(x + ((int64_t)k * channels + c) * plane, plane, &sum, &sq);
        double mean = sum / m;
        double var = fmax(sq / m - mean * mean, 0.0), rstd = 1.0 / sqrt(var + bn_eps);
        float scale = (float)(cl->w[c] * rstd), shift = (float)(cl->bias[c] - mean * scale);
        for (int k = 0; k < n; k++) {
            const float *xp = x + ((int64_t)k * channels + c) * plane;
            float *yp = cl->out + ((int64_t)k * channels + c) * plane;
            for (int64_t j = 0; j < plane; j++)
                yp[j] = xp[j] * scale + shift;
        }
        cl->mean[c] = (float)mean;
        cl->rstd[c] = (float)rstd;
        double unbiased = m > 1 ? var * m / (m - 1) : var;
        cl->run_mean[c] = (float)((1 - bn_momentum) * cl->run_mean[c] + bn_momentum * mean);
        cl->run_var[c] = (float)((1 - bn_momentum) * cl->run_var[c] + bn_momentum * unbiased);
    }
    return 0;
}

int cpu_bn_backward_weights(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *x = cpu_input(b, i, 0);
    int n = b->cfg.batch, channels = l->in_shape.c;
    int64_t plane = (int64_t)l->in_shape.h * l->in_shape.w;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < channels; c++) {
        double dbeta = 0.0, dxc = 0.0, mean = cl->mean[c], rstd = cl->rstd[c];
        for (int k = 0; k < n; k++) {
            int64_t off = ((int64_t)k * channels + c) * plane;
            add_grad_sums(cl->grad + off, x + off, mean, plane, &dbeta, &dxc);
        }
        cl->dbias[c] = (float)dbeta;
        cl->dw[c] = (float)(dxc * rstd);
    }
    return 0;
}

/* dx = gamma * rstd / M * (M * dy - d-beta - x-hat * d-gamma) */
int cpu_bn_backward_data(backend *b, int i, bool accumulate)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *x = cpu_input(b, i, 0);
    float *dx = b->layers[l->inputs[0]].grad;
    int n = b->cfg.batch, channels = l->in_shape.c;
    int64_t plane = (int64_t)l->in_shape.h * l->in_shape.w;
    double m = (double)n * plane;
#pragma omp parallel for schedule(static)
    for (int c = 0; c < channels; c++) {
        double mean = cl->mean[c], rstd = cl->rstd[c];
        float k_dy = (float)(cl->w[c] * rstd);
        float k_xhat = (float)(cl->w[c] * rstd * cl->dw[c] / m * rstd);
        float k_const = (float)(cl->w[c] * rstd * cl->dbias[c] / m - mean * cl->w[c] * rstd *
                                                                           cl->dw[c] / m * rstd);
        for (int k = 0; k < n; k++) {
            int64_t off = ((int64_t)k * channels + c) * plane;
            for (int64_t j = 0; j < plane; j++) {
                /* k_xhat * x + k_const folds x-hat = (x - mean) * rstd into one FMA */
                float g = k_dy * cl->grad[off + j] - (k_xhat * x[off + j] + k_const);
                dx[off + j] = accumulate ? dx[off + j] + g : g;
            }
        }
    }
    return 0;
}
