/* The checks the CPU ceilings of one run must pass (peak_check.h): which
 * figures there are, how far apart their trials may be, and the relations
 * the hardware imposes between them. Values in, a check_set out: the
 * measuring stays in cpu_peaks.c, so the rules are tested on made-up figures. */
#ifndef ROOFLINE_CPU_CHECKS_H
#define ROOFLINE_CPU_CHECKS_H

#include "cpu_info.h"
#include "cpu_mem.h"
#include "peak_check.h"

/* Groups: what one measurement refreshes, numbered for the measure callback. */
enum {
    CPU_G_FMA = 0,       /* + 2 x precision (0 fp32, 1 fp64) + (all cores ? 1 : 0) */
    CPU_G_STREAM_ALL = 4,
    CPU_G_STREAM_ONE = 5,
    CPU_G_LEVEL = 6,     /* + level - 1; DRAM (dram_read) is level `levels` + 1 */
};

/* A value and its runner-up trial (NAN when unknown); 0: not measured. */
typedef struct {
    double best, second;
} cpu_figure;

typedef struct {
    int threads;             /* of the all-core runs; 1: there are none */
    int cores;               /* physical cores under those threads */
    double lanes_ratio;      /* fp32 / fp64 flop per cycle of the kernel (2, or 1 scalar) */
    cpu_figure fma[2][2];    /* [fp32, fp64][1 core, all cores] GFLOP/s */
    cpu_figure stream[2][STREAM_KERNELS]; /* [all threads, 1 thread] GB/s; 1 thread: triad */
    int levels;              /* cache levels; level[levels + 1] is DRAM */
    cpu_figure level[CPU_CACHE_LEVELS + 2];
} cpu_figures;

/* Indices into the check_set of each figure, -1 where there is none. */
typedef struct {
    int fma[2][2];
    int stream[2][STREAM_KERNELS];
    int level[CPU_CACHE_LEVELS + 2];
} cpu_check_index;

/* Fills s (emptied first) with the figures of f and their relations. The
 * figures are named as their peaks.csv ceilings. */
void cpu_checks_build(const cpu_figures *f, check_set *s, cpu_check_index *ix);

#endif
