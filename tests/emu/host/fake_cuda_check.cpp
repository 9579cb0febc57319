/* The stand-in runtime's stream capture keeps a GPU's rules (fake_cuda.cpp),
 * so that the emulated --graph steps of make test fail where a GPU's would:
 * a call that may synchronise, or work for the legacy stream, on the
 * capturing thread fails and invalidates the capture; relaxed mode and other
 * threads are left alone; a clean capture replays its work. Under
 * FAKE_CUDA_DEFER=all (every stream deferred) or =2 (the stream `a` below
 * alone) it also checks the deferred streams: work runs when something
 * waits for it and not before, so that a missing wait shows. */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <cuda_runtime.h>

#include "host_launch.h"

namespace {

int passed, failed;

void expect(bool ok, const char *what)
{
    std::printf("%s: %s\n", ok ? "PASS" : "FAIL", what);
    (ok ? passed : failed)++;
}

/* What ending a capture in mode, around `during`, gives: the end's error
 * and whether a graph came back. */
template <typename F>
cudaError_t capture_around(cudaStream_t s, cudaStreamCaptureMode mode, F during, bool *graph_out)
{
    if (cudaStreamBeginCapture(s, mode) != cudaSuccess)
        return cudaErrorUnknown;
    during();
    cudaGraph_t graph = nullptr;
    cudaError_t end = cudaStreamEndCapture(s, &graph);
    *graph_out = graph != nullptr;
    if (graph)
        cudaGraphDestroy(graph);
    return end;
}

/* FAKE_CUDA_DEFER=all or =2: a's work waits on it until the program waits
 * for it, and only what it waits for runs (b and c too under =all; under =2
 * they run their work at once, which these checks allow) */
void deferred_streams()
{
    cudaStream_t a, b, c;
    cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    cudaStreamCreate(&c); /* blocking: ordered with the legacy stream */
    float *x = nullptr, *y = nullptr, *pinned = nullptr;
    cudaMalloc((void **)&x, sizeof(float));
    cudaMalloc((void **)&y, sizeof(float));
    cudaMallocHost((void **)&pinned, sizeof(float));
    cudaEvent_t written, start, end;
    cudaEventCreate(&written);
    cudaEventCreate(&start);
    cudaEventCreate(&end);

    /* b reads what a writes, without an event between them: b runs alone */
    *x = 0.0f, *y = -1.0f;
    emu_host::run_on(a, [=] { *x = 1.0f; });
    emu_host::run_on(b, [=] { *y = *x; });
    cudaStreamSynchronize(b);
    expect(*y == 0.0f && *x == 0.0f, "a stream that does not wait reads what was there before");
    cudaStreamSynchronize(a);

    /* with the event: a runs up to it first */
    *x = 0.0f, *y = -1.0f;
    emu_host::run_on(a, [=] { *x = 2.0f; });
    cudaEventRecord(written, a);
    emu_host::run_on(a, [=] { *x = 3.0f; });
    cudaStreamWaitEvent(b, written, 0);
    emu_host::run_on(b, [=] { *y = *x; });
    cudaStreamSynchronize(b);
    expect(*y == 2.0f && *x == 2.0f,
           "a stream waiting on an event runs the other stream up to the record, no further");
    cudaStreamSynchronize(a);

    /* the host reading a copy before waiting for it; a watchdog's queries */
    *pinned = 0.0f, *x = 5.0f;
    cudaMemcpyAsync(pinned, x, sizeof(float), cudaMemcpyDeviceToHost, a);
    cudaEventRecord(written, a);
    float early = *pinned;
    cudaError_t other_stream = cudaSuccess, other_event = cudaSuccess;
    std::thread watchdog([&] {
        other_stream = cudaStreamQuery(a);
        other_event = cudaEventQuery(written);
    });
    watchdog.join();
    float after_other = *pinned;
    cudaError_t own_event = cudaEventQuery(written);
    expect(early == 0.0f && other_stream == cudaErrorNotReady && other_event == cudaErrorNotReady &&
               after_other == 0.0f && own_event == cudaSuccess && *pinned == 5.0f &&
               cudaStreamQuery(a) == cudaSuccess,
           "a copy to pinned memory lands when the host polls or waits; another thread's "
           "queries run nothing");
    emu_host::run_on(a, [=] { *x = 6.0f; });
    cudaError_t polled = cudaStreamQuery(a);
    expect(polled == cudaSuccess && *x == 6.0f, "polling a stream runs its queued work");

    /* pageable memory: the source is taken at the call, the destination
     * filled before the call returns */
    float source = 7.0f, back = 0.0f;
    cudaMemcpyAsync(y, &source, sizeof source, cudaMemcpyHostToDevice, a);
    source = 8.0f;
    cudaMemcpyAsync(&back, y, sizeof back, cudaMemcpyDeviceToHost, a);
    expect(back == 7.0f, "pageable copies: staged at the call, returned when done");

    /* timing events have no time until they have run */
    float ms = 0.0f;
    cudaEventRecord(start, a);
    emu_host::run_on(a, [] {});
    cudaEventRecord(end, a);
    cudaError_t early_time = cudaEventElapsedTime(&ms, start, end);
    cudaEventSynchronize(end);
    expect(early_time == cudaErrorNotReady && cudaEventElapsedTime(&ms, start, end) == cudaSuccess,
           "cudaEventElapsedTime of events not yet run is cudaErrorNotReady");

    /* the legacy stream waits for the blocking streams, not the others */
    *x = 0.0f, *y = 0.0f;
    emu_host::run_on(c, [=] { *x = 1.0f; });
    emu_host::run_on(a, [=] { *y = 1.0f; });
    cudaMemset(pinned, 0, sizeof(float));
    expect(*x == 1.0f && *y == 0.0f,
           "legacy-stream work runs the blocking streams first, not the non-blocking ones");

    /* cudaFree synchronizes the device */
    float *spare = nullptr;
    cudaMalloc((void **)&spare, sizeof(float));
    cudaFree(spare);
    expect(*y == 1.0f, "cudaFree runs every stream's work first");

    /* a graph's replay is queued like any work */
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;
    *x = 0.0f;
    cudaStreamBeginCapture(a, cudaStreamCaptureModeThreadLocal);
    emu_host::run_on(a, [=] { *x += 1.0f; });
    cudaStreamEndCapture(a, &g);
    cudaGraphInstantiate(&exec, g, 0);
    cudaGraphLaunch(exec, a);
    float before = *x;
    cudaStreamDestroy(a); /* a GPU finishes a destroyed stream's work */
    expect(before == 0.0f && *x == 1.0f, "a replay waits on its stream like other work");

    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    cudaEventDestroy(written);
    cudaEventDestroy(start);
    cudaEventDestroy(end);
    cudaFreeHost(pinned);
    cudaFree(x);
    cudaFree(y);
    cudaStreamDestroy(b);
    cudaStreamDestroy(c);
}

} // namespace

int main()
{
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    float *dev = nullptr;
    cudaMalloc((void **)&dev, sizeof(float));
    bool graph = false;

    cudaError_t during = cudaSuccess;
    cudaError_t end = capture_around(
        s, cudaStreamCaptureModeThreadLocal,
        [&] {
            void *p = nullptr;
            during = cudaMalloc(&p, 64);
        },
        &graph);
    expect(during == cudaErrorStreamCaptureUnsupported && end == cudaErrorStreamCaptureInvalidated &&
               !graph,
           "cudaMalloc while capturing fails and invalidates the capture");

    end = capture_around(
        s, cudaStreamCaptureModeGlobal, [&] { during = cudaStreamSynchronize(s); }, &graph);
    expect(during == cudaErrorStreamCaptureUnsupported && end == cudaErrorStreamCaptureInvalidated,
           "synchronizing the capturing stream fails and invalidates the capture");

    const char *unsafe[] = {"cudaMemcpy", "cudaMemset", "cudaDeviceSynchronize",
                            "cudaEventSynchronize", "cudaFree"};
    cudaEvent_t ev;
    cudaEventCreate(&ev);
    for (int k = 0; k < 5; k++) {
        end = capture_around(
            s, cudaStreamCaptureModeThreadLocal,
            [&] {
                float host = 0.0f;
                during = k == 0   ? cudaMemcpy(&host, dev, sizeof host, cudaMemcpyDeviceToHost)
                         : k == 1 ? cudaMemset(dev, 0, sizeof(float))
                         : k == 2 ? cudaDeviceSynchronize()
                         : k == 3 ? cudaEventSynchronize(ev)
                                  : cudaFree(dev);
            },
            &graph);
        char what[96];
        std::snprintf(what, sizeof what, "%s while capturing is refused", unsafe[k]);
        expect(during == cudaErrorStreamCaptureUnsupported &&
                   end == cudaErrorStreamCaptureInvalidated,
               what);
    }

    end = capture_around(
        s, cudaStreamCaptureModeThreadLocal,
        [&] { during = cudaMemsetAsync(dev, 0, sizeof(float), nullptr); }, &graph);
    expect(during == cudaErrorStreamCaptureImplicit && end == cudaErrorStreamCaptureInvalidated,
           "legacy-stream work while capturing is refused");

    end = capture_around(
        s, cudaStreamCaptureModeThreadLocal,
        [&] { emu_host::run_on(nullptr, [] {}); }, &graph);
    cudaError_t launch = cudaGetLastError();
    expect(launch == cudaErrorStreamCaptureImplicit && cudaGetLastError() == cudaSuccess &&
               end == cudaErrorStreamCaptureInvalidated,
           "a legacy-stream launch while capturing is left for cudaGetLastError, once");

    end = capture_around(
        s, cudaStreamCaptureModeRelaxed,
        [&] {
            void *p = nullptr;
            during = cudaMalloc(&p, 64);
            cudaFree(p);
        },
        &graph);
    expect(during == cudaSuccess && end == cudaSuccess && graph,
           "relaxed mode allows cudaMalloc");

    end = capture_around(
        s, cudaStreamCaptureModeThreadLocal,
        [&] {
            std::thread other([&] {
                void *p = nullptr;
                during = cudaMalloc(&p, 64);
                cudaFree(p);
            });
            other.join();
        },
        &graph);
    expect(during == cudaSuccess && end == cudaSuccess && graph,
           "another thread's cudaMalloc leaves a thread-local capture alone");

    /* a clean capture records its work and a launch replays it */
    float value = 3.0f, *host_value = &value;
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;
    *dev = 0.0f; /* device memory is host memory here */
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    cudaError_t copy = cudaMemcpyAsync(dev, host_value, sizeof value, cudaMemcpyHostToDevice, s);
    cudaError_t ended = cudaStreamEndCapture(s, &g);
    bool ran_nothing = *dev == 0.0f;
    cudaGraphInstantiate(&exec, g, 0);
    cudaGraphLaunch(exec, s);
    cudaStreamSynchronize(s);
    expect(copy == cudaSuccess && ended == cudaSuccess && ran_nothing && *dev == 3.0f,
           "a clean capture records its work and a launch replays it");

    /* a query reads the clock once the stream's end is known: a stream whose
     * work has run is ready (it read "not ready" when the clock was read first) */
    expect(cudaStreamQuery(s) == cudaSuccess, "a stream whose work has run is ready to a query");

    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    cudaEventDestroy(ev);
    cudaFree(dev);
    cudaStreamDestroy(s);
    const char *defer = std::getenv("FAKE_CUDA_DEFER");
    if (defer && (std::strcmp(defer, "all") == 0 || std::strcmp(defer, "2") == 0))
        deferred_streams();
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
