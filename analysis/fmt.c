#include "fmt.h"

#include "csv.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *fmt_num(char buf[FMT_LEN], double v)
{
    double a = fabs(v);
    if (!isfinite(v))
        snprintf(buf, FMT_LEN, "-");
    else if (a >= 100 || a == 0)
        snprintf(buf, FMT_LEN, "%.0f", v);
    else if (a >= 10)
        snprintf(buf, FMT_LEN, "%.1f", v);
    else if (a >= 1)
        snprintf(buf, FMT_LEN, "%.2f", v);
    else
        snprintf(buf, FMT_LEN, "%.3g", v);
    return buf;
}

const char *fmt_pct(char buf[FMT_LEN], double pct)
{
    if (!isfinite(pct))
        snprintf(buf, FMT_LEN, "-");
    else if (pct > 0 && pct < 0.05)
        snprintf(buf, FMT_LEN, "<0.1%%"); /* not "0.0%": it is there */
    else
        snprintf(buf, FMT_LEN, fabs(pct) < 10 ? "%.1f%%" : "%.0f%%", pct);
    return buf;
}

const char *fmt_share(char buf[FMT_LEN], double fraction)
{
    return fmt_pct(buf, 100 * fraction);
}

const char *fmt_signed_pct(char buf[FMT_LEN], double pct)
{
    if (!isfinite(pct))
        snprintf(buf, FMT_LEN, "-");
    else
        snprintf(buf, FMT_LEN, fabs(pct) < 10 ? "%+.1f%%" : "%+.0f%%", pct);
    return buf;
}

const char *fmt_ms_of_ns(char buf[FMT_LEN], double ns)
{
    return fmt_num(buf, ns / 1e6);
}

/* v in `base` units, or in thousands of them (`big`) from 10000 up. */
static const char *fmt_scaled(char buf[FMT_LEN], double v, const char *base, const char *big)
{
    char n[FMT_LEN];
    if (!isfinite(v))
        snprintf(buf, FMT_LEN, "-");
    else if (fabs(v) >= 1e4)
        snprintf(buf, FMT_LEN, "%s %s", fmt_num(n, v / 1e3), big);
    else
        snprintf(buf, FMT_LEN, "%s %s", fmt_num(n, v), base);
    return buf;
}

const char *fmt_gflops(char buf[FMT_LEN], double gflops)
{
    return fmt_scaled(buf, gflops, "GFLOP/s", "TFLOP/s");
}

const char *fmt_gbs(char buf[FMT_LEN], double gbs)
{
    return fmt_scaled(buf, gbs, "GB/s", "TB/s");
}

const char *fmt_value_unit(char buf[FMT_LEN], double v, const char *unit)
{
    if (strcmp(unit, "GFLOP/s") == 0)
        return fmt_gflops(buf, v);
    if (strcmp(unit, "GB/s") == 0)
        return fmt_gbs(buf, v);
    char n[FMT_LEN];
    snprintf(buf, FMT_LEN, "%s%s%.16s", fmt_num(n, v), *unit ? " " : "", unit);
    return buf;
}

void fmt_append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    if (*used >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, len - *used, fmt, ap);
    va_end(ap);
    if (n > 0)
        *used = *used + (size_t)n < len ? *used + (size_t)n : len;
}

const char *fmt_count(char buf[FMT_LEN], double v)
{
    return csv_format_num(buf, v);
}
