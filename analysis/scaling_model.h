/* The scaling model of data-parallel training (issue 15):
 *
 *   step(N) = compute(N) + max(0, allreduce(N, bytes) - overlap)
 *
 * allreduce is an alpha-beta cost: a ring over the N ranks costs 2(N-1)
 * latencies alpha and moves 2(N-1)/N x bytes over each rank's link of bus
 * bandwidth B (nccl-tests' busbw); a tree costs 2 log2(N) latencies and
 * 2 x bytes / B; the cheaper is taken, as NCCL chooses. Over several nodes
 * it is hierarchical: a reduce-scatter and an all-gather inside each node
 * (g ranks on the intra-node link), and between the nodes an allreduce of
 * bytes / g per rank, every rank on its own inter-node port (one NIC per GPU,
 * as DGX H100 nodes have). Alpha and B come from a fit to a measured
 * allreduce curve, or from the links' parameters (NVLink 4: 450 GB/s per
 * direction; NDR InfiniBand: 50 GB/s per port).
 *
 * The gradients travel in buckets launched as backward produces them: every
 * bucket but the last can hide behind the backward that is still to run, the
 * last never can, so overlap = min(window, allreduce - allreduce(last
 * bucket)), with window = the backward's time x the overlap efficiency (1 for
 * a GPU whose communication runs on its own stream, 0 for CPU ranks that
 * progress MPI from the step's own thread and have no core to spare). Host
 * transports also pack and unpack every bucket on the step's thread: a fixed
 * cost per step whatever the ranks, the one-rank run's exposed time. Strong scaling divides the global batch (compute(N) =
 * compute(1) / N, linear in the batch); weak keeps the per-rank batch
 * (compute(N) = compute(1)). Efficiency: strong T1 / (N x TN), weak T1 / TN. */
#ifndef ROOFLINE_SCALING_MODEL_H
#define ROOFLINE_SCALING_MODEL_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One kind of link: the latency of one algorithm step and the bus bandwidth. */
typedef struct {
    double alpha_s;
    double busbw_Bps;
} sm_link;

/* alpha and busbw fitted to an allreduce curve measured on `ranks` ranks:
 * t = a + b x bytes through the smallest size's point (the latency), the
 * slope by least squares in relative error over the sizes of at least
 * bw_min_bytes (the bandwidth; a CPU runs smaller sizes from its caches,
 * faster than the buckets DDP sends); alpha = a / (2(ranks-1)), busbw =
 * 2(ranks-1)/ranks / b. */
typedef struct {
    sm_link link;
    int ranks, points;
    double max_rel_err;         /* the worst point's |model - measured| / measured */
} sm_fit;

/* 0, or -1 when it cannot fit (fewer than 2 points, one rank, a slope that is
 * not positive). Points in increasing size. */
int sm_fit_allreduce(const double *bytes, const double *seconds, int n, int ranks,
                     double bw_min_bytes, sm_fit *out);

/* The allreduce of `bytes` over n ranks on one link: min(ring, tree). */
double sm_allreduce_flat(const sm_link *l, int n, double bytes);

typedef struct {
    sm_link intra, inter;
    int ranks_per_node;         /* g */
} sm_topology;

/* The allreduce of `bytes` over n ranks on ceil(n / g) nodes (n <= g: one
 * node, the flat cost on the intra-node link). */
double sm_allreduce(const sm_topology *t, int n, double bytes);

typedef struct {
    double compute1_ms;         /* one rank's step less its exposed communication */
    double step1_ms;            /* the one-rank step: T1 of the efficiency */
    double backward_share;      /* of compute: backward's time (the analytic FLOPs' share) */
    const double *bucket_bytes; /* in launch order (backward order) */
    int n_buckets;
    double overlap_efficiency;  /* of the backward window: 1 GPU, 0 CPU ranks */
    double host_copy_ms;        /* packing and unpacking on the step's thread (host
                                   transports; a GPU's is in its allreduce): 0 none */
    bool strong;
} sm_step_inputs;

typedef struct {
    int ranks, nodes;
    double compute_ms, allreduce_ms, overlap_ms, exposed_ms, step_ms, efficiency;
    double last_bucket_ms;      /* the last bucket's allreduce: never hidden */
} sm_prediction;

sm_prediction sm_predict(const sm_topology *t, const sm_step_inputs *in, int n);

#ifdef __cplusplus
}
#endif

#endif
