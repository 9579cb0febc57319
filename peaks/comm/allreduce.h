/* The allreduce microbenchmark (bin/allreduce): a sweep of message sizes
 * over MPI (host buffers) or NCCL (device buffers), timed, checked and
 * reported as nccl-tests reports it: algbw = bytes / time, and busbw = algbw x
 * 2(n-1)/n for allreduce, the bandwidth each rank's link carries in a ring
 * (comparable across rank counts and with the links' own figures). From the
 * curve: the small-message latency and the bandwidth plateau, as peaks.csv
 * rows (ceilings allreduce and allreduce_latency). */
#ifndef ROOFLINE_PEAKS_ALLREDUCE_H
#define ROOFLINE_PEAKS_ALLREDUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../../models/ddp/ddp_world.h"

typedef enum { COMM_MPI, COMM_NCCL } comm_transport;

typedef struct {
    int64_t bytes;
    int iters;
    double time_us;             /* per allreduce, the slowest rank's mean */
    double algbw_gbs, busbw_gbs;
    bool correct;               /* every element the exact sum on every rank */
} allreduce_point;

typedef struct {
    comm_transport transport;
    int64_t min_bytes, max_bytes;   /* fp32 elements: multiples of 4 */
    int factor;                     /* each size the previous times factor */
    int warmup;
    double target_s;                /* time to spend per size (iterations from a trial) */
    int device;                     /* NCCL: the CUDA device */
} allreduce_options;

/* What the sweep measured, with one line on the first failure. */
typedef struct {
    allreduce_point *points;
    int n;
    char err[DDP_ERR_LEN];
} allreduce_curve;

/* Runs the sweep on every rank of w (a collective: all ranks call it with
 * the same options). 0, or -1 with the reason in c->err. */
int allreduce_sweep(ddp_world *w, const allreduce_options *o, allreduce_curve *c);
void allreduce_curve_free(allreduce_curve *c);

/* One transport's timed loop: iters allreduces of `bytes` out of place
 * after `warmup` untimed ones, started together on every rank; *seconds is
 * this rank's time for the iters, *correct its check of the result (every
 * element the exact sum). NCCL needs its communicator opened first. */
int allreduce_mpi_run(ddp_world *w, int64_t bytes, int warmup, int iters, double *seconds,
                      bool *correct, char *err, size_t err_len);

typedef struct nccl_bench nccl_bench;
nccl_bench *allreduce_nccl_open(ddp_world *w, int device, char *err, size_t err_len);
int allreduce_nccl_run(nccl_bench *nb, int64_t bytes, int warmup, int iters, double *seconds,
                       bool *correct, char *err, size_t err_len);
void allreduce_nccl_close(nccl_bench *nb);

/* The value rank r puts in element i: 1..8, so that the sum over any number
 * of ranks (up to 2^21) is exact in fp32 in any order; table[i % 8] is the
 * sum that must come back. */
static inline float allreduce_fill(int rank, int64_t i)
{
    return (float)(((int64_t)rank + i) % 8 + 1);
}
void allreduce_expected_table(int ranks, float table[8]);

/* nccl-tests' bus bandwidth factor of allreduce: 2(n-1)/n (0 for one rank). */
double allreduce_bus_factor(int ranks);

/* The curve's summary: the latency (time of the smallest size) and the
 * plateau (median busbw over the sizes of at least max_bytes / 16; algbw for a
 * single rank, whose busbw is 0 by definition). */
typedef struct {
    double latency_us;
    int64_t latency_bytes;
    double plateau_gbs;
    int64_t plateau_from_bytes;
    bool plateau_is_algbw;
} allreduce_summary;

allreduce_summary allreduce_summarise(const allreduce_curve *c);

/* allreduce.csv: the whole curve (env, transport, world_size, nodes, dtype,
 * bytes, iters, time_us, algbw_gbs, busbw_gbs, correct). */
int allreduce_write_curve(const char *path, const char *env, const char *transport, int ranks,
                          int nodes, const allreduce_curve *c, char *err, size_t err_len);

/* peaks.csv rows (its schema, with header): allreduce (GB/s) and
 * allreduce_latency (us), for the runner to append to the run's peaks.csv. */
int allreduce_write_peaks(const char *path, const char *env, const char *device,
                          const char *transport, int ranks, int nodes, const allreduce_summary *s,
                          char *err, size_t err_len);

#endif
