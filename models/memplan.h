/* Which activation and gradient buffers the layers of a network share, for a
 * backend to allocate once. The savings PyTorch makes:
 * - an elementwise layer writes its output over an input it is the only
 *   consumer of, when nothing's backward needs that input afterwards (ReLU in
 *   place; for a GPU backend also the residual add over a batch norm output);
 * - a gradient lives only from the backward of its first writer to the
 *   backward of its own layer, so gradients whose lifetimes do not overlap
 *   share one buffer. An in-place layer's input gradient may be its output
 *   gradient itself (the gradient is masked or passed on in place);
 * - an activation that no backward reads again gives its buffer to the
 *   gradients born after (GPU: where PyTorch's allocator frees it). */
#ifndef ROOFLINE_MEMPLAN_H
#define ROOFLINE_MEMPLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"

typedef struct {
    /* the add writes over an input whose producer's backward needs only its
     * own input (batch norm, conv, fc), and passes that input's gradient on
     * in place */
    bool add_in_place;
    /* and where its other input is also a batch norm only it consumes, that
     * output is never stored: the add normalises both (a backend that sets
     * this must) */
    bool add_normalises_both;
    /* an in-place layer's input gradient is its output gradient's buffer */
    bool grad_in_place;
    /* an activation no backward will read again lends its buffer to the
     * gradients born after that (PyTorch frees it: the same memory) */
    bool reuse_dead_activations;
} memplan_rules;

/* Buffers, and which one each layer's output and output gradient live in.
 * Everything a buffer holds has a lifetime on the step's timeline (forward,
 * loss, backward); two things share a buffer only where their lifetimes are
 * disjoint, or where one runs in place over the other. */
typedef struct {
    int *out_owner;        /* the layer whose output layer i writes over (i: its own; in place:
                              an input's owner); -1: never stored (normalised by an add) */
    int *out_buffer;       /* the buffer of layer i's output, -1: none */
    int *grad_buffer;      /* the buffer of the gradient of layer i's output, -1: none needed */
    int64_t *buffer_elems;
    int n_buffers;
} mem_plan;

/* 0, or -1 when out of memory. */
int memplan_make(const network *net, int batch, const memplan_rules *rules, mem_plan *p);
/* Elements of every buffer of the plan. */
int64_t memplan_elems(const mem_plan *p, const network *net, int batch);
void memplan_free(mem_plan *p);

/* The step's timeline, for lifetimes: the forward of layer i at i, the loss
 * at n_layers, the backward of layer i at 2 n_layers - i. */
int memplan_forward_time(const network *net, int layer);
int memplan_backward_time(const network *net, int layer);

#endif
