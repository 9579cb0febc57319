/* Which measured rows become the roofs (analysis/README.md, "Roofs used"):
 * the DRAM/HBM roof is the best sustained figure, copy, triad or the read
 * sweep, never a write-only stream or STREAM's scale/add; and the report
 * shows a ceiling's notes, with a finding, when bin/peaks marked it suspect. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/roofs.h"
#include "../analysis/run_load.h"
#include "helpers.h"

static const char *const gpu_peaks =
    "env,device,ceiling,value,unit,method,spec_value,threads_or_sms,notes\n"
    "g,H100,fp32_fma,60000,GFLOP/s,fma,66900,132,\n"
    "g,H100,hbm_copy,2950,GB/s,copy,3350,132,\n"
    "g,H100,hbm_triad,2990,GB/s,triad,3350,132,\n"
    "g,H100,hbm_read,3120,GB/s,read,3350,132,\n"
    "g,H100,hbm_write,3200,GB/s,write,3350,132,\n"
    "g,H100,l2,9100,GB/s,l2,,132,\n";

static double dram_roof(const char *dir, const char *peaks, roof_lines *lines)
{
    write_text(dir, "peaks.csv", peaks);
    run_model m;
    char err[512];
    cr_assert_eq(run_load(&m, dir, RUN_PEAKS, RUN_PEAKS, err, sizeof err), RUN_LOAD_OK, "%s", err);
    roofs r;
    roofs_init(&r, m.roofs, m.n_roofs);
    roof_lines_of(m.roofs, m.n_roofs, lines);
    run_free(&m);
    return r.dram_gbs;
}

Test(roof_choice, hbm_roof_is_the_best_of_copy_triad_and_read)
{
    char *dir = temp_dir();
    roof_lines lines;
    cr_expect_eq(dram_roof(dir, gpu_peaks, &lines), 3120, "hbm_read, not the write-only 3200");
    const roof_line *mem = roof_lines_main_memory(&lines);
    cr_assert_not_null(mem);
    cr_expect_eq(mem->value, 3120, "the figures draw the same roof");
    cr_expect_str_eq(mem->label, "HBM");
    /* CPU: the read sweep or copy, never scale or add */
    cr_expect_eq(dram_roof(dir,
                           "ceiling,value,unit\ndram_copy,80,GB/s\ndram_scale,95,GB/s\n"
                           "dram_add,97,GB/s\ndram_triad,70,GB/s\ndram_read,85,GB/s\n"
                           "dram_triad_1core,40,GB/s\n",
                           &lines),
                 85);
    /* an older peaks.csv with a write-only row alone still has a roof */
    cr_expect_eq(dram_roof(dir, "ceiling,value,unit\nhbm_write,3000,GB/s\n", &lines), 3000);
    cr_expect_eq(dram_roof(dir, "ceiling,value,unit\ndram,50,GB/s\nhbm_write,3000,GB/s\n", &lines),
                 50);
    remove_temp_dir(dir);
}

Test(roof_choice, suspect_ceilings_show_their_notes_and_a_finding, .timeout = 60)
{
    char *dir = temp_dir();
    char peaks[2048], cmd[1024], out[4096];
    format_or_fail(peaks, sizeof peaks,
                   "%sg,H100,bf16_tensor,700000,GFLOP/s,gemm,989400,132,"
                   "\"suspect: fp16 and bf16 tensor differ by 21%% (re-measured 4 x)\"\n",
                   gpu_peaks);
    write_text(dir, "peaks.csv", peaks);
    format_or_fail(cmd, sizeof cmd, "'%s/report' '%s' 2>&1", ROOFLINE_BIN_DIR, dir);
    cr_assert_eq(run_capture(cmd, out, sizeof out), 0, "%s", out);
    char *md = read_text(dir, "report.md");
    cr_expect(strstr(md, "| method | notes |") != NULL, "no notes column:\n%s", md);
    cr_expect(strstr(md, "| gemm | suspect: fp16 and bf16 tensor differ by 21% (re-measured 4 x) |")
                  != NULL,
              "%s", md);
    cr_expect(strstr(md, "| fma |  |") != NULL, "a ceiling that passed has an empty note");
    cr_expect(strstr(md, "- Suspect ceiling: bf16_tensor: it failed bin/peaks' consistency "
                         "checks") != NULL,
              "%s", md);
    free(md);
    /* as bin/peaks writes it: the verdict after what the measurement says */
    format_or_fail(peaks, sizeof peaks,
                   "%sc,EPYC,dram_copy,39.4,GB/s,STREAM,,2,\"STREAM byte counting; best of 15; "
                   "pinned; suspect: trials disagree: best 39.44, next 35.21 (more than 8%% apart) "
                   "(re-measured 1 x)\"\n"
                   "c,EPYC,dram_triad,41.0,GB/s,STREAM,,2,\"best of 15; re-measured 1 x until "
                   "consistent (had failed: trials disagree)\"\n",
                   gpu_peaks);
    write_text(dir, "peaks.csv", peaks);
    cr_assert_eq(run_capture(cmd, out, sizeof out), 0, "%s", out);
    md = read_text(dir, "report.md");
    cr_expect(strstr(md, "| STREAM | suspect: trials disagree: best 39.44, next 35.21 (more than "
                         "8% apart) (re-measured 1 x) |") != NULL,
              "%s", md);
    cr_expect(strstr(md, "- Suspect ceiling: dram_copy: it failed") != NULL, "%s", md);
    free(md);
    /* without a suspect row: no column, no finding (the golden report stays as it was) */
    write_text(dir, "peaks.csv", gpu_peaks);
    cr_assert_eq(run_capture(cmd, out, sizeof out), 0, "%s", out);
    md = read_text(dir, "report.md");
    cr_expect(strstr(md, "| notes |") == NULL && strstr(md, "Suspect") == NULL, "%s", md);
    free(md);
    remove_temp_dir(dir);
}
