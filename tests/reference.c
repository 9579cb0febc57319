#include "reference.h"

#include <float.h>
#include <math.h>
#include <string.h>

static void ref_conv(const layer *l, int n, const double *x, const double *w, const double *bias,
                     double *y)
{
    int ci = l->in_shape.c, ih = l->in_shape.h, iw = l->in_shape.w;
    int co = l->out_shape.c, oh = l->out_shape.h, ow = l->out_shape.w, k = l->kernel;
    int g = l->groups, cig = ci / g, cog = co / g;
    for (int b = 0; b < n; b++)
        for (int o = 0; o < co; o++)
            for (int r = 0; r < oh; r++)
                for (int c = 0; c < ow; c++) {
                    double s = bias ? bias[o] : 0.0;
                    int group = o / cog;
                    for (int i = 0; i < cig; i++)
                        for (int kr = 0; kr < k; kr++)
                            for (int kc = 0; kc < k; kc++) {
                                int row = r * l->stride - l->pad + kr;
                                int col = c * l->stride - l->pad + kc;
                                if (row < 0 || row >= ih || col < 0 || col >= iw)
                                    continue;
                                int in_c = group * cig + i;
                                s += x[((b * ci + in_c) * ih + row) * iw + col] *
                                     w[((o * cig + i) * k + kr) * k + kc];
                            }
                    y[((b * co + o) * oh + r) * ow + c] = s;
                }
}

static void ref_fc(const layer *l, int n, const double *x, const double *w, const double *bias,
                   double *y)
{
    int64_t fi = shape_elems(l->in_shape);
    int fo = l->out_channels;
    for (int b = 0; b < n; b++)
        for (int o = 0; o < fo; o++) {
            double s = bias[o];
            for (int64_t i = 0; i < fi; i++)
                s += x[b * fi + i] * w[o * fi + i];
            y[b * fo + o] = s;
        }
}

static void ref_bn(const layer *l, int n, const double *x, const double *gamma,
                   const double *beta, double *y)
{
    int ch = l->in_shape.c;
    int64_t plane = (int64_t)l->in_shape.h * l->in_shape.w, m = n * plane;
    for (int c = 0; c < ch; c++) {
        double mean = 0.0, var = 0.0;
        for (int b = 0; b < n; b++)
            for (int64_t j = 0; j < plane; j++)
                mean += x[(b * ch + c) * plane + j];
        mean /= m;
        for (int b = 0; b < n; b++)
            for (int64_t j = 0; j < plane; j++) {
                double d = x[(b * ch + c) * plane + j] - mean;
                var += d * d;
            }
        var /= m;
        for (int b = 0; b < n; b++)
            for (int64_t j = 0; j < plane; j++) {
                int64_t at = (b * ch + c) * plane + j;
                y[at] = (x[at] - mean) / sqrt(var + 1e-5) * gamma[c] + beta[c];
            }
    }
}

static void ref_pool(const layer *l, int n, const double *x, double *y)
{
    int ch = l->in_shape.c, ih = l->in_shape.h, iw = l->in_shape.w;
    int oh = l->out_shape.h, ow = l->out_shape.w;
    for (int p = 0; p < n * ch; p++)
        for (int r = 0; r < oh; r++)
            for (int c = 0; c < ow; c++) {
                int r0, r1, c0, c1;
                if (l->type == LAYER_MAXPOOL) {
                    r0 = r * l->stride - l->pad, r1 = r0 + l->kernel;
                    c0 = c * l->stride - l->pad, c1 = c0 + l->kernel;
                } else {
                    r0 = r * ih / oh, r1 = ((r + 1) * ih + oh - 1) / oh;
                    c0 = c * iw / ow, c1 = ((c + 1) * iw + ow - 1) / ow;
                }
                double best = -DBL_MAX, sum = 0.0;
                int count = 0;
                for (int row = r0; row < r1; row++)
                    for (int col = c0; col < c1; col++) {
                        if (row < 0 || row >= ih || col < 0 || col >= iw)
                            continue;
                        double v = x[(p * ih + row) * iw + col];
                        best = v > best ? v : best;
                        sum += v;
                        count++;
                    }
                y[(p * oh + r) * ow + c] = l->type == LAYER_MAXPOOL ? best : sum / count;
            }
}

void ref_forward(const layer *l, int batch, const double *x, const double *x2, const double *w,
                 const double *bias, const uint8_t *keep, double *y)
{
    int64_t n = batch * shape_elems(l->out_shape);
    switch (l->type) {
    case LAYER_CONV: ref_conv(l, batch, x, w, bias, y); break;
    case LAYER_FC: ref_fc(l, batch, x, w, bias, y); break;
    case LAYER_BN: ref_bn(l, batch, x, w, bias, y); break;
    case LAYER_MAXPOOL:
    case LAYER_AVGPOOL: ref_pool(l, batch, x, y); break;
    case LAYER_RELU:
        for (int64_t j = 0; j < n; j++)
            y[j] = x[j] > 0 ? x[j] : 0;
        break;
    case LAYER_RELU6:
        for (int64_t j = 0; j < n; j++)
            y[j] = fmin(fmax(x[j], 0), 6);
        break;
    case LAYER_ADD:
        for (int64_t j = 0; j < n; j++)
            y[j] = x[j] + x2[j];
        break;
    case LAYER_DROPOUT:
        for (int64_t j = 0; j < n; j++)
            y[j] = keep[j] ? x[j] / (1.0 - l->drop_p) : 0;
        break;
    case LAYER_TYPE_COUNT: break;
    }
}
