#include "train_run.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../counters/gpu_trace.h"
#include "../../counters/step_trace.h"
#include "../../models/clock.h"
#include "../../models/data.h"
#include "../../models/init.h"
#include "../../models/step.h"
#include "../../models/zoo.h"
#include "train_data.h"
#include "train_ddp.h"
#include "train_weights.h"

static const char *const prog = "train";

/* A failure's one line; in a DDP run (world not NULL) it names the rank, as
 * every rank prints its own. */
__attribute__((format(printf, 2, 3))) static void say_failed(const ddp_world *world,
                                                             const char *fmt, ...)
{
    char line[DDP_ERR_LEN + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (world)
        ddp_world_say(world, prog, line);
    else
        fprintf(stderr, "%s: %s\n", prog, line);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Memory of the run so far: the device memory the backend and DDP hold for
 * the steps where there is a device (as torch.cuda.max_memory_allocated, no
 * CUDA context, no library's own memory), else the process's peak resident
 * memory. */
static long long peak_memory_bytes(const backend_ops *ops, backend *b, const train_ddp *dp)
{
    backend_stats s;
    if (ops->stats && ops->stats(b, &s) == 0 && s.device_bytes > 0)
        return (long long)(s.device_bytes + (dp ? ddp_device_bytes(dp->d) : 0));
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (long long)ru.ru_maxrss * 1024;
}

/* graph: on for a step replayed from one captured CUDA graph, off eager */
static const char steps_header[] = "env,backend,model,res,batch,precision,world_size,rank,repeat,"
                                   "iter,step_ms,images_per_s,loss,peak_mem_bytes,graph";

bool train_steps_file_ok(const char *path, char *err, size_t err_len)
{
    /* a new file (cannot-create was checked with the option), or a pipe,
     * FIFO or terminal, which has no header to read and must not be waited on */
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return true;
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    char first[sizeof steps_header + 2];
    bool empty = !fgets(first, sizeof first, f);
    fclose(f);
    if (empty)
        return true;
    first[strcspn(first, "\r\n")] = '\0';
    if (strcmp(first, steps_header) == 0)
        return true;
    snprintf(err, err_len, "'%s' has another header than the steps.csv this bin/train writes "
             "('%.60s...'): rows appended there would not match its columns; give a new file",
             path, first);
    return false;
}

/* Appends rows to steps.csv: the header only for a new or empty file (or a
 * pipe, which has no position: a stream of its own), and a flush per row so
 * an interrupted run keeps every measured iteration. */
static FILE *open_steps_csv(const char *path)
{
    FILE *f = fopen(path, "a");
    if (!f)
        return NULL;
    if (ftell(f) <= 0)
        fprintf(f, "%s\n", steps_header);
    return f;
}

/* One step, timed on the backend's device clock where it has one, else on
 * the host's around the launch and the wait. */
static int timed_step(step_driver *drv, float *loss, double *ms)
{
    const backend_ops *ops = drv->ops;
    bool device_clock = ops->timer_start && ops->timer_stop && ops->timer_read;
    double t0 = monotonic_seconds();
    if (device_clock && ops->timer_start(drv->b))
        return -1;
    if (step_launch(drv))
        return -1;
    if (device_clock && ops->timer_stop(drv->b))
        return -1;
    if (step_wait(drv, loss))
        return -1;
    if (device_clock)
        return ops->timer_read(drv->b, ms);
    *ms = (monotonic_seconds() - t0) * 1e3;
    return 0;
}

/* The trace pass after the timed steps, so that tracing never slows them:
 * per kernel on a GPU (CUPTI), per operation on the CPU. */
static int run_trace(const train_options *o, step_driver *drv, const network *net,
                     double median)
{
    char err[480];
    step_cost cost = cost_step(net, o->batch, o->prec, NULL);
    drv->captured = false; /* the trace runs the step's operations one by one */
    if (!strcmp(drv->ops->name, "cuda")) {
        /* one traced step thrown away first: CUPTI's first-launch work stays
         * out of the timed one */
        gpu_trace_options g = {.env = o->env, .repeat = o->repeat, .device = o->device,
                               .counters = o->counters == COUNTERS_CUPTI ? GPU_COUNTERS_CUPTI
                                                                         : GPU_COUNTERS_NONE,
                               .timing_warmup = 1};
        gpu_trace_result r;
        if (gpu_trace_step(drv, o->batch, o->prec, &g, o->trace, &r, err, sizeof err)) {
            fprintf(stderr, "%s: --trace: %s\n", prog, err);
            return 1;
        }
        if (r.why[0])
            fprintf(stderr, "%s: trace: %s\n", prog, r.why);
        printf("trace: %d rows to %s (%d kernels, timing %s, FLOPs and bytes %s%s%s); kernels "
               "sum to %.2f ms = %.1f%% of the median step (%.2f ms); %.3f GFLOP = %.1f%% of "
               "the analytic step",
               r.rows, o->trace, r.kernels, r.timing, r.source, r.chip[0] ? " on " : "", r.chip,
               r.kernel_ms, 100.0 * r.kernel_ms / median, median, r.flops / 1e9,
               100.0 * r.flops / (double)cost.step_flops);
        if (r.replay_passes)
            printf("; metric pass %.1f s, %d counters in %d replay passes per kernel",
                   r.metric_pass_s, r.metrics, r.replay_passes);
        if (r.unnamed)
            printf("; %d launches without a name in the metric pass, joined by place and "
                   "operation alone",
                   r.unnamed);
        if (r.comm_kernels || r.unattributed)
            printf("; %d communication kernels, %d outside every operation", r.comm_kernels,
                   r.unattributed);
        printf("\n");
        /* the traced step runs eagerly: against a replayed graph its
         * difference also holds the launch gaps the graph removes. Timed on
         * the host (CUPTI refused), no step of the timing pass ran. */
        if (r.step_ms > 0)
            printf("trace: the traced step took %.2f ms on the host, %+.1f%% against the "
                   "median untraced step (%s)\n",
                   r.step_ms, 100.0 * (r.step_ms / median - 1.0),
                   o->graph ? "a CUDA graph's replay: the timing pass's overhead and the eager "
                              "launches the graph saves"
                            : "the timing pass's overhead");
        return 0;
    }
    trace_options topt = {.env = o->env, .repeat = o->repeat,
                          .use_perf = o->counters == COUNTERS_PERF};
    trace_result tr;
    if (trace_step(drv, o->batch, o->prec, &topt, o->trace, &tr, err, sizeof err)) {
        fprintf(stderr, "%s: --trace: %s\n", prog, err);
        return 1;
    }
    if (tr.perf_why[0] && topt.use_perf)
        fprintf(stderr, "%s: trace: FLOPs from the analytic model: %s\n", prog, tr.perf_why);
    char layout[160] = "";
    if (tr.layout_rows > 0)
        snprintf(layout, sizeof layout, " (%.2f ms = %.1f%% of them in the layout conversions "
                 "of %d operations)", tr.layout_ms, 100.0 * tr.layout_ms / tr.total_ms,
                 tr.layout_rows);
    printf("trace: %d rows to %s (FLOPs %s); operations sum to %.2f ms = %.1f%% of the "
           "median untraced step (%.2f ms)%s; %.3f GFLOP = %.1f%% of the analytic step\n",
           tr.rows, o->trace, tr.source, tr.total_ms, 100.0 * tr.total_ms / median, median,
           layout, tr.flops / 1e9, 100.0 * (double)tr.flops / (double)cost.step_flops);
    return 0;
}

/* One steps.csv row. */
static void write_row(FILE *csv, const train_options *o, const char *backend_name, int world_size,
                      int rank, int it, double ms, float loss, long long peak_mem)
{
    fprintf(csv, "%s,%s,%s,%d,%d,%s,%d,%d,%d,%d,%.4f,%.3f,%.6f,%lld,%s\n", o->env, backend_name,
            o->model, o->res, o->batch, precision_name(o->prec), world_size, rank, o->repeat, it,
            ms, o->batch / (ms * 1e-3), loss, peak_mem, o->graph ? "on" : "off");
}

/* Warm-up (eager), the capture when asked, then the timed steps with a row
 * each (with --ddp rank 0 writes every rank's rows, gathered after each
 * step). On success *median_ms is their median. */
static int run_steps(const train_options *o, step_driver *drv, train_ddp *dp, double *step_ms,
                     double *median_ms)
{
    FILE *csv = NULL;
    const ddp_world *world = dp ? dp->world : NULL;
    bool root = !dp || dp->world->rank == 0;
    if (o->out && root && !(csv = open_steps_csv(o->out))) {
        fprintf(stderr, "%s: cannot open %s for appending\n", prog, o->out);
        return 1;
    }
    bool progress = root && isatty(STDERR_FILENO);
    /* a captured graph replays what one eager step ran first */
    int warmup = o->graph && o->warmup == 0 ? 1 : o->warmup;
    int rc = 0;
    for (int it = -warmup; it < o->iters && rc == 0; it++) {
        if (it == 0 && o->graph && step_capture(drv)) {
            say_failed(world, "--graph: %s", step_error(drv));
            rc = 1;
            break;
        }
        float loss;
        double ms;
        if (dp)
            train_ddp_step_begin(dp, it);
        if (timed_step(drv, &loss, &ms)) {
            say_failed(world, "step %d: %s", it, step_error(drv));
            rc = 1;
            break;
        }
        long long peak = peak_memory_bytes(drv->ops, drv->b, dp);
        char err[DDP_ERR_LEN];
        if (dp && train_ddp_step_end(dp, it, ms, loss, peak, err, sizeof err)) {
            say_failed(world, "step %d: %s", it, err);
            rc = 1;
            break;
        }
        if (it >= 0) {
            step_ms[it] = ms;
            for (int r = 0; csv && r < (dp ? dp->world->size : 1); r++) {
                const train_rank_step *s = dp ? &dp->all[(size_t)it * dp->world->size + r] : NULL;
                write_row(csv, o, drv->ops->name, dp ? dp->world->size : 1, r, it,
                          s ? s->step_ms : ms, s ? s->loss : loss, s ? s->peak_mem : peak);
            }
            if (csv)
                fflush(csv);
        }
        if (progress)
            fprintf(stderr, "\r%s %s: %s %d/%d  %.1f ms  loss %.4f   ", prog, o->model,
                    it < 0 ? "warm-up" : "step", it < 0 ? it + warmup + 1 : it + 1,
                    it < 0 ? warmup : o->iters, ms, loss);
    }
    if (progress)
        fputc('\n', stderr);
    if (csv && fclose(csv)) {
        fprintf(stderr, "%s: writing %s failed\n", prog, o->out);
        rc = 1;
    }
    if (rc == 0) /* sorts step_ms: its rows are written already */
        *median_ms = median_of(step_ms, o->iters);
    return rc;
}

static void print_summary(const train_options *o, const network *net, const backend_ops *ops,
                          backend *b, const train_ddp *dp, double median)
{
    step_cost cost = cost_step(net, o->batch, o->prec, NULL);
    printf("%s res %d batch %d %s on %s", o->model, o->res, o->batch, precision_name(o->prec),
           ops->name);
    if (!strcmp(ops->name, "cpu"))
        printf(" threads %d", o->threads);
    printf("%s: median step %.2f ms, %.2f images/s, %.1f GFLOP/s (analytic FLOPs)",
           o->graph ? " (CUDA graph)" : "", median, o->batch / (median * 1e-3),
           cost.step_flops / (median * 1e-3) / 1e9);
    backend_stats s;
    bool have_stats = ops->stats && ops->stats(b, &s) == 0;
    if (have_stats && s.device_bytes > 0) {
        int64_t buckets = dp ? ddp_device_bytes(dp->d) : 0;
        printf(", device memory %.2f GiB (workspaces: the largest %.0f MiB, adding %.0f MiB; ",
               (s.device_bytes + buckets) / 1073741824.0, s.largest_workspace_bytes / 1048576.0,
               s.workspace_bytes / 1048576.0);
        if (buckets)
            printf("DDP's buckets %.0f MiB; ", buckets / 1048576.0);
        printf("analytic footprint %.2f GiB; the GPU's memory in use %.2f GiB, with the CUDA "
               "context, the libraries' own and any other process's)",
               cost.memory.total / 1073741824.0, s.device_used_bytes / 1073741824.0);
        if (o->prec == PREC_FP16)
            printf(", loss scale %g, %lld step(s) skipped", s.loss_scale,
                   (long long)s.skipped_steps);
    } else {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf(", peak RSS %.0f MiB (analytic footprint %.0f MiB)", ru.ru_maxrss / 1024.0,
               cost.memory.total / 1048576.0);
    }
    printf("\n");
    if (have_stats && s.choices[0])
        printf("%s\n", s.choices);
}

/* --dropout P: every dropout layer's probability (0 makes them identities,
 * for runs that must match whatever the batch is split into). */
static void set_dropout(network *net, float p)
{
    for (int i = 0; p >= 0.0f && i < net->n_layers; i++)
        if (net->layers[i].type == LAYER_DROPOUT)
            net->layers[i].drop_p = p;
}

/* The DDP backend access of ops, false where it lends no gradient storage. */
static bool ddp_access(const backend_ops *ops, ddp_backend_access *out)
{
    *out = (ddp_backend_access){.grad_storage = ops->grad_storage, .stream = ops->stream};
    return ops->grad_storage != NULL;
}

/* After the timed steps of a DDP run: the reductions alone, the ranks'
 * weights compared, and rank 0's summary and scaling row. */
static int finish_ddp(const train_options *o, train_ddp *dp, const network *net,
                      const backend_ops *ops)
{
    char err[DDP_ERR_LEN];
    if (train_ddp_finish(dp, err, sizeof err)) {
        say_failed(dp->world, "%s", err);
        return 1;
    }
    if (dp->world->rank != 0)
        return 0;
    train_ddp_print(dp, (double)cost_step(net, o->batch, o->prec, NULL).step_flops);
    printf("ddp: the weights are bit-identical on all %d ranks\n", dp->world->size);
    if (o->scaling_out &&
        train_ddp_scaling_row(dp, ops->name, !strcmp(ops->name, "cpu") ? o->threads : 0, err,
                              sizeof err)) {
        fprintf(stderr, "%s: --scaling-out: %s\n", prog, err);
        return 1;
    }
    return 0;
}

int train_run(const train_options *o, const backend_ops *ops, ddp_world *world)
{
    network net;
    if (zoo_build(&net, o->model, o->res, o->classes) != NET_OK) {
        say_failed(world, "%s", net.err);
        return 1;
    }
    set_dropout(&net, o->dropout);
    int rank = world ? world->rank : 0;
    char err[640] = "";
    /* each rank its own dropout masks, as each draws its own images */
    backend_config cfg = {.batch = o->batch, .threads = o->threads,
                          .seed = train_shard_seed(o->seed, rank), .prec = o->prec,
                          .device = o->device, .workspace_limit = o->workspace_limit,
                          .no_fusion = o->no_fusion, .depthwise = o->depthwise,
                          .conv_bias = o->conv_bias, .conv_api = o->conv_api,
                          .algo_cache = o->algo_cache};
    /* a configuration the device cannot run at all is told apart from a
     * failure, before anything is allocated */
    int refused = ops->cannot_run ? ops->cannot_run(&net, &cfg, err, sizeof err) : 0;
    if (refused) {
        say_failed(world, "%s%s", refused > 0 ? "cannot run here: " : "", err);
        net_free(&net);
        return refused > 0 ? TRAIN_CANNOT_RUN_HERE : 1;
    }
    /* the backend first: a batch too large is reported before the host
     * allocates and fills it */
    backend *b = ops->create(&net, &cfg, err, sizeof err);
    if (!b) {
        say_failed(world, "%s", err);
        net_free(&net);
        return 1;
    }
    int64_t image_elems = (int64_t)o->batch * shape_elems(net.input);
    float *images = malloc((size_t)image_elems * sizeof *images);
    int32_t *labels = malloc((size_t)o->batch * sizeof *labels);
    double *step_ms = malloc((size_t)o->iters * sizeof *step_ms);
    step_driver drv;
    train_ddp dp;
    bool have_driver = false, have_ddp = false;
    int rc = 1;
    if (!images || !labels || !step_ms) {
        say_failed(world, "out of host memory for a batch of %d images at %dx%d", o->batch,
                   o->res, o->res);
        goto done;
    }
    /* one fixed batch: the step's cost, not data loading, is what is
     * measured; a rank's is its own shard, --shards N the concatenation of N */
    int shards = world ? 1 : o->shards;
    if (train_batch(o, &net, rank, shards, o->batch / shards, images, labels, err, sizeof err)) {
        say_failed(world, "--data: %s", err);
        rc = 2;
        goto done;
    }
    if (init_parameters(ops, b, &net, o->seed, err, sizeof err) ||
        ops->set_batch(b, images, labels)) {
        say_failed(world, "%s", err[0] ? err : ops->error(b));
        goto done;
    }
    if (step_init(&drv, ops, b, &net, (sgd_params){o->lr, 0.9f, 5e-4f})) {
        say_failed(world, "out of memory for the step driver");
        goto done;
    }
    have_driver = true;
    if (world) {
        ddp_backend_access access;
        if (train_ddp_start(&dp, o, world, &net, ops, b, ddp_access(ops, &access) ? &access : NULL,
                            &drv, err, sizeof err)) {
            say_failed(world, "%s", err);
            goto done;
        }
        have_ddp = true;
    }
    double median_ms = 0.0;
    rc = run_steps(o, &drv, have_ddp ? &dp : NULL, step_ms, &median_ms);
    if (rc == 0 && o->trace)
        rc = run_trace(o, &drv, &net, median_ms);
    if (rc == 0 && have_ddp)
        rc = finish_ddp(o, &dp, &net, ops);
    if (rc == 0 && o->save_weights &&
        train_save_weights(o->save_weights, rank, ops, b, &net, err, sizeof err)) {
        say_failed(world, "%s", err);
        rc = 1;
    }
    if (rc == 0 && rank == 0)
        print_summary(o, &net, ops, b, have_ddp ? &dp : NULL, median_ms);
done:
    if (have_ddp)
        train_ddp_free(&dp);
    if (have_driver)
        step_free(&drv);
    ops->destroy(b);
    free(images);
    free(labels);
    free(step_ms);
    net_free(&net);
    return rc;
}
