/* The figures and the report (scripts/gnuplot, bin/plotdata, bin/report,
 * scripts/render.sh, analysis/report/ and analysis/plot/): a hand-made run folder
 * whose analysis CSVs carry known answers, the sentences and tables the
 * report must derive from them, a self-contained HTML page, and gnuplot
 * drawing PNGs of the expected size (skipped where gnuplot is missing). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../analysis/fmt.h"
#include "../analysis/plot/plot_ceilings.h"
#include "../analysis/plot/plot_out.h"
#include "../analysis/report/report_doc.h"
#include "../analysis/roofs.h"
#include "../analysis/run_load.h"
#include "../analysis/run_env.h"
#include "helpers.h"

/* ---- the hand-made run folder ---------------------------------------------
 * One traced configuration (resnet18-cifar @32, batch 8, fp32) of three
 * kernels against a 100 GFLOP/s peak and 25 GB/s DRAM (ridge 4 FLOP/byte):
 *   conv  8e9 FLOP, 1e8 B (AI 80),   160 ms:  50 GFLOP/s = 50% of 100
 *   bn    1.2e8 FLOP, 2.4e8 B (0.5),  12 ms:  10 GFLOP/s = 80% of 12.5
 *   relu  2.5e7 FLOP, 2e8 B (0.125),   8 ms: 3.125 GFLOP/s = 100% of 3.125
 * so 20 of 180 ms (11%) are memory-bound, bn 6.7% of the time. Batch 8 runs
 * 40 images/s (41% of peak), batch 16 70 (71%); batch 32 failed twice. */

static const char *const peaks_csv =
    "env,device,ceiling,value,unit,method,spec_value,threads_or_sms,notes\n"
    "toy,Toy CPU,fp32_fma_1core,50,GFLOP/s,fma,62.5,1,\n"
    "toy,Toy CPU,fp32_fma,100,GFLOP/s,fma,125,4,\n"
    "toy,Toy CPU,fp64_fma,50,GFLOP/s,fma,62.5,4,\n"
    "toy,Toy CPU,dram_triad,20,GB/s,stream,,4,\n"
    "toy,Toy CPU,dram_read,25,GB/s,sweep,,4,\n"
    "toy,Toy CPU,dram_triad_1core,12,GB/s,stream,,1,\n"
    "toy,Toy CPU,l2,100,GB/s,sweep,,4,\n"
    "toy,Toy CPU,pcie_h2d,24,GB/s,memcpy,,1,\n";

/* bin/analyze's roofline.csv of kernels_csv below; roof_ns is the time at the
 * attainable rate: conv1 8e9 FLOP / 100 GFLOP/s = 80 ms of its 160, bn
 * 1.2e8 / 12.5 = 9.6 ms of 12, relu 2.5e7 / 3.125 = 8 ms of 8 */
static const char *const roofline_csv =
    "env,model,res,batch,precision,level,name,layer,layer_type,phase,count,duration_ns,"
    "time_share,flops,dram_bytes,l2_bytes,ai_dram,ai_l2,achieved_gflops,peak_ceiling,"
    "peak_gflops,dram_gbs,l2_gbs,ridge_ai,attainable_gflops,pct_of_attainable,bound,source,"
    "roof_ns,above_roof_ns\n"
    "toy,resnet18-cifar,32,8,fp32,kernel,brg_conv,conv1,conv,fwd,1,160000000,0.888889,8e9,1e8,,"
    "80,,50,fp32_fma,100,25,,4,100,50,compute,analytic,8e7,8e7\n"
    "toy,resnet18-cifar,32,8,fp32,kernel,own bn loop,bn1,bn,fwd,1,12000000,0.0666667,1.2e8,2.4e8,,"
    "0.5,,10,fp32_fma,100,25,,4,12.5,80,memory,analytic,9.6e6,2.4e6\n"
    "toy,resnet18-cifar,32,8,fp32,kernel,own relu loop,relu,relu,fwd,1,8000000,0.0444444,2.5e7,2e8,"
    ",0.125,,3.125,fp32_fma,100,25,,4,3.125,100,memory,analytic,8e6,0\n"
    "toy,resnet18-cifar,32,8,fp32,layer_type,conv,,conv,,1,160000000,0.888889,8e9,1e8,,80,,50,"
    "fp32_fma,100,25,,4,100,50,compute,analytic,8e7,8e7\n"
    "toy,resnet18-cifar,32,8,fp32,layer_type,bn,,bn,,1,12000000,0.0666667,1.2e8,2.4e8,,0.5,,10,"
    "fp32_fma,100,25,,4,12.5,80,memory,analytic,9.6e6,2.4e6\n"
    "toy,resnet18-cifar,32,8,fp32,layer_type,relu,,relu,,1,8000000,0.0444444,2.5e7,2e8,,0.125,,"
    "3.125,fp32_fma,100,25,,4,3.125,100,memory,analytic,8e6,0\n"
    "toy,resnet18-cifar,32,8,fp32,step,step,,,,3,180000000,1,8.145e9,5.4e8,,15.0833,,45.25,"
    "fp32_fma,100,25,,4,100,45.25,compute,analytic,9.76e7,8.24e7\n";

static const char *const summary_csv =
    "env,backend,model,res,batch,precision,world_size,repeats,iters,images_per_s_median,"
    "images_per_s_q1,images_per_s_q3,step_ms_median,analytic_gflop_per_step,achieved_tflops,"
    "peak_ceiling,peak_gflops,pct_of_peak,mfu,mem_bound_time_share,status,graph,pct_of_roofs\n"
    "toy,cpu,resnet18-cifar,32,8,fp32,1,2,12,40,39,41,200,8.2,0.041,fp32_fma,100,41,41,0.111111,ok,"
    "off,48.8\n"
    "toy,cpu,resnet18-cifar,32,16,fp32,1,2,12,70,69,71,228.571,16.25,0.0711,fp32_fma,100,71.1,71.1,"
    ",ok,off,\n"
    "toy,cpu,resnet18-cifar,32,32,fp32,1,0,0,,,,,32.5,,fp32_fma,100,,,,failed (exit 137),off,\n";

static const char *const variability_csv =
    "env,model,res,batch,precision,scope,n,mean,median,stddev,cv,min,max,ci95_lo,ci95_hi,"
    "drift_pct,outliers\n"
    "toy,resnet18-cifar,32,8,fp32,iterations,12,200.5,200,2.4,0.012,197,205,198,203,0.5,0\n"
    "toy,resnet18-cifar,32,8,fp32,repeats,2,200.4,200.4,1.6,0.008,199.2,201.5,,,,0\n"
    "toy,resnet18-cifar,32,16,fp32,iterations,12,229,228.6,3.2,0.014,225,235,226,231,-0.4,1\n"
    "toy,resnet18-cifar,32,16,fp32,repeats,2,228.9,228.9,1.1,0.005,228,229.6,,,,0\n";

static const char *const configs_csv =
    "config,model,res,batch,precision,repeat,status,seconds,log\n"
    "1/6,resnet18-cifar,32,8,fp32,1,ok,3.1,logs/a.log\n"
    "2/6,resnet18-cifar,32,8,fp32,2,ok,3.0,logs/b.log\n"
    "3/6,resnet18-cifar,32,16,fp32,1,ok,5.2,logs/c.log\n"
    "4/6,resnet18-cifar,32,16,fp32,2,ok,5.1,logs/d.log\n"
    "5/6,resnet18-cifar,32,32,fp32,1,failed (exit 137),0.5,logs/e.log\n"
    "6/6,resnet18-cifar,32,32,fp32,2,failed (exit 137),0.5,logs/f.log\n";

static const char *const kernels_csv =
    "env,model,res,batch,precision,repeat,seq,kernel,layer,layer_type,phase,duration_ns,flops_fp64,"
    "flops_fp32,flops_fp16,flops_tensor,dram_read_bytes,dram_write_bytes,l2_bytes,l1_bytes,source\n"
    "toy,resnet18-cifar,32,8,fp32,1,0,brg_conv,conv1,conv,fwd,160000000,0,8000000000,0,0,60000000,"
    "40000000,,,analytic\n"
    "toy,resnet18-cifar,32,8,fp32,1,1,own bn loop,bn1,bn,fwd,12000000,0,120000000,0,0,120000000,"
    "120000000,,,analytic\n"
    "toy,resnet18-cifar,32,8,fp32,1,2,own relu loop,relu,relu,fwd,8000000,0,25000000,0,0,100000000,"
    "100000000,,,analytic\n";

static const char *const scaling_csv =
    "env,model,res,mode,world_size,nodes,per_rank_batch,global_batch,step_ms,images_per_s,comm_ms,"
    "exposed_comm_ms,efficiency\n"
    "toy,resnet18-cifar,32,strong,1,1,16,16,228.6,70,0,0,1\n"
    "toy,resnet18-cifar,32,strong,2,1,8,16,121.2,132,10,4,0.943\n";

static const char *const env_json =
    "{\n  \"schema\": \"roofline-suite env.json 1\",\n  \"env\": \"toy\",\n"
    "  \"date_utc\": \"2025-01-01T00:00:00Z\",\n"
    "  \"cpu\": {\"model\": \"Toy CPU\", \"logical_cpus\": 4, \"mhz\": [1000, 2000.5]},\n"
    "  \"gpu\": {\"count\": 0, \"devices\": []},\n"
    "  \"versions\": {\"onednn\": \"2.6 \\\"quoted\\\"\"},\n"
    "  \"ranks\": [{\"rank\": 0, \"host\": \"h0\"}, {\"rank\": 1, \"host\": \"h1\"}]\n}\n";

/* A valid 1x1 RGB PNG: signature, IHDR, IDAT, IEND. */
static const unsigned char tiny_png[] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
    0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90,
    0x77, 0x53, 0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8,
    0xcf, 0xc0, 0x00, 0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00,
    0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};

/* The hand-made run folder: every file the runner and bin/analyze write. */
/* Writes dir/file: text with the first `from` replaced by `to`, which the
 * test asserts is there. */
static void write_replaced(const char *dir, const char *file, const char *text, const char *from,
                           const char *to)
{
    const char *at = strstr(text, from);
    cr_assert_not_null(at, "no '%s' in the %s to edit", from, file);
    static char edited[1 << 14];
    format_or_fail(edited, sizeof edited, "%.*s%s%s", (int)(at - text), text, to,
                   at + strlen(from));
    write_text(dir, file, edited);
}

static char *toy_run(void)
{
    char *dir = temp_dir();
    write_text(dir, "peaks.csv", peaks_csv);
    write_text(dir, "roofline.csv", roofline_csv);
    write_text(dir, "summary.csv", summary_csv);
    write_text(dir, "variability.csv", variability_csv);
    write_text(dir, "configs.csv", configs_csv);
    write_text(dir, "kernels.csv", kernels_csv);
    write_text(dir, "env.json", env_json);
    write_text(dir, "scaling.csv", scaling_csv);
    /* two repeats of six steps for batch 8 and 16 */
    char steps[8192];
    size_t used = 0;
    used += (size_t)snprintf(steps, sizeof steps,
                             "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,"
                             "step_ms,images_per_s,loss,peak_mem_bytes\n");
    /* batch 8's processes peak at 0.75 GiB (the last step of repeat 2); batch 16's
     * peak memory was not recorded */
    for (int b = 8; b <= 16; b += 8)
        for (int r = 1; r <= 2; r++)
            for (int i = 1; i <= 6; i++) {
                double ms = (b == 8 ? 200 : 228.6) * (1 + 0.004 * ((i * 7 + r) % 5 - 2));
                char mem[32] = "";
                if (b == 8)
                    snprintf(mem, sizeof mem, "%d", 805306368 - (12 - 6 * (r - 1) - i) * 1048576);
                used += (size_t)snprintf(steps + used, sizeof steps - used,
                                         "toy,cpu,resnet18-cifar,32,%d,fp32,1,0,%d,%d,%.3f,%.3f,2.3,%s\n",
                                         b, r, i, ms, b / ms * 1000, mem);
            }
    write_text(dir, "steps.csv", steps);
    return dir;
}

static void expect_contains(const char *text, const char *what, const char *file)
{
    cr_expect(strstr(text, what) != NULL, "%s lacks \"%s\"", file, what);
}

/* ---- the pieces ---------------------------------------------------------- */

Test(report_fmt, numbers_percentages_and_missing_values)
{
    char b[FMT_LEN];
    cr_expect_str_eq(fmt_num(b, 0.012345), "0.0123");
    cr_expect_str_eq(fmt_num(b, 1.2345), "1.23");
    cr_expect_str_eq(fmt_num(b, 12.345), "12.3");
    cr_expect_str_eq(fmt_num(b, 123.45), "123");
    cr_expect_str_eq(fmt_num(b, 12345.6), "12346");
    cr_expect_str_eq(fmt_num(b, NAN), "-");
    cr_expect_str_eq(fmt_pct(b, 61.4), "61%");
    cr_expect_str_eq(fmt_pct(b, 8.44), "8.4%");
    cr_expect_str_eq(fmt_pct(b, 0.01), "<0.1%");
    cr_expect_str_eq(fmt_pct(b, 0), "0.0%");
    cr_expect_str_eq(fmt_share(b, 0.111111), "11%");
    cr_expect_str_eq(fmt_signed_pct(b, 4.06), "+4.1%");
    cr_expect_str_eq(fmt_signed_pct(b, -12.4), "-12%");
    cr_expect_str_eq(fmt_ms_of_ns(b, 1.5e6), "1.50");
    cr_expect_str_eq(fmt_gflops(b, 234.476), "234 GFLOP/s");
    cr_expect_str_eq(fmt_gflops(b, 62000), "62.0 TFLOP/s");
    cr_expect_str_eq(fmt_gbs(b, 4210), "4210 GB/s");
    cr_expect_str_eq(fmt_gbs(b, 31000), "31.0 TB/s");
    cr_expect_str_eq(fmt_value_unit(b, 3.694, "GHz"), "3.69 GHz");
    char text[16];
    size_t used = 0;
    fmt_append(text, sizeof text, &used, "%s", "0123456789");
    fmt_append(text, sizeof text, &used, "%s", "abcdefghij");
    cr_expect_str_eq(text, "0123456789abcde", "the appended text is cut at the buffer's end");
    cr_expect_eq(used, sizeof text);
}

Test(report_env, flattens_nested_keys_arrays_and_escapes)
{
    char *dir = temp_dir(), path[256];
    write_text(dir, "env.json", env_json);
    format_or_fail(path, sizeof path, "%s/env.json", dir);
    run_env e;
    cr_assert_eq(run_read_env(&e, path), 0);
    cr_expect(e.complete && e.present && !e.error[0]);
    cr_expect_str_eq(run_env_get(&e, "env"), "toy");
    cr_expect_str_eq(run_env_get(&e, "cpu.model"), "Toy CPU");
    cr_expect_str_eq(run_env_get(&e, "cpu.logical_cpus"), "4");
    cr_expect_str_eq(run_env_get(&e, "cpu.mhz"), "1000, 2000.5");
    cr_expect_str_eq(run_env_get(&e, "gpu.devices"), "(none)");
    cr_expect_str_eq(run_env_get(&e, "versions.onednn"), "2.6 \"quoted\"");
    cr_expect_str_eq(run_env_get(&e, "ranks[1].host"), "h1");
    cr_expect_null(run_env_get(&e, "ranks"));
    cr_expect_str_eq(e.items[0].key, "schema", "entries keep the file's order");
    free(e.items);

    /* cut off inside the cpu object: what came before is kept */
    write_text(dir, "env.json", "{\"env\": \"toy\", \"cpu\": {\"model\": \"Toy");
    cr_assert_eq(run_read_env(&e, path), 0);
    cr_expect_not(e.complete);
    cr_expect_str_eq(run_env_get(&e, "env"), "toy");
    cr_expect_null(run_env_get(&e, "cpu.model"));
    free(e.items);
    remove_temp_dir(dir);
}

Test(report_env, a_unicode_escape_at_the_end_of_the_buffer_reads_no_further)
{
    /* the text ends right before a page that cannot be read: the scan must
     * stop at the buffer's end, not look for a NUL beyond it */
    long page = sysconf(_SC_PAGESIZE);
    char *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    cr_assert_neq(map, MAP_FAILED);
    cr_assert_eq(mprotect(map + page, (size_t)page, PROT_NONE), 0);
    const char *texts[] = {"{\"k\": \"\\u00", "{\"k\": \"\\u0041\"", "{\"k\": \"\\u004"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        size_t len = strlen(texts[i]);
        char *text = map + page - len;
        memcpy(text, texts[i], len);
        run_env e = {0};
        cr_assert_eq(run_env_parse(&e, text, len), 0);
        cr_expect_not(e.complete, "'%s' breaks off", texts[i]);
        free(e.items);
    }
    munmap(map, (size_t)page * 2);
}

Test(report_plot, roofs_take_the_best_of_each_level_and_skip_one_core_and_pcie)
{
    char *dir = temp_dir(), err[256];
    write_text(dir, "peaks.csv", peaks_csv);
    run_model m;
    cr_assert_eq(run_load(&m, dir, RUN_PEAKS, RUN_PEAKS, err, sizeof err), 0, "%s", err);
    roof_lines r;
    roof_lines_of(m.roofs, m.n_roofs, &r);
    cr_expect_eq(r.n_compute, 2, "fp32_fma and fp64_fma, not the single-core row");
    cr_expect_str_eq(r.compute[0].label, "fp32 FMA");
    cr_expect_eq(r.n_memory, 2, "dram and l2; pcie and the single-core triad are not levels");
    cr_expect_str_eq(r.memory[0].label, "DRAM");
    cr_expect_float_eq(r.memory[0].value, 25.0, 1e-9, "the best dram_* row");
    cr_expect_float_eq(roof_lines_top_memory(&r), 100.0, 1e-9);
    cr_expect_float_eq(roof_lines_top_compute(&r), 100.0, 1e-9);
    cr_expect_eq(roof_lines_main_memory(&r), &r.memory[0]);
    cr_expect_float_eq(plot_decade_below(0.034), 0.01, 1e-12);
    cr_expect_float_eq(plot_decade_above(1000), 1000, 1e-9);
    cr_expect_float_eq(plot_nice_above(234 * 1.5), 500, 1e-9);
    cr_expect_float_eq(plot_nice_above(1100), 2000, 1e-9);
    cr_expect_float_eq(plot_nice_below(4.6), 2, 1e-12);
    cr_expect_float_eq(plot_nice_below(0.07), 0.05, 1e-12);
    run_free(&m);
    remove_temp_dir(dir);
}

/* Compute ceilings within 4% of each other are one line; its label names each
 * value where they differ as printed, and one value where they do not. */
Test(report_plot, merged_ceilings_keep_their_values)
{
    roof_lines r = {.n_compute = 3};
    r.compute[0] = (roof_line){.ceiling = "bf16_tensor", .label = "bf16 tensor", .value = 791000};
    r.compute[1] = (roof_line){.ceiling = "fp16_tensor", .label = "fp16 tensor", .value = 761000};
    r.compute[2] = (roof_line){.ceiling = "fp32_fma", .label = "fp32 FMA", .value = 64000};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    plot_write_ceilings(f, &r, "bf16_tensor", 791000, 1e-3, "TFLOP/s");
    fclose(f);
    expect_contains(text, "ncomp = 2", "the ceilings' variables");
    expect_contains(text, "comp_label_1 = \"bf16 tensor 791, fp16 tensor 761 TFLOP/s\"",
                    "the ceilings' variables");
    expect_contains(text, "comp_main_1 = 1", "the ceilings' variables");
    free(text);
    r.compute[1].value = 791200;
    f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    plot_write_ceilings(f, &r, "bf16_tensor", 791000, 1e-3, "TFLOP/s");
    fclose(f);
    expect_contains(text, "comp_label_1 = \"bf16 tensor, fp16 tensor  791 TFLOP/s\"",
                    "the ceilings' variables");
    free(text);
    /* either side of the unit's switch: each value with its own unit */
    r.compute[0].value = 9800;
    r.compute[1].value = 10100;
    f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    plot_write_ceilings(f, &r, "bf16_tensor", 9800, 1, "GFLOP/s");
    fclose(f);
    expect_contains(text, "comp_label_1 = \"bf16 tensor 9800 GFLOP/s, fp16 tensor 10.1 TFLOP/s\"",
                    "the ceilings' variables");
    free(text);
}

Test(report_doc, writers_escape_what_their_format_needs)
{
    char *dir = temp_dir(), md[256], html[256], err[256];
    report_doc d;
    doc_init(&d, "T <1>");
    doc_heading(&d, 1, "Section");
    doc_para(&d, "a*b < c & d");
    doc_table(&d, "lr", (const char *const[]){"name", "value"});
    doc_cell(&d, "x|y");
    doc_cell(&d, "-");
    cr_expect_eq(doc_table_rows(&d), 1);
    doc_list(&d);
    doc_item(&d, "item %d", 1);
    format_or_fail(md, sizeof md, "%s/r.md", dir);
    format_or_fail(html, sizeof html, "%s/r.html", dir);
    cr_assert_eq(doc_write_md(&d, md, err, sizeof err), 0, "%s", err);
    cr_assert_eq(doc_write_html(&d, dir, html, err, sizeof err), 0, "%s", err);
    char *m = read_text(dir, "r.md"), *h = read_text(dir, "r.html");
    expect_contains(m, "| x\\|y | - |", "r.md");
    expect_contains(m, "|---|---:|", "r.md");
    expect_contains(m, "a\\*b \\< c & d", "r.md");
    expect_contains(m, "- item 1", "r.md");
    expect_contains(h, "<title>T &lt;1&gt;</title>", "r.html");
    expect_contains(h, "<p>a*b &lt; c &amp; d</p>", "r.html");
    expect_contains(h, "<td>x|y</td><td class=\"r\">-</td>", "r.html");
    expect_contains(h, "<a href=\"#s1\">Section</a>", "r.html");
    free(m);
    free(h);
    doc_free(&d);
    remove_temp_dir(dir);
}

Test(report_cli, bad_arguments_are_usage_errors)
{
    expect_usage_error("report", "expected one RUN_DIR");
    expect_usage_error("report a b", "expected one RUN_DIR");
    expect_usage_error("report --bogus", "--bogus");
    expect_usage_error("report --compare /tmp", "--compare needs OUTDIR and at least one RUN_DIR");
    expect_usage_error("plotdata", "expected one RUN_DIR");
    expect_usage_error("report /nonexistent/run", "RUN_DIR '/nonexistent/run'");
    expect_usage_error("plotdata /nonexistent/run", "RUN_DIR '/nonexistent/run'");
    expect_usage_error("plotdata --compare '' /nonexistent/run", "OUTDIR '' is not a folder name");
    expect_usage_error("report --compare '' /nonexistent/run", "OUTDIR '' is not a folder name");
    expect_usage_error("plotdata ''", "expected one RUN_DIR");
}

Test(report_cli, an_empty_folder_is_no_run_folder)
{
    char *dir = temp_dir(), args[512];
    format_or_fail(args, sizeof args, "report %s", dir);
    expect_usage_error(args, "holds no run files");
    format_or_fail(args, sizeof args, "plotdata %s", dir);
    expect_usage_error(args, "holds no run files");
    struct stat st;
    char path[512];
    format_or_fail(path, sizeof path, "%s/report.md", dir);
    cr_expect_neq(stat(path, &st), 0, "nothing is written into it");
    format_or_fail(path, sizeof path, "%s/figures", dir);
    cr_expect_neq(stat(path, &st), 0, "nothing is written into it");
    remove_temp_dir(dir);
}

Test(report_cli, an_out_of_range_cell_is_one_line_and_status_2)
{
    char *dir = toy_run(), args[512];
    /* a failed attempt whose res no int holds */
    write_text(dir, "configs.csv",
               "config,model,res,batch,precision,repeat,status,seconds,log\n"
               "1/1,resnet18-cifar,1e308,8,fp32,1,failed (exit 1),1,logs/a.log\n");
    format_or_fail(args, sizeof args, "report %s", dir);
    expect_usage_error(args, "configs.csv:2: column 'res': '1e308' is out of range");
    write_text(dir, "configs.csv", configs_csv);
    char *summary = strdup(summary_csv);
    cr_assert_not_null(summary);
    char *res = strstr(summary, ",32,8,");
    cr_assert_not_null(res);
    write_text(dir, "summary.csv", "");
    char text[4096];
    format_or_fail(text, sizeof text, "%.*s,1e308,8,%s", (int)(res - summary), summary, res + 6);
    write_text(dir, "summary.csv", text);
    expect_usage_error(args, "summary.csv:2: column 'res': '1e308' is out of range");
    free(summary);
    remove_temp_dir(dir);
}

/* ---- the report of the hand-made run --------------------------------------- */

/* A traced step far slower than its configuration's timed steps (180 ms
 * traced against a median of 100) is a finding naming the part to delete;
 * the toy's own 180 against 200 is none. */
Test(report_run, a_trace_slower_than_the_timed_steps_is_named)
{
    char *dir = toy_run(), args[512], out[4096];
    format_or_fail(args, sizeof args, "report %s", dir);
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    char *md = read_text(dir, "report.md");
    cr_expect(strstr(md, "Traced step") == NULL, "%s", md);
    free(md);
    write_replaced(dir, "summary.csv", summary_csv, ",40,39,41,200,", ",40,39,41,100,");
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    md = read_text(dir, "report.md");
    expect_contains(md, "- Traced step far slower than its configuration's median timed step: "
                        "resnet18-cifar @32 b8 fp32 1.80x "
                        "(parts/resnet18-cifar_r32_b8_fp32.kernels.csv).",
                    "report.md");
    free(md);
    /* timed only as a CUDA graph: the trace pass was the graph configuration's own */
    write_text(dir, "summary.csv",
               "env,backend,model,res,batch,precision,world_size,repeats,iters,"
               "images_per_s_median,images_per_s_q1,images_per_s_q3,step_ms_median,"
               "analytic_gflop_per_step,achieved_tflops,peak_ceiling,peak_gflops,"
               "pct_of_peak,mfu,mem_bound_time_share,status,graph\n"
               "toy,cpu,resnet18-cifar,32,8,fp32,1,2,12,40,39,41,100,8.2,0.041,fp32_fma,"
               "100,41,41,0.111111,ok,on\n");
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    md = read_text(dir, "report.md");
    expect_contains(md, "(parts/resnet18-cifar_r32_b8_fp32_graph.kernels.csv).", "report.md");
    free(md);
    remove_temp_dir(dir);
}

/* Where the time above the roofs is: the finding names the step's time at its
 * roofs and the groups with the most time above them, the tables a column;
 * a roofline.csv from before the columns existed has neither. */
Test(report_run, the_time_above_the_roofs_is_named)
{
    char *dir = toy_run(), args[512], out[4096];
    format_or_fail(args, sizeof args, "report %s", dir);
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    char *md = read_text(dir, "report.md");
    expect_contains(md, "At their roofs the step's kernels would take 97.6 of its 180 ms (54%); "
                        "of the 82.4 ms they spend above them, the most is in conv fwd (80.0 ms) "
                        "and bn fwd (2.40 ms).",
                    "report.md");
    expect_contains(md, "| layer type | kernels | time ms | share | FLOP/byte | GFLOP/s | "
                        "% of attainable | ms above roof | bound |",
                    "report.md");
    expect_contains(md, "| bn | 1 | 12.0 | 6.7% | 0.5 | 10.0 | 80% | 2.40 | memory |",
                    "report.md");
    expect_contains(md, "| relu | 1 | 8.00 | 4.4% | 0.125 | 3.12 | 100% | 0 | memory |",
                    "report.md");
    free(md);
    /* no kernel above its roof */
    write_replaced(dir, "roofline.csv", roofline_csv, "analytic,9.76e7,8.24e7", "analytic,1.8e8,0");
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    md = read_text(dir, "report.md");
    expect_contains(md, "would take 180 of its 180 ms (100%); none ran slower than its roof.",
                    "report.md");
    free(md);
    /* the roofline.csv of an older bin/analyze: 28 columns */
    sh("cut -d, -f1-28 '%s/roofline.csv' > '%s/r.tmp' && mv '%s/r.tmp' '%s/roofline.csv'", dir,
       dir, dir, dir);
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    md = read_text(dir, "report.md");
    cr_expect(strstr(md, "At their roofs") == NULL, "%s", md);
    expect_contains(md, "| bn | 1 | 12.0 | 6.7% | 0.5 | 10.0 | 80% | - | memory |", "report.md");
    free(md);
    remove_temp_dir(dir);
}

/* The costliest layer type without FLOPs or bytes (communication is timed
 * only) is said to have no place on the roofline, not "- of its attainable". */
Test(report_run, a_costliest_type_without_counts_has_no_roofline_place)
{
    char *dir = toy_run(), args[512], out[4096];
    write_replaced(dir, "roofline.csv", roofline_csv,
                   "layer_type,conv,,conv,,1,160000000,0.888889,8e9,1e8,,80,,50,"
                   "fp32_fma,100,25,,4,100,50,compute,",
                   "layer_type,comm,,comm,,1,160000000,0.888889,,,,,,,,,25,,,,,unknown,");
    format_or_fail(args, sizeof args, "report %s", dir);
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    char *md = read_text(dir, "report.md");
    expect_contains(md, "The costliest layer type is comm: 89% of the time, with neither FLOPs "
                        "nor bytes counted, so no place on the roofline.",
                    "report.md");
    free(md);
    remove_temp_dir(dir);
}

/* A layer type above 100% of its attainable rate is explained under the
 * table: with the cost model's bytes, a cache fed it (or the DRAM roof is low);
 * with counted bytes, the roof falls short; compute-bound, the FLOP count or
 * the peak. The toy's relu at exactly 100% has no such line. */
Test(report_run, a_layer_type_above_its_roof_is_explained)
{
    char *dir = toy_run(), args[512], out[4096];
    format_or_fail(args, sizeof args, "report %s", dir);
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    char *md = read_text(dir, "report.md");
    cr_expect(strstr(md, "Above the") == NULL, "%s", md);
    free(md);
    const char *relu_100 = "layer_type,relu,,relu,,1,8000000,0.0444444,2.5e7,2e8,,0.125,,"
                           "3.125,fp32_fma,100,25,,4,3.125,100,memory,analytic";
    /* 2e8 bytes in 5 ms: 40 GB/s against the DRAM roof's 25 */
    write_replaced(dir, "roofline.csv", roofline_csv, relu_100,
                   "layer_type,relu,,relu,,1,5000000,0.0277778,2.5e7,2e8,,0.125,,"
                   "5,fp32_fma,100,25,,4,3.125,160,memory,analytic");
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    md = read_text(dir, "report.md");
    expect_contains(md, "Above the attainable rate: relu 160% (40.0 GB/s). In brackets, the rate "
                        "at which each moved the bytes the cost model counts: faster than the "
                        "DRAM roof (25.0 GB/s). The model counts each tensor once from DRAM: "
                        "these took part of theirs from a cache (the L2 roof, 100 GB/s, is above "
                        "them all), or the DRAM roof was measured low.",
                    "report.md");
    free(md);
    write_replaced(dir, "roofline.csv", roofline_csv, relu_100,
                   "layer_type,relu,,relu,,1,5000000,0.0277778,2.5e7,2e8,,0.125,,"
                   "5,fp32_fma,100,25,,4,3.125,160,memory,cupti");
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    md = read_text(dir, "report.md");
    expect_contains(md, "Above the attainable rate from counted DRAM bytes: relu 160% (40.0 GB/s), "
                        "faster than the measured DRAM roof (25.0 GB/s): that roof falls short",
                    "report.md");
    cr_expect(strstr(md, "from a cache") == NULL, "%s", md);
    free(md);
    write_replaced(dir, "roofline.csv", roofline_csv,
                   "layer_type,conv,,conv,,1,160000000,0.888889,8e9,1e8,,80,,50,"
                   "fp32_fma,100,25,,4,100,50,compute,",
                   "layer_type,conv,,conv,,1,64000000,0.888889,8e9,1e8,,80,,125,"
                   "fp32_fma,100,25,,4,100,125,compute,");
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    md = read_text(dir, "report.md");
    expect_contains(md, "Above the compute roof: conv 125% (125 GFLOP/s) against fp32_fma: "
                        "either the FLOPs counted exceed those that ran",
                    "report.md");
    cr_expect(strstr(md, "Above the attainable") == NULL, "%s", md);
    free(md);
    remove_temp_dir(dir);
}

/* reference.csv (PyTorch's steps, pytorch_ref.py's format: no graph column)
 * sets each configuration beside ours: a section and a finding; without the
 * file neither; a bad cell of it is one line and exit 2. */
Test(report_run, pytorch_beside_ours_from_reference_csv)
{
    char *dir = toy_run(), args[512], out[4096];
    format_or_fail(args, sizeof args, "report %s", dir);
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    char *md = read_text(dir, "report.md");
    cr_expect(strstr(md, "Against PyTorch") == NULL, "%s", md);
    free(md);
    /* batch 8 at 20 images/s (ours 40), batch 16 at 80 (ours 70) */
    write_text(dir, "reference.csv",
               "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,"
               "images_per_s,loss,peak_mem_bytes\n"
               "toy,pytorch,resnet18-cifar,32,8,fp32,1,0,0,0,400,20,2.3,1073741824\n"
               "toy,pytorch,resnet18-cifar,32,8,fp32,1,0,0,1,390,20.5128,2.3,1073741824\n"
               "toy,pytorch,resnet18-cifar,32,8,fp32,1,0,0,2,410,19.5122,2.3,1073741824\n"
               "toy,pytorch,resnet18-cifar,32,16,fp32,1,0,0,0,200,80,2.3,\n"
               "toy,pytorch,resnet18-cifar,32,64,fp32,1,0,0,0,200,320,2.3,\n");
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    md = read_text(dir, "report.md");
    expect_contains(md, "- Against PyTorch on this machine, in this run: from 0.88x its images/s "
                        "(resnet18-cifar @32 b16 fp32) to 2.00x (resnet18-cifar @32 b8 fp32) over 2 "
                        "configurations.",
                    "report.md");
    expect_contains(md, "- Slower than PyTorch in 1 of 2 configurations; the slowest against it is "
                        "resnet18-cifar @32 b16 fp32",
                    "report.md");
    expect_contains(md, "\n## Against PyTorch\n", "report.md");
    expect_contains(md, "| resnet18-cifar | 32 | 8 | fp32 | 40.0 | 20.0 | 2.00x | 0.75 | 1.00 |",
                    "report.md");
    expect_contains(md, "| resnet18-cifar | 32 | 16 | fp32 | 70.0 | 80.0 | 0.88x | - | - |",
                    "report.md");
    cr_expect(strstr(md, "| 64 |") == NULL, "PyTorch alone (batch 64) has no row: %s", md);
    expect_contains(md, "PyTorch's step times and images/s: reference.csv", "report.md");
    expect_contains(md, "PyTorch (pytorch) on the same configurations", "report.md");
    free(md);
    write_text(dir, "reference.csv",
               "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,"
               "images_per_s,loss,peak_mem_bytes\n"
               "toy,pytorch,resnet18-cifar,32,8,fp32,1,0,0,0,fast,20,2.3,\n");
    cr_expect_eq(run_bin(args, 1, out, sizeof out), 2, "%s", out);
    expect_contains(out, "reference.csv:2: column 'step_ms': 'fast' is not a number", "output");
    remove_temp_dir(dir);
}

Test(report_run, headline_numbers_come_from_the_csv_files)
{
    char *dir = toy_run(), args[512], out[4096];
    /* a figure the run supports, drawn by hand: it must be embedded */
    sh("mkdir -p '%s/figures'", dir);
    char png[256];
    format_or_fail(png, sizeof png, "%s/figures", dir);
    write_bytes(png, "throughput_fp32.png", tiny_png, sizeof tiny_png);
    format_or_fail(args, sizeof args, "report %s", dir);
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);

    char *md = read_text(dir, "report.md");
    expect_contains(md, "# Roofline report: toy", "report.md");
    expect_contains(md, "Roofs: fp32_fma 100 GFLOP/s (80% of the spec 125 GFLOP/s), DRAM 25.0 GB/s; "
                        "ridge point 4.00 FLOP/byte", "report.md");
    expect_contains(md, "resnet18-cifar @32 b8 fp32 (analytic FLOPs and bytes): 11% of the traced step time is in "
                        "memory-bound kernels; the largest of them, bn (6.7% of the time), "
                        "reaches 80% of the DRAM roof", "report.md");
    expect_contains(md, "The costliest layer type is conv: 89% of the time at 50% of its "
                        "attainable (compute-bound)", "report.md");
    expect_contains(md, "The whole step: 45.2 GFLOP/s at 15.1 FLOP/byte", "report.md");
    expect_contains(md, "the best use of the fp32_fma peak is resnet18-cifar at batch 16, 71% "
                        "(70.0 images/s); the least, resnet18-cifar at batch 8, 41% (40.0 "
                        "images/s)", "report.md");
    expect_contains(md, "throughput depends on batch size (images/s: resnet18-cifar +75% from "
                        "batch 8 to 16)", "report.md");
    expect_contains(md, "cv of at most 0.8% (resnet18-cifar @32 b8 fp32): stable", "report.md");
    expect_contains(md, "cv of all timed steps from 1.2% (resnet18-cifar @32 b8 fp32) to 1.4% "
                        "(resnet18-cifar @32 b16 fp32): stable; 1 of 24 steps are outliers",
                    "report.md");
    expect_contains(md, "2 of 6 runs did not complete, 1 configuration: resnet18-cifar @32 b32 "
                        "fp32 (failed (exit 137))", "report.md");
    /* tables */
    expect_contains(md, "| resnet18-cifar | 32 | 8 | fp32 | 40.0 | 39.0 to 41.0 | 200 | 41.0 | "
                        "fp32_fma | 41% | 41% | 11% | 49% | 0.75 | ok |", "report.md");
    expect_contains(md, "| resnet18-cifar | 32 | 16 | fp32 | 70.0 | 69.0 to 71.0 | 229 | 71.1 | "
                        "fp32_fma | 71% | 71% | - | - | - | ok |", "report.md");
    expect_contains(md, "| Toy CPU | fp32_fma | 100 | GFLOP/s | 125 | 80% | 4 | fma |", "report.md");
    expect_contains(md, "| cpu.model | Toy CPU |", "report.md");
    expect_contains(md, "| ranks[1].host | h1 |", "report.md");
    expect_contains(md, "| 1 | brg_conv | conv1 | conv | fwd | 160 | 89% | 80.0 | 50.0 | 50% | "
                        "80.0 | compute |", "report.md");
    expect_contains(md, "| bn | 1 | 12.0 | 6.7% | 0.5 | 10.0 | 80% | 2.40 | memory |", "report.md");
    expect_contains(md, "| resnet18-cifar | 32 | 8 | fp32 | 12 | 200 | 1.2% | 198 to 203 | "
                        "+0.5% | 0 | 2 | 0.8% |", "report.md");
    expect_contains(md, "| 5/6 | resnet18-cifar | 32 | 32 | fp32 | 1 | failed (exit 137) | "
                        "logs/e.log |", "report.md");
    expect_contains(md, "![toy, fp32: training throughput against batch size]"
                        "(figures/throughput_fp32.png)", "report.md");
    expect_contains(md, "analytic come from the cost model", "report.md");
    /* compute = step - exposed; hidden = 1 - exposed / comm (no copying column) */
    expect_contains(md, "| resnet18-cifar | 32 | strong | 2 | 1 | 8 | 16 | 121 | 132 | 117 | "
                        "10.0 | 4.00 | 60% | 0.943 |", "report.md");

    char *html = read_text(dir, "report.html");
    expect_contains(html, "<h1>Roofline report: toy (roofline-test-", "report.html");
    /* the PNG signature's base64 opens the embedded image */
    cr_expect_eq(count_of(html, "src=\"data:image/png;base64,iVBORw0KGgo"), 1,
                 "the one PNG in figures/ is embedded once");
    cr_expect_eq(count_of(html, "src="), 1, "no other source is referenced");
    cr_expect_eq(count_of(html, "http:") + count_of(html, "https:") + count_of(html, "<link") +
                     count_of(html, "<script") + count_of(html, "url("),
                 0, "report.html loads nothing from outside");
    cr_expect_eq(count_of(html, "<table>"), count_of(html, "</table>"));
    free(md);
    free(html);
    remove_temp_dir(dir);
}

Test(report_run, missing_stages_are_named_not_fatal)
{
    char *dir = temp_dir(), args[512], out[4096];
    write_text(dir, "peaks.csv", peaks_csv);
    format_or_fail(args, sizeof args, "report %s", dir);
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    char *md = read_text(dir, "report.md");
    expect_contains(md, "No summary.csv: run bin/analyze", "report.md");
    expect_contains(md, "No env.json in this run folder", "report.md");
    expect_contains(md, "No figures", "report.md");
    free(md);
    /* a malformed file stops the report with one line naming it */
    write_text(dir, "summary.csv", "env,model\ntoy\n");
    expect_usage_error(args, "summary.csv:2: 1 fields, header has 2");
    remove_temp_dir(dir);
}

/* Several runs of one environment: per configuration whether their medians
 * differ beyond each run's own noise, and what their env.json hold differently. */
Test(report_run, compare_of_one_environment_studies_run_to_run)
{
    char *a = toy_run(), *b = toy_run(), *c = toy_run(), *out = temp_dir(), args[2048],
         msg[4096];
    /* two runs alike: they agree, and still compare (1.00x), not "measured once" */
    format_or_fail(args, sizeof args, "report --compare %s %s %s", out, a, b);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "bin/report --compare failed: %s", msg);
    char *md = read_text(out, "compare.md");
    expect_contains(md, "- Run to run, toy (2 runs): the 2 configurations measured in more than "
                        "one run agree within each run's own noise (spread at most 0.0%).",
                    "compare.md");
    expect_contains(md, "resnet18-cifar fp32: ", "compare.md");
    expect_contains(md, " is 1.00x ", "compare.md");
    cr_expect(strstr(md, "No model was measured in more than one") == NULL, "%s", md);
    free(md);
    /* a third whose batch 8 steps take 10% longer, beyond its interval, on another oneDNN */
    write_replaced(c, "variability.csv", variability_csv, "iterations,12,200.5,200,2.4,0.012,197,205,198,203,",
                   "iterations,12,220.5,220,2.4,0.012,217,225,218,223,");
    write_replaced(c, "env.json", env_json, "\"onednn\": \"2.6 \\\"quoted\\\"\"",
                   "\"onednn\": \"3.1\"");
    format_or_fail(args, sizeof args, "report --compare %s %s %s %s", out, a, b, c);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "bin/report --compare failed: %s", msg);
    md = read_text(out, "compare.md");
    expect_contains(md, "- Run to run, toy (3 runs): 1 of 2 configurations measured in more than "
                        "one run differs beyond each run's own noise, namely resnet18-cifar @32 "
                        "b8 fp32: toy (",
                    "compare.md");
    expect_contains(md, " is 10% slower than toy (", "compare.md");
    expect_contains(md, "(median step 220 against 200 ms). Their env.json differ in "
                        "versions.onednn (3.1 against 2.6 \"quoted\").",
                    "compare.md");
    expect_contains(md, "## Run to run", "compare.md");
    expect_contains(md, "| toy | resnet18-cifar @32 b8 fp32 | 3 | 200 (toy (", "compare.md");
    expect_contains(md, "| 10% | beyond noise |", "compare.md");
    expect_contains(md, "| 0.0% | within noise |", "compare.md");
    free(md);
    /* its figure's data: per configuration each run's median and own range in %
     * above the fastest's (c's batch 8: 220 and 218..223 against 200) */
    format_or_fail(args, sizeof args, "plotdata --compare %s %s %s %s", out, a, b, c);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "bin/plotdata --compare failed: %s", msg);
    char *manifest = read_text(out, "figures/figures.tsv");
    expect_contains(manifest, "run_to_run.gp\trun_to_run\t", "figures.tsv");
    free(manifest);
    char *dat = read_text(out, "figures/data/run_to_run.dat");
    expect_contains(dat, "\n1 10 9 11.5\n", "run_to_run.dat");
    expect_contains(dat, "\n1 0 -1 1.5\n", "run_to_run.dat");
    free(dat);
    if (have_gnuplot()) {
        cr_expect_eq(sh("BIN='%s' '%s/scripts/compare.sh' '%s' '%s' '%s' '%s' >/dev/null 2>&1 && "
                        "test -s '%s/figures/run_to_run.png' && ! test -s '%s/figures/gnuplot.log'",
                        ROOFLINE_BIN_DIR, ROOFLINE_SOURCE_DIR, out, a, b, c, out, out),
                     0, "scripts/compare.sh did not draw run_to_run.png cleanly");
        md = read_text(out, "compare.md");
        expect_contains(md, "![run to run](figures/run_to_run.png)", "compare.md");
        free(md);
    }
    /* at most six differences are named */
    write_text(c, "env.json",
               "{\n  \"schema\": \"roofline-suite env.json 1\",\n  \"env\": \"toy\",\n"
               "  \"date_utc\": \"2025-01-02T00:00:00Z\",\n"
               "  \"cpu\": {\"model\": \"Other CPU\", \"logical_cpus\": 8, \"mhz\": [1500, 2000.5]},\n"
               "  \"gpu\": {\"count\": 1, \"devices\": []},\n"
               "  \"versions\": {\"onednn\": \"3.1\"},\n"
               "  \"ranks\": [{\"rank\": 0, \"host\": \"x0\"}, {\"rank\": 1, \"host\": \"x1\"}]\n}\n");
    format_or_fail(args, sizeof args, "report --compare %s %s %s %s", out, a, b, c);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "bin/report --compare failed: %s", msg);
    md = read_text(out, "compare.md");
    expect_contains(md, "Their env.json differ in cpu.model (Other CPU against Toy CPU), ", "compare.md");
    expect_contains(md, " and 1 more.", "compare.md");
    cr_expect(strstr(md, "date_utc") == NULL, "the date is no difference worth naming: %s", md);
    free(md);
    /* an env.json missing is said, not read as "every key differs" */
    cr_assert_eq(sh("rm '%s/env.json'", c), 0);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "bin/report --compare failed: %s", msg);
    md = read_text(out, "compare.md");
    expect_contains(md, "'s is missing.", "compare.md");
    free(md);
    /* runs whose repeats differ as much as c does from them: within their own noise */
    static const char *const wide =
        "toy,resnet18-cifar,32,8,fp32,repeat=2,6,221,221,2,0.01,219,223,,,0,0\n";
    char with_repeat[4096];
    format_or_fail(with_repeat, sizeof with_repeat, "%s%s", variability_csv, wide);
    write_text(a, "variability.csv", with_repeat);
    write_text(b, "variability.csv", with_repeat);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "bin/report --compare failed: %s", msg);
    md = read_text(out, "compare.md");
    expect_contains(md, "- Run to run, toy (3 runs): the 2 configurations measured in more than "
                        "one run agree within each run's own noise (spread at most 10%).",
                    "compare.md");
    free(md);
    write_text(c, "env.json", env_json);
    /* make compare ENV=toy: the finished runs of runs/toy (summary.csv), oldest first */
    cr_assert_eq(sh("cd '%s' && mkdir -p runs/toy runs/toy/20260103T000000Z && "
                    "cp -r '%s' runs/toy/20260101T000000Z && cp -r '%s' runs/toy/20260102T000000Z",
                    out, a, c),
                 0);
    cr_assert_eq(sh("cd '%s' && BIN='%s' GNUPLOT=/nonexistent '%s/scripts/compare.sh' cmp --env toy "
                    "runs >stdout 2>stderr",
                    out, ROOFLINE_BIN_DIR, ROOFLINE_SOURCE_DIR),
                 0, "compare.sh --env failed (see its stderr in %s)", out);
    char *said = read_text(out, "stdout");
    expect_contains(said, "compare: 2 of the 2 finished runs of toy in runs/toy\n", "compare.sh");
    free(said);
    char cmp[1024];
    format_or_fail(cmp, sizeof cmp, "%s/cmp", out);
    md = read_text(cmp, "compare.md");
    expect_contains(md, "- Run to run, toy (2 runs): ", "compare.md");
    expect_contains(md, "| toy (20260101T000000Z) |", "compare.md");
    free(md);
    /* environments that do not repeat have no such section */
    write_replaced(c, "env.json", env_json, "\"env\": \"toy\"", "\"env\": \"other\"");
    char *variability = read_text(c, "variability.csv");
    for (char *p = strstr(variability, "toy,"); p; p = strstr(p + 1, "\ntoy,"))
        memcpy(p[0] == '\n' ? p + 1 : p, "oth", 3);
    write_text(c, "variability.csv", variability);
    free(variability);
    format_or_fail(args, sizeof args, "report --compare %s %s %s", out, a, c);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "bin/report --compare failed: %s", msg);
    md = read_text(out, "compare.md");
    cr_expect(strstr(md, "Run to run") == NULL, "%s", md);
    free(md);
    remove_temp_dir(a);
    remove_temp_dir(b);
    remove_temp_dir(c);
    remove_temp_dir(out);
}

/* Under 6 steps (no order-statistic interval) a run's own range is its median
 * +- 2 stddev / sqrt(n), not the median alone: a short noisy run is no exact one. */
Test(report_run, run_to_run_of_short_runs_uses_their_spread)
{
    char *a = toy_run(), *c = toy_run(), *out = temp_dir(), args[2048], msg[4096];
    /* c: 5 steps of batch 8 with a median of 220 and a stddev of 30: 220 +- 26.8 */
    write_replaced(c, "variability.csv", variability_csv,
                   "iterations,12,200.5,200,2.4,0.012,197,205,198,203,",
                   "iterations,5,220.5,220,30,0.136,190,260,,,");
    format_or_fail(args, sizeof args, "report --compare %s %s %s", out, a, c);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "bin/report --compare failed: %s", msg);
    char *md = read_text(out, "compare.md");
    expect_contains(md, "| 10% | within noise |", "compare.md");
    free(md);
    /* with a stddev of 3 (220 +- 2.7) it is beyond a's 198..203 */
    write_replaced(c, "variability.csv", variability_csv,
                   "iterations,12,200.5,200,2.4,0.012,197,205,198,203,",
                   "iterations,5,220.5,220,3,0.0136,216,224,,,");
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "bin/report --compare failed: %s", msg);
    md = read_text(out, "compare.md");
    expect_contains(md, "| 10% | beyond noise |", "compare.md");
    free(md);
    remove_temp_dir(a);
    remove_temp_dir(c);
    remove_temp_dir(out);
}

Test(report_run, compare_puts_environments_side_by_side)
{
    char *a = toy_run(), *b = toy_run(), *out = temp_dir(), args[1024], msg[4096];
    /* b is the same machine twice as fast, named big */
    char *summary = strdup(summary_csv);
    cr_assert_not_null(summary);
    for (char *p = strstr(summary, "toy,"); p; p = strstr(p + 1, "\ntoy,"))
        memcpy(p[0] == '\n' ? p + 1 : p, "big", 3);
    char *fast = strstr(summary, ",40,39,41,");
    cr_assert_not_null(fast);
    memcpy(fast, ",80,79,81,", 10);
    write_text(b, "summary.csv", summary);
    free(summary);
    /* b's FMA figure failed bin/peaks' checks (its verdict after the notes) */
    write_replaced(b, "peaks.csv", peaks_csv, "fma,125,4,\n",
                   "fma,125,4,best of 3; suspect: all cores below cores x 1 core (re-measured 2 "
                   "x)\n");
    /* b began with other work on the machine (bin/envinfo's sample) */
    write_replaced(b, "env.json", env_json, "  \"gpu\"",
                   "  \"load\": {\"loadavg_1min\": 1.5, \"busy_cpus\": 1.2, \"cpus\": 4, "
                   "\"sampled_s\": 0.25},\n  \"gpu\"");
    /* and b's batch 8 steps are noisy */
    write_replaced(b, "variability.csv", variability_csv, ",2.4,0.012,", ",2.4,0.210,");
    format_or_fail(args, sizeof args, "report --compare %s %s %s", out, a, b);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "bin/report --compare failed: %s", msg);
    char *md = read_text(out, "compare.md");
    expect_contains(md, "# Comparison: toy, big", "compare.md");
    expect_contains(md, "| resnet18-cifar | fp32 | 70.0 (16) | 71% | 80.0 (8) | 41% |", "compare.md");
    expect_contains(md, "resnet18-cifar fp32: big is 1.14x toy (80.0 against 70.0 images/s",
                    "compare.md");
    expect_contains(md, "| fp32_fma | GFLOP/s | 100 | 100 (suspect) |", "compare.md");
    expect_contains(md, "A value marked suspect failed bin/peaks' consistency checks", "compare.md");
    expect_contains(md, "71%. The ratio is uncertain: big's steps are noisy (cv 21%); big began "
                        "with 1.2 of 4 CPUs busy with other work.",
                    "compare.md");
    free(md);
    char *html = read_text(out, "compare.html");
    cr_expect_eq(count_of(html, "http:") + count_of(html, "https:"), 0);
    free(html);
    /* and b's own report says so; a's, whose sample names no CPU count, does not */
    write_replaced(a, "env.json", env_json, "  \"gpu\"",
                   "  \"load\": {\"busy_cpus\": 1.2, \"cpus\": 0},\n  \"gpu\"");
    format_or_fail(args, sizeof args, "report %s", b);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "bin/report failed: %s", msg);
    md = read_text(b, "report.md");
    expect_contains(md, "- Other work kept 1.2 of 4 CPUs busy as the run began (env.json: load)",
                    "report.md");
    free(md);
    format_or_fail(args, sizeof args, "report %s", a);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "bin/report failed: %s", msg);
    md = read_text(a, "report.md");
    cr_expect(strstr(md, "Other work kept") == NULL, "%s", md);
    free(md);
    remove_temp_dir(a);
    remove_temp_dir(b);
    remove_temp_dir(out);
}

/* Configurations replayed from a CUDA graph beside their eager twins: their
 * own rows, graph/eager as a finding, a precision run only as a graph still
 * gets its findings, and the comparison keeps graph and eager apart. */
Test(report_run, graph_configurations_beside_their_eager_twins)
{
    char *plain = toy_run(), *dir = toy_run(), *out = temp_dir(), args[1024], msg[4096];
    write_text(dir, "summary.csv",
               "env,backend,model,res,batch,precision,world_size,repeats,iters,"
               "images_per_s_median,images_per_s_q1,images_per_s_q3,step_ms_median,"
               "analytic_gflop_per_step,achieved_tflops,peak_ceiling,peak_gflops,pct_of_peak,mfu,"
               "mem_bound_time_share,status,graph\n"
               "toy,cuda,resnet18-cifar,32,8,fp32,1,2,12,40,39,41,200,8.2,0.041,fp32_fma,100,41,41,"
               "0.11,ok,off\n"
               "toy,cuda,resnet18-cifar,32,8,fp32,1,2,12,44,43,45,181.8,8.2,0.045,fp32_fma,100,45,"
               "45,,ok,on\n"
               "toy,cuda,resnet18-cifar,32,8,bf16,1,2,12,50,49,51,160,8.2,0.05,bf16_tensor,1000,5,"
               "5,,ok,on\n"
               "toy,cuda,resnet18-cifar,32,16,bf16,1,2,12,90,89,91,177.8,16.25,0.09,bf16_tensor,"
               "1000,9,9,,ok,on\n");
    format_or_fail(args, sizeof args, "report %s", dir);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "bin/report failed: %s", msg);
    char *md = read_text(dir, "report.md");
    expect_contains(md, "| resnet18-cifar | 32 | 8 | fp32 graph | 44.0 | 43.0 to 45.0 |",
                    "report.md");
    expect_contains(md, "| resnet18-cifar | 32 | 8 | fp32 | 40.0 | 39.0 to 41.0 |", "report.md");
    expect_contains(md, "A precision marked graph replays the step from one captured CUDA graph",
                    "report.md");
    expect_contains(md, "CUDA graph against eager launches (images/s, median over the repeats): "
                        "resnet18-cifar @32 b8 fp32 1.10x. Where the graph gains",
                    "report.md");
    /* eager fp32's findings leave the graph row out; bf16 ran only as a graph */
    expect_contains(md, "fp32: resnet18-cifar at batch 8 reaches 41%", "report.md");
    expect_contains(md, "bf16 graph: the best use of the bf16_tensor peak is resnet18-cifar at "
                        "batch 16",
                    "report.md");
    expect_contains(md, "bf16 graph: throughput depends on batch size (images/s: resnet18-cifar "
                        "+80% from batch 8 to 16)",
                    "report.md");
    free(md);
    /* against a run of eager steps alone */
    format_or_fail(args, sizeof args, "report --compare %s %s %s", out, plain, dir);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "bin/report --compare failed: %s", msg);
    md = read_text(out, "compare.md");
    expect_contains(md, "| resnet18-cifar | fp32 | 70.0 (16) | 71% | 40.0 (8) | 41% |",
                    "compare.md");
    expect_contains(md, "| resnet18-cifar | fp32 graph | - | - | 44.0 (8) | 45% |", "compare.md");
    free(md);
    remove_temp_dir(plain);
    remove_temp_dir(dir);
    remove_temp_dir(out);
}

/* ---- gnuplot ------------------------------------------------------------- */

Test(report_gnuplot, draws_a_png_of_the_requested_size)
{
    if (!have_gnuplot())
        cr_skip_test("gnuplot is not installed (apt-get install gnuplot-nox): render test skipped");
    char *dir = temp_dir(), png[512], svg[512];
    write_text(dir, "t.vars",
               "env_name = \"toy\"\nprecision = \"fp32\"\nnseries = 1\n"
               "series_name_1 = \"resnet18-cifar\"\nseries_color_1 = \"#1f77b4\"\n"
               "series_pt_1 = 7\nxmin = 5.6\nxmax = 22.6\nylog = 0\nymin = 0\nymax = 90\n");
    write_text(dir, "t.dat", "# batch median q1 q3 label\n8 40 39 41 \"41%\"\n16 70 69 71 \"71%\"\n");
    format_or_fail(png, sizeof png, "%s/t.png", dir);
    format_or_fail(svg, sizeof svg, "%s/t.svg", dir);
    cr_assert_eq(sh("gnuplot -e \"datafile='%s/t'; outfile='%s'; title='toy'; width=640; "
                    "height=480\" '%s/scripts/gnuplot/throughput.gp' 2>/dev/null",
                    dir, png, ROOFLINE_SOURCE_DIR),
                 0, "gnuplot failed on throughput.gp");
    uint32_t w, h;
    png_size(png, &w, &h);
    cr_expect_eq(w, 640);
    cr_expect_eq(h, 480);
    struct stat st;
    cr_expect(stat(svg, &st) == 0 && st.st_size > 0, "the SVG is drawn beside the PNG");
    remove_temp_dir(dir);
}

Test(report_gnuplot, every_figure_of_a_run_is_drawn_and_embedded, .timeout = 60)
{
    if (!have_gnuplot())
        cr_skip_test("gnuplot is not installed (apt-get install gnuplot-nox): render test skipped");
    char *dir = toy_run();
    /* the whole pipeline: bin/analyze (from kernels.csv and steps.csv), bin/plotdata,
     * gnuplot, bin/report */
    cr_assert_eq(sh("BIN='%s' '%s/scripts/render.sh' '%s' >/dev/null 2>&1", ROOFLINE_BIN_DIR,
                    ROOFLINE_SOURCE_DIR, dir),
                 0, "scripts/render.sh failed on %s", dir);
    char *manifest = read_text(dir, "figures/figures.tsv");
    int figures = count_lines(manifest);
    cr_expect_geq(figures, 4, "a roofline, throughput, variability and scaling at least:\n%s",
                  manifest);
    cr_expect(strstr(manifest, "scaling.gp\tscaling\t") != NULL, "scaling.csv has rows:\n%s",
              manifest);
    for (char *line = strtok(manifest, "\n"); line; line = strtok(NULL, "\n")) {
        char *stem = strchr(line, '\t');
        cr_assert_not_null(stem);
        stem++;
        *strchr(stem, '\t') = '\0';
        char png[1024];
        format_or_fail(png, sizeof png, "%s/figures/%s.png", dir, stem);
        uint32_t w, h;
        png_size(png, &w, &h);
        cr_expect(w == 1200 && h == 800, "%s is %ux%u, not 1200x800", png, w, h);
    }
    char *html = read_text(dir, "report.html");
    cr_expect_eq(count_of(html, "src=\"data:image/png;base64,"), figures,
                 "report.html embeds every drawn figure");
    free(html);
    free(manifest);
    remove_temp_dir(dir);
}

Test(report_cli, compare_names_each_environment_and_its_roofs, .timeout = 60)
{
    char *out = temp_dir(), args[1024], msg[4096];
    const char *golden = ROOFLINE_SOURCE_DIR "/tests/golden/run";
    /* one folder twice is refused: it would be compared with itself */
    format_or_fail(args, sizeof args, "plotdata --compare %s/out %s %s/", out, golden, golden);
    cr_expect_eq(run_bin(args, 1, msg, sizeof msg), 2, "%s", msg);
    expect_contains(msg, "is '" ROOFLINE_SOURCE_DIR "/tests/golden/run' again", "stderr");
    /* two runs of one environment: told apart by their folders' names */
    cr_assert_eq(sh("cp -r '%s' '%s/again'", golden, out), 0);
    format_or_fail(args, sizeof args, "plotdata --compare %s/out %s %s/again", out, golden, out);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "plotdata --compare failed: %s", msg);
    char *vars = read_text(out, "out/figures/data/roofline_compare.vars");
    /* the label of the memory roof outlives the function that found it */
    expect_contains(vars, "env_title_1 = \"golden (run): fp32_fma 259 GFLOP/s, DRAM 85.7 GB/s\"",
                    "roofline_compare.vars");
    expect_contains(vars, "env_title_2 = \"golden (again): fp32_fma 259 GFLOP/s, DRAM 85.7 GB/s\"",
                    "roofline_compare.vars");
    expect_contains(vars, "nceil = 4", "roofline_compare.vars");
    char *steps = read_text(out, "out/figures/data/roofline_compare.steps");
    cr_expect_eq(count_of(steps, "\"resnet18-cifar\""), 4, "two steps of each run:\n%s", steps);
    char *manifest = read_text(out, "out/figures/figures.tsv");
    expect_contains(manifest,
                    "roofline_compare.gp\troofline_compare\troofline of golden (run) and golden "
                    "(again)",
                    "figures.tsv");
    free(vars);
    free(steps);
    free(manifest);
    /* the same folder name under two parents: their paths tell them apart */
    cr_assert_eq(sh("mkdir '%s/x' && cp -r '%s' '%s/x/run'", out, golden, out), 0);
    format_or_fail(args, sizeof args, "plotdata --compare %s/out2 %s %s/x/run", out, golden, out);
    cr_assert_eq(run_bin(args, 1, msg, sizeof msg), 0, "plotdata --compare failed: %s", msg);
    vars = read_text(out, "out2/figures/data/roofline_compare.vars");
    expect_contains(vars, "env_title_1 = \"golden (" ROOFLINE_SOURCE_DIR "/tests/golden/run): ",
                    "roofline_compare.vars");
    expect_contains(vars, "/x/run): fp32_fma", "roofline_compare.vars");
    free(vars);
    remove_temp_dir(out);
}

/* oneDNN's reorders (CPU traces) are a layer type of the suite's own: the
 * finding says what they are and puts their bytes/s against the DRAM roof. */
Test(report_run, reorders_are_named_in_the_findings)
{
    char *dir = toy_run(), args[512], out[4096];
    format_or_fail(args, sizeof args, "report %s", dir);
    /* 2e8 bytes in 10 ms, no FLOPs: 20 GB/s of the DRAM roof's 25 */
    write_replaced(dir, "roofline.csv", roofline_csv,
                   "layer_type,relu,,relu,,1,8000000,0.0444444,2.5e7,2e8,,0.125,,"
                   "3.125,fp32_fma,100,25,,4,3.125,100,memory,analytic",
                   "layer_type,reorder,,reorder,,1,10000000,0.6,0,2e8,,0,,"
                   "0,fp32_fma,100,25,,4,0,80,memory,analytic");
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "bin/report failed: %s", out);
    char *md = read_text(dir, "report.md");
    expect_contains(md, "the largest of them, reorder (oneDNN's layout conversions around the "
                        "convolutions: 60% of the time), reaches 80% of the DRAM roof",
                    "report.md");
    free(md);
    remove_temp_dir(dir);
}
