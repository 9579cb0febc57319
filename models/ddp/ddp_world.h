/* The ranks of a data-parallel run (MPI bootstraps them, whether they then
 * reduce over MPI or NCCL): who this process is, how many share its node, and
 * waits that end with an error line instead of hanging when a peer is lost.
 * Every MPI call goes through MPI_TRY (file, line, MPI_Error_string); the
 * communicator returns errors (MPI_ERRORS_RETURN) rather than aborting, and
 * every wait on the other ranks is bounded by the world's timeout. */
#ifndef ROOFLINE_DDP_WORLD_H
#define ROOFLINE_DDP_WORLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef HAVE_MPI
#include <mpi.h>
#endif

enum { DDP_ERR_LEN = 480, DDP_HOST_LEN = 64 };

typedef struct {
    int rank, size;
    int local_rank, local_size;  /* among the ranks of this node */
    int nodes;                   /* distinct nodes of the world */
    char host[DDP_HOST_LEN];
    double timeout_s;            /* the longest wait for the other ranks */
    const char *timeout_option;  /* the program's option that sets it, for the error line */
    bool mpi_started;            /* MPI_Init was called here (finalize it) */
#ifdef HAVE_MPI
    MPI_Comm comm;               /* MPI_COMM_WORLD's duplicate, errors returned */
#endif
} ddp_world;

/* true when this build can run data-parallel (it has MPI). */
bool ddp_world_available(void);

/* The rank the launcher gave this process before MPI starts (Open MPI's
 * OMPI_COMM_WORLD_RANK, PMI_RANK, Slurm's SLURM_PROCID), else 0: rank 0
 * alone reports bad options. */
int ddp_launcher_rank(void);

/* The GPU of this rank among the `devices` it sees: one each by its rank on
 * the node, wrapping where the launcher shows each rank only its own
 * (Slurm's --gpus-per-task, CUDA_VISIBLE_DEVICES set per rank, where device 0
 * is the rank's own). -1 with the reason when the node has more ranks than
 * GPUs and every rank sees them all (no CUDA_VISIBLE_DEVICES): NCCL refuses
 * two ranks on one GPU. */
int ddp_world_gpu(const ddp_world *w, int devices, char *err, size_t err_len);

/* MPI_Init_thread (funneled: only the thread that runs the step calls MPI),
 * the world's communicator, ranks and nodes; timeout_s bounds every wait on
 * the other ranks and timeout_option (a string constant, e.g.
 * "--ddp-timeout") is the option a line about a wait that passed it names.
 * 0, or -1 with the reason. */
int ddp_world_init(ddp_world *w, int *argc, char ***argv, double timeout_s,
                   const char *timeout_option, char *err, size_t err_len);

/* MPI_Finalize when it was started here. */
void ddp_world_finalize(ddp_world *w);

/* Ends every rank after a failure already reported (MPI_Abort: the launcher
 * takes the others down rather than leave them waiting). */
void ddp_world_abort(ddp_world *w, int status) __attribute__((noreturn));

/* "prog: rank r of n (host): line" on stderr, flushed: a rank's one line
 * about a failure, from any of its threads. */
void ddp_world_say(const ddp_world *w, const char *prog, const char *line);

/* A SIGTERM/SIGINT handler that says in one line that the launcher stopped
 * this rank (mpirun and srun stop the others when one rank dies), then exits
 * 128 + signal: the steps.csv rows already written (flushed per row) stay. */
void ddp_install_stop_handler(const ddp_world *w, const char *prog);

/* Waits at most `limit_s` seconds (0: the world's timeout) for every rank to
 * arrive; `what` names the place for the error line. */
int ddp_barrier(ddp_world *w, double limit_s, const char *what, char *err, size_t err_len);

/* true on every rank when every rank passed true (a logical and). */
int ddp_all_true(ddp_world *w, bool mine, bool *all, const char *what, char *err,
                 size_t err_len);

/* Every rank's `bytes` bytes of `mine` into `all` (size x bytes, rank order) on
 * rank 0; others pass all = NULL. */
int ddp_gather(ddp_world *w, const void *mine, size_t bytes, void *all, const char *what,
               char *err, size_t err_len);

/* The smallest and largest of every rank's value, on every rank. */
int ddp_min_max_u64(ddp_world *w, uint64_t mine, uint64_t *min, uint64_t *max, const char *what,
                    char *err, size_t err_len);

#ifdef HAVE_MPI
/* Writes "file:line: call failed: MPI's message" into err; returns -1. */
int ddp_mpi_fail(char *err, size_t err_len, const char *file, int line, const char *call,
                 int code);

#define MPI_TRY(err, err_len, call)                                                           \
    do {                                                                                      \
        int rc_ = (call);                                                                     \
        if (rc_ != MPI_SUCCESS)                                                               \
            return ddp_mpi_fail((err), (err_len), __FILE__, __LINE__, #call, rc_);            \
    } while (0)

/* Tests `req` until it completes or the limit passes (0: the world's
 * timeout): a lost peer becomes an error line naming `what`, not a hang. */
int ddp_wait(ddp_world *w, MPI_Request *req, double limit_s, const char *what, char *err,
             size_t err_len);
#endif

/* Seconds on the monotonic clock. */
double ddp_now(void);

/* Creating an NCCL communicator (ncclCommInitRank, no timeout of its own)
 * waits for every rank and on many ranks takes a while: bin/train --ddp and
 * bin/allreduce both give it this many times the world's timeout, and name
 * the wait as DDP_COMM_INIT_WHAT says. */
enum { DDP_COMM_INIT_TIMEOUTS = 10 };
#define DDP_COMM_INIT_WHAT "creating the NCCL communicator (given 10 x the timeout)"

/* The line for a wait on the other ranks that passed its limit (limit_s,
 * set by the program's `option`) while doing `what`: one wording for every
 * transport's bounded waits. */
void ddp_no_answer(char *out, size_t len, double limit_s, const char *what, const char *option);

#endif
