/* The stand-in runtime's stream capture keeps a GPU's rules (fake_cuda.cpp),
 * so that the emulated --graph steps of make test fail where a GPU's would:
 * a call that may synchronise, or work for the legacy stream, on the
 * capturing thread fails and invalidates the capture; relaxed mode and other
 * threads are left alone; a clean capture replays its work. */
#include <cstdio>
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

    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    cudaEventDestroy(ev);
    cudaFree(dev);
    cudaStreamDestroy(s);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
