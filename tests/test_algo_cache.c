/* The file of chosen convolution algorithms (models/cuda/algo_cache.h): keys
 * that name everything a choice depends on, rows that come back as written,
 * appends that keep one header, and one clear line for a file that is not
 * one. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../models/cuda/algo_cache.h"
#include "helpers.h"

/* The graph-API fields of a row on the legacy calls. */
#define NO_GRAPH ",0,-1,-1,-1,-1,0,0,0,0,0"

static const algo_context context = {.device = "NVIDIA H100 80GB HBM3",
                                     .cc = 90,
                                     .sm_count = 132,
                                     .cudnn_version = 91400,
                                     .workspace_limit = (int64_t)1 << 30,
                                     .depthwise = DEPTHWISE_AUTO,
                                     .own_depthwise = 0x5eed1234u,
                                     .no_fusion = false};

static conv_shape shape(void)
{
    return (conv_shape){.n = 256, .c = 64, .h = 56, .w = 56, .k = 64, .r = 3, .s = 3, .pad = 1,
                        .stride = 1, .groups = 1, .out_h = 56, .out_w = 56, .input_grad = true,
                        .prec = PREC_BF16};
}

static void key_of(const algo_context *x, const conv_shape *s, char *key)
{
    cr_assert_eq(algo_cache_key(x, s, key, ALGO_KEY_LEN), 0);
}

Test(algo_cache, the_key_names_everything_the_choice_depends_on)
{
    char base[ALGO_KEY_LEN], other[ALGO_KEY_LEN];
    conv_shape s = shape();
    key_of(&context, &s, base);
    cr_expect(strchr(base, ',') == NULL && strchr(base, ' ') == NULL, "%s", base);
    cr_expect(strstr(base, "NVIDIA_H100_80GB_HBM3;cc90;sm132;cudnn91400;bf16") == base, "%s",
              base);

    algo_context x[10];
    for (int i = 0; i < 10; i++)
        x[i] = context;
    x[0].device = "NVIDIA H200";
    x[1].cc = 100;
    x[2].cudnn_version = 91500;
    x[3].workspace_limit = (int64_t)1 << 29;
    x[4].depthwise = DEPTHWISE_OWN;
    x[5].no_fusion = true;
    x[6].sm_count = 114;
    x[7].own_depthwise = 0x5eed1235u; /* own kernels built from other source */
    x[8].conv_bias = CONV_BIAS_OWN;
    x[9].conv_api = CONV_API_LEGACY;
    for (int i = 0; i < 10; i++) {
        key_of(&x[i], &s, other);
        cr_expect_str_neq(other, base, "context change %d", i);
    }
    static const size_t fields[] = {
        offsetof(conv_shape, n),   offsetof(conv_shape, c),      offsetof(conv_shape, h),
        offsetof(conv_shape, w),   offsetof(conv_shape, k),      offsetof(conv_shape, r),
        offsetof(conv_shape, s),   offsetof(conv_shape, pad),    offsetof(conv_shape, stride),
        offsetof(conv_shape, groups)};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        s = shape();
        (*(int *)((char *)&s + fields[i]))++;
        key_of(&context, &s, other);
        cr_expect_str_neq(other, base, "shape field %zu", i);
    }
    s = shape();
    s.input_grad = false;
    key_of(&context, &s, other);
    cr_expect_str_neq(other, base);
    s = shape();
    s.prec = PREC_FP16;
    key_of(&context, &s, other);
    cr_expect_str_neq(other, base);
    s = shape();
    s.bias_relu = true;
    key_of(&context, &s, other);
    cr_expect_str_neq(other, base, "a forward with bias under ReLU is another choice");

    char small[16];
    cr_expect_eq(algo_cache_key(&context, &s, small, sizeof small), -1, "a key cut short");
}

static algo_choice row(const char *key, int pass, int algo)
{
    algo_choice r = {.pass = pass,
                     .choice = {.own = pass == 1, .algo = algo, .math = 1,
                                .workspace_bytes = 12345678, .find_ms = 0.25f,
                                .trial = {.cudnn_ms = -1.0f, .own_ms = 0.125f, .verified = true,
                                          .matched = pass != 2},
                                .own_difference = 3.5e-4,
                                .fused = pass == 0,
                                .bias_trial = {.own_ms = 0.5f, .fused_ms = pass == 0 ? 0.375f : -1.0f,
                                               .verified = pass == 0, .matched = pass == 0,
                                               .difference = pass == 0 ? 1.5e-3 : 0.0},
                                /* the forward fused on the graph API */
                                .graph = pass != 1, .engine = pass != 1 ? 17 : -1,
                                .config_rank = pass != 1 ? 3 : -1,
                                .api_trial = {.legacy_ms = 0.75f,
                                              .graph_ms = pass == 1 ? -1.0f : 0.625f,
                                              .offered = 12, .tried = pass == 1 ? 0 : 8,
                                              .verified = pass != 1, .matched = pass == 2,
                                              .difference = pass == 1 ? 0.0 : 2.5e-5}}};
    snprintf(r.key, sizeof r.key, "%s", key);
    return r;
}

Test(algo_cache, rows_come_back_as_appended_under_one_header)
{
    char *dir = temp_dir(), path[1024], err[400] = "", key[ALGO_KEY_LEN];
    format_or_fail(path, sizeof path, "%s/algos.csv", dir);
    conv_shape s = shape();
    key_of(&context, &s, key);

    algo_cache c;
    cr_assert_eq(algo_cache_read(path, &c, err, sizeof err), 0, "%s", err);
    cr_expect_eq(c.n, 0, "no file: no rows");
    algo_choice first[2] = {row(key, 0, 6), row(key, 1, 3)};
    cr_assert_eq(algo_cache_append(path, &c, first, 2, err, sizeof err), 0, "%s", err);
    algo_choice later = row(key, 2, 5);
    cr_assert_eq(algo_cache_append(path, &c, &later, 1, err, sizeof err), 0, "%s", err);
    cr_expect_eq(c.n, 3, "appended rows join the cache in memory too");
    algo_cache_free(&c);

    char *text = read_text(dir, "algos.csv");
    cr_expect_eq(count_lines(text), 4, "one header and three rows:\n%s", text);
    cr_expect(strncmp(text, ALGO_CACHE_HEADER "\n", strlen(ALGO_CACHE_HEADER) + 1) == 0, "%s",
              text);

    cr_assert_eq(algo_cache_read(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.n, 3);
    for (int p = 0; p < 3; p++) {
        const algo_choice *got = algo_cache_find(&c, key, p);
        algo_choice want = p < 2 ? first[p] : later;
        cr_assert_not_null(got, "pass %d", p);
        cr_expect_str_eq(got->key, key);
        const conv_pass_choice *g = &got->choice, *w = &want.choice;
        cr_expect(got->pass == p && g->own == w->own && g->algo == w->algo &&
                      g->math == w->math && g->workspace_bytes == w->workspace_bytes,
                  "pass %d", p);
        cr_expect(g->find_ms == w->find_ms && g->trial.cudnn_ms == w->trial.cudnn_ms &&
                      g->trial.own_ms == w->trial.own_ms,
                  "pass %d: times %g %g %g", p, g->find_ms, g->trial.cudnn_ms, g->trial.own_ms);
        cr_expect(g->trial.verified == w->trial.verified &&
                      g->trial.matched == w->trial.matched &&
                      g->own_difference == w->own_difference,
                  "pass %d", p);
        const conv_bias_trial *gb = &g->bias_trial, *wb = &w->bias_trial;
        cr_expect(g->fused == w->fused && gb->own_ms == wb->own_ms &&
                      gb->fused_ms == wb->fused_ms && gb->verified == wb->verified &&
                      gb->matched == wb->matched && gb->difference == wb->difference,
                  "pass %d: the conv-bias trial", p);
        const conv_api_trial *ga = &g->api_trial, *wa = &w->api_trial;
        cr_expect(g->graph == w->graph && g->engine == w->engine &&
                      g->config_rank == w->config_rank && ga->legacy_ms == wa->legacy_ms &&
                      ga->graph_ms == wa->graph_ms && ga->offered == wa->offered &&
                      ga->tried == wa->tried && ga->verified == wa->verified &&
                      ga->matched == wa->matched && ga->difference == wa->difference,
                  "pass %d: the conv-api trial (engine %d rank %d)", p, g->engine,
                  g->config_rank);
    }
    cr_expect_null(algo_cache_find(&c, "another key", 0));
    algo_cache_free(&c);
    free(text);
    remove_temp_dir(dir);
}

/* A row cut short (a full disk, a crash, a writer not done) is not read, and
 * the next append replaces it; blank lines and a repeated header are
 * skipped; times keep their digits. */
Test(algo_cache, a_row_cut_short_is_neither_read_nor_kept)
{
    char *dir = temp_dir(), path[1024], err[400] = "";
    format_or_fail(path, sizeof path, "%s/algos.csv", dir);
    write_text(dir, "algos.csv",
               ALGO_CACHE_HEADER "\nk,0,0,6,1,0,0.1,-1,-1,0,0,4.9e-324,0,-1,-1,0,0,0" NO_GRAPH
                                 "\n\n" ALGO_CACHE_HEADER "\nk,1,0,3,1,0,0.1");
    algo_cache c;
    cr_assert_eq(algo_cache_read(path, &c, err, sizeof err), 0, "%s", err);
    cr_expect_eq(c.n, 1);
    cr_expect_null(algo_cache_find(&c, "k", 1), "the cut row was read");
    algo_choice r = row("k", 2, 5);
    r.choice.find_ms = 0.1234567f;
    r.choice.own_difference = 1.0 / 3.0;
    cr_assert_eq(algo_cache_append(path, &c, &r, 1, err, sizeof err), 0, "%s", err);
    algo_cache_free(&c);
    char *text = read_text(dir, "algos.csv");
    cr_expect(strstr(text, "k,1,0,3") == NULL, "the cut row is still there:\n%s", text);
    cr_assert_eq(algo_cache_read(path, &c, err, sizeof err), 0, "%s\n%s", err, text);
    cr_expect_eq(c.n, 2, "%s", text);
    const algo_choice *got = algo_cache_find(&c, "k", 2);
    cr_assert_not_null(got, "%s", text);
    cr_expect_eq(got->choice.find_ms, 0.1234567f, "%.9g", got->choice.find_ms);
    cr_expect_eq(got->choice.own_difference, 1.0 / 3.0, "%.17g", got->choice.own_difference);
    algo_cache_free(&c);
    free(text);
    remove_temp_dir(dir);
}

/* Where two processes appended the same key and pass, the first row wins. */
Test(algo_cache, the_first_row_of_a_key_is_used)
{
    char *dir = temp_dir(), path[1024], err[400] = "";
    format_or_fail(path, sizeof path, "%s/algos.csv", dir);
    algo_cache c = {0};
    algo_choice twice[2] = {row("k", 0, 1), row("k", 0, 7)};
    cr_assert_eq(algo_cache_append(path, &c, twice, 2, err, sizeof err), 0, "%s", err);
    algo_cache_free(&c);
    cr_assert_eq(algo_cache_read(path, &c, err, sizeof err), 0, "%s", err);
    cr_expect_eq(algo_cache_find(&c, "k", 0)->choice.algo, 1);
    algo_cache_free(&c);
    remove_temp_dir(dir);
}

/* A file that cannot be written: -1 and why (the backend then runs on
 * without saving, and says so). */
Test(algo_cache, a_full_disk_is_an_error_line)
{
    algo_cache c = {0};
    algo_choice r = row("k", 0, 1);
    char err[400] = "";
    cr_expect_eq(algo_cache_append("/dev/full", &c, &r, 1, err, sizeof err), -1);
    cr_expect(strstr(err, "/dev/full: cannot write it") != NULL, "%s", err);
    algo_cache_free(&c);
}

static void expect_refused(const char *text, const char *message)
{
    char *dir = temp_dir(), path[1024], err[400] = "";
    write_text(dir, "algos.csv", text);
    format_or_fail(path, sizeof path, "%s/algos.csv", dir);
    algo_cache c;
    cr_expect_eq(algo_cache_read(path, &c, err, sizeof err), -1, "%s", text);
    cr_expect(strstr(err, message) && strstr(err, path), "'%s' lacks '%s'", err, message);
    cr_expect_null(strchr(err, '\n'), "one line: %s", err);
    remove_temp_dir(dir);
}

Test(algo_cache, a_file_that_is_not_one_is_one_line)
{
    expect_refused("env,model\nx,y\n", "is not an algorithm cache");
    expect_refused(ALGO_CACHE_HEADER "\nk,0,0,6,1,0,0.1,-1,-1,0,0,0,0,-1,-1,0,0,0" NO_GRAPH "\n"
                                     "k,1,0,x,1,0,0.1,-1,-1,0,0,0,0,-1,-1,0,0,0" NO_GRAPH "\n",
                   "line 3: bad algo");
    expect_refused(ALGO_CACHE_HEADER "\nk,3,0,6,1,0,0.1,-1,-1,0,0,0,0,-1,-1,0,0,0" NO_GRAPH "\n",
                   "line 2: bad pass");
    expect_refused(ALGO_CACHE_HEADER "\nk,0,0,6,1,0,0.1,-1,-1,0,0,0,0,-1,-1,0,0" NO_GRAPH "\n",
                   "line 2: the wrong number of fields");
    expect_refused(ALGO_CACHE_HEADER "\nk,0,0,6,1,0,0.1,-1,-1,0,0,0,0,-1,-1,0,0,0" NO_GRAPH ",9\n",
                   "line 2: the wrong number of fields");
    expect_refused(ALGO_CACHE_HEADER "\nk,0,2,6,1,0,0.1,-1,-1,0,0,0,0,-1,-1,0,0,0" NO_GRAPH "\n",
                   "line 2: bad own");
    expect_refused(ALGO_CACHE_HEADER "\nk,0,0,6,1,0,0.1,-1,-1,0,0,0,2,-1,-1,0,0,0" NO_GRAPH "\n",
                   "line 2: bad fused");
    expect_refused(ALGO_CACHE_HEADER "\nk,2,0,6,1,0,0.1,-1,-1,0,0,0,1,-1,-1,0,0,0" NO_GRAPH "\n",
                   "line 2: fused outside a cuDNN forward");
    expect_refused(ALGO_CACHE_HEADER "\nk,0,0,6,1,0,0.1,-1,-1,0,0,0,0,-1,-1,0,0,0"
                                     ",2,-1,-1,-1,-1,0,0,0,0,0\n",
                   "line 2: bad graph");
    expect_refused(ALGO_CACHE_HEADER "\nk,1,1,6,1,0,0.1,-1,-1,0,0,0,0,-1,-1,0,0,0"
                                     ",1,4,0,-1,-1,0,0,0,0,0\n",
                   "line 2: graph outside a cuDNN convolution");
    expect_refused(ALGO_CACHE_HEADER "\nk,1,0,6,1,0,0.1,-1,-1,0,0,0,0,-1,-1,0,0,0"
                                     ",1,-1,0,-1,-1,0,0,0,0,0\n",
                   "line 2: graph outside a cuDNN convolution, or without its engine");
}
