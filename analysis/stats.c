#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_quantile_sorted(const double *sorted, int n, double p)
{
    if (n <= 0)
        return NAN;
    double h = (n - 1) * p;
    int lo = (int)floor(h);
    if (lo >= n - 1)
        return sorted[n - 1];
    if (lo < 0)
        return sorted[0];
    return sorted[lo] + (h - lo) * (sorted[lo + 1] - sorted[lo]);
}

double stats_mean(const double *x, int n)
{
    if (n <= 0)
        return NAN;
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i];
    return s / n;
}

double stats_stddev(const double *x, int n)
{
    if (n < 2)
        return NAN;
    double m = stats_mean(x, n), ss = 0;
    for (int i = 0; i < n; i++)
        ss += (x[i] - m) * (x[i] - m);
    return sqrt(ss / (n - 1));
}

int stats_median_ci_rank(int n)
{
    /* Binomial(n, 1/2) terms in log space: 2^-n underflows past n = 1074. */
    double log_half_n = -n * log(2.0), cdf = 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        cdf += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) + log_half_n);
        if (cdf > 0.025)
            break;
        k = i + 1;
    }
    return k;
}

static double median_of_copy(const double *x, int n, double *scratch)
{
    memcpy(scratch, x, (size_t)n * sizeof *x);
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_double);
    return stats_quantile_sorted(scratch, n, 0.5);
}

double stats_drift_pct(const double *x, int n)
{
    int m = n / 5;
    if (m < 1)
        return NAN;
    double *scratch = malloc((size_t)m * sizeof *scratch);
    if (!scratch)
        return NAN;
    double first = median_of_copy(x, m, scratch);
    double last = median_of_copy(x + n - m, m, scratch);
    free(scratch);
    if (first == 0)
        return NAN;
    return 100.0 * (last - first) / first;
}

int stats_outliers(const double *x, int n, double q1, double q3)
{
    double iqr = q3 - q1, lo = q1 - 1.5 * iqr, hi = q3 + 1.5 * iqr;
    int count = 0;
    for (int i = 0; i < n; i++)
        count += x[i] < lo || x[i] > hi;
    return count;
}

int stats_describe(const double *x, int n, stats_summary *out)
{
    *out = (stats_summary){.n = n < 0 ? 0 : n, .mean = NAN, .median = NAN, .q1 = NAN,
                           .q3 = NAN, .stddev = NAN, .cv = NAN, .min = NAN, .max = NAN,
                           .ci95_lo = NAN, .ci95_hi = NAN, .drift_pct = NAN};
    if (n <= 0)
        return 0;
    double *s = malloc((size_t)n * sizeof *s);
    if (!s)
        return -1;
    memcpy(s, x, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    out->mean = stats_mean(x, n);
    out->median = stats_quantile_sorted(s, n, 0.5);
    out->q1 = stats_quantile_sorted(s, n, 0.25);
    out->q3 = stats_quantile_sorted(s, n, 0.75);
    out->stddev = stats_stddev(x, n);
    if (isfinite(out->stddev) && out->mean != 0)
        out->cv = out->stddev / out->mean;
    out->min = s[0];
    out->max = s[n - 1];
    int k = stats_median_ci_rank(n);
    if (k > 0) {
        out->ci95_lo = s[k - 1];
        out->ci95_hi = s[n - k];
    }
    out->outliers = stats_outliers(x, n, out->q1, out->q3);
    free(s);
    out->drift_pct = stats_drift_pct(x, n);
    return 0;
}
