/* make test-gpu: gpu_trace_step end to end on real CUPTI, over a toy CUDA
 * backend whose every operation launches a kernel of a known number of FFMAs
 * (a number that differs for every layer and phase), and conv operations a
 * second, streaming kernel. So a kernel booked on the wrong operation, a
 * shifted join or a lost launch shows as a wrong FLOP count in kernels.csv:
 * - the timing pass (Activity API, external correlation ids) attributes every
 *   kernel to its layer and phase, with a duration;
 * - the metric pass (Range Profiler, kernel replay) counts each kernel's fp32
 *   FLOPs exactly, and the join puts them on the right rows;
 * - a second traced step in the same process works (the profiler set up and
 *   torn down cleanly), and the timing pass alone gives analytic rows;
 * - the overhead of the timing pass on this (tiny, launch-bound) step is
 *   printed, for information.
 * Skips (exit 0, one line) without a CUDA device or without CUPTI. */
#include "cupti_kernels.cuh"

#include <algorithm>
#include <string>
#include <vector>

extern "C" {
#include "../../counters/gpu_trace.h"
#include "../../counters/step_trace.h"
}

static gpu_tally tally;

#define expect(ok, ...) gpu_expectf(&tally, ok, __VA_ARGS__)

/* ---- the toy backend ---------------------------------------------------------- */

enum { BLOCKS = 8, THREADS = 128, TRIAD_ELEMS = 1 << 16 };

/* FFMAs per thread of an operation's kernel: distinct per (layer, phase). */
static int fmas_of(int layer, gpu_phase phase)
{
    return 16 * (layer + 3) + 2 * (int)phase + 1;
}

struct backend {
    const network *net;
    float *out = nullptr, *x = nullptr, *y = nullptr;
    char err[200] = "";
};

static int launched(backend *b)
{
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        return 0;
    snprintf(b->err, sizeof b->err, "launch: %s", cudaGetErrorString(e));
    return -1;
}

static int run_op(backend *b, int layer, gpu_phase phase)
{
    ffma_loop<<<BLOCKS, THREADS>>>(b->out, fmas_of(layer, phase), 0.999f, 0.001f);
    if (layer >= 0 && b->net->layers[layer].type == LAYER_CONV)
        triad<<<4, 128>>>(b->y, b->x, b->x, 0.5f, TRIAD_ELEMS);
    return launched(b);
}

static backend *toy_create(const network *net, const backend_config *cfg, char *err,
                           size_t err_len)
{
    (void)cfg;
    backend *b = new backend;
    b->net = net;
    if (cudaMalloc(&b->out, sizeof(float) * BLOCKS * THREADS) != cudaSuccess ||
        cudaMalloc(&b->x, sizeof(float) * TRIAD_ELEMS) != cudaSuccess ||
        cudaMalloc(&b->y, sizeof(float) * TRIAD_ELEMS) != cudaSuccess) {
        snprintf(err, err_len, "out of device memory");
        return nullptr;
    }
    fill<<<64, 128>>>(b->x, TRIAD_ELEMS, 1.0f);
    return launched(b) ? nullptr : b;
}

static void toy_destroy(backend *b)
{
    cudaFree(b->out);
    cudaFree(b->x);
    cudaFree(b->y);
    delete b;
}

static const char *toy_error(const backend *b)
{
    return b->err;
}

static int toy_forward(backend *b, int layer)
{
    return run_op(b, layer, GPU_PHASE_FWD);
}

static int toy_loss(backend *b)
{
    return run_op(b, STEP_LOSS, GPU_PHASE_LOSS);
}

static int toy_read_loss(backend *b, float *loss)
{
    (void)b;
    *loss = 2.3f;
    return 0;
}

static int toy_backward_data(backend *b, int layer, const bool accumulate[LAYER_MAX_INPUTS])
{
    (void)accumulate;
    return run_op(b, layer, GPU_PHASE_BWD_DATA);
}

static int toy_backward_weights(backend *b, int layer)
{
    return run_op(b, layer, GPU_PHASE_BWD_WEIGHTS);
}

static int toy_update_all(backend *b, const sgd_params *sgd)
{
    (void)sgd;
    return run_op(b, STEP_ALL_LAYERS, GPU_PHASE_UPDATE);
}

static int toy_sync(backend *b)
{
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess)
        return 0;
    snprintf(b->err, sizeof b->err, "sync: %s", cudaGetErrorString(e));
    return -1;
}

static void toy_kernel_name(const backend *b, int layer, pass phase, char *buf, size_t len)
{
    (void)b;
    snprintf(buf, len, "toy:%d:%s", layer, pass_name(phase));
}

static backend_ops toy_ops(void)
{
    backend_ops ops = {};
    ops.name = "toy";
    ops.create = toy_create;
    ops.destroy = toy_destroy;
    ops.error = toy_error;
    ops.forward = toy_forward;
    ops.loss = toy_loss;
    ops.read_loss = toy_read_loss;
    ops.backward_data = toy_backward_data;
    ops.backward_weights = toy_backward_weights;
    ops.update_all = toy_update_all;
    ops.sync = toy_sync;
    ops.kernel_name = toy_kernel_name;
    return ops;
}

/* conv, bn, relu, conv, bn, add, relu, global average pool, fc */
static void build_network(network *net)
{
    net_init(net, "toy", 8, 10, tensor_shape{3, 8, 8});
    int x = net_conv(net, "conv1", GRAPH_INPUT, 8, 3, 1, 1, 1, false);
    x = net_bn(net, "bn1", x);
    int a = net_relu(net, "relu1", x);
    x = net_conv(net, "conv2", a, 8, 3, 1, 1, 1, false);
    x = net_bn(net, "bn2", x);
    x = net_add(net, "add", x, a);
    x = net_relu(net, "relu2", x);
    x = net_avgpool(net, "avgpool", x, 1);
    net_fc(net, "fc", x, 10);
    if (net->status != NET_OK) {
        fprintf(stderr, "cupti_trace_check: %s\n", net->err);
        exit(EXIT_FAILURE);
    }
}

/* Kernels one step launches: an FFMA kernel per operation, plus a triad per
 * conv operation. */
static int expected_kernels(const network *net)
{
    int n = 2; /* loss, fused update */
    for (int i = 0; i < net->n_layers; i++) {
        int per_op = net->layers[i].type == LAYER_CONV ? 2 : 1;
        n += per_op;                                            /* fwd */
        n += net->layers[i].params > 0 ? per_op : 0;            /* bwd_weights */
        n += net->layers[i].computes_input_grad ? per_op : 0;   /* bwd_data */
    }
    return n;
}

/* ---- kernels.csv -------------------------------------------------------------- */

typedef std::vector<std::string> row;

static std::vector<row> read_rows(const char *path)
{
    std::vector<row> rows;
    FILE *f = fopen(path, "r");
    if (!f)
        return rows;
    char line[8192];
    bool header = true;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (header) {
            header = false;
            if (strcmp(line, KERNELS_CSV_HEADER) != 0)
                printf("NOTE: unexpected header: %s\n", line);
            continue;
        }
        row r;
        for (char *p = line;;) {
            char *comma = strchr(p, ',');
            r.push_back(comma ? std::string(p, comma) : std::string(p));
            if (!comma)
                break;
            p = comma + 1;
        }
        rows.push_back(r);
    }
    fclose(f);
    return rows;
}

enum { F_KERNEL = 7, F_LAYER, F_TYPE, F_PHASE, F_NS, F_FP64, F_FP32, F_FP16, F_TENSOR, F_DRAM_R,
       F_DRAM_W, F_L2, F_L1, F_SOURCE, N_FIELDS };

static bool operation_of(const network *net, const row &r, int *layer, gpu_phase *phase)
{
    *layer = r[F_LAYER] == "loss" ? STEP_LOSS : r[F_LAYER] == "all" ? STEP_ALL_LAYERS : -100;
    for (int i = 0; i < net->n_layers && *layer == -100; i++)
        if (r[F_LAYER] == net->layers[i].name)
            *layer = i;
    for (int p = 0; p < GPU_PHASE_COUNT; p++)
        if (r[F_PHASE] == gpu_phase_name((gpu_phase)p)) {
            *phase = (gpu_phase)p;
            return *layer != -100;
        }
    return false;
}

/* ---- the checks --------------------------------------------------------------- */

static double median_step_ms(step_driver *d, int steps)
{
    std::vector<double> ms;
    for (int s = 0; s < steps; s++) {
        cudaEvent_t a, b;
        CUDA_CHECK(cudaEventCreate(&a));
        CUDA_CHECK(cudaEventCreate(&b));
        CUDA_CHECK(cudaEventRecord(a));
        float loss;
        if (step_run(d, &loss)) {
            fprintf(stderr, "cupti_trace_check: step: %s\n", step_error(d));
            exit(EXIT_FAILURE);
        }
        CUDA_CHECK(cudaEventRecord(b));
        CUDA_CHECK(cudaEventSynchronize(b));
        float t;
        CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
        ms.push_back(t);
        CUDA_CHECK(cudaEventDestroy(a));
        CUDA_CHECK(cudaEventDestroy(b));
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

static void check_counted(const network *net, step_driver *d, const char *dir, int round)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/kernels-%d.csv", dir, round);
    gpu_trace_options opt = {};
    opt.env = "gpu-test";
    opt.counters = GPU_COUNTERS_CUPTI;
    opt.device = 0;
    gpu_trace_result res;
    char err[600] = "";
    int rc = gpu_trace_step(d, 4, PREC_FP32, &opt, path, &res, err, sizeof err);
    expect(rc == 0, "traced step %d with counters: %s", round, rc ? err : "ok");
    if (rc)
        return;
    printf("traced step %d: %d kernels (%d joined without a name), %d passes, %d metrics on %s, "
           "metric pass %.2f s, timing %s, source %s%s%s\n",
           round, res.kernels, res.unnamed, res.replay_passes, res.metrics, res.chip,
           res.metric_pass_s, res.timing, res.source, res.why[0] ? ": " : "", res.why);
    if (strcmp(res.source, "cupti") != 0) {
        printf("SKIP: traced step %d: counters unavailable: %s\n", round, res.why);
        return;
    }
    int want = expected_kernels(net);
    expect(res.kernels == want && res.unattributed == 0,
           "traced step %d: %d kernels (%d expected), %d unattributed", round, res.kernels, want,
           res.unattributed);
    std::vector<row> rows = read_rows(path);
    expect((int)rows.size() == want, "traced step %d: %zu rows in %s", round, rows.size(), path);
    int exact = 0, timed = 0, wrong = 0;
    for (size_t k = 0; k < rows.size(); k++) {
        const row &r = rows[k];
        int layer;
        gpu_phase phase;
        if (r.size() != N_FIELDS || !operation_of(net, r, &layer, &phase)) {
            if (wrong++ < 5)
                printf("FAIL detail: row %zu malformed or of no operation\n", k);
            continue;
        }
        timed += atoll(r[F_NS].c_str()) > 0;
        bool ffma = r[F_KERNEL].find("ffma_loop") != std::string::npos;
        double want_flops = ffma ? 2.0 * fmas_of(layer, phase) * BLOCKS * THREADS
                                 : 2.0 * TRIAD_ELEMS;
        double got = atof(r[F_FP32].c_str());
        if (got == want_flops && r[F_SOURCE] == "cupti")
            exact++;
        else if (wrong++ < 5)
            printf("FAIL detail: row %zu (%s %s %s): fp32 %s, expected %.0f, source %s\n", k,
                   r[F_KERNEL].c_str(), r[F_LAYER].c_str(), r[F_PHASE].c_str(),
                   r[F_FP32].c_str(), want_flops, r[F_SOURCE].c_str());
    }
    expect(exact == (int)rows.size() && !rows.empty(),
           "traced step %d: every row's fp32 FLOPs are exactly those its operation launched "
           "(%d of %zu)",
           round, exact, rows.size());
    expect(timed == (int)rows.size(), "traced step %d: every kernel has a duration (%d of %zu)",
           round, timed, rows.size());
}

static void check_timing_only(const network *net, step_driver *d, const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/kernels-timing.csv", dir);
    double untraced = median_step_ms(d, 21);
    gpu_trace_options opt = {};
    opt.env = "gpu-test";
    opt.counters = GPU_COUNTERS_NONE;
    opt.timing_warmup = 2;
    gpu_trace_result res;
    char err[600] = "";
    int rc = gpu_trace_step(d, 4, PREC_FP32, &opt, path, &res, err, sizeof err);
    expect(rc == 0 && strcmp(res.timing, "cupti") == 0,
           "timing pass alone: %s (timing %s)", rc ? err : "ok", rc ? "-" : res.timing);
    if (rc)
        return;
    std::vector<row> rows = read_rows(path);
    bool analytic = !rows.empty();
    for (const row &r : rows)
        analytic = analytic && r.size() == N_FIELDS && r[F_SOURCE] == "analytic";
    expect((int)rows.size() == expected_kernels(net) && analytic,
           "timing pass alone: %zu analytic rows", rows.size());
    printf("INFO: timing pass on this toy step: %.3f ms traced (host, launch to sync) against a "
           "median of %.3f ms untraced (events); kernels %.3f ms over a span of %.3f ms\n",
           res.step_ms, untraced, res.kernel_ms, res.span_ms);
}

int main(void)
{
    if (gpu_test_skip())
        return 0;
#ifndef HAVE_CUPTI
    printf("skipped: built without CUPTI\n");
    return 0;
#else
    CUDA_CHECK(cudaSetDevice(0));
    network net;
    build_network(&net);
    backend_ops ops = toy_ops();
    backend_config cfg = {};
    cfg.batch = 4;
    char err[200] = "";
    backend *b = ops.create(&net, &cfg, err, sizeof err);
    if (!b) {
        fprintf(stderr, "cupti_trace_check: %s\n", err);
        return 1;
    }
    step_driver d;
    if (step_init(&d, &ops, b, &net, sgd_params{0.1f, 0.9f, 5e-4f})) {
        fprintf(stderr, "cupti_trace_check: out of memory\n");
        return 1;
    }
    median_step_ms(&d, 3); /* module loading outside every trace */
    char dir[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/roofline-cupti-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    check_counted(&net, &d, dir, 1);
    check_counted(&net, &d, dir, 2);
    check_timing_only(&net, &d, dir);
    printf("kernels.csv files left in %s\n", dir);
    step_free(&d);
    ops.destroy(b);
    net_free(&net);
    return gpu_test_finish(&tally);
#endif
}
