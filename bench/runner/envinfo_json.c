#include "envinfo_json.h"

#include <math.h>
#include <stdarg.h>

/* Whether the current level has items yet. env.json nests 3 deep; the clamp
 * only keeps a deeper caller inside the array. */
static bool *has_items(json_writer *w)
{
    return &w->has_items[w->depth < JSON_MAX_DEPTH ? w->depth : JSON_MAX_DEPTH - 1];
}

/* The comma and indentation before an item, then its key. */
static void item(json_writer *w, const char *key)
{
    if (w->depth > 0) {
        fputs(*has_items(w) ? ",\n" : "\n", w->f);
        *has_items(w) = true;
        for (int i = 0; i < w->depth; i++)
            fputs("  ", w->f);
    }
    if (key) {
        json_put_string(w->f, key);
        fputs(": ", w->f);
    }
}

static void open_level(json_writer *w, const char *key, char bracket)
{
    item(w, key);
    fputc(bracket, w->f);
    w->depth++;
    *has_items(w) = false;
}

static void close_level(json_writer *w, char bracket)
{
    if (w->depth == 0)
        return;
    bool had_items = *has_items(w);
    w->depth--;
    if (had_items) {
        fputc('\n', w->f);
        for (int i = 0; i < w->depth; i++)
            fputs("  ", w->f);
    }
    fputc(bracket, w->f);
}

void json_begin(json_writer *w, FILE *f)
{
    w->f = f;
    w->depth = 0;
    open_level(w, NULL, '{');
}

void json_end(json_writer *w)
{
    while (w->depth > 0)
        close_level(w, '}');
    fputc('\n', w->f);
}

void json_object_begin(json_writer *w, const char *key) { open_level(w, key, '{'); }
void json_object_end(json_writer *w) { close_level(w, '}'); }
void json_array_begin(json_writer *w, const char *key) { open_level(w, key, '['); }
void json_array_end(json_writer *w) { close_level(w, ']'); }

/* Length of the UTF-8 sequence starting at s, or 0 when it is not one. */
static int utf8_length(const unsigned char *s)
{
    int n = s[0] >= 0xc2 && s[0] <= 0xdf   ? 2
            : s[0] >= 0xe0 && s[0] <= 0xef ? 3
            : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
                                           : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

void json_put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        if (*p == '"' || *p == '\\') {
            fputc('\\', f);
            fputc(*p++, f);
        } else if (*p == '\n') {
            fputs("\\n", f), p++;
        } else if (*p == '\t') {
            fputs("\\t", f), p++;
        } else if (*p == '\r') {
            fputs("\\r", f), p++;
        } else if (*p < 0x20 || *p == 0x7f) {
            fprintf(f, "\\u%04x", *p++);
        } else if (*p < 0x80) {
            fputc(*p++, f);
        } else {
            int n = utf8_length(p);
            if (n == 0) {
                fputc('?', f);
                p++;
            } else {
                fwrite(p, 1, (size_t)n, f);
                p += n;
            }
        }
    }
    fputc('"', f);
}

void json_string(json_writer *w, const char *key, const char *value)
{
    item(w, key);
    if (value)
        json_put_string(w->f, value);
    else
        fputs("null", w->f);
}

void json_stringf(json_writer *w, const char *key, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_string(w, key, buf);
}

void json_int(json_writer *w, const char *key, long long value)
{
    item(w, key);
    fprintf(w->f, "%lld", value);
}

void json_number(json_writer *w, const char *key, double value)
{
    item(w, key);
    if (isfinite(value))
        fprintf(w->f, "%.6g", value);
    else
        fputs("null", w->f);
}

void json_bool(json_writer *w, const char *key, bool value)
{
    item(w, key);
    fputs(value ? "true" : "false", w->f);
}
