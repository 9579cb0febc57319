/* Which gradients travel together: the bucket plan of a network, as PyTorch's
 * DDP makes it. Tensors are taken in the order backward produces them (the
 * last layer first; a layer's weight gradient, then its bias gradient) and
 * packed into buckets of at most cap bytes, so a bucket is complete, and its
 * reduction can start, as soon as the backward of its last layer is done. The
 * first bucket is smaller (first_cap) so that communication starts early; a
 * tensor larger than a cap travels alone; tensors are never split. */
#ifndef ROOFLINE_DDP_PLAN_H
#define ROOFLINE_DDP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "../backend.h"
#include "../graph.h"

/* PyTorch's defaults: bucket_cap_mb 25, and 1 MiB for the first bucket. */
#define DDP_DEFAULT_BUCKET_BYTES ((int64_t)25 << 20)
#define DDP_FIRST_BUCKET_BYTES ((int64_t)1 << 20)

typedef struct {
    int layer;
    buffer_kind kind;      /* BUF_WEIGHT_GRAD or BUF_BIAS_GRAD */
    int64_t elems;
    int bucket;
    int64_t offset;        /* its first element in the bucket */
} ddp_tensor;

typedef struct {
    int first, count;      /* tensors[first .. first + count) */
    int64_t elems;
    int ready_layer;       /* the layer whose gradients complete it */
} ddp_bucket;

typedef struct {
    ddp_tensor *tensors;
    int n_tensors;
    ddp_bucket *buckets;
    int n_buckets;
    int64_t total_elems, largest_bucket_elems;
} ddp_plan;

/* The plan for elements of elem_bytes each. cap_bytes 0 means no buckets:
 * every gradient in one, complete only after the whole backward (no
 * overlap). 0, or -1 with the reason (out of memory, no parameters). */
int ddp_plan_build(ddp_plan *p, const network *net, int64_t cap_bytes, int64_t first_cap_bytes,
                   int elem_bytes, char *err, size_t err_len);
void ddp_plan_free(ddp_plan *p);

#endif
