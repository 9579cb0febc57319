/* make test-gpu: the DDP module's NCCL transport on one rank (the GPU
 * machines at hand have one GPU each and NCCL refuses two ranks on one
 * device): the communicator from a unique id over MPI, buckets packed on
 * their own stream after an event of the step's stream, ncclSum, the
 * averages (the sums over the ranks) written back, the step's stream waiting
 * for them, the timings.
 * - gradients lent by the test itself (device buffers of every layer of
 *   resnet18-cifar, fp32 and bf16 elements), reduced in fp32 and bf16
 *   buckets: with one rank the average is the gradient itself (bf16 buckets:
 *   rounded to bf16);
 * - the allreduce benchmark's NCCL sweep on one rank: every sum exact;
 * - with the CUDA backend's proposed gradient storage (backend_ops
 *   .grad_storage and .stream, models/ddp/README.md): five training steps of
 *   the one-rank NCCL path give the losses of the plain path, bit for bit.
 * MPI starts as a singleton (no mpirun needed). Compiled everywhere; it has
 * never run: no GPU was at hand when it was written. */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_bf16.h>

#include "gpu_test.h"
#include "../../models/cuda/check.h"

extern "C" {
#include "../../models/cuda/cuda_backend.h"
#include "../../models/data.h"
#include "../../models/ddp/ddp.h"
#include "../../models/init.h"
#include "../../models/step.h"
#include "../../models/zoo.h"
#include "../../peaks/comm/allreduce.h"
}

static gpu_tally tally;

#define expectf(ok, ...) gpu_expectf(&tally, ok, __VA_ARGS__)

/* ---- gradients lent by the test ---------------------------------------------- */

/* A stand-in backend (the backend* the access functions take is this): one
 * device buffer per gradient tensor, in `elem`. */
struct fake_grads {
    const network *net;
    ddp_elem elem;
    void *buf[2 * 256];           /* [layer][weight, bias] */
    int64_t elems[2 * 256];
    cudaStream_t stream;
};

static int fake_grad_storage(backend *b, int layer, buffer_kind kind, ddp_grad_storage *out)
{
    fake_grads *f = (fake_grads *)b;
    int slot = 2 * layer + (kind == BUF_BIAS_GRAD);
    if (layer < 0 || layer >= 256 || !f->buf[slot])
        return -1;
    *out = (ddp_grad_storage){f->buf[slot], f->elems[slot], f->elem, true, 0};
    return 0;
}

static void *fake_stream(backend *b)
{
    return ((fake_grads *)b)->stream;
}

static const char *fake_error(const backend *b)
{
    (void)b;
    return "no such gradient";
}

static float value_of(int layer, int kind, int64_t i)
{
    return (float)((layer * 7 + kind * 3 + i) % 29 - 14) / 16.0f;
}

static void fill(fake_grads *f)
{
    for (int s = 0; s < 2 * f->net->n_layers; s++) {
        if (!f->buf[s])
            continue;
        size_t n = (size_t)f->elems[s];
        if (f->elem == DDP_BF16) {
            __nv_bfloat16 *h = (__nv_bfloat16 *)malloc(n * sizeof *h);
            for (size_t i = 0; i < n; i++)
                h[i] = __float2bfloat16(value_of(s / 2, s % 2, (int64_t)i));
            CUDA_CHECK(cudaMemcpy(f->buf[s], h, n * sizeof *h, cudaMemcpyHostToDevice));
            free(h);
        } else {
            float *h = (float *)malloc(n * sizeof *h);
            for (size_t i = 0; i < n; i++)
                h[i] = value_of(s / 2, s % 2, (int64_t)i);
            CUDA_CHECK(cudaMemcpy(f->buf[s], h, n * sizeof *h, cudaMemcpyHostToDevice));
            free(h);
        }
    }
}

/* Every gradient still the value it was filled with (one rank's average). */
static bool unchanged(const fake_grads *f, double *worst)
{
    *worst = 0;
    for (int s = 0; s < 2 * f->net->n_layers; s++) {
        if (!f->buf[s])
            continue;
        size_t n = (size_t)f->elems[s];
        float *h = (float *)malloc(n * sizeof *h);
        if (f->elem == DDP_BF16) {
            __nv_bfloat16 *b = (__nv_bfloat16 *)malloc(n * sizeof *b);
            CUDA_CHECK(cudaMemcpy(b, f->buf[s], n * sizeof *b, cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < n; i++)
                h[i] = __bfloat162float(b[i]);
            free(b);
        } else {
            CUDA_CHECK(cudaMemcpy(h, f->buf[s], n * sizeof *h, cudaMemcpyDeviceToHost));
        }
        for (size_t i = 0; i < n; i++) {
            double d = fabs((double)h[i] - value_of(s / 2, s % 2, (int64_t)i));
            *worst = d > *worst ? d : *worst;
        }
        free(h);
    }
    return *worst == 0.0;
}

static void check_fake(ddp_world *w, ddp_elem elem, ddp_comm_precision comm, double bucket_mb)
{
    network net;
    if (zoo_build(&net, "resnet18-cifar", 32, 10) != NET_OK) {
        expectf(false, "resnet18-cifar: %s", net.err);
        return;
    }
    fake_grads f;
    memset(&f, 0, sizeof f);
    f.net = &net;
    f.elem = elem;
    CUDA_CHECK(cudaStreamCreate(&f.stream));
    for (int i = 0; i < net.n_layers && i < 256; i++)
        for (int k = 0; k < 2; k++) {
            int64_t n = backend_buffer_elems(&net, i, 1, k ? BUF_BIAS_GRAD : BUF_WEIGHT_GRAD);
            if (n == 0)
                continue;
            f.elems[2 * i + k] = n;
            CUDA_CHECK(cudaMalloc(&f.buf[2 * i + k], (size_t)n * (elem == DDP_F32 ? 4 : 2)));
        }
    fill(&f);
    backend_ops ops;
    memset(&ops, 0, sizeof ops);
    ops.name = "fake";
    ops.error = fake_error;
    ddp_backend_access access = {fake_grad_storage, fake_stream};
    ddp_options o = {(int64_t)(bucket_mb * 1048576), DDP_FIRST_BUCKET_BYTES, comm, 0};
    char err[DDP_ERR_LEN];
    ddp *d = ddp_create(w, &net, &ops, (backend *)&f, &access, &o, err, sizeof err);
    const char *what = comm == DDP_COMM_BF16 ? "bf16" : "fp32";
    expectf(d != NULL, "ddp_create over NCCL (%s gradients, %s buckets of %g MiB): %s",
            elem == DDP_BF16 ? "bf16" : "fp32", what, bucket_mb, d ? "ok" : err);
    if (d) {
        expectf(!strcmp(ddp_transport_name(d), "nccl"), "the device gradients chose NCCL");
        step_grad_hooks h = ddp_hooks(d);
        bool ok = true;
        for (int step = 0; step < 3 && ok; step++) {
            ddp_step_begin(d);
            for (int i = net.n_layers - 1; i >= 0 && ok; i--)
                if (net.layers[i].params > 0)
                    ok = h.grads_ready(h.ctx, i, err, sizeof err) == 0;
            ok = ok && h.before_update(h.ctx, err, sizeof err) == 0;
            ok = ok && cudaStreamSynchronize(f.stream) == cudaSuccess;
            ddp_step_stats s;
            ok = ok && ddp_step_end(d, &s) == 0;
            if (ok && step == 2)
                expectf(s.comm_ms > 0 && s.exposed_ms >= 0 && s.buckets == ddp_get_plan(d)->n_buckets,
                        "step stats: %d buckets, %.3f ms on the communication stream, %.3f ms "
                        "exposed", s.buckets, s.comm_ms, s.exposed_ms);
        }
        expectf(ok, "three steps of hooks: %s", ok ? "ok" : (err[0] ? err : ddp_error(d)));
        double worst = 0;
        /* the fill's values are multiples of 1/16 below 1: exact in bf16 too */
        expectf(unchanged(&f, &worst), "one rank's average is its own gradient (worst %.3g)",
                worst);
        double alone = 0;
        expectf(ddp_comm_alone(d, 3, &alone) == 0 && alone > 0,
                "the reductions alone: %.3f ms", alone);
        ddp_destroy(d);
    }
    for (int s = 0; s < 512; s++)
        CUDA_CHECK(cudaFree(f.buf[s]));
    CUDA_CHECK(cudaStreamDestroy(f.stream));
    net_free(&net);
}

/* ---- the benchmark's NCCL sweep ------------------------------------------------ */

static void check_sweep(ddp_world *w)
{
    allreduce_options o;
    memset(&o, 0, sizeof o);
    o.transport = COMM_NCCL;
    o.min_bytes = 1024;
    o.max_bytes = 64 << 20;
    o.factor = 4;
    o.warmup = 2;
    o.target_s = 0.01;
    allreduce_curve c;
    int rc = allreduce_sweep(w, &o, &c);
    bool correct = rc == 0 && c.n > 0;
    for (int i = 0; i < c.n; i++)
        correct &= c.points[i].correct;
    allreduce_summary s = allreduce_summarise(&c);
    expectf(correct, "NCCL allreduce sweep, 1 KiB..64 MiB on one rank: %d sizes exact; latency "
                     "%.2f us, algbw plateau %.1f GB/s%s%s",
            c.n, s.latency_us, s.plateau_gbs, rc ? ": " : "", rc ? c.err : "");
    allreduce_curve_free(&c);
}

/* ---- the CUDA backend's one-rank NCCL path ------------------------------------ */

#ifdef BACKEND_HAS_GRAD_STORAGE
static bool train_losses(ddp_world *w, bool with_ddp, float *losses, int steps)
{
    /* the host emulator's convolutions are direct loops: a smaller step */
    const int res = gpu_test_emulated() ? 16 : 32, batch = gpu_test_emulated() ? 4 : 32;
    network net;
    if (zoo_build(&net, "resnet18-cifar", res, 10) != NET_OK)
        return false;
    backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.batch = batch;
    cfg.seed = 1;
    cfg.prec = PREC_FP32;
    char err[640];
    backend *b = cuda_backend_ops.create(&net, &cfg, err, sizeof err);
    if (!b) {
        expectf(false, "create: %s", err);
        net_free(&net);
        return false;
    }
    float *images = (float *)malloc((size_t)batch * 3 * res * res * sizeof *images);
    int32_t labels[32];
    data_synthetic(1, batch, 3, res, 10, images, labels);
    step_driver drv;
    bool ok = init_parameters(&cuda_backend_ops, b, &net, 1, err, sizeof err) == 0 &&
              cuda_backend_ops.set_batch(b, images, labels) == 0 &&
              step_init(&drv, &cuda_backend_ops, b, &net, (sgd_params){0.0125f, 0.9f, 5e-4f}) == 0;
    ddp *d = NULL;
    if (ok && with_ddp) {
        ddp_backend_access access = {cuda_backend_ops.grad_storage, cuda_backend_ops.stream};
        ddp_options o = {DDP_DEFAULT_BUCKET_BYTES, DDP_FIRST_BUCKET_BYTES, DDP_COMM_FP32, 0};
        d = ddp_create(w, &net, &cuda_backend_ops, b, &access, &o, err, sizeof err);
        ok = d != NULL;
        if (d)
            drv.grad_hooks = ddp_hooks(d);
    }
    for (int s = 0; ok && s < steps; s++) {
        if (d)
            ddp_step_begin(d);
        ddp_step_stats st;
        ok = step_run(&drv, &losses[s]) == 0 && (!d || ddp_step_end(d, &st) == 0);
    }
    if (!ok)
        expectf(false, "%s path: %s", with_ddp ? "NCCL" : "plain",
                d ? ddp_error(d) : step_error(&drv));
    ddp_destroy(d);
    step_free(&drv);
    cuda_backend_ops.destroy(b);
    free(images);
    net_free(&net);
    return ok;
}

static void check_backend(ddp_world *w)
{
    enum { STEPS = 5 };
    float plain[STEPS], nccl[STEPS];
    if (!train_losses(w, false, plain, STEPS) || !train_losses(w, true, nccl, STEPS))
        return;
    /* An average over one rank changes no bit, but the two runs each pick
     * their cuDNN algorithms by timing, and some backward-filter algorithms
     * sum with atomics in any order: equal to fp32 rounding over 5 steps. */
    double worst = 0;
    for (int s = 0; s < STEPS; s++)
        worst = fmax(worst, fabs((double)plain[s] - nccl[s]) / fabs((double)plain[s]));
    expectf(worst <= 1e-4,
            "resnet18-cifar, 5 steps: the one-rank NCCL path gives the plain path's losses "
            "(%.6f .. %.6f vs %.6f .. %.6f; largest relative difference %.2g, 1e-4 allowed)",
            plain[0], plain[STEPS - 1], nccl[0], nccl[STEPS - 1], worst);
}
#endif

int main(int argc, char **argv)
{
    if (gpu_test_skip())
        return 0;
    ddp_world w;
    char err[DDP_ERR_LEN];
    if (ddp_world_init(&w, &argc, &argv, 60, "--ddp-timeout", err, sizeof err)) {
        printf("skipped: %s\n", err);
        return 0;
    }
    check_fake(&w, DDP_F32, DDP_COMM_FP32, 25);
    check_fake(&w, DDP_F32, DDP_COMM_FP32, 0);
    check_fake(&w, DDP_F32, DDP_COMM_BF16, 1);
    check_fake(&w, DDP_BF16, DDP_COMM_BF16, 25);
    check_fake(&w, DDP_BF16, DDP_COMM_FP32, 25);
    check_sweep(&w);
#ifdef BACKEND_HAS_GRAD_STORAGE
    check_backend(&w);
#else
    printf("skipped: the one-rank NCCL path against the plain path: the CUDA backend lends no "
           "gradient storage yet (backend_ops.grad_storage, models/ddp/README.md)\n");
#endif
    int rc = gpu_test_finish(&tally);
    ddp_world_finalize(&w);
    return rc;
}
