/* Max pool (the argmax kept per output, first maximum on ties as PyTorch) and
 * adaptive average pool with torch's window bounds, one (image, channel)
 * plane per OpenMP iteration; or, over oneDNN's channel-blocked layout
 * (cpu_layer.block, the same for input and output), one (image, block of
 * channels) per iteration, the block's channels side by side in the inner
 * loops. */
#include <string.h>

#include "cpu_internal.h"

/* [start, end) of adaptive bin i of `out` over `in` */
static int bin_start(int i, int in, int out) { return (int)((int64_t)i * in / out); }
static int bin_end(int i, int in, int out) { return (int)(((int64_t)(i + 1) * in + out - 1) / out); }

/* The window of output (r, c) of a pool: rows [r0, r1), columns [c0, c1) */
typedef struct {
    int r0, r1, c0, c1;
} window;

static window pool_window(const layer *l, int r, int c)
{
    int ih = l->in_shape.h, iw = l->in_shape.w;
    window w;
    if (l->type == LAYER_AVGPOOL) {
        int o = l->pool_out;
        return (window){bin_start(r, ih, o), bin_end(r, ih, o), bin_start(c, iw, o),
                        bin_end(c, iw, o)};
    }
    w.r0 = r * l->stride - l->pad;
    w.c0 = c * l->stride - l->pad;
    w.r1 = w.r0 + l->kernel > ih ? ih : w.r0 + l->kernel;
    w.c1 = w.c0 + l->kernel > iw ? iw : w.c0 + l->kernel;
    w.r0 = w.r0 < 0 ? 0 : w.r0;
    w.c0 = w.c0 < 0 ? 0 : w.c0;
    return w;
}

/* One output whose window is clipped to the plane: the border of a padded
 * pool. pad <= kernel / 2 (net_maxpool) keeps every clipped window non-empty. */
static void maxpool_clipped(const layer *l, const float *x, int r, int c, float *y,
                            int32_t *argmax)
{
    int iw = l->in_shape.w;
    window w = pool_window(l, r, c);
    int r0 = w.r0, r1 = w.r1, c0 = w.c0, c1 = w.c1;
    int32_t where = r0 * iw + c0;
    float best = x[where];
    for (int row = r0; row < r1; row++)
        for (int col = c0; col < c1; col++) {
            int32_t at = row * iw + col;
            if (x[at] > best) {
                best = x[at];
                where = at;
            }
        }
    *y = best;
    *argmax = where;
}

/* One tap (xt[c * s]) of the outputs [lo, hi) of a row. Inlined with the
 * stride 2 of every zoo pool as a constant: gcc vectorizes a strided load only
 * where it knows the stride. */
static inline void max_tap(const float *xt, int32_t base, int s, int lo, int hi, float *yr,
                           int32_t *ar)
{
    for (int c = lo; c < hi; c++) {
        float v = xt[c * s];
        bool more = v > yr[c];
        yr[c] = more ? v : yr[c];
        ar[c] = more ? base + c * s : ar[c];
    }
}

/* Each output takes its taps in row-major order, the first maximum kept. The
 * columns whose window lies inside the plane go tap by tap across the whole
 * row of outputs, a loop without branches that the compiler vectorizes: a
 * scalar loop per window ran at about a tenth of the DRAM roof. */
static void maxpool_plane(const layer *l, const float *x, float *y, int32_t *argmax)
{
    int ih = l->in_shape.h, iw = l->in_shape.w, oh = l->out_shape.h, ow = l->out_shape.w;
    int k = l->kernel, s = l->stride, p = l->pad;
    /* columns [lo, hi) of the output have unclipped windows */
    int span = iw - k + p, lo = (p + s - 1) / s, hi = span < 0 ? 0 : span / s + 1;
    hi = hi > ow ? ow : hi;
    lo = lo > hi ? hi : lo;
    for (int r = 0; r < oh; r++) {
        float *yr = y + (int64_t)r * ow;
        int32_t *ar = argmax + (int64_t)r * ow;
        for (int c = 0; c < lo; c++)
            maxpool_clipped(l, x, r, c, yr + c, ar + c);
        for (int c = hi; c < ow; c++)
            maxpool_clipped(l, x, r, c, yr + c, ar + c);
        int r0 = r * s - p, r1 = r0 + k;
        r0 = r0 < 0 ? 0 : r0;
        r1 = r1 > ih ? ih : r1;
        for (int c = lo; c < hi; c++) {
            yr[c] = x[r0 * iw + c * s - p];
            ar[c] = r0 * iw + c * s - p;
        }
        for (int row = r0; row < r1; row++)
            for (int kc = 0; kc < k; kc++) {
                const float *xt = x + row * iw + kc - p;
                int32_t base = row * iw + kc - p;
                if (s == 2)
                    max_tap(xt, base, 2, lo, hi, yr, ar);
                else
                    max_tap(xt, base, s, lo, hi, yr, ar);
            }
    }
}

static void avgpool_plane(const layer *l, const float *x, float *y)
{
    int iw = l->in_shape.w, o = l->pool_out;
    for (int r = 0; r < o; r++)
        for (int c = 0; c < o; c++) {
            window w = pool_window(l, r, c);
            float sum = 0.0f;
            for (int row = w.r0; row < w.r1; row++)
                for (int col = w.c0; col < w.c1; col++)
                    sum += x[row * iw + col];
            y[r * o + c] = sum / (float)((w.r1 - w.r0) * (w.c1 - w.c0));
        }
}

/* One (image, block) of B channels: position p of channel j at x[p * B + j];
 * the argmax, as the NCHW one, an index in the input plane. */
static void pool_block(const layer *l, int B, const float *x, float *y, int32_t *argmax)
{
    int iw = l->in_shape.w, ow = l->out_shape.w;
    for (int r = 0; r < l->out_shape.h; r++)
        for (int c = 0; c < ow; c++) {
            window w = pool_window(l, r, c);
            float *yo = y + ((int64_t)r * ow + c) * B;
            if (l->type == LAYER_AVGPOOL) {
                for (int j = 0; j < B; j++)
                    yo[j] = 0.0f;
                for (int row = w.r0; row < w.r1; row++)
                    for (int col = w.c0; col < w.c1; col++)
                        for (int j = 0; j < B; j++)
                            yo[j] += x[((int64_t)row * iw + col) * B + j];
                float count = (float)((w.r1 - w.r0) * (w.c1 - w.c0));
                for (int j = 0; j < B; j++)
                    yo[j] /= count;
                continue;
            }
            int32_t *ao = argmax + ((int64_t)r * ow + c) * B;
            for (int j = 0; j < B; j++) {
                yo[j] = x[((int64_t)w.r0 * iw + w.c0) * B + j];
                ao[j] = w.r0 * iw + w.c0;
            }
            for (int row = w.r0; row < w.r1; row++)
                for (int col = w.c0; col < w.c1; col++)
                    for (int j = 0; j < B; j++) {
                        float v = x[((int64_t)row * iw + col) * B + j];
                        bool more = v > yo[j];
                        yo[j] = more ? v : yo[j];
                        ao[j] = more ? row * iw + col : ao[j];
                    }
        }
}

static void pool_block_backward(const layer *l, int B, const float *dy, const int32_t *argmax,
                                float *dx)
{
    int iw = l->in_shape.w, ow = l->out_shape.w;
    int64_t out_plane = (int64_t)l->out_shape.h * ow;
    if (l->type == LAYER_MAXPOOL) {
        for (int64_t o = 0; o < out_plane; o++)
            for (int j = 0; j < B; j++)
                dx[(int64_t)argmax[o * B + j] * B + j] += dy[o * B + j];
        return;
    }
    for (int r = 0; r < l->out_shape.h; r++)
        for (int c = 0; c < ow; c++) {
            window w = pool_window(l, r, c);
            float count = (float)((w.r1 - w.r0) * (w.c1 - w.c0));
            const float *g = dy + ((int64_t)r * ow + c) * B;
            for (int row = w.r0; row < w.r1; row++)
                for (int col = w.c0; col < w.c1; col++)
                    for (int j = 0; j < B; j++)
                        dx[((int64_t)row * iw + col) * B + j] += g[j] / count;
        }
}

int cpu_pool_forward(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *x = cpu_input(b, i, 0);
    int B = cl->block;
    /* a block of B channels counts as one plane B times as large */
    int64_t planes = (int64_t)b->cfg.batch * l->in_shape.c / (B ? B : 1);
    int64_t in_plane = (int64_t)l->in_shape.h * l->in_shape.w * (B ? B : 1);
    int64_t out_plane = (int64_t)l->out_shape.h * l->out_shape.w * (B ? B : 1);
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; p++) {
        if (B)
            pool_block(l, B, x + p * in_plane, cl->out + p * out_plane,
                       cl->argmax ? cl->argmax + p * out_plane : NULL);
        else if (l->type == LAYER_MAXPOOL)
            maxpool_plane(l, x + p * in_plane, cl->out + p * out_plane, cl->argmax + p * out_plane);
        else
            avgpool_plane(l, x + p * in_plane, cl->out + p * out_plane);
    }
    return 0;
}

int cpu_pool_backward(backend *b, int i, bool accumulate)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    float *dx = b->layers[l->inputs[0]].grad;
    int B = cl->block;
    int64_t planes = (int64_t)b->cfg.batch * l->in_shape.c / (B ? B : 1);
    int64_t in_plane = (int64_t)l->in_shape.h * l->in_shape.w * (B ? B : 1);
    int64_t out_plane = (int64_t)l->out_shape.h * l->out_shape.w * (B ? B : 1);
    int iw = l->in_shape.w, o = l->pool_out;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; p++) {
        float *dxp = dx + p * in_plane;
        const float *dyp = cl->grad + p * out_plane;
        if (!accumulate)
            memset(dxp, 0, (size_t)in_plane * sizeof *dxp);
        if (B) {
            pool_block_backward(l, B, dyp, cl->argmax ? cl->argmax + p * out_plane : NULL, dxp);
            continue;
        }
        if (l->type == LAYER_MAXPOOL) {
            const int32_t *am = cl->argmax + p * out_plane;
            for (int64_t j = 0; j < out_plane; j++)
                dxp[am[j]] += dyp[j];
            continue;
        }
        for (int r = 0; r < o; r++)
            for (int c = 0; c < o; c++) {
                window w = pool_window(l, r, c);
                float g = dyp[r * o + c] / (float)((w.r1 - w.r0) * (w.c1 - w.c0));
                for (int row = w.r0; row < w.r1; row++)
                    for (int col = w.c0; col < w.c1; col++)
                        dxp[row * iw + col] += g;
            }
    }
    return 0;
}
