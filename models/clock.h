/* The one clock the suite times its host-side work with: monotonic, so that
 * no wall-clock step moves a measurement, in seconds as a double. */
#ifndef ROOFLINE_CLOCK_H
#define ROOFLINE_CLOCK_H

#include <time.h>

static inline double monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
