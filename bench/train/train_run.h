/* One bin/train process after its options are checked: the backend, the
 * fixed batch, warm-up and timed steps (rows to steps.csv as they are
 * measured), an optional captured graph, the trace pass and the summary. */
#ifndef ROOFLINE_TRAIN_RUN_H
#define ROOFLINE_TRAIN_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../../models/backend.h"
#include "../../models/ddp/ddp.h"

typedef enum { COUNTERS_PERF, COUNTERS_ANALYTIC, COUNTERS_CUPTI } counters_kind;

typedef struct {
    const char *model, *env;
    const char *out;            /* steps.csv, or NULL */
    const char *trace;          /* kernels.csv of one traced step, or NULL */
    const char *cifar_dir;      /* NULL: synthetic data */
    int res, classes, batch, warmup, iters, threads, repeat, device;
    uint64_t seed;
    float lr;
    precision prec;
    counters_kind counters;
    bool graph;                 /* capture the step once, replay it */
    bool no_fusion;
    int64_t workspace_limit;    /* bytes; 0: the backend's default */
    depthwise_choice depthwise; /* cuda: who runs depthwise convolutions */
    conv_bias_choice conv_bias; /* cuda: who adds a conv's bias (and ReLU) in the forward */
    conv_api_choice conv_api;   /* cuda: cuDNN's legacy calls or its graph API */
    const char *algo_cache;     /* cuda: --algo-cache FILE, or NULL */
    float dropout;              /* every dropout layer's probability; < 0: the model's */
    int shards;                 /* the batch is this many rank shards, concatenated */
    const char *save_weights;   /* PREFIX: PREFIX.rank<R>.bin after the run, or NULL */
    /* data-parallel (--ddp): batch is per rank */
    bool ddp;
    int64_t bucket_bytes;       /* 0: one reduction after the whole backward */
    ddp_comm_precision comm;
    double ddp_timeout_s;
    const char *scaling_out;    /* scaling.csv to append a row to, or NULL */
    const char *scaling_mode;   /* strong or weak */
    double baseline_ms;         /* the 1-rank step the efficiency is taken against; 0: none */
    int fault_rank, fault_step; /* tests: rank fault_rank kills itself mid-step; -1: never */
} train_options;

/* The exit status of a process whose configuration this machine cannot run
 * at all (backend_ops.cannot_run): not a failure of it, a configuration to
 * skip here (scripts/bench.sh and scaling.sh do). */
enum { TRAIN_CANNOT_RUN_HERE = 3 };

/* Runs the process's training with ops; its exit status (0; 1 after a
 * failure, 2 for --data, TRAIN_CANNOT_RUN_HERE, each reported on stderr in
 * one line first). With --ddp, `world` holds the ranks (NULL otherwise). */
int train_run(const train_options *o, const backend_ops *ops, ddp_world *world);

/* Whether rows can be appended to the steps.csv at path: true when it is new
 * or empty, or begins with the header this bin/train writes; false with why
 * in err (another file, or one from a version with other columns). */
bool train_steps_file_ok(const char *path, char *err, size_t err_len);

#endif
