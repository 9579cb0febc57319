/* bin/envinfo and its JSON writer: env.json is valid JSON (checked by a small
 * recursive-descent validator, no Python needed) with the keys DESIGN.md §7
 * asks for, and odd text stays valid once escaped. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../bench/runner/envinfo_json.h"
#include "helpers.h"

/* ---- a JSON validator (RFC 8259 grammar) ---------------------------------------- */

static bool json_value(const char **p);

static void skip_ws(const char **p)
{
    while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
        (*p)++;
}

static bool json_str(const char **p)
{
    if (**p != '"')
        return false;
    for ((*p)++; **p != '"'; (*p)++) {
        unsigned char c = (unsigned char)**p;
        if (c < 0x20)
            return false; /* raw control characters must be escaped */
        if (c == '\\') {
            (*p)++;
            if (**p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!isxdigit((unsigned char)(*p)[i]))
                        return false;
                *p += 4;
            } else if (!**p || !strchr("\"\\/bfnrt", **p)) {
                return false;
            }
        }
    }
    (*p)++;
    return true;
}

static bool json_num(const char **p)
{
    const char *s = *p;
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (isdigit((unsigned char)*s))
        while (isdigit((unsigned char)*s))
            s++;
    else
        return false;
    if (*s == '.') {
        if (!isdigit((unsigned char)*++s))
            return false;
        while (isdigit((unsigned char)*s))
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!isdigit((unsigned char)*s))
            return false;
        while (isdigit((unsigned char)*s))
            s++;
    }
    *p = s;
    return true;
}

static bool json_members(const char **p, char close, bool keyed)
{
    (*p)++;
    skip_ws(p);
    if (**p == close) {
        (*p)++;
        return true;
    }
    for (;;) {
        skip_ws(p);
        if (keyed) {
            if (!json_str(p))
                return false;
            skip_ws(p);
            if (*(*p)++ != ':')
                return false;
        }
        if (!json_value(p))
            return false;
        skip_ws(p);
        char c = *(*p)++;
        if (c == close)
            return true;
        if (c != ',')
            return false;
    }
}

static bool json_value(const char **p)
{
    skip_ws(p);
    switch (**p) {
    case '{': return json_members(p, '}', true);
    case '[': return json_members(p, ']', false);
    case '"': return json_str(p);
    case 't': return strncmp(*p, "true", 4) == 0 && (*p += 4);
    case 'f': return strncmp(*p, "false", 5) == 0 && (*p += 5);
    case 'n': return strncmp(*p, "null", 4) == 0 && (*p += 4);
    default: return json_num(p);
    }
}

static bool json_valid(const char *text)
{
    const char *p = text;
    if (!json_value(&p))
        return false;
    skip_ws(&p);
    return *p == '\0';
}

Test(envinfo, validator_knows_valid_from_invalid)
{
    cr_expect(json_valid("{\"a\": [1, -2.5e3, true, null, \"x\\n\\u00e9\"], \"b\": {}}"));
    cr_expect(!json_valid("{\"a\": 1,}"), "trailing comma");
    cr_expect(!json_valid("{\"a\" 1}"), "missing colon");
    cr_expect(!json_valid("{\"a\": \"tab\there\"}"), "raw control character");
    cr_expect(!json_valid("{\"a\": 01}"), "leading zero");
    cr_expect(!json_valid("{\"a\": 1} x"), "trailing text");
    cr_expect(!json_valid("{\"a\": NaN}"), "NaN");
}

/* ---- the writer ---------------------------------------------------------------- */

Test(envinfo, writer_escapes_and_nests)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    json_writer w;
    json_begin(&w, f);
    json_string(&w, "quote\"key", "a \"b\" \\ c\n\td\x01 \xe2\x82\xac bad\xff\xc3z");
    json_array_begin(&w, "empty");
    json_array_end(&w);
    json_array_begin(&w, "list");
    json_int(&w, NULL, -3);
    json_number(&w, NULL, NAN);
    json_number(&w, NULL, 2.5e-9);
    json_bool(&w, NULL, false);
    json_string(&w, NULL, NULL);
    json_object_begin(&w, NULL);
    json_stringf(&w, "k", "%d-%s", 7, "x");
    json_object_end(&w);
    json_array_end(&w);
    json_end(&w);
    fclose(f);
    cr_expect(json_valid(buf), "invalid JSON:\n%s", buf);
    cr_expect(strstr(buf, "\"quote\\\"key\": \"a \\\"b\\\" \\\\ c\\n\\td\\u0001 \xe2\x82\xac bad??z\"") != NULL,
              "escaping: %s", buf);
    cr_expect(strstr(buf, "\"empty\": []") != NULL, "%s", buf);
    cr_expect(strstr(buf, "null,\n    2.5e-09,\n    false,\n    null,\n    {\n      \"k\": \"7-x\"") != NULL,
              "%s", buf);
    free(buf);
}

/* ---- bin/envinfo ---------------------------------------------------------------- */

Test(envinfo, writes_valid_json_with_the_expected_keys)
{
    char *dir = temp_dir();
    char args[1024], out[4096], path[512], tmp[600];
    snprintf(path, sizeof path, "%s/env.json", dir);
    snprintf(args, sizeof args,
             "envinfo --out %s --env test-env --backend cpu --argv 'make bench ENV=\"x\"'", path);
    cr_assert_eq(run_bin(args, 1, out, sizeof out), 0, "%s", out);
    /* nothing on stderr but, while other tests hold a CPU, the line that says so */
    cr_expect(out[0] == '\0' || (count_lines(out) == 1 &&
                                 strncmp(out, "envinfo: other work keeps ", 26) == 0),
              "stderr: %s", out);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    cr_expect_neq(access(tmp, F_OK), 0, "the temporary file is renamed away");
    char *json = read_text(dir, "env.json");
    cr_expect(json_valid(json), "invalid JSON:\n%s", json);
    static const char *const keys[] = {
        "\"env\": \"test-env\"", "\"date_utc\": \"20", "\"command_lines\": [",
        "\"make bench ENV=\\\"x\\\"\"", "\"git\": {",          "\"commit\": \"",
        "\"host\": {",          "\"kernel\": ",        "\"cpu\": {",
        "\"model\": ",          "\"logical_cpus\": ",  "\"memory_total_gib\": ",
        "\"cpu_clocks\": {",    "\"cpufreq\": {",      "\"gpu\": {",
        "\"count\": ",          "\"devices\": [",      "\"versions\": {",
        "\"compiler\": \"",     "\"cuda_runtime\": ",  "\"cuda_driver\": ",
        "\"cudnn\": ",          "\"cublas\": ",        "\"nccl\": ",
        "\"mpi\": ",            "\"onednn\": ",        "\"ranks\": [",
        "\"backend\": \"cpu\"", "\"load\": {",         "\"loadavg_1min\": ",
        "\"busy_cpus\": ",     "\"sampled_s\": 0.25",
    };
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        cr_expect(strstr(json, keys[i]) != NULL, "no %s in:\n%s", keys[i], json);
    /* no GPU: the reason is recorded, not a crash */
    if (strstr(json, "\"count\": 0"))
        cr_expect(strstr(json, "\"reason\": ") != NULL, "%s", json);
    free(json);
    remove_temp_dir(dir);
}

/* The variables that change what the libraries do are recorded by name,
 * sorted; the rest of the environment is not. */
Test(envinfo, records_the_variables_that_change_the_measurements)
{
    char *dir = temp_dir();
    char cmd[1024], out[4096];
    format_or_fail(cmd, sizeof cmd,
                   "env OMP_NUM_THREADS=3 CUDA_LAUNCH_BLOCKING=1 NCCL_ALGO='Ring,Tree' "
                   "ROOFLINE_SECRET=x NVIDIA_API_KEY=y CUDA_X1=2 CUDA_X=1 "
                   "'%s/envinfo' --out '%s/env.json' --backend cpu 2>&1",
                   ROOFLINE_BIN_DIR, dir);
    cr_assert_eq(run_capture(cmd, out, sizeof out), 0, "%s", out);
    char *json = read_text(dir, "env.json");
    cr_expect(json_valid(json), "invalid JSON:\n%s", json);
    const char *section = strstr(json, "\"environment\": {");
    cr_assert_not_null(section, "%s", json);
    const char *blocking = strstr(section, "\"CUDA_LAUNCH_BLOCKING\": \"1\""),
               *algo = strstr(section, "\"NCCL_ALGO\": \"Ring,Tree\""),
               *threads = strstr(section, "\"OMP_NUM_THREADS\": \"3\"");
    cr_expect(blocking && algo && threads && blocking < algo && algo < threads, "%s", section);
    cr_expect_null(strstr(json, "ROOFLINE_SECRET"), "%s", json);
    cr_expect_null(strstr(json, "NVIDIA_API_KEY"), "a credential recorded:\n%s", json);
    /* by name: CUDA_X before CUDA_X1 */
    const char *x = strstr(section, "\"CUDA_X\": \"1\""), *x1 = strstr(section, "\"CUDA_X1\"");
    cr_expect(x && x1 && x < x1, "%s", section);
    free(json);
    remove_temp_dir(dir);
}

Test(envinfo, rejects_bad_options_and_unwritable_paths)
{
    expect_usage_error("envinfo --backend rocm", "--backend: unknown 'rocm' (accepted: cpu, cuda)");
    expect_usage_error("envinfo --out", "--out needs a value");
    expect_usage_error("envinfo --colour", "unknown option '--colour'");
    expect_usage_error("envinfo extra", "unexpected argument 'extra'");
    char err[1024];
    cr_expect_eq(run_bin("envinfo --out /nonexistent-dir/env.json", 1, err, sizeof err), 2);
    cr_expect(strstr(err, "--out: cannot create '/nonexistent-dir/env.json': its folder "
                          "'/nonexistent-dir' is missing") != NULL,
              "%s", err);
    cr_expect_eq(count_lines(err), 1, "%s", err);
}

/* Other work on the machine is seen: a process spinning on a CPU while
 * bin/envinfo samples /proc/stat counts as at least half a CPU busy (it gets
 * all of one unless the machine is oversubscribed), and the line says so. */
Test(envinfo, sees_a_cpu_that_other_work_keeps_busy, .timeout = 60)
{
    char *dir = temp_dir();
    cr_assert_eq(sh("cd '%s' && { sh -c 'while :; do :; done' & spin=$!; sleep 0.2; "
                    "'%s/envinfo' --out env.json 2>err.txt; rc=$?; kill $spin; exit $rc; }",
                    dir, ROOFLINE_BIN_DIR),
                 0);
    char *json = read_text(dir, "env.json"), *err = read_text(dir, "err.txt");
    const char *busy = strstr(json, "\"busy_cpus\": ");
    cr_assert_not_null(busy, "%s", json);
    double cpus = atof(busy + strlen("\"busy_cpus\": "));
    cr_expect_geq(cpus, 0.5, "busy_cpus %.2f with a spinning process:\n%s", cpus, json);
    cr_expect(strstr(err, "envinfo: other work keeps ") != NULL, "stderr: %s", err);
    free(json);
    free(err);
    remove_temp_dir(dir);
}
