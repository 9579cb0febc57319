/* NCCL on the host emulator, over MPI: the DDP transport of bin/train
 * (models/ddp/ddp_nccl.c) runs with any number of ranks on one machine, as
 * mpirun starts them, one emulated device each (FAKE_CUDA_DEVICES). An
 * all-reduce gathers every rank's buffer (MPI_Allgather) and sums them in
 * rank order in double, so that every rank computes the very same result;
 * it runs on its stream as one kernel named as NCCL's are, which the trace
 * pass (fake_cupti.cpp) sees. Types: fp32, fp16 and bf16; ops: sum and avg.
 * MPI_Init must have been called (bin/train does, before the communicator). */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <mpi.h>
#include <nccl.h>
#include <unistd.h>

#include "host_elements.h"
#include "host_launch.h"

struct ncclComm {
    MPI_Comm comm;
    int nranks, rank;
};

namespace {

size_t size_of(ncclDataType_t type)
{
    switch (type) {
    case ncclFloat32:
        return 4;
    case ncclFloat16:
    case ncclBfloat16:
        return 2;
    default:
        return 0;
    }
}

emu_host::element element_of(ncclDataType_t type)
{
    return type == ncclFloat16    ? emu_host::element::f16
           : type == ncclBfloat16 ? emu_host::element::bf16
                                  : emu_host::element::f32;
}

const char *kernel_name(ncclDataType_t type, ncclRedOp_t op)
{
    static const char *const names[2][3] = {
        {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_AllReduce_Sum_f16_RING_LL",
         "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"},
        {"ncclDevKernel_AllReduce_PreMulSum_f32_RING_LL",
         "ncclDevKernel_AllReduce_PreMulSum_f16_RING_LL",
         "ncclDevKernel_AllReduce_PreMulSum_bf16_RING_LL"}};
    int t = type == ncclFloat32 ? 0 : type == ncclFloat16 ? 1 : 2;
    return names[op == ncclAvg][t];
}

/* the message of the last failure, as ncclGetLastError gives it */
char last_error[256];

} // namespace

extern "C" {

const char *ncclGetErrorString(ncclResult_t result)
{
    switch (result) {
    case ncclSuccess:
        return "no error";
    case ncclSystemError:
        return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInvalidArgument:
        return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
        return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
        return "remote process exited or there was a network error";
    default:
        return "unhandled error (host emulator)";
    }
}

const char *ncclGetLastError(ncclComm_t) { return last_error; }

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "host emulator");
    return ncclSuccess;
}

/* FAKE_NCCL_INIT_HANG=1: never returns, as the real one waits for a peer
 * that died after the unique id's broadcast */
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId, int rank)
{
    if (getenv("FAKE_NCCL_INIT_HANG"))
        for (;;)
            pause();
    int initialized = 0, world = 0;
    if (MPI_Initialized(&initialized) != MPI_SUCCESS || !initialized) {
        snprintf(last_error, sizeof last_error, "the NCCL stand-in needs MPI_Init first");
        return ncclInvalidUsage;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (nranks != world || rank < 0 || rank >= nranks) {
        snprintf(last_error, sizeof last_error,
                 "the NCCL stand-in runs one rank per MPI rank: %d ranks asked, %d in "
                 "MPI_COMM_WORLD",
                 nranks, world);
        return ncclInvalidArgument;
    }
    ncclComm *c = new ncclComm{MPI_COMM_NULL, nranks, rank};
    if (MPI_Comm_dup(MPI_COMM_WORLD, &c->comm) != MPI_SUCCESS) {
        delete c;
        return ncclSystemError;
    }
    *comm = c;
    return ncclSuccess;
}

/* every reduction has finished when its call returns; FAKE_NCCL_ASYNC_ERROR=1
 * reports a peer lost instead */
ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t *async)
{
    *async = getenv("FAKE_NCCL_ASYNC_ERROR") ? ncclRemoteError : ncclSuccess;
    return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t) { return ncclSuccess; }

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (comm) {
        MPI_Comm_free(&comm->comm);
        delete comm;
    }
    return ncclSuccess;
}

/* after a failure the other ranks may never reach a collective again: the
 * duplicate communicator is left to MPI_Finalize or the process's end */
ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    delete comm;
    return ncclSuccess;
}

/* FAKE_NCCL_CONNECT_HANG=1: the call never returns, as the real one (2.22
 * and later) waits inside the first call of an algorithm for a peer that
 * hangs while they connect */
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    if (getenv("FAKE_NCCL_CONNECT_HANG"))
        for (;;)
            pause();
    size_t elem = size_of(type);
    if (!comm || elem == 0 || (op != ncclSum && op != ncclAvg) ||
        count * elem > (size_t)INT32_MAX) {
        snprintf(last_error, sizeof last_error,
                 "the NCCL stand-in reduces fp32, fp16 and bf16 by sum or avg, below 2 GiB");
        return ncclInvalidArgument;
    }
    emu_host::run_kernel(stream, kernel_name(type, op), dim3(1), dim3(1), [=]() {
        if (getenv("FAKE_NCCL_HANG")) { /* a peer that never joins: NCCL's kernel spins */
            emu_host::stream_hangs();
            return;
        }
        size_t bytes = count * elem;
        std::vector<uint8_t> all(bytes * (size_t)comm->nranks);
        if (MPI_Allgather(send, (int)bytes, MPI_BYTE, all.data(), (int)bytes, MPI_BYTE,
                          comm->comm) != MPI_SUCCESS) {
            fprintf(stderr, "fake_nccl: MPI_Allgather failed\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        emu_host::element e = element_of(type);
        /* ncclAvg as NCCL 2.28 runs it for floating types: each input times
         * 1/ranks rounded to the element type, then summed (PreMulSum) */
        double premul = 1.0;
        if (op == ncclAvg) {
            uint8_t rounded[4];
            emu_host::store_element(e, rounded, 0, 1.0 / comm->nranks);
            premul = emu_host::load_element(e, rounded, 0);
        }
        for (size_t i = 0; i < count; i++) {
            double sum = 0.0;
            for (int r = 0; r < comm->nranks; r++)
                sum += premul * emu_host::load_element(e, all.data() + (size_t)r * bytes, i);
            emu_host::store_element(e, recv, i, sum);
        }
    });
    return ncclSuccess;
}

} // extern "C"
