/* Kernel launches of the CUDA backend's own .cu files on the host emulator:
 * translate_cu rewrites each kernel<<<grid, block, shared, stream>>>(args)
 * into emu_host::launch(stream, "kernel", grid, block, kernel, args), which
 * runs it on tests/emu/cuda_emu.h's fibers at once, or records it where the
 * stream is being captured into a CUDA graph (fake_cuda.cpp), as a GPU would
 * defer it. */
#ifndef ROOFLINE_EMU_HOST_LAUNCH_H
#define ROOFLINE_EMU_HOST_LAUNCH_H

#include <cstdint>
#include <functional>

#include "../cuda_emu.h"

namespace emu_host {

/* f now, or appended to the graph that `stream` is capturing. */
void run_on(cudaStream_t stream, std::function<void()> f);

/* Who watches kernels as CUPTI's activity API does (fake_cupti.cpp): a
 * correlation id taken when the kernel is launched, and the kernel's record
 * when it has run. */
struct kernel_observer {
    uint32_t (*launched)(void);
    void (*ran)(uint32_t correlation, const char *name, dim3 grid, dim3 block,
                uint32_t stream_id, uint64_t start_ns, uint64_t end_ns);
};
/* null: nobody watches */
void observe_kernels(const kernel_observer *observer);

/* run_on for work that a GPU runs as one kernel (own kernels, and the
 * stand-ins' cuDNN and cuBLASLt calls): named, timed and shown to the observer. */
void run_kernel(cudaStream_t stream, const char *name, dim3 grid, dim3 block,
                std::function<void()> f);

template <typename K, typename... A>
void launch(cudaStream_t stream, const char *name, dim3 grid, dim3 block, K kernel, A... args)
{
    run_kernel(stream, name, grid, block,
               [=]() { emu::launch(name, grid, block, kernel, args...); });
}

} // namespace emu_host

#endif
