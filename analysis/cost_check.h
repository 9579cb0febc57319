/* The counters against the cost model, so that each checks the other: per
 * layer of the network, the FLOPs and DRAM bytes that the kernels of a GPU
 * trace counted (source cupti; the layer's fwd, bwd_data and bwd_weights
 * kernels summed, per traced step) beside the analytic ones of models/cost.h
 * (cost_layer, the same three passes), and their ratio; the loss and the
 * update (every layer's, as the fused update kernel runs them) are rows of
 * their own; then sums per layer type and over the step. Communication
 * kernels have no analytic cost and are left out. The analytic bytes are the
 * cost model's minimal bytes (no fusion, each operand read once): counted
 * bytes below them are cache reuse or fusion, above them re-reads. */
#ifndef ROOFLINE_COST_CHECK_H
#define ROOFLINE_COST_CHECK_H

#include <stdbool.h>

#include "run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Counted and analytic figures further apart than this factor (either way)
 * are a finding of the report. */
#define COST_CHECK_FACTOR 2.0

/* The passes a layer's kernels are counted in; the loss and the update
 * rows have no pass of their own (their `passes` stay empty). */
enum { COST_PASSES = 3 };
const char *cost_check_pass_name(int pass); /* fwd, bwd_data, bwd_weights */

typedef struct {
    double kernels;         /* counted kernel launches per traced step (0: none of its own,
                               e.g. a ReLU fused into a batch norm's kernels) */
    double measured_flops, analytic_flops, flops_ratio; /* ratio NaN where undefined */
    double measured_bytes, analytic_bytes, bytes_ratio; /* DRAM read + write */
} cost_counts;

typedef struct {
    char name[64];          /* the layer, "loss", "update", a layer type or "step" */
    const char *layer_type; /* the network's (conv, bn, ...), "loss", "sgd"; "" for the step */
    cost_counts all;        /* every pass together */
    cost_counts pass[COST_PASSES]; /* fwd, bwd_data, bwd_weights: an algorithm differs per
                                      pass (Winograd forward, FFT backward) */
} cost_check_row;

typedef struct {
    const char *env, *model, *precision;
    int res, batch;
    char why[160];          /* "" when compared, else why not */
    cost_check_row *layers; /* in the network's order, then loss and update */
    int n_layers;
    cost_check_row *types;  /* in order of first appearance among the layers */
    int n_types;
    cost_check_row step;
    double other_kernels;   /* counted launches in no layer (comm, none), per traced step */
} cost_check;

/* The check of trace t. Without counted rows, for a network, resolution or
 * precision the cost model does not know, or a batch beyond its counts, why
 * says so and there are no rows. Returns 0, or -1 out of memory. */
int cost_check_build(const run_trace *t, cost_check *out);
void cost_check_free(cost_check *c);

/* measured / analytic; NaN without kernels, measurement or analytic figure. */
double cost_check_ratio(double measured, double analytic, double kernels);

/* Whether either ratio of c lies outside [1/factor, factor]. */
bool cost_counts_outside(const cost_counts *c, double factor);

/* The counts of r in scope s: COST_PASSES for every pass together, else
 * pass s. */
const cost_counts *cost_check_scope(const cost_check_row *r, int s);

/* One disagreement: a layer (index into layers) in a scope. */
typedef struct {
    int layer, scope;
} cost_check_entry;

/* The disagreements beyond `factor`: every pass of a layer that is outside,
 * and a layer's passes together where it is outside while none of its passes
 * is (the loss and the update have only that scope); the weightiest first:
 * by |counted - analytic| as a share of the step's analytic figure (of FLOPs
 * or bytes, whichever is outside and weighs more). A malloc'd array of *n
 * (NULL out of memory). */
cost_check_entry *cost_check_outside_list(const cost_check *c, double factor, int *n);

#ifdef __cplusplus
}
#endif

#endif
