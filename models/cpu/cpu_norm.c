/* Batch norm in training mode over NCHW, one channel per OpenMP iteration, so
 * that every sum has one fixed order whatever the thread count; or, where the
 * convolution before hands over its output in oneDNN's nChw8c / nChw16c
 * (cpu_layer.block, cpu_blocking.c), over that layout, one image's slice of 8
 * channels per iteration (cpu_norm_slices.c), the partial sums added in image
 * order (fixed too). The output and its gradient are then in that layout too,
 * or NCHW where a consumer needs it; the input's gradient is in the input's
 * layout. A ReLU or ReLU6 in place after the batch norm may be applied in
 * the same loops (cpu_layer.act_layer): forward clips, backward reads the
 * activation's gradient through its mask. Sums are kept in double. Running
 * statistics follow PyTorch: momentum 0.1, the unbiased variance. Backward is
 * split as the step driver calls it: backward_weights makes d-gamma and
 * d-beta, backward_data uses them for dx. */
#include <math.h>

#include "cpu_internal.h"
#include "cpu_norm_slices.h"

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

/* Adds sum(dy) and sum(dy * (x - mean)) over [0..n) to *dbeta and *dxc, dy
 * masked where the fused activation stops it at x * scale + shift. */
static void add_grad_sums(const float *dy, const float *x, double mean, int64_t n, bn_act act,
                          float scale, float shift, double *dbeta, double *dxc)
{
    double s[LANES] = {0}, p[LANES] = {0};
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int l = 0; l < LANES; l++) {
            double g = bn_passes(act, x[j + l] * scale + shift) ? dy[j + l] : 0.0f;
            s[l] += g;
            p[l] += g * (x[j + l] - mean);
        }
    for (int l = 0; j < n; j++, l++) {
        double g = bn_passes(act, x[j] * scale + shift) ? dy[j] : 0.0f;
        s[l] += g;
        p[l] += g * (x[j] - mean);
    }
    *dbeta += combine(s);
    *dxc += combine(p);
}

/* The activation a batch norm applies itself (cpu_backend.c plans it), and
 * the gradient it starts from: the activation's where it does its work. */
static bn_act fused_act(const backend *b, int i)
{
    int a = b->layers[i].act_layer;
    if (a < 0)
        return BN_ACT_NONE;
    return b->net->layers[a].type == LAYER_RELU6 ? BN_ACT_RELU6 : BN_ACT_RELU;
}

static const float *output_grad(const backend *b, int i)
{
    int a = b->layers[i].act_layer;
    return a < 0 ? b->layers[i].grad : b->layers[a].grad;
}

/* A channel's mean and rstd from its sums over m values, the running
 * statistics, and the scale and shift that normalize it (kept: a fused
 * activation's backward recomputes x * scale + shift). */
static void channel_statistics(cpu_layer *cl, int c, double sum, double sq, int64_t m)
{
    /* one pass: in double, E[x^2] - mean^2 loses nothing that matters here */
    double mean = sum / m;
    double var = fmax(sq / m - mean * mean, 0.0), rstd = 1.0 / sqrt(var + bn_eps);
    float scale = (float)(cl->w[c] * rstd);
    cl->scale[c] = scale;
    cl->shift[c] = (float)(cl->bias[c] - mean * scale);
    cl->mean[c] = (float)mean;
    cl->rstd[c] = (float)rstd;
    double unbiased = m > 1 ? var * m / (m - 1) : var;
    cl->run_mean[c] = (float)((1 - bn_momentum) * cl->run_mean[c] + bn_momentum * mean);
    cl->run_var[c] = (float)((1 - bn_momentum) * cl->run_var[c] + bn_momentum * unbiased);
}

static int forward_plain(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *x = cpu_input(b, i, 0);
    int n = b->cfg.batch, channels = l->in_shape.c;
    int64_t plane = (int64_t)l->in_shape.h * l->in_shape.w, m = n * plane;
    bn_act act = fused_act(b, i);
#pragma omp parallel for schedule(static)
    for (int c = 0; c < channels; c++) {
        double sum = 0.0, sq = 0.0;
        for (int k = 0; k < n; k++)
            add_sums(x + ((int64_t)k * channels + c) * plane, plane, &sum, &sq);
        channel_statistics(cl, c, sum, sq, m);
        float scale = cl->scale[c], shift = cl->shift[c];
        for (int k = 0; k < n; k++) {
            const float *xp = x + ((int64_t)k * channels + c) * plane;
            float *yp = cl->out + ((int64_t)k * channels + c) * plane;
            for (int64_t j = 0; j < plane; j++)
                yp[j] = bn_activate(act, xp[j] * scale + shift);
        }
    }
    return 0;
}

static int backward_weights_plain(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *x = cpu_input(b, i, 0);
    int n = b->cfg.batch, channels = l->in_shape.c;
    int64_t plane = (int64_t)l->in_shape.h * l->in_shape.w;
    bn_act act = fused_act(b, i);
    const float *dy = output_grad(b, i);
#pragma omp parallel for schedule(static)
    for (int c = 0; c < channels; c++) {
        double dbeta = 0.0, dxc = 0.0, mean = cl->mean[c], rstd = cl->rstd[c];
        for (int k = 0; k < n; k++) {
            int64_t off = ((int64_t)k * channels + c) * plane;
            add_grad_sums(dy + off, x + off, mean, plane, act, cl->scale[c], cl->shift[c],
                          &dbeta, &dxc);
        }
        cl->dbias[c] = (float)dbeta;
        cl->dw[c] = (float)(dxc * rstd);
    }
    return 0;
}

/* dx = k_dy * dy - (k_xhat * x + k_const) for channel c over m values:
 * k_xhat * x + k_const folds x-hat = (x - mean) * rstd into one FMA */
static void data_coefficients(const cpu_layer *cl, int c, double m, float *k_dy, float *k_xhat,
                              float *k_const)
{
    double mean = cl->mean[c], rstd = cl->rstd[c];
    *k_dy = (float)(cl->w[c] * rstd);
    *k_xhat = (float)(cl->w[c] * rstd * cl->dw[c] / m * rstd);
    *k_const = (float)(cl->w[c] * rstd * cl->dbias[c] / m -
                       mean * cl->w[c] * rstd * cl->dw[c] / m * rstd);
}

/* dx = gamma * rstd / M * (M * dy - d-beta - x-hat * d-gamma) */
static int backward_data_plain(backend *b, int i, bool accumulate)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *x = cpu_input(b, i, 0);
    float *dx = b->layers[l->inputs[0]].grad;
    int n = b->cfg.batch, channels = l->in_shape.c;
    int64_t plane = (int64_t)l->in_shape.h * l->in_shape.w;
    double m = (double)n * plane;
    bn_act act = fused_act(b, i);
    const float *dy = output_grad(b, i);
#pragma omp parallel for schedule(static)
    for (int c = 0; c < channels; c++) {
        float k_dy, k_xhat, k_const, scale = cl->scale[c], shift = cl->shift[c];
        data_coefficients(cl, c, m, &k_dy, &k_xhat, &k_const);
        for (int k = 0; k < n; k++) {
            int64_t off = ((int64_t)k * channels + c) * plane;
            for (int64_t j = 0; j < plane; j++) {
                float g = k_dy * (bn_passes(act, x[off + j] * scale + shift) ? dy[off + j] : 0.0f) -
                          (k_xhat * x[off + j] + k_const);
                dx[off + j] = accumulate ? dx[off + j] + g : g;
            }
        }
    }
    return 0;
}

/* ---- over a blocked input: slices of 8 channels (cpu_norm_slices.c) ----- */

/* the per-image partial sums of channel c, added in image order */
static double image_sum(const double *partials, int images, int channels, int c)
{
    double total = 0.0;
    for (int k = 0; k < images; k++)
        total += partials[(int64_t)k * channels + c];
    return total;
}

/* Where slice s (channels 8s..8s+7) of image k starts in the blocked tensor
 * (its positions B floats apart). */
static int64_t blocked_at(int k, int s, int channels, int64_t plane, int B)
{
    int c = 8 * s;
    return ((int64_t)k * channels + c / B * B) * plane + c % B;
}

/* the same slice of the output (and its gradient): blocked as the input, or
 * NCHW */
static int64_t out_at(const cpu_layer *cl, int k, int s, int channels, int64_t plane)
{
    if (cl->block)
        return blocked_at(k, s, channels, plane, cl->block);
    return ((int64_t)k * channels + 8 * s) * plane;
}

/* Bytes of input a group of slices holds, so that normalizing reads it from
 * the last-level cache after the sums have read it from DRAM: the mean needs
 * every image, and over the whole tensor that second read would be from DRAM
 * too (the plain loops go channel by channel for the same reason). */
enum { GROUP_BYTES = 4 << 20 };

static int forward_blocked(backend *b, int i, int B)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *x = cpu_input(b, i, 0);
    int n = b->cfg.batch, channels = l->in_shape.c, slices = channels / 8;
    int64_t plane = (int64_t)l->in_shape.h * l->in_shape.w, m = n * plane;
    double *sums = b->bn_partials, *sqs = b->bn_partials + (int64_t)n * channels;
    float *scale = cl->scale, *shift = cl->shift;
    bn_act act = fused_act(b, i);
    int64_t slice_bytes = 8 * sizeof(float) * m;
    int group = slice_bytes >= GROUP_BYTES ? 1 : (int)(GROUP_BYTES / slice_bytes);
    /* whole blocks: the two slices of a 16-channel block share every cache
     * line, and a group that held one alone would read the lines twice */
    group = (group + B / 8 - 1) / (B / 8) * (B / 8);
    for (int g0 = 0; g0 < slices; g0 += group) {
        int g1 = g0 + group < slices ? g0 + group : slices;
#pragma omp parallel
        {
#pragma omp for collapse(2) schedule(static)
            for (int k = 0; k < n; k++)
                for (int s = g0; s < g1; s++) {
                    int64_t at = (int64_t)k * channels + 8 * s;
                    bn_slice_sums(x + blocked_at(k, s, channels, plane, B), plane, B, sums + at,
                                  sqs + at);
                }
#pragma omp for schedule(static)
            for (int c = 8 * g0; c < 8 * g1; c++)
                channel_statistics(cl, c, image_sum(sums, n, channels, c),
                                   image_sum(sqs, n, channels, c), m);
#pragma omp for collapse(2) schedule(static)
            for (int k = 0; k < n; k++)
                for (int s = g0; s < g1; s++)
                    bn_slice_normalize(x + blocked_at(k, s, channels, plane, B), plane, B,
                                       cl->out + out_at(cl, k, s, channels, plane), cl->block,
                                       scale + 8 * s, shift + 8 * s, act);
        }
    }
    return 0;
}

static int backward_weights_blocked(backend *b, int i, int B)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *x = cpu_input(b, i, 0);
    int n = b->cfg.batch, channels = l->in_shape.c, slices = channels / 8;
    int64_t plane = (int64_t)l->in_shape.h * l->in_shape.w;
    double *dbetas = b->bn_partials, *dxcs = b->bn_partials + (int64_t)n * channels;
    bn_act act = fused_act(b, i);
    const float *dy = output_grad(b, i);
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = 0; k < n; k++)
        for (int s = 0; s < slices; s++) {
            int64_t at = (int64_t)k * channels + 8 * s;
            bn_slice_act sa = {act, cl->scale + 8 * s, cl->shift + 8 * s};
            bn_slice_grad_sums(dy + out_at(cl, k, s, channels, plane), cl->block,
                               x + blocked_at(k, s, channels, plane, B), plane, B,
                               cl->mean + 8 * s, sa, dbetas + at, dxcs + at);
        }
    for (int c = 0; c < channels; c++) {
        cl->dbias[c] = (float)image_sum(dbetas, n, channels, c);
        cl->dw[c] = (float)(image_sum(dxcs, n, channels, c) * cl->rstd[c]);
    }
    return 0;
}

static int backward_data_blocked(backend *b, int i, bool accumulate, int B)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *x = cpu_input(b, i, 0);
    float *dx = b->layers[l->inputs[0]].grad;
    int n = b->cfg.batch, channels = l->in_shape.c, slices = channels / 8;
    int64_t plane = (int64_t)l->in_shape.h * l->in_shape.w;
    float *k_dy = b->bn_coef, *k_xhat = k_dy + channels, *k_const = k_xhat + channels;
    for (int c = 0; c < channels; c++)
        data_coefficients(cl, c, (double)n * plane, &k_dy[c], &k_xhat[c], &k_const[c]);
    bn_act act = fused_act(b, i);
    const float *dy = output_grad(b, i);
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = 0; k < n; k++)
        for (int s = 0; s < slices; s++) {
            int64_t at = blocked_at(k, s, channels, plane, B);
            bn_slice_act sa = {act, cl->scale + 8 * s, cl->shift + 8 * s};
            bn_slice_data(dy + out_at(cl, k, s, channels, plane), cl->block, x + at, dx + at,
                          plane, B, k_dy + 8 * s, k_xhat + 8 * s, k_const + 8 * s, sa,
                          accumulate);
        }
    return 0;
}

/* the block of the batch norm's input (0: NCHW) */
static int input_block(const backend *b, int i)
{
    int in = b->net->layers[i].inputs[0];
    return in == GRAPH_INPUT ? 0 : b->layers[in].block;
}

int cpu_bn_forward(backend *b, int i)
{
    int B = input_block(b, i);
    return B ? forward_blocked(b, i, B) : forward_plain(b, i);
}

int cpu_bn_backward_weights(backend *b, int i)
{
    int B = input_block(b, i);
    return B ? backward_weights_blocked(b, i, B) : backward_weights_plain(b, i);
}

int cpu_bn_backward_data(backend *b, int i, bool accumulate)
{
    int B = input_block(b, i);
    return B ? backward_data_blocked(b, i, accumulate, B) : backward_data_plain(b, i, accumulate);
}
