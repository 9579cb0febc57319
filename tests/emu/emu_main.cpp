/* The host emulator's checks of the CUDA backend's own kernels (cuda_emu.h
 * says what the emulation can and cannot catch). Exit 0 when every check
 * passed, 1 when one failed, 3 when the emulator caught a kernel doing what
 * no GPU allows (which --misuse NAME does on purpose). */
#include "emu_check.h"

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--misuse") == 0)
        return emu_misuse(argv[2]);
    if (argc != 1) {
        fprintf(stderr, "usage: kernel_emu [--misuse divergent-barrier|exited-lane-shuffle|bad-launch]\n");
        return 2;
    }
    void (*families[])(checker &) = {check_emulator,         check_depthwise_kernels,   check_norm_kernels,
                                            check_elementwise_kernels, check_pool_kernels,
                                            check_loss_sgd_kernels};
    int checks = 0, failures = 0;
    for (auto run : families) {
        checker ck;
        run(ck);
        printf("%-12s %d checks, %d failed\n", ck.family, ck.checks, ck.failures);
        checks += ck.checks;
        failures += ck.failures;
    }
    printf("cuda_emu: %d of %d kernel checks passed\n", checks - failures, checks);
    return failures ? 1 : 0;
}
