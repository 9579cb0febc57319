/* The emulator checked on itself: the barrier and the warp shuffle mean what
 * they mean on a GPU, the three schedules really order threads differently
 * (so that a race shows as a changed result), and a kernel doing what no GPU
 * allows stops the program (run as `kernel_emu --misuse NAME`, expected to
 * exit 3: tests/test_cuda_emu.c). */
#include "emu_check.h"

namespace {

enum { BLOCK = 128 };

/* A block's sum through shared memory, halving with a barrier each step. */
__global__ void block_sum_kernel(const int *in, int *out)
{
    __shared__ int partial[BLOCK];
    partial[threadIdx.x] = in[blockIdx.x * BLOCK + threadIdx.x];
    __syncthreads();
    for (int half = BLOCK / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half)
            partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        out[blockIdx.x] = partial[0];
}

/* Each lane's value after shuffles down by 16, 8, 4, 2, 1: lane 0 holds the
 * warp's sum; lane l holds the sum over the lanes its reads reached. */
__global__ void warp_sum_kernel(const int *in, int *out)
{
    int v = in[threadIdx.x];
    for (int off = 16; off > 0; off /= 2)
        v += __shfl_down_sync(0xffffffffu, v, off);
    out[threadIdx.x] = v;
}

/* Every thread writes its index to one shared slot without a barrier
 * between writes and the read: the last writer wins, which is a race. */
__global__ void racy_kernel(int *out)
{
    __shared__ int slot;
    slot = (int)threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0)
        out[0] = slot;
}

/* Half the block waits at one barrier, half at another. */
__global__ void divergent_barrier_kernel(int *out)
{
    if (threadIdx.x < 16) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    out[threadIdx.x] = 1;
}

__global__ void exited_lane_shuffle_kernel(int *out)
{
    if (threadIdx.x == 31)
        return;
    out[threadIdx.x] = __shfl_down_sync(0xffffffffu, (int)threadIdx.x, 1);
}

/* The warp_sum_kernel of a host loop: lane l after k rounds. */
std::vector<int> warp_sum_reference(const std::vector<int> &in)
{
    std::vector<int> v = in;
    for (int off = 16; off > 0; off /= 2) {
        std::vector<int> next = v;
        for (int lane = 0; lane < 32; lane++)
            next[(size_t)lane] = v[(size_t)lane] + (lane + off < 32 ? v[(size_t)(lane + off)] : v[(size_t)lane]);
        v = next;
    }
    return v;
}

} // namespace

void check_emulator(checker &ck)
{
    ck.family = "emulator";
    const int blocks = 3;
    std::vector<int> in((size_t)blocks * BLOCK);
    for (size_t i = 0; i < in.size(); i++)
        in[i] = (int)(i * 7 % 101);
    const emu::schedule schedules[] = {emu::FORWARD, emu::BACKWARD, emu::SHUFFLED};
    std::vector<int> last_writer;
    for (emu::schedule s : schedules) {
        emu::set_schedule(s, 5);
        std::vector<int> sums(blocks, -1);
        emu::launch("block_sum_kernel", dim3(blocks), dim3(BLOCK), block_sum_kernel, in.data(),
                    sums.data());
        for (int b = 0; b < blocks; b++) {
            int want = 0;
            for (int t = 0; t < BLOCK; t++)
                want += in[(size_t)(b * BLOCK + t)];
            ck.expect(sums[(size_t)b] == want, "schedule %d: block %d sums to %d, not %d", (int)s, b,
                      sums[(size_t)b], want);
        }
        std::vector<int> lanes(32, -1), lane_in(in.begin(), in.begin() + 32);
        emu::launch("warp_sum_kernel", dim3(1), dim3(32), warp_sum_kernel, lane_in.data(),
                    lanes.data());
        ck.expect(lanes == warp_sum_reference(lane_in), "schedule %d: warp shuffles differ from "
                  "the lane-by-lane loop", (int)s);
        int winner = -1;
        emu::launch("racy_kernel", dim3(1), dim3(64), racy_kernel, &winner);
        last_writer.push_back(winner);
    }
    emu::set_schedule(emu::FORWARD);
    ck.expect(last_writer[0] == 63 && last_writer[1] == 0 && last_writer[2] != 63 &&
                  last_writer[2] != 0,
              "a race must end differently under the three schedules (last writers %d, %d, %d)",
              last_writer[0], last_writer[1], last_writer[2]);
}

/* Runs a kernel that no GPU allows; the emulator must stop the program. */
int emu_misuse(const char *which)
{
    std::vector<int> out(64, 0);
    if (strcmp(which, "divergent-barrier") == 0)
        emu::launch("divergent_barrier_kernel", dim3(1), dim3(64), divergent_barrier_kernel,
                    out.data());
    else if (strcmp(which, "exited-lane-shuffle") == 0)
        emu::launch("exited_lane_shuffle_kernel", dim3(1), dim3(32), exited_lane_shuffle_kernel,
                    out.data());
    else if (strcmp(which, "bad-launch") == 0)
        emu::launch("divergent_barrier_kernel", dim3(1), dim3(2048), divergent_barrier_kernel,
                    out.data());
    else {
        fprintf(stderr, "kernel_emu: unknown misuse '%s'\n", which);
        return 2;
    }
    fprintf(stderr, "kernel_emu: misuse '%s' ran to the end\n", which);
    return 0;
}
