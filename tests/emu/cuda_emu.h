/* The suite's own CUDA kernels run on the host, so that make test checks
 * their arithmetic and indexing on a machine without a GPU. Each CUDA thread
 * of a block is a fiber (ucontext) on one OS thread; a block runs its fibers
 * until every live one waits at the same barrier, then releases them, so
 * __syncthreads and the warp shuffles keep their meaning. Blocks run one
 * after another, which lets __shared__ arrays be function statics. A fiber
 * is started once with makecontext and then switched with GCC's
 * __builtin_setjmp and __builtin_longjmp, which save no signal mask
 * (swapcontext makes a system call on every switch) and which the
 * sanitizers do not intercept (their longjmp cleans the stack it leaves,
 * which a fiber comes back to); fibers outlive launches, running one thread
 * after another.
 *
 * What it catches: wrong indices and sums (against direct loops), reads and
 * writes outside the buffers (the emulator's programs build under
 * AddressSanitizer, told about every stack switch), a __syncthreads that not
 * every live thread reaches, a full-mask shuffle with lanes gone, and
 * results that depend on the order threads run between barriers (a launch
 * can run its threads forwards, backwards or shuffled: set_schedule).
 * What it cannot: timing, memory ordering between blocks, the device's own
 * rounding of fp16/bf16 intrinsics beyond what cuda_fp16.h's host versions
 * give, and anything cuDNN, cuBLAS or the launch wrappers do.
 *
 * Include this before any kernel header. */
#ifndef ROOFLINE_CUDA_EMU_H
#define ROOFLINE_CUDA_EMU_H

/* the runtime's declarations name parameters gridDim and blockDim: they
 * come before the macros below */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <functional>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

namespace emu {

enum fiber_state { RUNNABLE, AT_BLOCK_BARRIER, AT_WARP_BARRIER, DONE };
enum schedule { FORWARD, BACKWARD, SHUFFLED };

struct fiber {
    void *env[5];   /* __builtin_setjmp's buffer */
    ucontext_t boot; /* the first switch: fiber_entry on its stack */
    char *stack = nullptr;
    bool started = false;
    uint3 thread{0, 0, 0};
    int state = DONE;
    int barrier_line = 0; /* where it waits at a __syncthreads */
    unsigned shuffles = 0;  /* warp shuffles it has made in this block */
    void *fake_stack = nullptr; /* AddressSanitizer's, while switched away */
};

/* The one machine a kernel sees through threadIdx and friends: the hardware
 * registers of a GPU have no other home on the host. */
struct machine {
    static constexpr size_t stack_bytes = 256 * 1024;
    dim3 grid{1, 1, 1}, block{1, 1, 1};
    uint3 block_idx{0, 0, 0};
    std::vector<fiber> fibers;
    /* shuffle values, by parity of the shuffle then linear thread id */
    std::vector<uint64_t> exchange;
    std::vector<int> pass;          /* the threads the scheduler runs next */
    std::vector<int> warp_waiting;  /* lanes at a warp barrier, by warp */
    std::vector<int> waiting_warps; /* the warps with any, in this pass */
    int running = -1;
    void *scheduler[5];
    void *scheduler_fake = nullptr;
    const void *scheduler_bottom = nullptr;
    size_t scheduler_size = 0;
    std::function<void()> body;
    schedule order = FORWARD;
    uint32_t shuffle_seed = 1;
    const char *kernel = "";

    /* never reallocated: a ucontext_t points into itself */
    machine() { fibers.reserve(1024); }
    ~machine()
    {
        for (fiber &f : fibers)
            free(f.stack);
    }
};

inline machine *current = nullptr;

[[noreturn]] inline void fail(const char *what)
{
    uint3 block{0, 0, 0}, thread{0, 0, 0};
    if (current) {
        block = current->block_idx;
        if (current->running >= 0)
            thread = current->fibers[(size_t)current->running].thread;
    }
    fprintf(stderr, "cuda_emu: %s in %s (block %u,%u,%u thread %u,%u,%u)\n", what,
            current ? current->kernel : "?", block.x, block.y, block.z, thread.x, thread.y,
            thread.z);
    exit(3);
}

inline machine &the_machine()
{
    if (!current)
        current = new machine; /* lives until exit: kernels may run at any time */
    return *current;
}

/* How the next launches order the threads they run between barriers. */
inline void set_schedule(schedule s, uint32_t seed = 1)
{
    the_machine().order = s;
    the_machine().shuffle_seed = seed ? seed : 1;
}

/* Apart from the functions that set jump buffers, as GCC asks. Neither it
 * nor its callers may look noreturn to the sanitizer (the null test keeps
 * GCC from deducing it): AddressSanitizer would clean the whole stack before
 * every switch (a system call and a memset), where the fiber annotations
 * already say which stack is left and which is entered. */
__attribute__((noinline, no_sanitize_address)) inline void jump_to(void **buffer)
{
    if (buffer)
        __builtin_longjmp(buffer, 1);
}

inline const uint3 &thread_idx() { return current->fibers[current->running].thread; }

/* From the running fiber back to the scheduler; returns when the scheduler
 * switches to it again. A finished thread's fiber comes back as the next
 * thread it is given. */
inline void yield_to_scheduler(int state)
{
    machine &m = *current;
    fiber &f = m.fibers[(size_t)m.running];
    f.state = state;
    if (__builtin_setjmp(f.env) == 0) {
#if EMU_ASAN
        __sanitizer_start_switch_fiber(&f.fake_stack, m.scheduler_bottom, m.scheduler_size);
#endif
        jump_to(m.scheduler);
    }
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(m.fibers[(size_t)m.running].fake_stack, nullptr, nullptr);
#endif
}

[[noreturn]] inline void fiber_entry()
{
    machine &m = *current;
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &m.scheduler_bottom, &m.scheduler_size);
#endif
    for (;;) {
        m.body();
        yield_to_scheduler(DONE);
    }
}

/* Runs fiber i until it yields. */
inline void switch_to(machine &m, int i)
{
    m.running = i;
    if (__builtin_setjmp(m.scheduler) == 0) {
        fiber &f = m.fibers[(size_t)i];
#if EMU_ASAN
        __sanitizer_start_switch_fiber(&m.scheduler_fake, f.stack, machine::stack_bytes);
#endif
        if (f.started)
            jump_to(f.env);
        /* the first time: onto its own stack, leaving no frame behind here */
        f.started = true;
        setcontext(&f.boot);
        fail("a thread's fiber did not start");
    }
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(m.scheduler_fake, nullptr, nullptr);
#endif
    m.running = -1;
}

inline int threads_per_block(const machine &m) { return (int)(m.block.x * m.block.y * m.block.z); }

/* Puts the threads of this pass (ascending) in the order the scheduler visits
 * them. */
inline void visit_order(machine &m, std::vector<int> &order)
{
    size_t n = order.size();
    if (m.order == BACKWARD)
        for (size_t i = 0; i < n / 2; i++) {
            int t = order[i];
            order[i] = order[n - 1 - i];
            order[n - 1 - i] = t;
        }
    if (m.order == SHUFFLED)
        for (size_t i = n - 1; n > 1 && i > 0; i--) {
            m.shuffle_seed = m.shuffle_seed * 1664525u + 1013904223u;
            size_t j = (size_t)((m.shuffle_seed >> 8) % (uint32_t)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
}

/* Runs one block's fibers until all are done, releasing barriers. A pass
 * runs only the threads a barrier released (after a block reduction, the one
 * warp that shuffles), not a scan of the whole block. */
inline void run_block(machine &m)
{
    int n = threads_per_block(m), warps = (n + 31) / 32;
    std::vector<int> &pass = m.pass;
    pass.resize((size_t)n);
    for (int i = 0; i < n; i++) {
        fiber &f = m.fibers[(size_t)i];
        f.thread = uint3{(unsigned)(i % (int)m.block.x), (unsigned)(i / (int)m.block.x % (int)m.block.y),
                         (unsigned)(i / (int)(m.block.x * m.block.y))};
        f.state = RUNNABLE;
        f.shuffles = 0;
        pass[(size_t)i] = i;
    }
    m.warp_waiting.assign((size_t)warps, 0);
    int live = n, at_block = 0;
    for (;;) {
        visit_order(m, pass);
        m.waiting_warps.clear();
        for (int i : pass) {
            switch_to(m, i);
            int s = m.fibers[(size_t)i].state;
            if (s == DONE)
                live--;
            else if (s == AT_BLOCK_BARRIER)
                at_block++;
            else if (m.warp_waiting[(size_t)(i / 32)]++ == 0)
                m.waiting_warps.push_back(i / 32);
        }
        if (live == 0)
            return;
        pass.clear();
        if (at_block == live) {
            int line = -1;
            for (int i = 0; i < n; i++) {
                fiber &f = m.fibers[(size_t)i];
                if (f.state != AT_BLOCK_BARRIER)
                    continue;
                if (line >= 0 && f.barrier_line != line)
                    fail("threads of a block wait at different __syncthreads");
                line = f.barrier_line;
                f.state = RUNNABLE;
                pass.push_back(i);
            }
            at_block = 0;
            continue;
        }
        /* a warp barrier opens when every thread of the warp waits at it */
        if (m.waiting_warps.empty())
            fail("a __syncthreads that not every live thread of the block reaches");
        std::sort(m.waiting_warps.begin(), m.waiting_warps.end());
        for (int w : m.waiting_warps) {
            if (m.warp_waiting[(size_t)w] != 32)
                fail("a full-mask warp shuffle that not all 32 lanes of the warp reach");
            m.warp_waiting[(size_t)w] = 0;
            for (int i = w * 32; i < w * 32 + 32; i++) {
                m.fibers[(size_t)i].state = RUNNABLE;
                pass.push_back(i);
            }
        }
    }
}

/* kernel<<<grid, block>>>(args...) on the host; returns when it is done. */
template <typename K, typename... A> void launch(const char *name, dim3 grid, dim3 block, K kernel, A... args)
{
    machine &m = the_machine();
    m.kernel = name;
    int n = (int)(block.x * block.y * block.z);
    if (n <= 0 || n > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 ||
        grid.z > 65535)
        fail("a launch configuration no GPU accepts");
    m.grid = grid;
    m.block = block;
    while ((int)m.fibers.size() < n) {
        m.fibers.emplace_back();
        fiber &f = m.fibers.back();
        f.stack = (char *)malloc(machine::stack_bytes);
        if (!f.stack)
            fail("out of host memory for thread stacks");
        getcontext(&f.boot);
        f.boot.uc_stack.ss_sp = f.stack;
        f.boot.uc_stack.ss_size = machine::stack_bytes;
        f.boot.uc_link = nullptr;
        makecontext(&f.boot, fiber_entry, 0);
    }
    m.exchange.assign(2 * (size_t)n, 0);
    m.body = [=]() { kernel(args...); };
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                m.block_idx = uint3{x, y, z};
                run_block(m);
            }
    m.body = nullptr;
}

/* __syncthreads: every live thread of the block must wait at the same one
 * (threads that have returned are not waited for, as on Volta and later). */
inline void block_barrier(int line)
{
    current->fibers[(size_t)current->running].barrier_line = line;
    yield_to_scheduler(AT_BLOCK_BARRIER);
}

/* __syncthreads_or: every live thread ORs its predicate in and waits; all
 * read the result and wait again; one clears it for the next call before a
 * third barrier lets anyone reach that. */
inline int block_barrier_or(int predicate, int line)
{
    static int any = 0; /* one block runs at a time */
    any |= predicate != 0;
    block_barrier(line);
    int result = any;
    block_barrier(line + 1000000);
    any = 0;
    block_barrier(line + 2000000);
    return result;
}

inline int linear_thread()
{
    const machine &m = *current;
    const uint3 &t = m.fibers[m.running].thread;
    return (int)(t.x + m.block.x * (t.y + m.block.y * t.z));
}

/* __shfl_down_sync over a full warp: every lane posts its value, all wait,
 * each reads lane + delta (its own beyond the warp's end). Successive
 * shuffles post to alternate slots: a lane can post the next one's value
 * before the others have read this one's, but not the one after that, which
 * needs them all at the next barrier. */
template <typename T> T shfl_down(unsigned mask, T value, unsigned delta)
{
    static_assert(sizeof(T) <= sizeof(uint64_t), "shuffle of a wide type");
    if (mask != 0xffffffffu)
        fail("a warp shuffle with a partial mask (not emulated)");
    machine &m = *current;
    int me = linear_thread(), lane = me % 32;
    fiber &f = m.fibers[(size_t)m.running];
    uint64_t *slots = &m.exchange[(f.shuffles++ & 1u) * (m.exchange.size() / 2)];
    uint64_t bits = 0;
    memcpy(&bits, &value, sizeof value);
    slots[me] = bits;
    yield_to_scheduler(AT_WARP_BARRIER);
    T got = value;
    if (lane + (int)delta < 32)
        memcpy(&got, &slots[me + (int)delta], sizeof got);
    return got;
}

} // namespace emu

#define threadIdx (::emu::thread_idx())
#define blockIdx (::emu::current->block_idx)
#define blockDim (::emu::current->block)
#define gridDim (::emu::current->grid)
#undef __shared__
#define __shared__ static
#define __syncthreads() ::emu::block_barrier(__LINE__)
#define __syncthreads_or(predicate) ::emu::block_barrier_or((predicate), __LINE__)
#define __shfl_down_sync(mask, v, delta) ::emu::shfl_down((mask), (v), (delta))
/* a register budget for ptxas: nothing on the host */
#undef __launch_bounds__
#define __launch_bounds__(...)

/* One OS thread runs everything: an atomic is a plain read-modify-write. */
inline unsigned atomicMax(unsigned *p, unsigned v)
{
    unsigned old = *p;
    *p = old > v ? old : v;
    return old;
}
inline unsigned __float_as_uint(float v)
{
    unsigned u;
    memcpy(&u, &v, sizeof u);
    return u;
}
inline float __uint_as_float(unsigned u)
{
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

#endif
