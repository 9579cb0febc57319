/* env.json as the run model holds it (run_env in run.h): a tolerant scan
 * into flat (key, value) pairs in file order, so the report shows whatever
 * bin/envinfo recorded without knowing its schema. A file that breaks off or
 * is malformed gives the entries read up to that point. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "run_env.h"

enum { ENV_MAX_BYTES = 4 << 20, ENV_MAX_DEPTH = 32 };

typedef struct {
    const char *p, *end;
    run_env *out;
    bool oom;
} scanner;

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static void skip_space(scanner *s)
{
    while (s->p < s->end && strchr(" \t\r\n", *s->p))
        s->p++;
}

static bool add_entry(scanner *s, const char *key, const char *value)
{
    run_env *e = s->out;
    if (e->n == e->cap) {
        int cap = e->cap ? 2 * e->cap : 64;
        run_env_entry *p = realloc(e->items, (size_t)cap * sizeof *p);
        if (!p) {
            s->oom = true;
            return false;
        }
        e->items = p;
        e->cap = cap;
    }
    run_env_entry *x = &e->items[e->n++];
    snprintf(x->key, sizeof x->key, "%s", key);
    snprintf(x->value, sizeof x->value, "%s", value);
    return true;
}

/* A string literal at s->p into out (truncated to len); escapes decoded,
 * \u escapes of non-ASCII characters read as '?'. */
static bool scan_string(scanner *s, char *out, size_t len)
{
    if (s->p >= s->end || *s->p != '"')
        return false;
    s->p++;
    size_t n = 0;
    while (s->p < s->end && *s->p != '"') {
        char c = *s->p++;
        if (c == '\\') {
            if (s->p >= s->end)
                return false;
            char e = *s->p++;
            switch (e) {
            case 'n': c = ' '; break;
            case 't': c = ' '; break;
            case 'r': c = ' '; break;
            case 'b': case 'f': c = ' '; break;
            case 'u': {
                /* four hex digits, read here: the buffer need not end in a NUL */
                unsigned v = 0;
                for (int i = 0; i < 4; i++, s->p++) {
                    int d = s->p < s->end ? hex_digit(*s->p) : -1;
                    if (d < 0)
                        return false;
                    v = v * 16 + (unsigned)d;
                }
                c = v < 0x80 && v >= 0x20 ? (char)v : '?';
                break;
            }
            default: c = e; /* \" \\ \/ */
            }
        }
        if (n + 1 < len)
            out[n++] = c;
    }
    if (s->p >= s->end)
        return false;
    s->p++;
    out[n] = '\0';
    return true;
}

/* A number, true, false or null, as its text. */
static bool scan_bare(scanner *s, char *out, size_t len)
{
    const char *start = s->p;
    while (s->p < s->end && !strchr(",]} \t\r\n", *s->p))
        s->p++;
    size_t n = (size_t)(s->p - start);
    if (n == 0)
        return false;
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), start);
    return true;
}

static bool scan_value(scanner *s, const char *path, int depth);

static bool scan_object(scanner *s, const char *path, int depth)
{
    s->p++; /* { */
    skip_space(s);
    if (s->p < s->end && *s->p == '}') {
        s->p++;
        return true;
    }
    for (;;) {
        char key[128], child[256];
        skip_space(s);
        if (!scan_string(s, key, sizeof key))
            return false;
        skip_space(s);
        if (s->p >= s->end || *s->p != ':')
            return false;
        s->p++;
        snprintf(child, sizeof child, "%s%s%s", path, *path ? "." : "", key);
        if (!scan_value(s, child, depth + 1))
            return false;
        skip_space(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == '}') {
            s->p++;
            return true;
        }
        return false;
    }
}

static bool scan_array(scanner *s, const char *path, int depth)
{
    s->p++; /* [ */
    char joined[1024] = "";
    size_t used = 0;
    bool any_plain = false;
    int count = 0;
    for (int i = 0;; i++) {
        skip_space(s);
        if (s->p < s->end && *s->p == ']' && i == 0) {
            s->p++;
            break;
        }
        count++;
        if (s->p < s->end && (*s->p == '{' || *s->p == '[')) {
            char child[256];
            snprintf(child, sizeof child, "%s[%d]", path, i);
            if (!scan_value(s, child, depth + 1))
                return false;
        } else {
            char v[1024];
            /* an array that breaks off after a comma ends at the buffer's end */
            bool ok = s->p < s->end &&
                      (*s->p == '"' ? scan_string(s, v, sizeof v) : scan_bare(s, v, sizeof v));
            if (!ok)
                return false;
            if (used < sizeof joined)
                used += (size_t)snprintf(joined + used, sizeof joined - used, "%s%s",
                                         any_plain ? ", " : "", v);
            any_plain = true;
        }
        skip_space(s);
        if (s->p < s->end && *s->p == ',') {
            s->p++;
            continue;
        }
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            break;
        }
        return false;
    }
    /* an empty array says "none", which is worth showing */
    if (count == 0)
        return add_entry(s, path, "(none)");
    return any_plain ? add_entry(s, path, joined) : true;
}

static bool scan_value(scanner *s, const char *path, int depth)
{
    skip_space(s);
    if (s->p >= s->end || depth > ENV_MAX_DEPTH)
        return false;
    if (*s->p == '{')
        return scan_object(s, path, depth);
    if (*s->p == '[')
        return scan_array(s, path, depth);
    char v[1024];
    bool ok = *s->p == '"' ? scan_string(s, v, sizeof v) : scan_bare(s, v, sizeof v);
    return ok && add_entry(s, path, v);
}

int run_env_parse(run_env *env, const char *buf, size_t len)
{
    scanner s = {.p = buf, .end = buf + len, .out = env};
    env->complete = scan_value(&s, "", 0);
    if (s.oom) {
        free(env->items);
        env->items = NULL;
        env->n = env->cap = 0;
        return -1;
    }
    return 0;
}

int run_read_env(run_env *env, const char *path)
{
    memset(env, 0, sizeof *env);
    env->present = true;
    FILE *f = csv_open_read(path, false, env->error, sizeof env->error);
    if (!f)
        return 0;
    char *buf = malloc(ENV_MAX_BYTES);
    if (!buf) {
        fclose(f);
        return -1;
    }
    size_t n = fread(buf, 1, ENV_MAX_BYTES, f);
    fclose(f);
    int rc = run_env_parse(env, buf, n);
    free(buf);
    return rc;
}

const char *run_env_get(const run_env *e, const char *key)
{
    for (int i = 0; i < e->n; i++)
        if (strcmp(e->items[i].key, key) == 0)
            return e->items[i].value;
    return NULL;
}
