/* The core clock as it runs now, from a chain of dependent integer adds: every
 * core of the last twenty years retires one such add per cycle, so adds per
 * second is cycles per second, with no counters and no privileges. */
#ifndef ROOFLINE_CPU_CLOCK_H
#define ROOFLINE_CPU_CLOCK_H

/* GHz of the calling thread's core over about `seconds` (best of short
 * slices, since an interruption only ever makes a slice look slower). */
double cpu_clock_ghz(double seconds);

#endif
