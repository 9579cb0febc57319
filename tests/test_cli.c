/* Option parsing and bin/complexity's answers to good and bad input. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/cli.h"
#include "helpers.h"

Test(cli, parse_long_takes_whole_integers_only)
{
    long v = 0;
    cr_expect(cli_parse_long("12", 1, 100, &v) && v == 12);
    cr_expect(cli_parse_long("0", 0, 1, &v) && v == 0);
    cr_expect(cli_parse_long("-4", -10, 10, &v) && v == -4);
    cr_expect(!cli_parse_long("12x", 1, 100, &v), "trailing garbage");
    cr_expect(!cli_parse_long("", 1, 100, &v), "empty");
    cr_expect(!cli_parse_long(" 12", 1, 100, &v), "leading blank");
    cr_expect(!cli_parse_long("+12", 1, 100, &v), "sign");
    cr_expect(!cli_parse_long("1.5", 1, 100, &v), "fraction");
    cr_expect(!cli_parse_long("0", 1, 100, &v), "below the range");
    cr_expect(!cli_parse_long("101", 1, 100, &v), "above the range");
    cr_expect(!cli_parse_long("99999999999999999999999", 1, 100, &v), "overflow");
}



Test(cli, complexity_unknown_model_lists_the_models)
{
    expect_usage_error("complexity --model resnet-50", "resnet50, vgg16, mobilenet_v2");
}

Test(cli, complexity_resolution_too_small_says_the_minimum)
{
    expect_usage_error("complexity --model vgg16 --res 16", "minimum 32");
}

Test(cli, complexity_rejects_bad_numbers)
{
    expect_usage_error("complexity --model resnet18 --batch 0", "--batch: '0'");
    expect_usage_error("complexity --model resnet18 --batch 12x", "--batch: '12x'");
    expect_usage_error("complexity --model resnet18 --classes -3", "--classes: '-3'");
    expect_usage_error("complexity --model resnet18 --res 224.0", "--res: '224.0'");
    expect_usage_error("complexity --model resnet18 --res 99999", "--res");
}

Test(cli, complexity_rejects_bad_options)
{
    expect_usage_error("complexity --model resnet18 --precision fp8", "--precision: unknown 'fp8'");
    expect_usage_error("complexity --model resnet18 --frobnicate", "unknown option '--frobnicate'");
    expect_usage_error("complexity --model resnet18 extra", "unexpected argument 'extra'");
    expect_usage_error("complexity --model", "--model needs a value");
    expect_usage_error("complexity --batch 4", "--model is required");
}

Test(cli, complexity_lists_every_model)
{
    char out[4096];
    cr_assert_eq(run_bin("complexity --list", 0, out, sizeof out), 0);
    int n_models;
    const model_info *models = zoo_models(&n_models);
    cr_expect_eq(count_lines(out), n_models);
    for (int i = 0; i < n_models; i++)
        cr_expect(strstr(out, models[i].name) != NULL, "%s missing from --list", models[i].name);
}

Test(cli, complexity_reports_resnet50_training_flops)
{
    static char out[1 << 16];
    cr_assert_eq(run_bin("complexity --model resnet50 --batch 256", 0, out, sizeof out), 0);
    const char *line = strstr(out, "training FLOPs per image");
    cr_assert_not_null(line, "%s", out);
    double gflop = strtod(line + strlen("training FLOPs per image"), NULL);
    cr_expect(gflop > 24.29 && gflop < 24.6, "%.4f GFLOP per image, notes say about 24.3", gflop);
    cr_expect(strstr(out, "25,557,032 parameters") != NULL);
}

Test(cli, complexity_csv_is_rectangular)
{
    static char out[1 << 17];
    cr_assert_eq(run_bin("complexity --model mobilenet_v2 --batch 2 --precision bf16 --csv", 0, out,
                         sizeof out),
                 0);
    int columns = -1, rows = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"), rows++) {
        int commas = 0;
        for (char *c = line; *c; c++)
            commas += *c == ',';
        if (columns < 0)
            columns = commas;
        cr_expect_eq(commas, columns, "row %d: %s", rows, line);
        if (rows > 0)
            cr_expect(strncmp(line, "mobilenet_v2,224,2,bf16,", 24) == 0, "row %d: %s", rows, line);
    }
    cr_expect_eq(columns + 1, 23);
    cr_expect_eq(rows, 1 + 152 + 2, "header, 152 layers, loss and total");
}
