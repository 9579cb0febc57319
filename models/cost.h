/* Analytic cost of a training step: FLOPs and minimal DRAM bytes per layer and
 * pass, activation memory kept for backward, and the step's memory footprint.
 * Formulas: shared/notes/models.md §2; every choice the notes leave open is
 * stated beside its code in cost.c. "Minimal bytes" assumes no fusion: each
 * pass reads its operands and writes its results exactly once. */
#ifndef ROOFLINE_COST_H
#define ROOFLINE_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"
#include "precision.h"

typedef enum { PASS_FWD, PASS_BWD_DATA, PASS_BWD_WEIGHTS, PASS_UPDATE, PASS_COUNT } pass;

const char *pass_name(pass p); /* fwd, bwd_data, bwd_weights, update */

typedef struct {
    int64_t macs;               /* forward multiply-accumulates of conv/fc, bias excluded */
    int64_t flops[PASS_COUNT];
    int64_t bytes[PASS_COUNT];
    int64_t written[PASS_COUNT];  /* the part of bytes[] that is written */
    int64_t saved_bytes;        /* kept from forward to backward for this layer */
    bool saturated;             /* the batch was beyond what the counts hold */
} layer_cost;

typedef struct {
    int64_t weights, master_copy, grads, momentum, buffers;
    int64_t saved_activations;  /* the sum of layer_cost.saved_bytes */
    int64_t batch;              /* input images and labels */
    int64_t transient;          /* largest pair of live gradient tensors in backward */
    int64_t total;
} footprint;

typedef struct {
    int batch;
    precision prec;
    int64_t fwd_macs;
    int64_t flops[PASS_COUNT];
    int64_t bytes[PASS_COUNT];
    int64_t written[PASS_COUNT];
    int64_t loss_flops, loss_bytes;  /* softmax cross-entropy, forward and backward */
    int64_t loss_written;
    int64_t step_flops, step_bytes;  /* everything above */
    footprint memory;
    bool saturated;                  /* batch > cost_max_batch: every count is INT64_MAX */
} step_cost;

/* Cost of layer `index` for a batch. Every count is int64_t: a batch beyond
 * what the counts can hold (cost_max_batch) gets every count INT64_MAX and
 * saturated set, never a count that wrapped around. */
layer_cost cost_layer(const network *net, int index, int batch, precision prec);

/* Whole step; per_layer (n_layers entries) may be NULL. Saturates as
 * cost_layer does, beyond cost_max_batch. */
step_cost cost_step(const network *net, int batch, precision prec, layer_cost *per_layer);

/* The largest batch whose step cost fits in the counts (at least 1 for every
 * zoo network within ZOO_MAX_RES and ZOO_MAX_CLASSES); check a batch from the
 * outside world against it before asking for the cost. */
int cost_max_batch(const network *net, precision prec);

int64_t layer_cost_flops(const layer_cost *c);
int64_t layer_cost_bytes(const layer_cost *c);

#endif
