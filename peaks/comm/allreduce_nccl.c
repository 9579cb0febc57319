/* The NCCL side of the allreduce sweep: device buffers, one communicator
 * made from a unique id broadcast over MPI, ncclAllReduce on a stream timed
 * with CUDA events, the result copied back and checked. Every wait on the
 * reductions is bounded by the world's timeout (--timeout): a rank that died
 * leaves the others' reductions waiting forever, which NCCL reports no
 * sooner. The communicator is made as bin/train --ddp makes its own
 * (models/ddp/ddp_nccl_comm.h: its creation bounded by 10 x the timeout).
 * Compiled wherever NCCL is found; never yet run on a GPU (make test runs
 * it on the host emulator's stand-ins). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "allreduce.h"

#if defined(HAVE_NCCL) && defined(HAVE_CUDA) && defined(HAVE_MPI)

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "../../models/ddp/ddp_nccl_comm.h"

struct nccl_bench {
    ddp_world *w;
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t start, stop, done;
    bool stuck; /* reductions that may never end are queued on comm */
};

#define CUDA_OR_FAIL(call)                                                                    \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            snprintf(err, err_len, "%s:%d: %s failed: %s", __FILE__, __LINE__, #call,         \
                     cudaGetErrorString(e_));                                                 \
            goto fail;                                                                        \
        }                                                                                     \
    } while (0)

#define NCCL_OR_FAIL(call)                                                                    \
    do {                                                                                      \
        ncclResult_t r_ = (call);                                                             \
        if (r_ != ncclSuccess) {                                                              \
            ddp_nccl_fail(nb->comm, err, err_len, __FILE__, __LINE__, #call, r_);             \
            goto fail;                                                                        \
        }                                                                                     \
    } while (0)

nccl_bench *allreduce_nccl_open(ddp_world *w, int device, char *err, size_t err_len)
{
    nccl_bench *nb = calloc(1, sizeof *nb);
    if (!nb) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    nb->w = w;
    CUDA_OR_FAIL(cudaSetDevice(device));
    /* every peer connected inside the communicator's creation, which is
     * bounded (ddp_nccl_comm.h), not inside the first reduction of each
     * algorithm (NCCL 2.22 and later), where a hung peer would hang this
     * program, which has no watchdog; a user's own setting is kept */
    setenv("NCCL_RUNTIME_CONNECT", "0", 0);
    if (ddp_nccl_comm_open(w, "allreduce", &nb->comm, err, err_len))
        goto fail;
    CUDA_OR_FAIL(cudaStreamCreateWithFlags(&nb->stream, cudaStreamNonBlocking));
    CUDA_OR_FAIL(cudaEventCreate(&nb->start));
    CUDA_OR_FAIL(cudaEventCreate(&nb->stop));
    CUDA_OR_FAIL(cudaEventCreateWithFlags(&nb->done, cudaEventDisableTiming));
    return nb;
fail:
    allreduce_nccl_close(nb);
    return NULL;
}

void allreduce_nccl_close(nccl_bench *nb)
{
    if (!nb)
        return;
    /* stuck: ncclCommDestroy would wait for the reductions forever, and
     * ncclCommAbort has been seen to hang too (ddp_nccl.c): the caller ends
     * the process, which ends NCCL's threads with it */
    if (nb->comm && !nb->stuck)
        ncclCommDestroy(nb->comm);
    if (nb->start)
        cudaEventDestroy(nb->start);
    if (nb->stop)
        cudaEventDestroy(nb->stop);
    if (nb->done)
        cudaEventDestroy(nb->done);
    if (nb->stream)
        cudaStreamDestroy(nb->stream);
    free(nb);
}

/* Waits until what is queued on the stream so far has run, within the
 * world's timeout, watching NCCL's asynchronous errors. */
static int wait_stream(nccl_bench *nb, const char *doing, char *err, size_t err_len)
{
    CUDA_OR_FAIL(cudaEventRecord(nb->done, nb->stream));
    double t0 = ddp_now();
    for (;;) {
        cudaError_t e = cudaEventQuery(nb->done);
        if (e == cudaSuccess)
            return 0;
        if (e != cudaErrorNotReady) {
            snprintf(err, err_len, "%s:%d: waiting for %s: %s", __FILE__, __LINE__, doing,
                     cudaGetErrorString(e));
            break;
        }
        if (ddp_nccl_async_failed(nb->comm, doing, err, err_len))
            break;
        if (ddp_now() - t0 > nb->w->timeout_s) {
            ddp_no_answer(err, err_len, nb->w->timeout_s, doing, nb->w->timeout_option);
            break;
        }
        struct timespec pause = {0, 100 * 1000}; /* 0.1 ms: the timing is the events' */
        nanosleep(&pause, NULL);
    }
fail:
    nb->stuck = true;
    return -1;
}

int allreduce_nccl_run(nccl_bench *nb, int64_t bytes, int warmup, int iters, double *seconds,
                       bool *correct, char *err, size_t err_len)
{
    size_t count = (size_t)bytes / sizeof(float);
    float *host = malloc((size_t)bytes), *send = NULL, *recv = NULL;
    int rc = -1;
    /* reductions queued and not yet seen done: a failure then (an NCCL call
     * returning a lost peer's error) leaves them spinning on the GPU */
    bool queued = false;
    float ms = 0.0f;
    if (!host) {
        snprintf(err, err_len, "out of host memory for %lld bytes", (long long)bytes);
        return -1;
    }
    for (size_t i = 0; i < count; i++)
        host[i] = allreduce_fill(nb->w->rank, (int64_t)i);
    CUDA_OR_FAIL(cudaMalloc((void **)&send, (size_t)bytes));
    CUDA_OR_FAIL(cudaMalloc((void **)&recv, (size_t)bytes));
    /* on the NCCL stream: it is non-blocking, so a copy or memset on the
     * legacy default stream would not be ordered before the allreduces
     * (cudaMemcpy from pageable memory returns once the data is staged, and
     * cudaMemset returns before it is done): the first sums could read a send
     * buffer still being filled and a late memset could clear recv after them */
    CUDA_OR_FAIL(cudaMemcpyAsync(send, host, (size_t)bytes, cudaMemcpyHostToDevice, nb->stream));
    CUDA_OR_FAIL(cudaMemsetAsync(recv, 0, (size_t)bytes, nb->stream));
    queued = true;
    for (int k = 0; k < warmup; k++)
        NCCL_OR_FAIL(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, nb->comm, nb->stream));
    if (wait_stream(nb, "the warm-up reductions", err, err_len))
        goto fail;
    queued = false;
    if (ddp_barrier(nb->w, 0, "aligning the ranks before the timed loop", err, err_len))
        goto fail;
    CUDA_OR_FAIL(cudaEventRecord(nb->start, nb->stream));
    queued = true;
    for (int k = 0; k < iters; k++)
        NCCL_OR_FAIL(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, nb->comm, nb->stream));
    CUDA_OR_FAIL(cudaEventRecord(nb->stop, nb->stream));
    if (wait_stream(nb, "the timed reductions", err, err_len))
        goto fail;
    queued = false;
    CUDA_OR_FAIL(cudaEventElapsedTime(&ms, nb->start, nb->stop));
    *seconds = ms * 1e-3;
    CUDA_OR_FAIL(cudaMemcpyAsync(host, recv, (size_t)bytes, cudaMemcpyDeviceToHost, nb->stream));
    CUDA_OR_FAIL(cudaStreamSynchronize(nb->stream));
    float table[8];
    allreduce_expected_table(nb->w->size, table);
    bool ok = true;
    for (size_t i = 0; i < count && ok; i++)
        ok = host[i] == table[i % 8];
    *correct = ok;
    rc = 0;
fail:
    if (rc != 0 && queued)
        nb->stuck = true;
    /* stuck: cudaFree would wait for the reductions that never end */
    if (!nb->stuck) {
        cudaFree(send);
        cudaFree(recv);
    }
    free(host);
    return rc;
}

#else

nccl_bench *allreduce_nccl_open(ddp_world *w, int device, char *err, size_t err_len)
{
    (void)w, (void)device;
    snprintf(err, err_len, "this build has no NCCL (nccl.h, the CUDA toolkit or MPI was not "
                           "found when it was built)");
    return NULL;
}

int allreduce_nccl_run(nccl_bench *nb, int64_t bytes, int warmup, int iters, double *seconds,
                       bool *correct, char *err, size_t err_len)
{
    (void)nb, (void)bytes, (void)warmup, (void)iters, (void)seconds, (void)correct;
    snprintf(err, err_len, "this build has no NCCL");
    return -1;
}

void allreduce_nccl_close(nccl_bench *nb)
{
    (void)nb;
}

#endif
