/* The libFuzzer entry of one target; the Makefile's fuzz section builds it
 * once per target with -DFUZZ_FN=fuzz_<name>. */
#include "fuzz_targets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return FUZZ_FN(data, size);
}
