#include "specs.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

enum { SPEC_COLUMNS = 14, LINE_MAX_LEN = 2048 };

static const char *const spec_header =
    "gpu,match,sms,boost_mhz,tensor_mhz,fp64_tflops,fp32_tflops,fp16_tflops,tf32_tensor_tflops,"
    "fp16_tensor_tflops,bf16_tensor_tflops,fp8_tensor_tflops,mem_gbs,source";

/* Splits one CSV line in place (RFC 4180 quotes); returns the field count. */
static int split_csv(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max)
            return max + 1;
        char *out = p;
        fields[n++] = p;
        if (*p == '"') {
            p++;
            for (;;) {
                if (*p == '\0')
                    break;
                if (*p == '"' && p[1] == '"') {
                    *out++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *out++ = *p++;
                }
            }
        } else {
            while (*p && *p != ',')
                *out++ = *p++;
        }
        if (*p == ',') {
            *out = '\0';
            p++;
            continue;
        }
        *out = '\0';
        return n;
    }
}

static double number_or_nan(const char *text, int *bad)
{
    if (!*text)
        return NAN;
    char *end;
    double v = strtod(text, &end);
    if (*end != '\0' || !(v > 0))
        *bad = 1;
    return v;
}

int specs_load(const char *path, gpu_spec_table *t, char *err, size_t err_len)
{
    t->rows = NULL;
    t->n = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_len, "cannot open %s", path);
        return -1;
    }
    char line[LINE_MAX_LEN];
    int line_no = 0, cap = 0;
    while (fgets(line, sizeof line, f)) {
        line_no++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line_no == 1) {
            if (strcmp(line, spec_header) != 0) {
                snprintf(err, err_len, "%s: the header is not '%s'", path, spec_header);
                goto fail;
            }
            continue;
        }
        if (!line[0])
            continue;
        char *fields[SPEC_COLUMNS + 1];
        if (split_csv(line, fields, SPEC_COLUMNS) != SPEC_COLUMNS) {
            snprintf(err, err_len, "%s:%d: not %d fields", path, line_no, SPEC_COLUMNS);
            goto fail;
        }
        if (t->n == cap) {
            cap = cap ? 2 * cap : 16;
            gpu_spec *rows = realloc(t->rows, (size_t)cap * sizeof *rows);
            if (!rows) {
                snprintf(err, err_len, "out of memory reading %s", path);
                goto fail;
            }
            t->rows = rows;
        }
        gpu_spec *s = &t->rows[t->n];
        int bad = 0;
        snprintf(s->gpu, sizeof s->gpu, "%s", fields[0]);
        snprintf(s->match, sizeof s->match, "%s", fields[1]);
        double sms = number_or_nan(fields[2], &bad);
        /* a count of SMs: a whole number that an int holds (a GPU has hundreds) */
        if (isfinite(sms) && (sms != floor(sms) || sms > 100000))
            bad = 1;
        s->sms = isfinite(sms) && !bad ? (int)sms : 0;
        s->boost_mhz = number_or_nan(fields[3], &bad);
        s->tensor_mhz = number_or_nan(fields[4], &bad);
        s->fp64_tflops = number_or_nan(fields[5], &bad);
        s->fp32_tflops = number_or_nan(fields[6], &bad);
        s->fp16_tflops = number_or_nan(fields[7], &bad);
        s->tf32_tensor_tflops = number_or_nan(fields[8], &bad);
        s->fp16_tensor_tflops = number_or_nan(fields[9], &bad);
        s->bf16_tensor_tflops = number_or_nan(fields[10], &bad);
        s->fp8_tensor_tflops = number_or_nan(fields[11], &bad);
        s->mem_gbs = number_or_nan(fields[12], &bad);
        snprintf(s->source, sizeof s->source, "%s", fields[13]);
        if (bad || !s->gpu[0] || !s->match[0]) {
            snprintf(err, err_len, "%s:%d: a name is empty, a figure is not a positive number or sms is not a whole number up to 100000",
                     path, line_no);
            goto fail;
        }
        t->n++;
    }
    fclose(f);
    return 0;
fail:
    fclose(f);
    specs_free(t);
    return -1;
}

static int readable(const char *path)
{
    return access(path, R_OK) == 0;
}

int specs_find_file(char *path, size_t len)
{
    const char *env = getenv("ROOFLINE_SPECS");
    if (env && *env) {
        snprintf(path, len, "%s", env);
        return readable(path) ? 0 : -1;
    }
    snprintf(path, len, "peaks/specs.csv");
    if (readable(path))
        return 0;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            if ((size_t)snprintf(path, len, "%s/../peaks/specs.csv", exe) < len && readable(path))
                return 0;
        }
    }
    return -1;
}

/* Is `word` one of the words of `name`? */
static int has_word(const char *name, const char *word, size_t word_len)
{
    const char *p = name;
    while (*p) {
        while (*p && !isalnum((unsigned char)*p))
            p++;
        const char *start = p;
        while (*p && isalnum((unsigned char)*p))
            p++;
        if ((size_t)(p - start) == word_len && strncasecmp(start, word, word_len) == 0)
            return 1;
    }
    return 0;
}

const gpu_spec *specs_match(const gpu_spec_table *t, const char *device)
{
    const gpu_spec *best = NULL;
    int best_words = 0;
    for (int i = 0; i < t->n; i++) {
        int words = 0, all = 1;
        const char *p = t->rows[i].match;
        while (*p && all) {
            while (*p && !isalnum((unsigned char)*p))
                p++;
            const char *start = p;
            while (*p && isalnum((unsigned char)*p))
                p++;
            if (p > start) {
                words++;
                all = has_word(device, start, (size_t)(p - start));
            }
        }
        if (all && words > best_words) {
            best = &t->rows[i];
            best_words = words;
        }
    }
    return best;
}

double specs_value(const gpu_spec *s, const char *ceiling)
{
    static const struct {
        const char *ceiling;
        size_t offset;
    } tflops[] = {
        {"fp64_fma", offsetof(gpu_spec, fp64_tflops)},
        {"fp32_fma", offsetof(gpu_spec, fp32_tflops)},
        {"fp16_fma", offsetof(gpu_spec, fp16_tflops)},
        {"tf32_tensor", offsetof(gpu_spec, tf32_tensor_tflops)},
        {"fp16_tensor", offsetof(gpu_spec, fp16_tensor_tflops)},
        {"bf16_tensor", offsetof(gpu_spec, bf16_tensor_tflops)},
        {"fp8_tensor", offsetof(gpu_spec, fp8_tensor_tflops)},
    };
    if (!s)
        return NAN;
    for (size_t i = 0; i < sizeof tflops / sizeof tflops[0]; i++)
        if (strcmp(ceiling, tflops[i].ceiling) == 0)
            return 1000.0 * *(const double *)((const char *)s + tflops[i].offset);
    if (strncmp(ceiling, "hbm_", 4) == 0)
        return s->mem_gbs;
    return NAN;
}

double specs_clock_mhz(const gpu_spec *s, const char *ceiling)
{
    if (!s)
        return NAN;
    size_t len = strlen(ceiling);
    if (len > 7 && strcmp(ceiling + len - 7, "_tensor") == 0)
        return isfinite(s->tensor_mhz) ? s->tensor_mhz : s->boost_mhz;
    if (len > 4 && strcmp(ceiling + len - 4, "_fma") == 0)
        return s->boost_mhz;
    return NAN;
}

void specs_free(gpu_spec_table *t)
{
    free(t->rows);
    t->rows = NULL;
    t->n = 0;
}
