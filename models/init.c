#include "init.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rng.h"

static void fill(float *dst, int64_t n, float value)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = value;
}

int init_parameters(const backend_ops *ops, backend *b, const network *net, uint64_t seed,
                    char *err, size_t err_len)
{
    int64_t largest = 0;
    for (int i = 0; i < net->n_layers; i++)
        for (int k = BUF_WEIGHT; k < BUF_KIND_COUNT; k++) {
            int64_t n = backend_buffer_elems(net, i, 1, (buffer_kind)k);
            largest = n > largest ? n : largest;
        }
    float *host = malloc((size_t)(largest ? largest : 1) * sizeof *host);
    if (!host) {
        snprintf(err, err_len, "out of memory for %lld initial parameters", (long long)largest);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < net->n_layers && rc == 0; i++) {
        const layer *l = &net->layers[i];
        int64_t nw = backend_buffer_elems(net, i, 1, BUF_WEIGHT);
        int64_t nb = backend_buffer_elems(net, i, 1, BUF_BIAS);
        if (l->type == LAYER_CONV || l->type == LAYER_FC) {
            /* torch's fan_out of a conv weight (out, in/groups, k, k) is
             * out * k * k, groups or not */
            double std = l->type == LAYER_FC
                             ? 0.01
                             : sqrt(2.0 / ((double)l->out_channels * l->kernel * l->kernel));
            for (int64_t j = 0; j < nw; j++)
                host[j] = (float)(std * rng_normal(seed, (uint64_t)i, (uint64_t)j));
            rc = ops->write(b, i, BUF_WEIGHT, host);
            if (rc == 0 && nb) {
                fill(host, nb, 0.0f);
                rc = ops->write(b, i, BUF_BIAS, host);
            }
        } else if (l->type == LAYER_BN) {
            fill(host, nw, 1.0f);
            rc = ops->write(b, i, BUF_WEIGHT, host);
            rc = rc ? rc : ops->write(b, i, BUF_RUNNING_VAR, host);
            fill(host, nw, 0.0f);
            rc = rc ? rc : ops->write(b, i, BUF_BIAS, host);
            rc = rc ? rc : ops->write(b, i, BUF_RUNNING_MEAN, host);
        }
    }
    if (rc)
        snprintf(err, err_len, "initialising parameters: %s", ops->error(b));
    free(host);
    return rc ? -1 : 0;
}
