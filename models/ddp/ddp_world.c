#include "ddp_world.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../clock.h"

double ddp_now(void)
{
    return monotonic_seconds();
}

void ddp_no_answer(char *out, size_t len, double limit_s, const char *what, const char *option)
{
    snprintf(out, len,
             "no answer from the other ranks for %.0f s while %s: a peer rank died or hangs "
             "(the limit is %s)",
             limit_s, what, option);
}

int ddp_launcher_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                       "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}

int ddp_world_gpu(const ddp_world *w, int devices, char *err, size_t err_len)
{
    if (devices < 1) {
        snprintf(err, err_len, "no CUDA device on %s", w->host);
        return -1;
    }
    if (w->local_size > devices && !getenv("CUDA_VISIBLE_DEVICES")) {
        snprintf(err, err_len,
                 "%d ranks on %s but %d CUDA device(s): NCCL needs a GPU per rank (it refuses "
                 "two on one device)",
                 w->local_size, w->host, devices);
        return -1;
    }
    return w->local_rank % devices;
}

/* The handler can only use what was prepared before it runs: one line,
 * written with write(2). A signal handler has no context argument, hence
 * this one static. */
static char stop_line[256];
static size_t stop_len;

static void on_stop(int sig)
{
    if (stop_len && write(STDERR_FILENO, stop_line, stop_len) < 0)
        stop_len = 0; /* nothing else is safe to do here */
    _exit(128 + sig);
}

void ddp_world_say(const ddp_world *w, const char *prog, const char *line)
{
    fprintf(stderr, "%s: rank %d of %d (%s): %s\n", prog, w->rank, w->size, w->host, line);
    fflush(stderr);
}

void ddp_install_stop_handler(const ddp_world *w, const char *prog)
{
    int n = snprintf(stop_line, sizeof stop_line,
                     "%s: rank %d of %d (%s): stopped by the launcher (SIGTERM): mpirun and srun "
                     "end every rank when one fails; the rows written so far are kept\n",
                     prog, w->rank, w->size, w->host);
    stop_len = n > 0 && (size_t)n < sizeof stop_line ? (size_t)n : 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

#ifdef HAVE_MPI

bool ddp_world_available(void)
{
    return true;
}

int ddp_mpi_fail(char *err, size_t err_len, const char *file, int line, const char *call,
                 int code)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS)
        snprintf(msg, sizeof msg, "MPI error %d", code);
    snprintf(err, err_len, "%s:%d: %s failed: %s", file, line, call, msg);
    return -1;
}

int ddp_world_init(ddp_world *w, int *argc, char ***argv, double timeout_s,
                   const char *timeout_option, char *err, size_t err_len)
{
    memset(w, 0, sizeof *w);
    w->timeout_s = timeout_s;
    w->timeout_option = timeout_option;
    w->comm = MPI_COMM_NULL;
    int started = 0, provided = 0;
    MPI_TRY(err, err_len, MPI_Initialized(&started));
    if (!started) {
        MPI_TRY(err, err_len, MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
        w->mpi_started = true;
    }
    /* a dead peer must come back as an error code, never abort silently */
    MPI_TRY(err, err_len, MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_TRY(err, err_len, MPI_Comm_dup(MPI_COMM_WORLD, &w->comm));
    MPI_TRY(err, err_len, MPI_Comm_set_errhandler(w->comm, MPI_ERRORS_RETURN));
    MPI_TRY(err, err_len, MPI_Comm_rank(w->comm, &w->rank));
    MPI_TRY(err, err_len, MPI_Comm_size(w->comm, &w->size));
    MPI_Comm local;
    MPI_TRY(err, err_len,
            MPI_Comm_split_type(w->comm, MPI_COMM_TYPE_SHARED, w->rank, MPI_INFO_NULL, &local));
    int rc = MPI_Comm_rank(local, &w->local_rank);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_size(local, &w->local_size);
    MPI_Comm_free(&local);
    if (rc != MPI_SUCCESS)
        return ddp_mpi_fail(err, err_len, __FILE__, __LINE__, "MPI_Comm_rank/size(node)", rc);
    int leader = w->local_rank == 0;
    MPI_TRY(err, err_len, MPI_Allreduce(&leader, &w->nodes, 1, MPI_INT, MPI_SUM, w->comm));
    if (gethostname(w->host, sizeof w->host) != 0)
        snprintf(w->host, sizeof w->host, "unknown");
    w->host[sizeof w->host - 1] = '\0';
    return 0;
}

void ddp_world_finalize(ddp_world *w)
{
    if (w->comm != MPI_COMM_NULL)
        MPI_Comm_free(&w->comm);
    if (w->mpi_started)
        MPI_Finalize();
    w->mpi_started = false;
}

_Noreturn void ddp_world_abort(ddp_world *w, int status)
{
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(w->comm != MPI_COMM_NULL ? w->comm : MPI_COMM_WORLD, status);
    _exit(status); /* MPI_Abort does not return; should it, still end */
}

int ddp_wait(ddp_world *w, MPI_Request *req, double limit_s, const char *what, char *err,
             size_t err_len)
{
    double limit = limit_s > 0 ? limit_s : w->timeout_s;
    double t0 = ddp_now(), spin_until = t0 + 2e-3;
    for (;;) {
        int done = 0;
        MPI_TRY(err, err_len, MPI_Test(req, &done, MPI_STATUS_IGNORE));
        if (done)
            return 0;
        double t = ddp_now();
        if (t - t0 > limit) {
            ddp_no_answer(err, err_len, limit, what, w->timeout_option);
            return -1;
        }
        /* after a short spin, yield the core: a rank sharing it may be the
         * one this wait is for */
        if (t > spin_until) {
            struct timespec pause = {0, 50000};
            nanosleep(&pause, NULL);
        }
    }
}

int ddp_barrier(ddp_world *w, double limit_s, const char *what, char *err, size_t err_len)
{
    MPI_Request req;
    MPI_TRY(err, err_len, MPI_Ibarrier(w->comm, &req));
    return ddp_wait(w, &req, limit_s, what, err, err_len);
}

int ddp_all_true(ddp_world *w, bool mine, bool *all, const char *what, char *err,
                 size_t err_len)
{
    int in = mine ? 1 : 0, out = 0;
    MPI_Request req;
    MPI_TRY(err, err_len, MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_LAND, w->comm, &req));
    if (ddp_wait(w, &req, 0, what, err, err_len))
        return -1;
    *all = out != 0;
    return 0;
}

int ddp_gather(ddp_world *w, const void *mine, size_t bytes, void *all, const char *what,
               char *err, size_t err_len)
{
    if (bytes > (size_t)1 << 30) {
        snprintf(err, err_len, "%s: %zu bytes per rank is too much to gather", what, bytes);
        return -1;
    }
    MPI_Request req;
    MPI_TRY(err, err_len, MPI_Igather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, 0,
                                      w->comm, &req));
    return ddp_wait(w, &req, 0, what, err, err_len);
}

int ddp_min_max_u64(ddp_world *w, uint64_t mine, uint64_t *min, uint64_t *max, const char *what,
                    char *err, size_t err_len)
{
    MPI_Request req[2];
    MPI_TRY(err, err_len,
            MPI_Iallreduce(&mine, min, 1, MPI_UINT64_T, MPI_MIN, w->comm, &req[0]));
    MPI_TRY(err, err_len,
            MPI_Iallreduce(&mine, max, 1, MPI_UINT64_T, MPI_MAX, w->comm, &req[1]));
    if (ddp_wait(w, &req[0], 0, what, err, err_len))
        return -1;
    return ddp_wait(w, &req[1], 0, what, err, err_len);
}

#else /* no MPI: a world of one, and --ddp refused before it gets here */

static int no_mpi(char *err, size_t err_len)
{
    snprintf(err, err_len, "this build has no MPI (mpicc was not found when it was built)");
    return -1;
}

bool ddp_world_available(void)
{
    return false;
}

int ddp_world_init(ddp_world *w, int *argc, char ***argv, double timeout_s,
                   const char *timeout_option, char *err, size_t err_len)
{
    (void)argc, (void)argv;
    memset(w, 0, sizeof *w);
    w->size = w->local_size = w->nodes = 1;
    w->timeout_s = timeout_s;
    w->timeout_option = timeout_option;
    return no_mpi(err, err_len);
}

void ddp_world_finalize(ddp_world *w)
{
    (void)w;
}

_Noreturn void ddp_world_abort(ddp_world *w, int status)
{
    (void)w;
    exit(status);
}

int ddp_barrier(ddp_world *w, double limit_s, const char *what, char *err, size_t err_len)
{
    (void)w, (void)limit_s, (void)what;
    return no_mpi(err, err_len);
}

int ddp_all_true(ddp_world *w, bool mine, bool *all, const char *what, char *err,
                 size_t err_len)
{
    (void)w, (void)mine, (void)all, (void)what;
    return no_mpi(err, err_len);
}

int ddp_gather(ddp_world *w, const void *mine, size_t bytes, void *all, const char *what,
               char *err, size_t err_len)
{
    (void)w, (void)mine, (void)bytes, (void)all, (void)what;
    return no_mpi(err, err_len);
}

int ddp_min_max_u64(ddp_world *w, uint64_t mine, uint64_t *min, uint64_t *max, const char *what,
                    char *err, size_t err_len)
{
    (void)w, (void)mine, (void)min, (void)max, (void)what;
    return no_mpi(err, err_len);
}

#endif
