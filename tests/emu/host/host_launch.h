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

/* Code translated for the host emulator may tell (tests/gpu/cupti_kernels.cuh). */
#define ROOFLINE_HOST_EMULATOR 1

namespace emu_host {

/* f now, or appended to the graph that `stream` is capturing; f for the
 * legacy default stream while this thread captures is refused and left for
 * cudaGetLastError (cudaErrorStreamCaptureImplicit), as a GPU refuses it. */
void run_on(cudaStream_t stream, std::function<void()> f);

/* Called from queued work: its stream never finishes it, so the events
 * recorded after it never complete and what waits on them waits forever (a
 * collective whose peer died, as a GPU shows it). */
void stream_hangs();

/* What a kernel of the stand-ins does, as CUPTI's metric pass would count
 * it (fake_cupti_profiler.cpp): the stand-ins for cuDNN and cuBLASLt state the work of
 * the call they emulate (multiply-adds on the CUDA cores or on the tensor
 * cores of one source type, and the operands' bytes, each read once and
 * written once); the backend's own kernels run on the emulator's fibers,
 * whose instructions nobody counts but the calls of counted_fmaf, and state
 * none. Under ROOFLINE_EMU_FOOTPRINT=1 every kernel's bytes are the device
 * memory it touched instead (footprint.h). */
struct kernel_work {
    double ffma = 0;            /* fp32 fused multiply-adds (thread instructions) */
    double tensor_ops = 0;      /* tensor-core math ops, a multiply-add counted as 2 */
    const char *tensor_src = nullptr; /* their source type: "fp16", "bf16" or "tf32" */
    double bytes_read = 0, bytes_written = 0;
};

/* fmaf, counted as one FFMA of the kernel that runs it (added to its
 * kernel_work.ffma): for the kernels whose FFMA count a check knows
 * (tests/gpu/cupti_kernels.cuh). A GPU's compiler fuses a * b + c into FFMA
 * on its own; the emulator sees only these calls. */
float counted_fmaf(float a, float b, float c);

/* Who watches kernels as CUPTI does (fake_cupti.cpp): at the launch, on the
 * launching thread (a correlation id, and the driver's launch callback), and
 * when the kernel has run (its activity record, its range of the metric
 * pass). */
struct kernel_observer {
    uint32_t (*launched)(const char *name);
    void (*ran)(uint32_t correlation, const char *name, dim3 grid, dim3 block,
                uint32_t stream_id, uint64_t start_ns, uint64_t end_ns,
                const kernel_work &work);
};
/* null: nobody watches */
void observe_kernels(const kernel_observer *observer);

/* run_on for work that a GPU runs as one kernel (own kernels, and the
 * stand-ins' cuDNN and cuBLASLt calls): named, timed and shown to the observer. */
void run_kernel(cudaStream_t stream, const char *name, dim3 grid, dim3 block,
                std::function<void()> f, const kernel_work &work = kernel_work());

template <typename K, typename... A>
void launch(cudaStream_t stream, const char *name, dim3 grid, dim3 block, K kernel, A... args)
{
    run_kernel(stream, name, grid, block,
               [=]() { emu::launch(name, grid, block, kernel, args...); });
}

} // namespace emu_host

#endif
