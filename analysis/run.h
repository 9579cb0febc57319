/* The run model: one run folder (DESIGN.md §7, analysis/README.md) as typed
 * structs, read once by run_load (run_load.c and the run_read_*.c files, the
 * only code that knows column names) and handed to the computations
 * (roofline_build, summary_build, variability_build), the figures
 * (analysis/plot/) and the report (analysis/report/).
 *
 * Strings point into storage the model owns; they live until run_free. A
 * number that was not measured (an empty cell) is NaN; a count that is
 * absent is -1. */
#ifndef ROOFLINE_RUN_H
#define ROOFLINE_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "roofline.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { RUN_PATH_LEN = 1024, RUN_NAME_LEN = 64, RUN_LABEL_LEN = 160, RUN_STATUS_LEN = 384 };

/* ---- env.json --------------------------------------------------------- */

/* A tolerant flattening of env.json into (key, value) pairs in file order:
 * nested keys joined with '.', elements of arrays of objects named key[i],
 * arrays of plain values one entry with the values joined by ", ". */
typedef struct {
    char key[128];
    char value[1024]; /* longer values (a command line) are cut */
} run_env_entry;

typedef struct {
    bool present;       /* env.json exists */
    bool complete;      /* false: it breaks off or is malformed; the entries before are kept */
    char error[256];    /* why it could not be read at all ("" when it was) */
    run_env_entry *items;
    int n, cap;
} run_env;

/* ---- peaks.csv: the roofs --------------------------------------------- */

typedef enum { ROOF_RATE_COMPUTE, ROOF_RATE_BANDWIDTH, ROOF_RATE_OTHER } roof_rate;

/* The memory level a bandwidth row measures (DRAM and HBM are the level the
 * analysis classifies against); MEM_NONE for PCIe, communication and
 * anything else that is not a level of the memory hierarchy. */
typedef enum { MEM_NONE, MEM_DRAM, MEM_HBM, MEM_L3, MEM_L2, MEM_L1, MEM_SMEM } mem_level;

typedef struct {
    const char *device, *ceiling, *unit, *method, *threads_or_sms, *notes;
    double value;      /* in unit; NaN when not measured */
    double spec_value; /* the vendor's or the architecture's figure, NaN when none */
    roof_rate rate;    /* from the unit: GFLOP/s, GB/s or something else (GHz) */
    mem_level level;
    bool one_core;     /* a *_1core row: one core's figure, never a roof of the machine */
    /* bin/peaks' verdict within notes, from "suspect:" to the end: the figure
     * failed its consistency checks even when measured again; NULL when it
     * passed them */
    const char *suspect;
} run_roof;

/* ---- steps.csv: the timed steps of each configuration ------------------ */

/* graph: the step replayed from one captured CUDA graph (bin/train --graph)
 * rather than launched layer by layer; the same configuration otherwise. */
typedef struct {
    const char *env, *backend, *model, *precision;
    int res, batch, world_size;
    bool graph;
} run_key;

/* One configuration's steps: rank 0's rows (every rank times the same
 * synchronous step), ordered by repeat, then iter. */
typedef struct {
    run_key key;
    int n;
    double *step_ms, *images_per_s; /* images_per_s NaN where the file has none */
    int *repeat;
    int repeats;            /* distinct repeat values */
    int iters;              /* the most rows one repeat has */
    double peak_mem_bytes;  /* the largest of its rows (any rank); NaN when not recorded */
} run_steps;

/* ---- kernels.csv: the traced steps ------------------------------------ */

typedef struct {
    const char *kernel, *layer, *layer_type, *phase, *source;
    const char *repeat; /* "" when the file has no repeat column */
    double duration_ns;
    double flops_fp64, flops_fp32, flops_fp16, flops_tensor;
    double dram_read_bytes, dram_write_bytes, l2_bytes, l1_bytes; /* per memory level */
} run_kernel;

/* The kernel rows of one traced configuration, in file order. */
typedef struct {
    const char *env, *model, *precision;
    int res, batch;
    run_kernel *rows;
    int n;
} run_trace;

/* ---- configs.csv: what the runner attempted --------------------------- */

typedef struct {
    const char *config, *model, *precision, *status, *log;
    const char *repeat; /* "1", "2", ... or "trace" */
    int res, batch;
    bool trace;
    bool graph;  /* a --graph configuration (its trace pass, if any, runs eagerly) */
    /* status "skipped here (why)": the machine cannot run it (bin/train's exit 3:
     * a precision the GPU lacks, a batch its memory cannot hold), not a failure */
    bool skipped_here;
    double seconds;
} run_attempt;

/* ---- scaling.csv (optional) ------------------------------------------- */

typedef struct {
    const char *env, *model, *mode;
    const char *backend, *transport;         /* "" when the file has none */
    int res, world_size;
    int nodes, per_rank_batch, global_batch; /* -1 when empty */
    int threads_per_rank;                    /* CPU ranks; -1 when empty, 0 on GPUs */
    double step_ms, images_per_s, comm_ms, exposed_comm_ms, efficiency;
    /* of exposed_comm_ms: copying the gradients into and out of the buckets
     * (host transports), and the time inside the reduction calls during
     * backward (host transports); comm_ms of the last bucket alone. NaN when
     * empty */
    double copy_ms, backward_comm_ms, last_comm_ms;
} run_scaling;

/* ---- scaling_model.csv (optional): bin/scaling_model's predictions ----- */

/* One predicted world size of one configuration (model, res, mode) under one
 * set of links: `link` "fit" (inside a node the alpha-beta fit to the run's
 * allreduce curve: the rows to check against the measured sizes) or "links"
 * (the links given as parameters: the projection). */
typedef struct {
    const char *env, *model, *mode, *backend, *link;
    int res, world_size;
    int nodes, ranks_per_node;          /* -1 when empty */
    double per_rank_batch, global_batch;
    double compute_ms, allreduce_ms, overlap_ms, exposed_ms, step_ms, images_per_s, efficiency;
    double measured_step_ms, measured_efficiency;   /* NaN: that size was not measured */
    /* the assumptions behind the row */
    double intra_alpha_us, intra_busbw_gbs, inter_alpha_us, inter_busbw_gbs;
    double overlap_efficiency;          /* the share of the backward that hides communication */
    double backward_share;              /* of the compute: the backward's (analytic FLOPs) */
    double host_copy_ms;                /* packing and unpacking on the step's thread */
    double last_bucket_ms;              /* the last bucket's allreduce: never hidden */
    int fit_ranks, fit_points;          /* of the fitted curve; -1 for "links" rows */
    double fit_worst_pct;               /* the fit's worst point, % off; NaN for "links" */
    double fit_min_mb;                  /* the fit's bandwidth came from sizes >= this */
} run_prediction;

/* ---- roofline.csv: roofline points ------------------------------------ */

typedef struct {
    const char *level;      /* kernel, layer_type, step */
    const char *name;       /* kernel name, layer type, or "step" */
    const char *layer, *layer_type, *phase, *source;
    double count;           /* kernel rows per traced step */
    double time_share;      /* of the traced step's time */
    char ceiling[ROOF_CEILING_LEN];
    roof_point pt;          /* per traced step */
    /* The time at the roofs (roof_point_time_ns) and the time spent above it,
     * per traced step. A kernel's above is max(0, duration - roof); a layer
     * type's and the step's are the sums over their kernels with a roof (a
     * kernel faster than its roof offsets no other); NaN where none has one. */
    double roof_ns, above_roof_ns;
} roof_row;

typedef struct {
    const char *env, *model, *precision;
    int res, batch;
    int repeats;            /* distinct `repeat` values traced */
    roof_row *rows;         /* kernels in order of first appearance, then layer types, then the step */
    int n;
    double mem_bound_share; /* step time in memory-bound kernels; NaN when unknown */
} roof_config;

typedef struct {
    roof_config *configs;
    int n;
} roofline;

/* ---- summary.csv: one row per configuration --------------------------- */

/* NaN (and -1 for the counts) means empty: a configuration the runner
 * attempted without a step row, or a model the cost model does not know. */
typedef struct {
    const char *env, *backend, *model, *precision;
    int res, batch, world_size;
    bool graph;                 /* steps replayed from a CUDA graph */
    int repeats, iters;
    double ips_median, ips_q1, ips_q3;
    double step_ms_median;
    double analytic_gflop;      /* per step of one rank's batch */
    double achieved_tflops;     /* analytic_gflop / step_ms_median */
    char ceiling[ROOF_CEILING_LEN];
    double peak_gflops;
    double pct_of_peak, mfu;    /* percent */
    double mem_bound_share;     /* 0..1, from the traced step */
    double pct_of_roofs;        /* percent: the traced step's time at its roofs (roof_ns, the
                                   same work) over the median step; NaN without a trace */
    char status[RUN_STATUS_LEN];
    double peak_mem_bytes;      /* from steps.csv (not a column of summary.csv) */
} summary_row;

typedef struct {
    summary_row *rows;
    int n;
} summary;

/* ---- variability.csv -------------------------------------------------- */

typedef struct {
    const char *env, *model, *precision;
    int res, batch;
    bool graph;
    char scope[32];             /* repeat=K, iterations, repeats */
    int n, outliers;
    double mean, median, stddev, cv, min, max, ci95_lo, ci95_hi, drift_pct;
} variability_row;

typedef struct {
    variability_row *rows;
    int n;
} variability;

/* ---- the folder ------------------------------------------------------- */

/* The files of a run folder, for run_load's `want` and `need`. */
enum {
    RUN_ENV_JSON = 1 << 0,
    RUN_PEAKS = 1 << 1,
    RUN_STEPS = 1 << 2,
    RUN_KERNELS = 1 << 3,
    RUN_CONFIGS = 1 << 4,
    RUN_SCALING = 1 << 5,
    RUN_ROOFLINE = 1 << 6,
    RUN_SUMMARY = 1 << 7,
    RUN_VARIABILITY = 1 << 8,
    RUN_SCALING_MODEL = 1 << 9,
    RUN_REFERENCE = 1 << 10,
    /* what the runner writes, what bin/analyze writes */
    RUN_INPUTS = RUN_ENV_JSON | RUN_PEAKS | RUN_STEPS | RUN_KERNELS | RUN_CONFIGS | RUN_SCALING |
                 RUN_SCALING_MODEL | RUN_REFERENCE,
    RUN_OUTPUTS = RUN_ROOFLINE | RUN_SUMMARY | RUN_VARIABILITY,
};

typedef struct run_storage run_storage;

/* How busy the machine was with other work as the run began (env.json's
 * "load", sampled by bin/envinfo). This much or more is worth saying: bin/envinfo
 * warns, the reports say it beside the figures. */
#define RUN_BUSY_CPUS_NOTABLE 0.5
typedef struct {
    double busy_cpus; /* CPUs' worth of other work; NaN when env.json does not say */
    int cpus;         /* CPUs online; 0 when it does not say */
} run_start_load;

typedef struct {
    char dir[RUN_PATH_LEN];
    char env_name[RUN_NAME_LEN]; /* the env column of the first file that has one */
    /* what a comparison calls it: env_name, "ENV (ID)" (the folder's name)
     * where another run of the set has the same env, "?" without one */
    char label[RUN_LABEL_LEN];
    unsigned present;            /* RUN_* bits of the files that were read */
    run_env env;
    run_start_load start_load;
    run_roof *roofs;
    int n_roofs;
    run_steps *steps;            /* configurations in order of first appearance */
    int n_steps;
    /* reference.csv (optional): PyTorch's steps of the same configurations,
     * measured by the runner in the same run (backend "pytorch") */
    run_steps *reference;
    int n_reference;
    run_trace *traces;
    int n_traces;
    run_attempt *attempts;
    int n_attempts;
    run_scaling *scaling;
    int n_scaling;
    run_prediction *predictions; /* scaling_model.csv, in file order */
    int n_predictions;
    roofline roofline;
    summary summary;
    variability variability;
    run_storage *storage;        /* the files' text the strings point into */
} run_model;

#ifdef __cplusplus
}
#endif

#endif
