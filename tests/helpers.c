#include "helpers.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

network build_or_fail(const char *model, int res, int classes)
{
    network net;
    int status = zoo_build(&net, model, res, classes);
    cr_assert_eq(status, NET_OK, "building %s at %d: %s", model, res, net.err);
    return net;
}

void format_or_fail(char *out, size_t len, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(out, len, format, ap);
    va_end(ap);
    cr_assert(n >= 0 && (size_t)n < len, "'%s' does not fit in %zu bytes", format, len);
}

int run_capture(const char *cmd, char *buf, size_t len)
{
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen %s", cmd);
    size_t used = fread(buf, 1, len - 1, p);
    buf[used] = '\0';
    int status = pclose(p);
    cr_assert(WIFEXITED(status), "%s did not exit normally", cmd);
    return WEXITSTATUS(status);
}

int sh(const char *format, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(cmd, sizeof cmd, format, ap);
    va_end(ap);
    cr_assert(n > 0 && (size_t)n < sizeof cmd, "command too long: %s", format);
    int status = system(cmd);
    cr_assert(status != -1 && WIFEXITED(status), "%s did not exit normally", cmd);
    return WEXITSTATUS(status);
}

int run_bin(const char *args, int want_stderr, char *buf, size_t len)
{
    char cmd[1024];
    format_or_fail(cmd, sizeof cmd, "%s/%s %s", ROOFLINE_BIN_DIR, args,
                   want_stderr ? "2>&1 >/dev/null" : "2>/dev/null");
    return run_capture(cmd, buf, len);
}

int count_lines(const char *text)
{
    int n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

void expect_usage_error(const char *args, const char *expect)
{
    char err[4096];
    int status = run_bin(args, 1, err, sizeof err);
    cr_expect_eq(status, 2, "'%s' exited %d: %s", args, status, err);
    cr_expect_eq(count_lines(err), 1, "'%s' printed: %s", args, err);
    cr_expect(strstr(err, expect) != NULL, "'%s' printed '%s', wanted '%s'", args, err, expect);
}

double gemm_train_gflop_per_image(const char *model)
{
    network net = build_or_fail(model, zoo_find(model)->default_res,
                                zoo_find(model)->default_classes);
    int64_t flops = 0;
    for (int i = 0; i < net.n_layers; i++) {
        const layer *l = &net.layers[i];
        if (l->type != LAYER_CONV && l->type != LAYER_FC)
            continue;
        layer_cost c = cost_layer(&net, i, 1, PREC_FP32);
        /* the published counts leave the bias out, in fwd and in its gradient */
        int64_t bias_ops = l->has_bias ? shape_elems(l->out_shape) : 0;
        flops += c.flops[PASS_FWD] + c.flops[PASS_BWD_DATA] + c.flops[PASS_BWD_WEIGHTS] -
                 2 * bias_ops;
    }
    net_free(&net);
    return flops / 1e9;
}

char *temp_dir(void)
{
    char *dir = malloc(64);
    cr_assert_not_null(dir);
    strcpy(dir, "/tmp/roofline-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    return dir;
}

void remove_temp_dir(char *dir)
{
    cr_expect_eq(sh("rm -rf '%s'", dir), 0);
    free(dir);
}

void *read_bytes(const char *dir, const char *name, size_t *len)
{
    char path[1024];
    format_or_fail(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s is missing", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert(n >= 0, "cannot size %s", path);
    rewind(f);
    char *bytes = malloc((size_t)n + 1);
    cr_assert_not_null(bytes);
    cr_assert_eq(fread(bytes, 1, (size_t)n, f), (size_t)n, "cannot read %s", path);
    bytes[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return bytes;
}

char *read_text(const char *dir, const char *name)
{
    return read_bytes(dir, name, NULL);
}

void write_bytes(const char *dir, const char *name, const void *data, size_t len)
{
    char path[1024];
    format_or_fail(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len, "cannot write %s", path);
    cr_assert_eq(fclose(f), 0, "cannot close %s", path);
}

void write_text(const char *dir, const char *name, const char *text)
{
    write_bytes(dir, name, text, strlen(text));
}

bool have_gnuplot(void)
{
    return sh("command -v gnuplot >/dev/null 2>&1") == 0;
}

void png_size(const char *path, uint32_t *w, uint32_t *h)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s was not drawn", path);
    unsigned char b[24];
    cr_assert_eq(fread(b, 1, sizeof b, f), sizeof b, "%s is shorter than a PNG header", path);
    fclose(f);
    cr_assert(memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0 && memcmp(b + 12, "IHDR", 4) == 0,
              "%s is not a PNG", path);
    *w = (uint32_t)b[16] << 24 | (uint32_t)b[17] << 16 | (uint32_t)b[18] << 8 | b[19];
    *h = (uint32_t)b[20] << 24 | (uint32_t)b[21] << 16 | (uint32_t)b[22] << 8 | b[23];
}
