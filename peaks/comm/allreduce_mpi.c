/* The MPI side of the allreduce sweep: host buffers, MPI_Iallreduce and a
 * bounded wait, as the DDP module's host transport reduces (so the curve
 * is the one its buckets see). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allreduce.h"

#ifdef HAVE_MPI

static int one_allreduce(ddp_world *w, const float *send, float *recv, int count, char *err,
                         size_t err_len)
{
    MPI_Request req;
    MPI_TRY(err, err_len, MPI_Iallreduce(send, recv, count, MPI_FLOAT, MPI_SUM, w->comm, &req));
    return ddp_wait(w, &req, 0, "reducing (MPI_Iallreduce)", err, err_len);
}

int allreduce_mpi_run(ddp_world *w, int64_t bytes, int warmup, int iters, double *seconds,
                      bool *correct, char *err, size_t err_len)
{
    int64_t count = bytes / (int64_t)sizeof(float);
    if (count > 0x7fffffff) {
        snprintf(err, err_len, "%lld bytes: more elements than one MPI call takes",
                 (long long)bytes);
        return -1;
    }
    float *send = NULL, *recv = NULL;
    if (posix_memalign((void **)&send, 64, (size_t)bytes) ||
        posix_memalign((void **)&recv, 64, (size_t)bytes)) {
        free(send);
        snprintf(err, err_len, "out of memory for two buffers of %lld bytes", (long long)bytes);
        return -1;
    }
    for (int64_t i = 0; i < count; i++)
        send[i] = allreduce_fill(w->rank, i);
    memset(recv, 0, (size_t)bytes);
    int rc = 0;
    for (int k = 0; k < warmup && rc == 0; k++)
        rc = one_allreduce(w, send, recv, (int)count, err, err_len);
    if (rc == 0)
        rc = ddp_barrier(w, 0, "aligning the ranks before the timed loop", err, err_len);
    double t0 = ddp_now();
    for (int k = 0; k < iters && rc == 0; k++)
        rc = one_allreduce(w, send, recv, (int)count, err, err_len);
    *seconds = ddp_now() - t0;
    if (rc == 0) {
        float table[8];
        allreduce_expected_table(w->size, table);
        bool ok = true;
        for (int64_t i = 0; i < count && ok; i++)
            ok = recv[i] == table[i % 8];
        *correct = ok;
    }
    free(send);
    free(recv);
    return rc;
}

#else

int allreduce_mpi_run(ddp_world *w, int64_t bytes, int warmup, int iters, double *seconds,
                      bool *correct, char *err, size_t err_len)
{
    (void)w, (void)bytes, (void)warmup, (void)iters, (void)seconds, (void)correct;
    snprintf(err, err_len, "this build has no MPI (mpicc was not found when it was built)");
    return -1;
}

#endif
