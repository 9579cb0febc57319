/* The NCCL communicator of a world (ddp_nccl_comm.h). Compiled wherever NCCL
 * is found; never yet run on a GPU (make test runs it on the host emulator's
 * stand-ins, tests/emu/host/fake_nccl.cpp). */
#if defined(HAVE_NCCL) && defined(HAVE_CUDA) && defined(HAVE_MPI)

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ddp_nccl_comm.h"

/* The guard of ncclCommInitRank. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t returned; /* on CLOCK_MONOTONIC: no wall-clock step moves the limit */
    bool done;
    const ddp_world *w;
    const char *prog;
} init_guard;

static void *init_guard_main(void *arg)
{
    init_guard *g = arg;
    double limit_s = DDP_COMM_INIT_TIMEOUTS * g->w->timeout_s;
    struct timespec until = {0, 0};
    clock_gettime(CLOCK_MONOTONIC, &until); /* no error to expect: the clock always exists */
    until.tv_sec += (time_t)limit_s;
    pthread_mutex_lock(&g->lock);
    int rc = 0;
    while (!g->done && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&g->returned, &g->lock, &until);
    if (!g->done) {
        char why[DDP_ERR_LEN];
        ddp_no_answer(why, sizeof why, limit_s, DDP_COMM_INIT_WHAT, g->w->timeout_option);
        ddp_world_say(g->w, g->prog, why);
        _exit(1); /* the main thread is inside NCCL: the launcher ends the other ranks */
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

int ddp_nccl_fail(ncclComm_t comm, char *err, size_t err_len, const char *file, int line,
                  const char *call, ncclResult_t r)
{
    const char *detail = ncclGetLastError(comm);
    snprintf(err, err_len, "%s:%d: %s failed: %s%s%s", file, line, call, ncclGetErrorString(r),
             detail && *detail ? ": " : "", detail ? detail : "");
    return -1;
}

/* ncclCommInitRank with its guard running; 0, or -1 with the reason (no
 * guard, no call: unguarded it could wait forever). */
static int init_bounded(ncclComm_t *comm, const ddp_world *w, const char *prog, ncclUniqueId id,
                        char *err, size_t err_len)
{
    init_guard g = {.done = false, .w = w, .prog = prog};
    pthread_condattr_t monotonic;
    int rc = pthread_condattr_init(&monotonic);
    if (rc == 0) {
        rc = pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
        if (rc == 0)
            rc = pthread_cond_init(&g.returned, &monotonic);
        pthread_condattr_destroy(&monotonic);
    }
    if (rc != 0) {
        snprintf(err, err_len, "%s:%d: the guard of ncclCommInitRank: its condition: %s",
                 __FILE__, __LINE__, strerror(rc));
        return -1;
    }
    pthread_mutex_init(&g.lock, NULL);
    pthread_t guard;
    if ((rc = pthread_create(&guard, NULL, init_guard_main, &g)) != 0) {
        snprintf(err, err_len, "%s:%d: the guard of ncclCommInitRank: pthread_create: %s",
                 __FILE__, __LINE__, strerror(rc));
        pthread_cond_destroy(&g.returned);
        pthread_mutex_destroy(&g.lock);
        return -1;
    }
    ncclResult_t r = ncclCommInitRank(comm, w->size, id, w->rank);
    pthread_mutex_lock(&g.lock);
    g.done = true;
    pthread_cond_signal(&g.returned);
    pthread_mutex_unlock(&g.lock);
    pthread_join(guard, NULL);
    pthread_cond_destroy(&g.returned);
    pthread_mutex_destroy(&g.lock);
    return r == ncclSuccess
               ? 0
               : ddp_nccl_fail(NULL, err, err_len, __FILE__, __LINE__, "ncclCommInitRank", r);
}

int ddp_nccl_comm_open(ddp_world *w, const char *prog, ncclComm_t *comm, char *err,
                       size_t err_len)
{
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t r;
    if (w->rank == 0 && (r = ncclGetUniqueId(&id)) != ncclSuccess)
        return ddp_nccl_fail(NULL, err, err_len, __FILE__, __LINE__, "ncclGetUniqueId", r);
    MPI_Request req;
    MPI_TRY(err, err_len, MPI_Ibcast(&id, (int)sizeof id, MPI_BYTE, 0, w->comm, &req));
    if (ddp_wait(w, &req, 0, "broadcasting the NCCL unique id", err, err_len))
        return -1;
    return init_bounded(comm, w, prog, id, err, err_len);
}

bool ddp_nccl_async_failed(ncclComm_t comm, const char *doing, char *why, size_t why_len)
{
    ncclResult_t async = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(comm, &async);
    if (r == ncclSuccess && (async == ncclSuccess || async == ncclInProgress))
        return false;
    const char *detail = ncclGetLastError(comm);
    snprintf(why, why_len, "NCCL asynchronous error while %s: %s%s%s", doing,
             ncclGetErrorString(r != ncclSuccess ? r : async), detail && *detail ? ": " : "",
             detail ? detail : "");
    return true;
}

#else
/* ISO C wants a translation unit to declare something */
typedef int ddp_nccl_comm_unavailable;
#endif
