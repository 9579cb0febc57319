#include "ddp_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ddp_plan_free(ddp_plan *p)
{
    free(p->tensors);
    free(p->buckets);
    memset(p, 0, sizeof *p);
}

int ddp_plan_build(ddp_plan *p, const network *net, int64_t cap_bytes, int64_t first_cap_bytes,
                   int elem_bytes, char *err, size_t err_len)
{
    memset(p, 0, sizeof *p);
    int n = 0;
    for (int i = 0; i < net->n_layers; i++)
        if (net->layers[i].params > 0)
            n += 2;
    p->tensors = calloc((size_t)n + 1, sizeof *p->tensors);
    p->buckets = calloc((size_t)n + 1, sizeof *p->buckets);
    if (!p->tensors || !p->buckets) {
        ddp_plan_free(p);
        snprintf(err, err_len, "out of memory for the bucket plan of %d tensors", n);
        return -1;
    }
    ddp_bucket *b = NULL;
    for (int i = net->n_layers - 1; i >= 0; i--) {
        if (net->layers[i].params == 0)
            continue;
        const buffer_kind kinds[2] = {BUF_WEIGHT_GRAD, BUF_BIAS_GRAD};
        for (int k = 0; k < 2; k++) {
            int64_t elems = backend_buffer_elems(net, i, 1, kinds[k]);
            if (elems == 0)
                continue;
            int64_t cap = p->n_buckets <= 1 && first_cap_bytes > 0 && first_cap_bytes < cap_bytes
                              ? first_cap_bytes
                              : cap_bytes;
            /* cap 0: everything in one bucket */
            bool fits = b && (cap_bytes == 0 || (b->elems + elems) * elem_bytes <= cap);
            if (!fits) {
                b = &p->buckets[p->n_buckets++];
                b->first = p->n_tensors;
            }
            ddp_tensor *t = &p->tensors[p->n_tensors++];
            *t = (ddp_tensor){.layer = i, .kind = kinds[k], .elems = elems,
                              .bucket = p->n_buckets - 1, .offset = b->elems};
            b->count++;
            b->elems += elems;
            b->ready_layer = i;
            p->total_elems += elems;
            if (b->elems > p->largest_bucket_elems)
                p->largest_bucket_elems = b->elems;
        }
    }
    if (p->n_tensors == 0) {
        ddp_plan_free(p);
        snprintf(err, err_len, "%s has no parameters to reduce", net->model);
        return -1;
    }
    return 0;
}
