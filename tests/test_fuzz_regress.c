/* Every crash input the fuzzers ever found (tests/fuzz/regress/<target>/) and
 * the seed corpus (tests/fuzz/corpus/<target>/) replayed through the fuzz
 * targets by fuzz_regress (tests/fuzz/fuzz_regress.c): a regression is a
 * crash, or under `make test-asan` a sanitizer report. */
#include <criterion/criterion.h>
#include <string.h>

#include "helpers.h"

static void replay(const char *target)
{
    static char out[1 << 16];
    char cmd[2048];
    format_or_fail(cmd, sizeof cmd,
                   "cd '%s' && '%s' %s tests/fuzz/regress/%s tests/fuzz/corpus/%s 2>&1",
                   ROOFLINE_SOURCE_DIR, ROOFLINE_FUZZ_REGRESS, target, target, target);
    int status = run_capture(cmd, out, sizeof out);
    /* the last lines name the input that failed */
    size_t n = strlen(out);
    cr_assert_eq(status, 0, "%s: fuzz_regress exited %d:\n%s", target, status,
                 n > 4000 ? out + n - 4000 : out);
    cr_expect(strstr(out, "ran clean") != NULL, "%s", out);
}

Test(fuzz_regress, matrix) { replay("matrix"); }
Test(fuzz_regress, csv) { replay("csv"); }
Test(fuzz_regress, peaks) { replay("peaks"); }
Test(fuzz_regress, steps) { replay("steps"); }
Test(fuzz_regress, kernels) { replay("kernels"); }
Test(fuzz_regress, configs) { replay("configs"); }
Test(fuzz_regress, scaling) { replay("scaling"); }
Test(fuzz_regress, summary) { replay("summary"); }
Test(fuzz_regress, roofline) { replay("roofline"); }
Test(fuzz_regress, variability) { replay("variability"); }
Test(fuzz_regress, env_json) { replay("env_json"); }
Test(fuzz_regress, run) { replay("run"); }
Test(fuzz_regress, specs) { replay("specs"); }
Test(fuzz_regress, train_options) { replay("train_options"); }
