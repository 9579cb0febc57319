/* The footprint meter of the host emulator (ROOFLINE_EMU_FOOTPRINT=1): the
 * device memory each kernel reads and writes, by page, so that the bytes
 * models/cuda/cuda_traffic.c writes down by design can be checked against
 * what the emulated kernels touch (tests/test_cuda_train_emu.c).
 *
 * While the meter runs, device memory is made inaccessible; the first read
 * of a page faults and opens it for reading, the first write for writing
 * (the x86-64 page-fault error code tells them apart), and the pages so
 * opened, clamped to their allocations, are the kernel's bytes: each byte
 * counted once a kernel however often it is touched, read where the kernel
 * read it before writing it, as cuda_traffic.h counts. Device memory is
 * then mapped by whole pages of its own (no neighbour shares a page). */
#ifndef ROOFLINE_EMU_FOOTPRINT_H
#define ROOFLINE_EMU_FOOTPRINT_H

#include <cstddef>
#include <map>

namespace emu_host {

/* ROOFLINE_EMU_FOOTPRINT=1 in the environment, and a machine it works on */
bool footprint_on();

/* page-aligned device memory, and its release */
void *footprint_map(size_t bytes);
void footprint_unmap(void *p, size_t bytes);

/* Around one kernel: every allocation (start -> bytes) closed, then opened
 * again with what was read and written of them. */
void footprint_begin(const std::map<void *, size_t> &allocations);
void footprint_end(double *bytes_read, double *bytes_written);

/* Within the running kernel: [p, p + bytes) is a library's workspace,
 * which cuda_traffic.h does not count: its whole pages are left out. */
void footprint_exclude(const void *p, size_t bytes);

} // namespace emu_host

#endif
