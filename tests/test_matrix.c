/* The run_matrix.md parser: a good table expands to the expected
 * configurations, every malformed table stops with one line naming the file
 * and the line, and `local` picks the row of the GPU present. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/runner/matrix.h"
#include "helpers.h"

static const char *const header =
    "| ENV | backend | models | res | batch | precision | warmup | iters | repeats | ranks | "
    "counters |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|\n";

/* Parses header + rows; fails the test unless it parses. */
static run_matrix parse_ok(const char *rows)
{
    char text[4096], err[512] = "";
    snprintf(text, sizeof text, "# title\n\nprose\n\n%s%s\nafter the table\n", header, rows);
    run_matrix m;
    cr_assert_eq(matrix_parse(text, "t.md", &m, err, sizeof err), 0, "%s", err);
    return m;
}

/* Parses text and expects an error holding `expect`. */
static void parse_fails(const char *text, const char *expect)
{
    char err[512] = "";
    run_matrix m;
    cr_assert_eq(matrix_parse(text, "t.md", &m, err, sizeof err), -1, "parsed: %s", text);
    cr_expect(strstr(err, expect) != NULL, "error '%s', wanted '%s'", err, expect);
    cr_expect(strchr(err, '\n') == NULL, "one line: %s", err);
}

static void row_fails(const char *row, const char *expect)
{
    char text[4096];
    snprintf(text, sizeof text, "%s%s", header, row);
    parse_fails(text, expect);
}

Test(matrix, crosses_lists_and_honours_pins)
{
    run_matrix m = parse_ok(
        "| a | cpu | resnet18-cifar@32/64, resnet50 | 224, 160 | 8, 16 | fp32 | 3 | 10 | 2 | 1, 2 "
        "| perf |\n"
        "| g | cuda | mobilenet_v2, vgg16 | - | 32 | fp32, bf16 | 10 | 50 | 5 | - | cupti |\n");
    cr_assert_eq(m.n_rows, 2);
    const matrix_row *a = matrix_find(&m, "a");
    cr_assert_not_null(a);
    cr_expect_eq(a->line, 7, "rows are numbered by file line");
    cr_expect_eq(a->warmup, 3);
    cr_expect_eq(a->iters, 10);
    cr_expect_eq(a->repeats, 2);
    cr_expect_eq(a->n_ranks, 2);
    cr_expect_eq(a->ranks[1], 2);
    cr_expect_str_eq(a->peaks, "full", "peaks defaults to full when the column is absent");
    matrix_config c[16];
    /* resnet18-cifar pinned: 1; resnet50: 2 res x 2 batch */
    cr_assert_eq(matrix_expand(a, c, 16), 5);
    const struct { const char *model; int res, batch; } want[] = {
        {"resnet18-cifar", 32, 64}, {"resnet50", 224, 8}, {"resnet50", 224, 16},
        {"resnet50", 160, 8},       {"resnet50", 160, 16},
    };
    for (int i = 0; i < 5; i++) {
        cr_expect_str_eq(c[i].model, want[i].model, "config %d", i);
        cr_expect_eq(c[i].res, want[i].res, "config %d res", i);
        cr_expect_eq(c[i].batch, want[i].batch, "config %d batch", i);
        cr_expect_eq(c[i].prec, PREC_FP32);
    }
    const matrix_row *g = matrix_find(&m, "g");
    cr_assert_eq(matrix_expand(g, c, 16), 4);
    cr_expect_eq(g->n_ranks, 0, "'-' is no scaling study");
    /* res '-': each model's default; precisions innermost */
    cr_expect_str_eq(c[0].model, "mobilenet_v2");
    cr_expect_eq(c[0].res, 224);
    cr_expect_eq(c[0].prec, PREC_FP32);
    cr_expect_eq(c[1].prec, PREC_BF16);
    cr_expect_str_eq(c[3].model, "vgg16");
    cr_expect_eq(matrix_expand(g, NULL, 0), 4, "counting without an array");
    cr_expect_null(matrix_find(&m, "b"));
    char names[128];
    cr_expect_str_eq(matrix_env_names(&m, names, sizeof names), "a, g");
    matrix_free(&m);
}

Test(matrix, ignores_other_tables_and_takes_optional_columns)
{
    const char *text =
        "| column | meaning |\n|---|---|\n| ENV | the name |\n\n"
        "| ENV | notes | backend | models | res | batch | precision | warmup | iters | repeats | "
        "ranks | counters | peaks |\n"
        "|:---|---|---:|---|---|---|---|---|---|---|---|---|:-:|\n"
        "| q | anything at all | cpu | resnet18 | 64 | 2 | fp32 | 0 | 1 | 1 | 1 | off | quick\n";
    char err[512] = "";
    run_matrix m;
    cr_assert_eq(matrix_parse(text, "t.md", &m, err, sizeof err), 0, "%s", err);
    cr_assert_eq(m.n_rows, 1);
    cr_expect_str_eq(m.rows[0].peaks, "quick");
    cr_expect_eq(m.rows[0].warmup, 0, "warmup may be 0");
    cr_expect_eq(m.rows[0].n_graph, 1, "graph defaults to off when the column is absent");
    cr_expect_eq(m.rows[0].graph[0], false);
    matrix_free(&m);
}

Test(matrix, graph_modes_cross_innermost)
{
    const char *text =
        "| ENV | backend | models | res | batch | precision | graph | warmup | iters | repeats | "
        "ranks | counters |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        "| g | cuda | resnet50 | 224 | 64, 128 | fp32, bf16 | off, on | 1 | 2 | 1 | 1 | off |\n"
        "| o | cuda | resnet50 | 224 | 64 | bf16 | on | 1 | 2 | 1 | 1 | off |\n"
        "| c | cpu | resnet50 | 224 | 64 | fp32 | off | 1 | 2 | 1 | 1 | off |\n";
    char err[512] = "";
    run_matrix m;
    cr_assert_eq(matrix_parse(text, "t.md", &m, err, sizeof err), 0, "%s", err);
    matrix_config c[16];
    cr_assert_eq(matrix_expand(matrix_find(&m, "g"), c, 16), 8);
    /* batch 64 fp32 eager, graph; batch 64 bf16 eager, graph; then batch 128 */
    const struct { int batch; precision prec; bool graph; } want[] = {
        {64, PREC_FP32, false},  {64, PREC_FP32, true},  {64, PREC_BF16, false},
        {64, PREC_BF16, true},   {128, PREC_FP32, false}, {128, PREC_FP32, true},
        {128, PREC_BF16, false}, {128, PREC_BF16, true},
    };
    for (int i = 0; i < 8; i++) {
        cr_expect_eq(c[i].batch, want[i].batch, "config %d", i);
        cr_expect_eq(c[i].prec, want[i].prec, "config %d", i);
        cr_expect_eq(c[i].graph, want[i].graph, "config %d", i);
    }
    cr_assert_eq(matrix_expand(matrix_find(&m, "o"), c, 16), 1);
    cr_expect(c[0].graph, "a row may run the graph alone");
    cr_assert_eq(matrix_expand(matrix_find(&m, "c"), c, 16), 1);
    cr_expect(!c[0].graph);
    matrix_free(&m);

    const char *head = "| ENV | backend | models | res | batch | precision | graph | warmup | iters "
                       "| repeats | ranks | counters |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    const struct { const char *row, *expect; } bad[] = {
        {"| a | cpu | resnet18 | 224 | 8 | fp32 | on | 3 | 10 | 2 | 1 | perf |\n",
         "t.md:3: column 'graph': 'on' needs backend cuda"},
        {"| a | cuda | resnet18 | 224 | 8 | fp32 | yes | 3 | 10 | 2 | 1 | off |\n",
         "column 'graph': unknown 'yes' (accepted: off, on) (ENV a)"},
        {"| a | cuda | resnet18 | 224 | 8 | fp32 | on, on | 3 | 10 | 2 | 1 | off |\n",
         "column 'graph': 'on' appears twice"},
        {"| a | cuda | resnet18 | 224 | 8 | fp32 | off, on, off | 3 | 10 | 2 | 1 | off |\n",
         "column 'graph': 3 items"},
        {"| a | cuda | resnet18 | 224 | 8 | fp32 | - | 3 | 10 | 2 | 1 | off |\n",
         "column 'graph': '-' is not accepted here"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char t[2048];
        snprintf(t, sizeof t, "%s%s", head, bad[i].row);
        parse_fails(t, bad[i].expect);
    }
}

Test(matrix, structural_errors_name_the_line)
{
    parse_fails("no table here\n", "t.md: no table whose header starts with '| ENV |'");
    parse_fails("| ENV | backend | models | res | batch | precision | warmup | iters | repeats | "
                "ranks |\n|---|---|---|---|---|---|---|---|---|---|\n",
                "t.md:1: the header lacks column 'counters'");
    parse_fails("| ENV | backend | model | res |\n", "t.md:1: unknown column 'model'");
    parse_fails("x\n| ENV | ENV |\n", "t.md:2: column 'ENV' appears twice");
    char text[1024];
    snprintf(text, sizeof text, "%.*s\n| x |", (int)strcspn(header, "\n"), header);
    parse_fails(text, "t.md:2: the |---| line has 1 cells, the header has 11");
    snprintf(text, sizeof text, "%.*s\nplain text\n", (int)strcspn(header, "\n"), header);
    parse_fails(text, "t.md:2: expected the |---|---| line under the header");
    parse_fails(header, "t.md:2: the table has no rows");
    row_fails("| a | cpu | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 |\n",
              "t.md:3: row has 10 cells, the header has 11");
    row_fails("| a | cpu | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | perf | extra |\n",
              "t.md:3: row has 12 cells, the header has 11");
    row_fails("| a | cpu | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n"
              "| a | cpu | resnet50 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n",
              "t.md:4: ENV 'a' appears twice");
}

Test(matrix, cell_errors_name_line_column_and_value)
{
    row_fails("| a | cpu | resnet18 | 224 | 8, 0x | fp32 | 3 | 10 | 2 | 1 | perf |\n",
              "t.md:3: column 'batch': '0x' is not an integer in 1..1048576 (ENV a)");
    row_fails("| a | cpu | resnet18 | 224 | 0 | fp32 | 3 | 10 | 2 | 1 | perf |\n",
              "column 'batch': '0' is not an integer");
    row_fails("| a | cpu | resnet18 | 224 | 8 | fp32 | 3 | 0 | 2 | 1 | perf |\n",
              "t.md:3: column 'iters': '0' is not an integer in 1..1000000");
    row_fails("| a | cpu | resnet18 | 224 | 8 | fp32 | -1 | 10 | 2 | 1 | perf |\n",
              "column 'warmup': '-1'");
    row_fails("| a | cpu | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2.5 | 1 | perf |\n",
              "column 'repeats': '2.5'");
    row_fails("| a | cpu | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1,,2 | perf |\n",
              "column 'ranks': empty item");
    row_fails("| a | cpu | resnet-50 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n",
              "t.md:3: column 'models': unknown model 'resnet-50'");
    row_fails("| a | cpu | resnet50@x | - | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n",
              "column 'models': 'resnet50@x': the resolution after '@'");
    row_fails("| a | cpu | resnet50/0 | - | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n",
              "column 'models': 'resnet50/0': the batch after '/'");
    row_fails("| a | cpu | vgg16@16 | - | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n",
              "resolution 16 is below vgg16's minimum 32");
    row_fails("| a | cpu | vgg16 | 16 | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n",
              "column 'res': 16 is below vgg16's minimum 32");
    row_fails("| a | cpu | resnet18 | 224 | 8 | fp8 | 3 | 10 | 2 | 1 | perf |\n",
              "t.md:3: column 'precision': unknown 'fp8' (accepted: fp32, tf32, fp16, bf16)");
    row_fails("| a | cpu | resnet18 | 224 | 8 | bf16 | 3 | 10 | 2 | 1 | perf |\n",
              "column 'precision': 'bf16' needs backend cuda");
    row_fails("| a | rocm | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n",
              "column 'backend': unknown 'rocm' (accepted: cpu, cuda)");
    row_fails("| a | cpu | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | on |\n",
              "column 'counters': unknown 'on' (accepted: perf, cupti, off)");
    row_fails("| a | cpu | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | cupti |\n",
              "column 'counters': 'cupti' needs backend cuda");
    row_fails("| a | cpu | resnet18 | 224 | - | fp32 | 3 | 10 | 2 | 1 | perf |\n",
              "column 'batch': '-' but model resnet18 pins no batch");
    row_fails("| a | cpu | - | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n",
              "column 'models': '-' is not accepted here");
    row_fails("| a | cpu | resnet18, resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n",
              "configuration resnet18 res 224 batch 8 fp32 appears twice");
    row_fails("| local | cpu | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n",
              "column 'ENV': 'local' is reserved");
    row_fails("| a b | cpu | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n",
              "column 'ENV': 'a b' is not a name");
}

Test(matrix, local_is_the_row_named_by_the_gpu)
{
    run_matrix m = parse_ok(
        "| cpu | cpu | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n"
        "| h100 | cuda | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | cupti |\n"
        "| a100 | cuda | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | cupti |\n"
        "| t4 | cuda | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | cupti |\n"
        "| rtx4090 | cuda | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | cupti |\n");
    const struct { const char *gpu, *env; } cases[] = {
        {"NVIDIA H100 80GB HBM3", "h100"},   {"NVIDIA H100 PCIe", "h100"},
        {"NVIDIA A100-SXM4-80GB", "a100"},   {"Tesla T4", "t4"},
        {"NVIDIA GeForce RTX 4090", "rtx4090"}, {"NVIDIA RTX A1000", "cpu"},
        {"NVIDIA L40S", "cpu"},              {NULL, "cpu"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const matrix_row *r = matrix_local_row(&m, cases[i].gpu);
        cr_assert_not_null(r);
        cr_expect_str_eq(r->env, cases[i].env, "GPU '%s'", cases[i].gpu ? cases[i].gpu : "none");
    }
    matrix_free(&m);

    /* with the generic row, a GPU no row names takes it, never a machine
     * without a GPU, and a GPU whose name holds the word "GPU" is no better
     * named by it */
    m = parse_ok("| cpu | cpu | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n"
                 "| gpu | cuda | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | cupti |\n"
                 "| h100 | cuda | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | cupti |\n"
                 "| l4 | cuda | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | cupti |\n");
    /* "NVIDIA L4 GPU": the longer name "gpu" would win over "l4" if it could name a GPU */
    const struct { const char *gpu, *env; } generic[] = {
        {"NVIDIA H100 80GB HBM3", "h100"}, {"NVIDIA L40S", "gpu"}, {"NVIDIA GH200 480GB", "gpu"},
        {"NVIDIA L4 GPU", "l4"},           {NULL, "cpu"},
    };
    for (size_t i = 0; i < sizeof generic / sizeof *generic; i++) {
        const matrix_row *r = matrix_local_row(&m, generic[i].gpu);
        cr_assert_not_null(r);
        cr_expect_str_eq(r->env, generic[i].env, "GPU '%s'",
                         generic[i].gpu ? generic[i].gpu : "none");
    }
    matrix_free(&m);
    /* a generic row of the cpu backend is no GPU's */
    m = parse_ok("| cpu | cpu | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n"
                 "| gpu | cpu | resnet18 | 224 | 8 | fp32 | 3 | 10 | 2 | 1 | perf |\n");
    cr_expect_str_eq(matrix_local_row(&m, "NVIDIA L40S")->env, "cpu");
    matrix_free(&m);
}

/* ---- the shipped run_matrix.md and bin/matrix --------------------------------- */

Test(matrix, shipped_table_has_the_agreed_rows)
{
    run_matrix m;
    char err[512] = "";
    cr_assert_eq(matrix_load(ROOFLINE_SOURCE_DIR "/run_matrix.md", &m, err, sizeof err), 0, "%s",
                 err);
    const char *envs[] = {"cpu", "cpu-full", "h200", "h100", "a100", "t4", "rtx4090", "gpu"};
    for (size_t i = 0; i < sizeof envs / sizeof *envs; i++)
        cr_expect_not_null(matrix_find(&m, envs[i]), "row %s", envs[i]);
    /* the default of a machine without a GPU covers all four networks */
    const matrix_row *cpu = matrix_find(&m, "cpu");
    cr_assert_not_null(cpu);
    matrix_config c[8];
    cr_assert_eq(matrix_expand(cpu, c, 8), 4);
    const char *nets[] = {"resnet18", "resnet50", "vgg16", "mobilenet_v2"};
    for (int i = 0; i < 4; i++)
        cr_expect(strncmp(c[i].model, nets[i], strlen(nets[i])) == 0, "%s", c[i].model);
    cr_expect_str_eq(cpu->peaks, "quick");
    matrix_free(&m);
}

/* Writes text to DIR/name and returns the path (static buffer). */
static const char *write_file(const char *dir, const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
    return path;
}

Test(matrix, program_prints_configurations_tab_separated)
{
    char *dir = temp_dir();
    char text[2048], args[1024], out[4096];
    snprintf(text, sizeof text, "%s| tiny | cpu | resnet18-cifar@32/2, mobilenet_v2@64 | - | 4 | "
             "fp32 | 1 | 2 | 3 | 1, 2 | perf |\n", header);
    const char *path = write_file(dir, "m.md", text);
    snprintf(args, sizeof args, "matrix --file %s tiny", path);
    cr_assert_eq(run_bin(args, 0, out, sizeof out), 0);
    cr_expect_str_eq(out, "resnet18-cifar\t32\t2\tfp32\t1\t2\t3\tcpu\tperf\t1,2\tfull\toff\n"
                          "mobilenet_v2\t64\t4\tfp32\t1\t2\t3\tcpu\tperf\t1,2\tfull\toff\n");
    snprintf(args, sizeof args, "matrix --file %s --list", path);
    cr_assert_eq(run_bin(args, 0, out, sizeof out), 0);
    cr_expect_str_eq(out, "tiny\n");
    snprintf(args, sizeof args, "matrix --file %s --resolve tiny", path);
    cr_assert_eq(run_bin(args, 0, out, sizeof out), 0);
    cr_expect_str_eq(out, "tiny\n");
    /* a graph configuration beside its eager twin */
    snprintf(text, sizeof text,
             "| ENV | backend | models | res | batch | precision | graph | warmup | iters | "
             "repeats | ranks | counters |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n"
             "| tiny | cuda | resnet18 | 32 | 2 | bf16 | off, on | 1 | 2 | 1 | 1 | off |\n");
    const char *graph_path = write_file(dir, "g.md", text);
    snprintf(args, sizeof args, "matrix --file %s tiny", graph_path);
    cr_assert_eq(run_bin(args, 0, out, sizeof out), 0);
    cr_expect_str_eq(out, "resnet18\t32\t2\tbf16\t1\t2\t1\tcuda\toff\t1\tfull\toff\n"
                          "resnet18\t32\t2\tbf16\t1\t2\t1\tcuda\toff\t1\tfull\ton\n");
    remove_temp_dir(dir);
}

Test(matrix, program_rejects_bad_tables_and_unknown_env)
{
    char *dir = temp_dir();
    char text[2048], args[1024], expect[1024];
    snprintf(text, sizeof text, "%s| tiny | cpu | resnet18 | 32 | 2 | fp32 | 1 | 2 | 3 | 1 | perf |\n",
             header);
    const char *path = write_file(dir, "good.md", text);
    snprintf(args, sizeof args, "matrix --file %s h100", path);
    expect_usage_error(args, "unknown ENV 'h100' (known: tiny, local;");

    static const struct { const char *name, *row, *expect; } bad[] = {
        {"ragged.md", "| t | cpu | resnet18 | 32 | 2 | fp32 | 1 | 2 | 3 | 1 |\n",
         ":3: row has 10 cells, the header has 11"},
        {"number.md", "| t | cpu | resnet18 | 32 | two | fp32 | 1 | 2 | 3 | 1 | perf |\n",
         ":3: column 'batch': 'two' is not an integer"},
        {"model.md", "| t | cpu | resnet19 | 32 | 2 | fp32 | 1 | 2 | 3 | 1 | perf |\n",
         ":3: column 'models': unknown model 'resnet19'"},
        {"precision.md", "| t | cpu | resnet18 | 32 | 2 | fp64 | 1 | 2 | 3 | 1 | perf |\n",
         ":3: column 'precision': unknown 'fp64'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(text, sizeof text, "%s%s", header, bad[i].row);
        path = write_file(dir, bad[i].name, text);
        snprintf(args, sizeof args, "matrix --file %s t", path);
        snprintf(expect, sizeof expect, "%s%s", path, bad[i].expect);
        expect_usage_error(args, expect);
    }
    /* the header without its counters column */
    path = write_file(dir, "column.md",
                      "| ENV | backend | models | res | batch | precision | warmup | iters | "
                      "repeats | ranks |\n|---|---|---|---|---|---|---|---|---|---|\n"
                      "| t | cpu | resnet18 | 32 | 2 | fp32 | 1 | 2 | 3 | 1 |\n");
    snprintf(args, sizeof args, "matrix --file %s t", path);
    snprintf(expect, sizeof expect, "%s:1: the header lacks column 'counters'", path);
    expect_usage_error(args, expect);
    snprintf(args, sizeof args, "matrix --file %s/absent.md t", dir);
    expect_usage_error(args, "absent.md: cannot open");
    expect_usage_error("matrix --file x.md", "give an ENV");
    remove_temp_dir(dir);
}
