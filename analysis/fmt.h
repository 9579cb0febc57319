/* Numbers as the report prints them: a few significant digits, no exponent,
 * and a dash for a value that was not measured (NaN). Each returns buf. */
#ifndef ROOFLINE_FMT_H
#define ROOFLINE_FMT_H

#include <stddef.h>

enum { FMT_LEN = 48 };

/* 3 significant digits below 100, whole numbers from 100 up: 0.0123, 1.23,
 * 12.3, 123, 12345. */
const char *fmt_num(char buf[FMT_LEN], double v);
/* A value already in percent: "8.4%", "61%" (one decimal under 10), "<0.1%"
 * for a small positive one. */
const char *fmt_pct(char buf[FMT_LEN], double pct);
/* A fraction as a percentage: 0.61 -> "61%". */
const char *fmt_share(char buf[FMT_LEN], double fraction);
/* A signed percentage: "+4.1%", "-0.8%". */
const char *fmt_signed_pct(char buf[FMT_LEN], double pct);
/* Nanoseconds as milliseconds: "12.3 ms" without the unit: "12.3". */
const char *fmt_ms_of_ns(char buf[FMT_LEN], double ns);

/* Rates with their unit, scaled so that the number stays short:
 * "234 GFLOP/s", "62.0 TFLOP/s"; "59.1 GB/s", "31.0 TB/s"; "-" when NaN. */
const char *fmt_gflops(char buf[FMT_LEN], double gflops);
const char *fmt_gbs(char buf[FMT_LEN], double gbs);
/* A value in `unit`: the two above for GFLOP/s and GB/s, else "3.69 GHz". */
const char *fmt_value_unit(char buf[FMT_LEN], double v, const char *unit);

/* A count as the CSV files write it: whole numbers in full, others with 6
 * significant digits ("3", "1.5"); "" when NaN. */
const char *fmt_count(char buf[FMT_LEN], double v);

/* Appends to buf[len] at *used, never past the end (the text is cut there). */
void fmt_append(char *buf, size_t len, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
