#include "algo_cache.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int algo_cache_key(const algo_context *x, const conv_shape *s, char *key, size_t len)
{
    char device[96];
    size_t d = 0;
    for (const char *p = x->device ? x->device : "?"; *p && d + 1 < sizeof device; p++)
        device[d++] = (*p == ',' || isspace((unsigned char)*p) || iscntrl((unsigned char)*p))
                          ? '_'
                          : *p;
    device[d] = '\0';
    int w = snprintf(key, len,
                     "%s;cc%d;sm%d;cudnn%d;%s;ws%lld;dw-%s-%08" PRIx32
                     ";%s;bias-%s;api-%s;n%dc%dh%dw%d-k%dr%ds%d-p%du%dg%d-%s%s",
                     device, x->cc, x->sm_count, x->cudnn_version, precision_name(s->prec),
                     (long long)x->workspace_limit, depthwise_choice_name(x->depthwise),
                     x->own_depthwise, x->no_fusion ? "unfused" : "fused",
                     conv_bias_choice_name(x->conv_bias), conv_api_choice_name(x->conv_api), s->n,
                     s->c, s->h, s->w, s->k, s->r,
                     s->s, s->pad, s->stride, s->groups, s->input_grad ? "dgrad" : "nodgrad",
                     s->bias_relu ? "-biasrelu" : "");
    return w < 0 || (size_t)w >= len ? -1 : 0;
}

/* ---- the rows ------------------------------------------------------------ */

enum { N_FIELDS = 28, LINE_MAX_LEN = 1024 };

static bool parse_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool parse_float(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* ERANGE for a value too small to hold is that value rounded: fine */
    if ((errno && !(errno == ERANGE && fabs(v) < 1.0)) || end == s || *end)
        return false;
    *out = v;
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    if (strcmp(s, "0") != 0 && strcmp(s, "1") != 0)
        return false;
    *out = s[0] == '1';
    return true;
}

/* One row (its newline removed) into *c; what is wrong with it, or NULL. */
static const char *parse_row(char *line, algo_choice *c)
{
    char *f[N_FIELDS];
    int n = 0;
    for (char *p = line; n < N_FIELDS; n++) {
        f[n] = p;
        char *comma = strchr(p, ',');
        if (!comma) {
            n++;
            break;
        }
        *comma = '\0';
        p = comma + 1;
        if (n == N_FIELDS - 1)
            return "the wrong number of fields";
    }
    if (n != N_FIELDS)
        return "the wrong number of fields";
    if (!f[0][0] || strlen(f[0]) >= sizeof c->key)
        return "bad key";
    snprintf(c->key, sizeof c->key, "%s", f[0]);
    conv_pass_choice *ch = &c->choice;
    long long pass, algo, math, ws;
    double find, cudnn, own, diff, own_bias, fused_bias, fused_diff;
    conv_bias_trial *bt = &ch->bias_trial;
    if (!parse_int(f[1], 0, ALGO_PASSES - 1, &pass))
        return "bad pass";
    if (!parse_bool(f[2], &ch->own))
        return "bad own";
    if (!parse_int(f[3], -1, 1000, &algo))
        return "bad algo";
    if (!parse_int(f[4], 0, 1000, &math))
        return "bad math";
    if (!parse_int(f[5], 0, INT64_MAX, &ws))
        return "bad workspace_bytes";
    if (!parse_float(f[6], &find))
        return "bad find_ms";
    if (!parse_float(f[7], &cudnn))
        return "bad cudnn_ms";
    if (!parse_float(f[8], &own))
        return "bad own_ms";
    if (!parse_bool(f[9], &ch->trial.verified))
        return "bad verified";
    if (!parse_bool(f[10], &ch->trial.matched))
        return "bad matched";
    if (!parse_float(f[11], &diff))
        return "bad own_difference";
    if (!parse_bool(f[12], &ch->fused))
        return "bad fused";
    if (!parse_float(f[13], &own_bias))
        return "bad bias_own_ms";
    if (!parse_float(f[14], &fused_bias))
        return "bad bias_fused_ms";
    if (!parse_bool(f[15], &bt->verified))
        return "bad bias_verified";
    if (!parse_bool(f[16], &bt->matched))
        return "bad bias_matched";
    if (!parse_float(f[17], &fused_diff))
        return "bad bias_difference";
    if (ch->fused && (pass != 0 || ch->own))
        return "fused outside a cuDNN forward";
    conv_api_trial *at = &ch->api_trial;
    long long engine, rank, offered, tried;
    double legacy, graph, graph_diff;
    if (!parse_bool(f[18], &ch->graph))
        return "bad graph";
    if (!parse_int(f[19], -1, INT32_MAX, &engine))
        return "bad engine";
    if (!parse_int(f[20], -1, 1000, &rank))
        return "bad config_rank";
    if (!parse_float(f[21], &legacy))
        return "bad legacy_ms";
    if (!parse_float(f[22], &graph))
        return "bad graph_ms";
    if (!parse_int(f[23], 0, 1000, &offered))
        return "bad offered";
    if (!parse_int(f[24], 0, 1000, &tried))
        return "bad tried";
    if (!parse_bool(f[25], &at->verified))
        return "bad graph_verified";
    if (!parse_bool(f[26], &at->matched))
        return "bad graph_matched";
    if (!parse_float(f[27], &graph_diff))
        return "bad graph_difference";
    /* graph and fused: the graph API's conv+bias+ReLU */
    if (ch->graph && (ch->own || engine < 0 || rank < 0))
        return "graph outside a cuDNN convolution, or without its engine";
    ch->engine = (int)engine, ch->config_rank = (int)rank;
    at->legacy_ms = (float)legacy, at->graph_ms = (float)graph;
    at->offered = (int)offered, at->tried = (int)tried;
    at->difference = graph_diff;
    c->pass = (int)pass;
    ch->algo = (int)algo;
    ch->math = (int)math;
    ch->workspace_bytes = ws;
    ch->find_ms = (float)find, ch->trial.cudnn_ms = (float)cudnn, ch->trial.own_ms = (float)own;
    ch->own_difference = diff;
    bt->own_ms = (float)own_bias, bt->fused_ms = (float)fused_bias, bt->difference = fused_diff;
    return NULL;
}

static int push(algo_cache *c, const algo_choice *row)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 32;
        algo_choice *v = realloc(c->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        c->v = v, c->cap = cap;
    }
    c->v[c->n++] = *row;
    return 0;
}

/* Rows from the start of f into c. */
static int read_rows(FILE *f, const char *path, algo_cache *c, char *err, size_t err_len)
{
    char line[LINE_MAX_LEN];
    int row = 0;
    while (fgets(line, sizeof line, f)) {
        row++;
        size_t n = strlen(line);
        if (n > 0 && line[n - 1] != '\n') {
            if (feof(f))
                break; /* a row still being written, or cut short: not there yet */
            snprintf(err, err_len, "%s: line %d is longer than %d bytes", path, row,
                     LINE_MAX_LEN - 1);
            return -1;
        }
        line[strcspn(line, "\r\n")] = '\0';
        /* a blank line, or the header again (two writers on a file system
         * without locks): nothing */
        if (row > 1 && (!line[0] || strcmp(line, ALGO_CACHE_HEADER) == 0))
            continue;
        if (row == 1) {
            if (strcmp(line, ALGO_CACHE_HEADER) != 0) {
                snprintf(err, err_len,
                         "%s is not an algorithm cache (its first line is not '%s'): give "
                         "--algo-cache another file",
                         path, ALGO_CACHE_HEADER);
                return -1;
            }
            continue;
        }
        algo_choice ch = {0};
        const char *bad = parse_row(line, &ch);
        if (bad) {
            snprintf(err, err_len, "%s line %d: %s (delete the file to search again)", path, row,
                     bad);
            return -1;
        }
        if (push(c, &ch)) {
            snprintf(err, err_len, "%s: out of memory", path);
            return -1;
        }
    }
    if (ferror(f)) {
        snprintf(err, err_len, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int algo_cache_read(const char *path, algo_cache *c, char *err, size_t err_len)
{
    *c = (algo_cache){0};
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, err_len, "%s: %s", path, strerror(errno));
        return -1;
    }
    /* a shared lock where there are locks: no row half written by another */
    bool locked = flock(fileno(f), LOCK_SH) == 0;
    int rc = read_rows(f, path, c, err, err_len);
    if (locked)
        flock(fileno(f), LOCK_UN);
    fclose(f);
    if (rc)
        algo_cache_free(c);
    return rc;
}

const algo_choice *algo_cache_find(const algo_cache *c, const char *key, int pass)
{
    for (int i = 0; i < c->n; i++)
        if (c->v[i].pass == pass && strcmp(c->v[i].key, key) == 0)
            return &c->v[i];
    return NULL;
}

static int format_row(const algo_choice *r, char *line, size_t len)
{
    const conv_pass_choice *ch = &r->choice;
    const conv_bias_trial *bt = &ch->bias_trial;
    const conv_api_trial *at = &ch->api_trial;
    int w = snprintf(line, len,
                     "%s,%d,%d,%d,%d,%lld,%.9g,%.9g,%.9g,%d,%d,%.17g,%d,%.9g,%.9g,%d,%d,%.17g,"
                     "%d,%d,%d,%.9g,%.9g,%d,%d,%d,%d,%.17g\n",
                     r->key, r->pass, ch->own, ch->algo, ch->math, (long long)ch->workspace_bytes,
                     (double)ch->find_ms, (double)ch->trial.cudnn_ms, (double)ch->trial.own_ms,
                     ch->trial.verified, ch->trial.matched, ch->own_difference, ch->fused,
                     (double)bt->own_ms, (double)bt->fused_ms, bt->verified, bt->matched,
                     bt->difference, ch->graph, ch->graph ? ch->engine : -1,
                     ch->graph ? ch->config_rank : -1, (double)at->legacy_ms,
                     (double)at->graph_ms, at->offered, at->tried, at->verified, at->matched,
                     at->difference);
    return w < 0 || (size_t)w >= len ? -1 : w;
}

static int write_all(int fd, const char *text, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, text, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        text += w, n -= (size_t)w;
    }
    return 0;
}

/* Cuts the file back to its last newline where its end is a row without
 * one (a line longer than any row is left to the reader to refuse); its
 * size then, or -1. */
static off_t drop_cut_row(int fd)
{
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0)
        return size;
    char tail[LINE_MAX_LEN];
    off_t from = size > (off_t)sizeof tail ? size - (off_t)sizeof tail : 0;
    ssize_t got = pread(fd, tail, (size_t)(size - from), from);
    if (got != size - from)
        return got < 0 ? -1 : size;
    if (tail[got - 1] == '\n')
        return size;
    for (ssize_t i = got - 1; i >= 0; i--)
        if (tail[i] == '\n')
            return ftruncate(fd, from + i + 1) == 0 ? from + i + 1 : -1;
    return from == 0 && ftruncate(fd, 0) == 0 ? 0 : size;
}

int algo_cache_append(const char *path, algo_cache *c, const algo_choice *rows, int n,
                      char *err, size_t err_len)
{
    /* read too: the end says whether a row was cut short */
    int fd = open(path, O_RDWR | O_APPEND | O_CREAT, 0644);
    if (fd < 0) {
        snprintf(err, err_len, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    /* the lock keeps a second header out of a new file and a row being
     * written out of the cut below; where the file system has no locks (some
     * NFS mounts) whole lines are still appended, and no row is cut */
    bool locked = flock(fd, LOCK_EX) == 0;
    /* a row cut short (a full disk, a crash) goes; the header comes first
     * where the file is new */
    const char *why = NULL;
    off_t size = locked ? drop_cut_row(fd) : lseek(fd, 0, SEEK_END);
    if (size < 0)
        why = strerror(errno);
    else if (size == 0 && write_all(fd, ALGO_CACHE_HEADER "\n", strlen(ALGO_CACHE_HEADER) + 1))
        why = strerror(errno);
    for (int i = 0; i < n && !why; i++) {
        char line[LINE_MAX_LEN];
        int len = format_row(&rows[i], line, sizeof line);
        if (len < 0)
            why = "a row longer than a line";
        else if (write_all(fd, line, (size_t)len))
            why = strerror(errno);
        else if (push(c, &rows[i]))
            why = "out of memory";
    }
    if (why) {
        snprintf(err, err_len, "%s: cannot write it: %s", path, why);
        rc = -1;
    }
    if (locked)
        flock(fd, LOCK_UN);
    if (close(fd) != 0 && rc == 0) {
        snprintf(err, err_len, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    return rc;
}

void algo_cache_free(algo_cache *c)
{
    free(c->v);
    *c = (algo_cache){0};
}
