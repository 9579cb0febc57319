/* The CUDA backend's own kernels (models/cuda/<name>_kernels.cuh) on the host,
 * by tests/emu/: each against a direct loop in double, in every element type
 * and layout, independent of the order threads run in, under AddressSanitizer
 * (tests/emu/cuda_emu.h says what this catches and what only a GPU can). */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"

Test(cuda_emu, own_kernels_match_direct_loops, .timeout = 600)
{
#ifndef ROOFLINE_CUDA_EMU
    cr_skip_test("no CUDA headers: the kernel emulator is not built");
#else
    static char out[1 << 16];
    char cmd[1024];
    format_or_fail(cmd, sizeof cmd, "'%s' 2>&1", ROOFLINE_CUDA_EMU);
    int status = run_capture(cmd, out, sizeof out);
    size_t n = strlen(out);
    cr_assert_eq(status, 0, "kernel_emu exited %d:\n%s", status, n > 6000 ? out + n - 6000 : out);
    cr_expect(strstr(out, "kernel checks passed") != NULL, "%s", out);
#endif
}
