#include "train_weights.h"

#include <stdio.h>
#include <stdlib.h>

/* One parameter tensor appended to f. */
static int write_tensor(FILE *f, const char *path, const backend_ops *ops, backend *b,
                        const network *net, int layer, buffer_kind kind, char *err,
                        size_t err_len)
{
    int64_t n = backend_buffer_elems(net, layer, 1, kind);
    if (n == 0)
        return 0;
    float *w = malloc((size_t)n * sizeof *w);
    int rc = -1;
    if (!w)
        snprintf(err, err_len, "--save-weights: out of memory for %lld weights", (long long)n);
    else if (ops->read(b, layer, kind, w))
        snprintf(err, err_len, "--save-weights: layer %s: %s", net->layers[layer].name,
                 ops->error(b));
    else if (fwrite(w, sizeof *w, (size_t)n, f) != (size_t)n)
        snprintf(err, err_len, "--save-weights: writing %s failed", path);
    else
        rc = 0;
    free(w);
    return rc;
}

int train_save_weights(const char *prefix, int rank, const backend_ops *ops, backend *b,
                       const network *net, char *err, size_t err_len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s.rank%d.bin", prefix, rank);
    FILE *f = fopen(path, "wb");
    if (!f) {
        snprintf(err, err_len, "--save-weights: cannot create %s", path);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < net->n_layers && rc == 0; i++)
        rc = write_tensor(f, path, ops, b, net, i, BUF_WEIGHT, err, err_len) ||
             write_tensor(f, path, ops, b, net, i, BUF_BIAS, err, err_len);
    if (fclose(f) && rc == 0) {
        snprintf(err, err_len, "--save-weights: writing %s failed", path);
        rc = -1;
    }
    return rc ? -1 : 0;
}
