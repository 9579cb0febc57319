/* Max pool (the argmax kept per output, first maximum on ties as PyTorch) and
 * adaptive average pool with torch's window bounds, one (image, channel)
 * plane per OpenMP iteration. */
#include <float.h>
#include <string.h>

#include "cpu_internal.h"

/* [start, end) of adaptive bin i of `out` over `in` */
static int bin_start(int i, int in, int out) { return (int)((int64_t)i * in / out); }
static int bin_end(int i, int in, int out) { return (int)(((int64_t)(i + 1) * in + out - 1) / out); }

static void maxpool_plane(const layer *l, const float *x, float *y, int32_t *argmax)
{
    int ih = l->in_shape.h, iw = l->in_shape.w, oh = l->out_shape.h, ow = l->out_shape.w;
    for (int r = 0; r < oh; r++)
        for (int c = 0; c < ow; c++) {
            float best = -FLT_MAX;
            int32_t where = -1;
            for (int kr = 0; kr < l->kernel; kr++) {
                int row = r * l->stride - l->pad + kr;
                if (row < 0 || row >= ih)
                    continue;
                for (int kc = 0; kc < l->kernel; kc++) {
                    int col = c * l->stride - l->pad + kc;
                    if (col < 0 || col >= iw)
                        continue;
                    float v = x[row * iw + col];
                    if (where < 0 || v > best) {
                        best = v;
                        where = row * iw + col;
                    }
                }
            }
            y[r * ow + c] = best;
            argmax[r * ow + c] = where;
        }
}

static void avgpool_plane(const layer *l, const float *x, float *y)
{
    int ih = l->in_shape.h, iw = l->in_shape.w, o = l->pool_out;
    for (int r = 0; r < o; r++) {
        int r0 = bin_start(r, ih, o), r1 = bin_end(r, ih, o);
        for (int c = 0; c < o; c++) {
            int c0 = bin_start(c, iw, o), c1 = bin_end(c, iw, o);
            float sum = 0.0f;
            for (int row = r0; row < r1; row++)
                for (int col = c0; col < c1; col++)
                    sum += x[row * iw + col];
            y[r * o + c] = sum / (float)((r1 - r0) * (c1 - c0));
        }
    }
}

int cpu_pool_forward(backend *b, int i)
{
    const layer *l = &b->net->layers[i];
    cpu_layer *cl = &b->layers[i];
    const float *x = cpu_input(b, i, 0);
    int64_t planes = (int64_t)b->cfg.batch * l->in_shape.c;
    int64_t in_plane = (int64_t)l->in_shape.h * l->in_shape.w;
    int64_t out_plane = (int64_t)l->out_shape.h * l->out_shape.w;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; p++) {
        if (l->type == LAYER_MAXPOOL)
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
    int64_t planes = (int64_t)b->cfg.batch * l->in_shape.c;
    int64_t in_plane = (int64_t)l->in_shape.h * l->in_shape.w;
    int64_t out_plane = (int64_t)l->out_shape.h * l->out_shape.w;
    int ih = l->in_shape.h, iw = l->in_shape.w, o = l->pool_out;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; p++) {
        float *dxp = dx + p * in_plane;
        const float *dyp = cl->grad + p * out_plane;
        if (!accumulate)
            memset(dxp, 0, (size_t)in_plane * sizeof *dxp);
        if (l->type == LAYER_MAXPOOL) {
            const int32_t *am = cl->argmax + p * out_plane;
            for (int64_t j = 0; j < out_plane; j++)
                dxp[am[j]] += dyp[j];
            continue;
        }
        for (int r = 0; r < o; r++) {
            int r0 = bin_start(r, ih, o), r1 = bin_end(r, ih, o);
            for (int c = 0; c < o; c++) {
                int c0 = bin_start(c, iw, o), c1 = bin_end(c, iw, o);
                float g = dyp[r * o + c] / (float)((r1 - r0) * (c1 - c0));
                for (int row = r0; row < r1; row++)
                    for (int col = c0; col < c1; col++)
                        dxp[row * iw + col] += g;
            }
        }
    }
    return 0;
}
