/* Which activation and gradient buffers the layers of a network share, for a
 * backend to allocate once, as regions of one arena. The savings PyTorch makes:
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
 * loss, backward): a buffer is one activation (with the layers running in
 * place over it), one gradient (with those passed on in place) or one
 * operation's scratch. Buffers
 * are regions of one arena, placed so that two overlap in memory only where
 * their lifetimes are disjoint: the arena is then as large as the most that
 * is live at any one time (a region per buffer, placed largest first in the
 * tightest gap the regions live beside it leave), where whole buffers reused
 * by later tenants left each sized for its largest (ResNet-50 at batch 256:
 * 10.03 GiB of bf16 instead of 10.36). */
typedef struct {
    int *out_owner;        /* the layer whose output layer i writes over (i: its own; in place:
                              an input's owner); -1: never stored (normalised by an add) */
    int *out_buffer;       /* the buffer of layer i's output, -1: none */
    int *grad_buffer;      /* the buffer of the gradient of layer i's output, -1: none needed */
    int *scratch_buffer;   /* [2 i]: the buffer of layer i's forward scratch, [2 i + 1]: of its
                              backward's; -1: none asked for */
    int64_t *buffer_elems;
    int64_t *buffer_offset; /* where buffer s starts in the arena, in elements (aligned) */
    int n_buffers;
    int64_t arena_elems;    /* the whole arena, in elements */
} mem_plan;

/* Every buffer offset is a multiple of this many elements: 512 bytes for
 * 2-byte elements, more than the 16-byte vectors and the cuDNN alignment
 * the CUDA backend needs, and a whole number of 64-byte lines for the CPU. */
enum { MEMPLAN_ALIGN_ELEMS = 256 };

/* 0, or -1 when out of memory. scratch_elems: NULL, or per layer i the
 * elements of scratch memory (a library's workspace) that its forward
 * ([2 i]) and its backward ([2 i + 1]) need while they run: a region
 * living for that one operation, placed beside what is live then, so that
 * a workspace adds to the arena only where it comes on top of the step's
 * most live memory. */
int memplan_make(const network *net, int batch, const memplan_rules *rules,
                 const int64_t *scratch_elems, mem_plan *p);
void memplan_free(mem_plan *p);

/* The step's timeline, for lifetimes: the forward of layer i at i, the loss
 * at n_layers, the backward of layer i at 2 n_layers - i. */
int memplan_forward_time(const network *net, int layer);
int memplan_backward_time(const network *net, int layer);

#endif
