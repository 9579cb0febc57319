/* The golden run folder (tests/golden/run, made by the suite: see
 * tests/golden/README.md): its inputs rendered by bin/analyze, bin/plotdata
 * and bin/report must give, byte for byte, the analysis CSVs, the gnuplot data
 * files and report.md checked in beside them. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "helpers.h"

/* What the runner leaves in a run folder; everything else in the golden
 * folder is an expected output. */
#define GOLDEN_INPUTS "env.json peaks.csv steps.csv kernels.csv configs.csv"

Test(golden, render_is_byte_identical, .timeout = 120)
{
    char *dir = temp_dir(), cmd[4096], out[16384];
    const char *golden = ROOFLINE_SOURCE_DIR "/tests/golden/run";
    cr_assert_eq(sh("mkdir '%s/run' && for f in " GOLDEN_INPUTS "; do cp '%s'/$f '%s/run/' || exit 1; done",
                    dir, golden, dir),
                 0, "cannot copy the golden inputs");
    /* a relative RUN_DIR: the report names its folder, which must read the same
     * wherever the test runs; the figures' PNGs are stand-ins (report.md only
     * checks that they exist), so gnuplot is not needed */
    format_or_fail(cmd, sizeof cmd,
                   "cd '%s' && '%s/analyze' run && '%s/plotdata' run && "
                   "for s in $(cut -f2 run/figures/figures.tsv); do printf x > run/figures/$s.png; done && "
                   "'%s/report' run",
                   dir, ROOFLINE_BIN_DIR, ROOFLINE_BIN_DIR, ROOFLINE_BIN_DIR);
    cr_assert_eq(sh("( %s ) >/dev/null", cmd), 0, "rendering the golden inputs failed: %s", cmd);
    format_or_fail(cmd, sizeof cmd,
                   "cd '%s' && for f in $(find . -type f | sort); do "
                   "case \" " GOLDEN_INPUTS " \" in *\" ${f#./} \"*) continue;; esac; "
                   "cmp -s \"$f\" '%s/run/'\"$f\" || { echo \"differs: $f\"; "
                   "diff \"$f\" '%s/run/'\"$f\" | head -8; }; done 2>&1",
                   golden, dir, dir);
    run_capture(cmd, out, sizeof out);
    cr_expect_str_eq(out, "", "the render of tests/golden/run changed:\n%s", out);
    /* and nothing was compared by mistake: every kind of output is there */
    format_or_fail(cmd, sizeof cmd,
                   "cd '%s' && ls roofline.csv summary.csv variability.csv report.md "
                   "figures/figures.tsv figures/data/*.vars | wc -l",
                   golden);
    run_capture(cmd, out, sizeof out);
    cr_expect_geq(atoi(out), 10, "the golden folder lacks expected outputs: %s", out);
    remove_temp_dir(dir);
}
