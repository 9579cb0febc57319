/* An NCCL communicator over a world's ranks, made and watched the one way
 * that bin/train --ddp (ddp_nccl.c) and bin/allreduce --transport nccl
 * (peaks/comm/allreduce_nccl.c) both need: rank 0's unique id broadcast over
 * MPI, the communicator's creation bounded, and NCCL's asynchronous errors in
 * one wording. Declared only where the build has NCCL, CUDA and MPI. */
#ifndef ROOFLINE_DDP_NCCL_COMM_H
#define ROOFLINE_DDP_NCCL_COMM_H

#if defined(HAVE_NCCL) && defined(HAVE_CUDA) && defined(HAVE_MPI)

#include <stdbool.h>
#include <stddef.h>

#include <nccl.h>

#include "ddp_world.h"

/* Writes "file:line: call failed: NCCL's string: NCCL's last error" into
 * err (the last error of comm, or of any communicator where comm is NULL);
 * returns -1. Every NCCL call of the suite reports through it. */
int ddp_nccl_fail(ncclComm_t comm, char *err, size_t err_len, const char *file, int line,
                  const char *call, ncclResult_t r);

/* Rank 0's ncclGetUniqueId, broadcast to every rank (a wait bounded by the
 * world's timeout), then ncclCommInitRank on the current device.
 * ncclCommInitRank blocks until every rank has joined and has no timeout of
 * its own: a guard thread ends the process (_exit(1)) with one line on stderr,
 * "prog: rank r of n (host): no answer from the other ranks ... while
 * creating the NCCL communicator ...", when it has not returned within
 * DDP_COMM_INIT_TIMEOUTS x the world's timeout (nothing is measured yet, and
 * a communicator still being made cannot be aborted; the launcher then ends
 * the other ranks). 0, or -1 with the reason in err. */
int ddp_nccl_comm_open(ddp_world *w, const char *prog, ncclComm_t *comm, char *err,
                       size_t err_len);

/* true, with the line in why, when NCCL reports an asynchronous error on comm
 * (a lost peer, a network failure) while `doing`; ncclInProgress is no error. */
bool ddp_nccl_async_failed(ncclComm_t comm, const char *doing, char *why, size_t why_len);

#endif
#endif
