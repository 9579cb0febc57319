/* Kernel launches of the CUDA backend's own .cu files on the host emulator:
 * translate_cu.py rewrites each kernel<<<grid, block, shared, stream>>>(args)
 * into emu_host::launch(stream, "kernel", grid, block, kernel, args), which
 * runs it on tests/emu/cuda_emu.h's fibers at once, or records it where the
 * stream is being captured into a CUDA graph (fake_cuda.cpp), as a GPU would
 * defer it. */
#ifndef ROOFLINE_EMU_HOST_LAUNCH_H
#define ROOFLINE_EMU_HOST_LAUNCH_H

#include <functional>

#include "../cuda_emu.h"

namespace emu_host {

/* f now, or appended to the graph that `stream` is capturing. */
void run_on(cudaStream_t stream, std::function<void()> f);

template <typename K, typename... A>
void launch(cudaStream_t stream, const char *name, dim3 grid, dim3 block, K kernel, A... args)
{
    run_on(stream, [=]() { emu::launch(name, grid, block, kernel, args...); });
}

} // namespace emu_host

#endif
