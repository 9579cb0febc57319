/* Which activation and gradient buffers the layers of a network share, for a
 * backend to allocate once. Two savings, as PyTorch makes them:
 * - an elementwise layer writes its output over an input it is the only
 *   consumer of, when nothing's backward needs that input afterwards (ReLU in
 *   place; for a GPU backend also the residual add over a batch norm output);
 * - a gradient lives only from the backward of its first writer to the
 *   backward of its own layer, so gradients whose lifetimes do not overlap
 *   share one slab. An in-place layer's input gradient may be its output
 *   gradient itself (the gradient is masked or passed on in place). */
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
    /* an in-place layer's input gradient is its output gradient's buffer */
    bool grad_in_place;
} memplan_rules;

typedef struct {
    int *out_owner;        /* the layer whose output buffer layer i writes (i, or an input's) */
    int *grad_slab;        /* the gradient slab of layer i's output, -1: none needed */
    int64_t *slab_elems;
    int n_slabs;
} mem_plan;

/* 0, or -1 when out of memory. */
int memplan_make(const network *net, int batch, const memplan_rules *rules, mem_plan *p);
/* Elements of every buffer the plan allocates (outputs it owns and slabs). */
int64_t memplan_elems(const mem_plan *p, const network *net, int batch);
void memplan_free(mem_plan *p);

#endif
