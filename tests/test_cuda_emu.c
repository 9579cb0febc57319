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

/* The whole CUDA backend on the host (tests/emu/host/): make test-gpu's layer
 * and training checks, built against fake CUDA runtime, cuDNN and cuBLASLt
 * libraries (direct loops), every launch of the .cu files of models/cuda
 * emulated. */
static const char *expect_host_check_passes_with(const char *env, const char *name)
{
#ifndef ROOFLINE_CUDA_HOST_DIR
    (void)env, (void)name;
    cr_skip_test("no CUDA headers: the host emulator of the backend is not built");
    return "";
#else
    static char out[1 << 17];
    char cmd[1024];
    format_or_fail(cmd, sizeof cmd, "%s '%s/%s' 2>&1", env, ROOFLINE_CUDA_HOST_DIR, name);
    int status = run_capture(cmd, out, sizeof out);
    size_t n = strlen(out);
    const char *tail = n > 8000 ? out + n - 8000 : out;
    cr_assert_eq(status, 0, "%s exited %d:\n%s", name, status, tail);
    cr_expect(strstr(out, " passed, 0 failed") != NULL && !strstr(out, "FAIL:"), "%s", tail);
    return out;
#endif
}

static void expect_host_check_passes(const char *name)
{
    expect_host_check_passes_with("", name);
}

Test(cuda_emu, every_layer_of_the_cuda_backend_on_the_host, .timeout = 600)
{
    expect_host_check_passes("cuda_layers_check");
}

Test(cuda_emu, whole_cuda_steps_on_the_host_match_the_cpu_backend, .timeout = 1800)
{
    expect_host_check_passes("cuda_train_check");
}

/* The stand-in runtime refuses in a capture what a GPU refuses, so that the
 * emulated --graph checks above would fail where a GPU's would. */
Test(cuda_emu, the_stand_in_runtime_keeps_the_capture_rules)
{
    expect_host_check_passes("fake_cuda_check");
}

/* Its deferred streams (FAKE_CUDA_DEFER, which the emulated DDP and --graph
 * steps run under) hold work until something waits for it: every stream,
 * and one stream alone beside streams that run at once. */
Test(cuda_emu, the_stand_in_runtime_defers_work_until_it_is_waited_for)
{
    const char *all = expect_host_check_passes_with("FAKE_CUDA_DEFER=all", "fake_cuda_check");
    cr_expect(strstr(all, "PASS: a stream that does not wait reads what was there before"),
              "%s", all);
    const char *one = expect_host_check_passes_with("FAKE_CUDA_DEFER=2", "fake_cuda_check");
    cr_expect(strstr(one, "PASS: a replay waits on its stream like other work"), "%s", one);
}

/* make test-gpu's check of the trace pass (a toy backend whose kernels are
 * told apart by their FFMA counts) and of the DDP transports (the NCCL
 * stand-in over MPI, one rank; the backend's NCCL path against the plain one
 * at res 16, batch 4). */
static const char *expect_more_host_check_passes(const char *env, const char *name)
{
#ifndef ROOFLINE_CUDA_HOST_MORE
    (void)env, (void)name;
    cr_skip_test("the emulated trace and DDP checks need CUPTI's headers, NCCL's and MPI");
    return "";
#else
    return expect_host_check_passes_with(env, name);
#endif
}

/* The metric pass refused (as without counter permission): the timing pass
 * and the fallback only. */
Test(cuda_emu, trace_pass_check_on_the_host, .timeout = 600)
{
    char *dir = temp_dir(), env[600];
    format_or_fail(env, sizeof env, "TMPDIR='%s'", dir);
    const char *out = expect_more_host_check_passes(env, "cupti_trace_check");
    cr_expect(strstr(out, "SKIP: traced step 1: counters unavailable") != NULL, "%s", out);
    remove_temp_dir(dir);
}

/* The per-row exact-FLOP checks of both traced steps passed, and the launches
 * the join took without a name were `unnamed` of 29. */
static void expect_counted_rows(const char *out, int unnamed)
{
    for (int round = 1; round <= 2; round++) {
        char line[128];
        format_or_fail(line, sizeof line,
                       "PASS: traced step %d: every row's fp32 FLOPs are exactly", round);
        cr_expect(strstr(out, line) != NULL, "no '%s' in:\n%s", line, out);
        format_or_fail(line, sizeof line, "traced step %d: 29 kernels (%d joined without a name)",
                       round, unnamed);
        cr_expect(strstr(out, line) != NULL, "no '%s' in:\n%s", line, out);
    }
}

/* Counters permitted: the stand-in profiler counts the toy kernels' FFMAs
 * as they run (emu_host::counted_fmaf), so make test-gpu's exact per-row
 * FLOP checks of the join run here too. */
Test(cuda_emu, trace_pass_check_with_counters_on_the_host, .timeout = 600)
{
    char *dir = temp_dir(), env[600];
    format_or_fail(env, sizeof env, "TMPDIR='%s' FAKE_CUPTI_PROFILER_ERROR=0", dir);
    expect_counted_rows(expect_more_host_check_passes(env, "cupti_trace_check"), 0);
    remove_temp_dir(dir);
}

/* Launch callbacks without a symbol name: the join goes by place and
 * operation, the counts land on the same rows. */
Test(cuda_emu, trace_pass_check_with_unnamed_launches_on_the_host, .timeout = 600)
{
    char *dir = temp_dir(), env[600];
    format_or_fail(env, sizeof env,
                   "TMPDIR='%s' FAKE_CUPTI_PROFILER_ERROR=0 FAKE_CUPTI_NO_SYMBOL_NAME=1", dir);
    expect_counted_rows(expect_more_host_check_passes(env, "cupti_trace_check"), 29);
    remove_temp_dir(dir);
}

Test(cuda_emu, ddp_check_on_the_host, .timeout = 600)
{
    expect_more_host_check_passes("", "ddp_check");
}

/* The emulator stops a kernel that no GPU would run as written: exit 3 and
 * one line naming what and where. */
static void expect_misuse_caught(const char *which, const char *message)
{
#ifndef ROOFLINE_CUDA_EMU
    (void)which, (void)message;
    cr_skip_test("no CUDA headers: the kernel emulator is not built");
#else
    static char out[1 << 14];
    char cmd[1024];
    format_or_fail(cmd, sizeof cmd, "'%s' --misuse %s 2>&1", ROOFLINE_CUDA_EMU, which);
    int status = run_capture(cmd, out, sizeof out);
    cr_expect_eq(status, 3, "%s: exit %d:\n%s", which, status, out);
    cr_expect(strstr(out, message) != NULL, "%s: %s", which, out);
#endif
}

Test(cuda_emu, divergent_barrier_is_caught)
{
    expect_misuse_caught("divergent-barrier", "wait at different __syncthreads");
}

Test(cuda_emu, shuffle_with_an_exited_lane_is_caught)
{
    expect_misuse_caught("exited-lane-shuffle", "not all 32 lanes");
}

Test(cuda_emu, impossible_launch_is_caught)
{
    expect_misuse_caught("bad-launch", "launch configuration no GPU accepts");
}
