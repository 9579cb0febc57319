#include "plot_out.h"

#include "../csv.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

int plot_make_dirs(const char *base, const char *sub, char *err, size_t err_len)
{
    char p[RUN_PATH_LEN + 64];
    size_t base_len = strlen(base);
    if ((size_t)snprintf(p, sizeof p, "%s/%s", base, sub) >= sizeof p) {
        snprintf(err, err_len, "%s/%s: path too long", base, sub);
        return -1;
    }
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            snprintf(err, err_len, "cannot create %s: %s", p, strerror(errno));
            return -1;
        }
        struct stat st;
        /* the caller's base may be reached through links; what is inside may not */
        bool inside = (size_t)(s - p) > base_len;
        if (inside && (lstat(p, &st) != 0 || !S_ISDIR(st.st_mode))) {
            snprintf(err, err_len, "%s is not a folder (a link or a file): remove it; files are "
                                   "written only inside the run folder", p);
            return -1;
        }
        *s = c;
        if (c == '\0')
            return 0;
    }
}

int plot_file_open(plot_file *pf, const char *prefix, const char *suffix, char *err,
                   size_t err_len)
{
    if ((size_t)snprintf(pf->path, sizeof pf->path, "%s%s", prefix, suffix) >= sizeof pf->path) {
        snprintf(err, err_len, "%s%s: path too long", prefix, suffix);
        return -1;
    }
    pf->f = csv_create(pf->path, pf->tmp, sizeof pf->tmp, err, err_len);
    return pf->f ? 0 : -1;
}

int plot_file_close(plot_file *pf, char *err, size_t err_len)
{
    int status = csv_commit(pf->f, pf->tmp, pf->path, err, err_len);
    pf->f = NULL;
    return status;
}

void plot_file_abort(plot_file *pf)
{
    if (pf->f)
        csv_abort(pf->f, pf->tmp);
    pf->f = NULL;
}

static void put_gp_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if (*s == '\n')
            fputs("\\n", f);
        else if (*s != '\r')
            fputc(*s, f);
    }
    fputc('"', f);
}

static void put_gp_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.8g", v);
    else
        fputs("NaN", f);
}

void plot_var_str(FILE *f, const char *name, const char *value)
{
    fprintf(f, "%s = ", name);
    put_gp_string(f, value);
    fputc('\n', f);
}

void plot_var_num(FILE *f, const char *name, double value)
{
    fprintf(f, "%s = ", name);
    put_gp_num(f, value);
    fputc('\n', f);
}

void plot_var_str_i(FILE *f, const char *name, int i, const char *value)
{
    fprintf(f, "%s_%d = ", name, i);
    put_gp_string(f, value);
    fputc('\n', f);
}

void plot_var_num_i(FILE *f, const char *name, int i, double value)
{
    fprintf(f, "%s_%d = ", name, i);
    put_gp_num(f, value);
    fputc('\n', f);
}

void plot_data_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++)
        fputc(*s == '"' ? '\'' : (*s == '\n' || *s == '\r') ? ' ' : *s, f);
    fputc('"', f);
}

double plot_decade_below(double v)
{
    /* the small epsilon keeps an exact power of ten (1000 read as 999.99...) where it is */
    return pow(10, floor(log10(v) + 1e-9));
}

double plot_decade_above(double v)
{
    return pow(10, ceil(log10(v) - 1e-9));
}

double plot_nice_above(double v)
{
    double decade = plot_decade_below(v);
    static const double steps[] = {1, 2, 5, 10};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i] * decade >= v * (1 - 1e-9))
            return steps[i] * decade;
    return 10 * decade;
}

double plot_nice_below(double v)
{
    double decade = plot_decade_below(v);
    static const double steps[] = {5, 2, 1};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i] * decade <= v * (1 + 1e-9))
            return steps[i] * decade;
    return decade;
}

double plot_rate_unit(double top_gflops, const char **unit)
{
    bool tera = top_gflops >= 1e4;
    *unit = tera ? "TFLOP/s" : "GFLOP/s";
    return tera ? 1e-3 : 1;
}

const char *plot_type_color(const char *layer_type, int *spare)
{
    /* compute-heavy types in blues and purples, memory-bound ones in warm colours */
    static const struct {
        const char *type, *color;
    } known[] = {
        {"conv", "#1f77b4"},    {"fc", "#6a3d9a"},      {"bn", "#ff7f0e"},
        {"relu", "#2ca02c"},    {"relu6", "#98c93c"},   {"add", "#d62728"},
        {"maxpool", "#8c564b"}, {"avgpool", "#c49c94"}, {"dropout", "#7f7f7f"},
        {"loss", "#e377c2"},    {"sgd", "#17becf"},     {"comm", "#303030"},
    };
    static const char *const extra[] = {"#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
                                        "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(known[i].type, layer_type) == 0)
            return known[i].color;
    return extra[(*spare)++ % (int)(sizeof extra / sizeof extra[0])];
}

const char *plot_series_color(int i)
{
    static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                         "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
    return colors[i % (int)(sizeof colors / sizeof colors[0])];
}

int plot_series_point(int i)
{
    /* filled circle, square, up and down triangle, diamond, pentagon */
    static const int points[] = {7, 5, 9, 11, 13, 15};
    return points[i % (int)(sizeof points / sizeof points[0])];
}
