/* Descriptive statistics of a sample of step times (variability.csv,
 * summary.csv). Every function takes the values in measurement order and
 * leaves the caller's array untouched; undefined results are NaN (written as
 * empty cells). */
#ifndef ROOFLINE_STATS_H
#define ROOFLINE_STATS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int n;
    double mean;
    double median;
    double q1, q3;           /* quartiles, linear interpolation (below) */
    double stddev;           /* sample standard deviation (n - 1); NaN for n < 2 */
    double cv;               /* stddev / mean; NaN when either is undefined or mean is 0 */
    double min, max;
    double ci95_lo, ci95_hi; /* order-statistic interval of the median; NaN for n < 6 */
    double drift_pct;        /* warm-up drift; NaN for n < 5 */
    int outliers;            /* points beyond 1.5 IQR of the quartiles */
} stats_summary;

/* The p-quantile (0 <= p <= 1) of an ascending array, by linear interpolation
 * between order statistics: h = (n - 1) p, x[floor h] + (h - floor h)
 * (x[floor h + 1] - x[floor h]) (Hyndman and Fan type 7, numpy's default).
 * NaN for n = 0. */
double stats_quantile_sorted(const double *sorted, int n, double p);

double stats_mean(const double *x, int n);
/* Sample standard deviation, divisor n - 1 (two-pass, so large means do not
 * cancel the digits that matter). NaN for n < 2. */
double stats_stddev(const double *x, int n);

/* 1-based rank k of the distribution-free 95% interval of the median,
 * [x(k), x(n+1-k)]: the largest k >= 1 with P(B <= k-1) <= 0.025 for
 * B ~ Binomial(n, 1/2), so the coverage 1 - 2 P(B <= k-1) is at least 95%.
 * 0 when no such k exists (n < 6). n = 6 gives k = 1 (96.9%), n = 10 gives
 * k = 2 (97.9%), n = 20 gives k = 6 (95.9%). */
int stats_median_ci_rank(int n);

/* Warm-up drift: the median of the last fifth of the sequence against the
 * median of the first fifth (floor(n / 5) points each), in percent:
 * 100 (last - first) / first. Medians, so one slow step does not read as a
 * trend. NaN for n < 5 or a first fifth of median 0. */
double stats_drift_pct(const double *x, int n);

/* Points below q1 - 1.5 IQR or above q3 + 1.5 IQR (Tukey's fences). */
int stats_outliers(const double *x, int n, double q1, double q3);

/* Everything above for x[0..n-1] in measurement order. Returns 0, or -1 when
 * out of memory (a sorted copy is made). n = 0 gives n = 0 and NaNs. */
int stats_describe(const double *x, int n, stats_summary *out);

#ifdef __cplusplus
}
#endif

#endif
