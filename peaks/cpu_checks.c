#include "cpu_checks.h"

#include <stdio.h>
#include <string.h>

/* How far apart the best and runner-up trials may be: FMA chains and cache
 * reads repeat to within 1-2% on a quiet core, DRAM less so. */
#define TOL_FMA 0.03
#define TOL_CACHE 0.05
#define TOL_DRAM 0.08

static const char *const prec_names[2] = {"fp32", "fp64"};

static int add(check_set *s, const char *name, int group, cpu_figure v, double tol)
{
    return v.best > 0 ? check_add(s, name, group, v.best, v.second, tol) : -1;
}

static void relate(check_set *s, int low, int high, double factor, const char *what)
{
    if (low >= 0 && high >= 0)
        check_relate(s, low, high, factor, what);
}

static void fma_checks(const cpu_figures *f, check_set *s, cpu_check_index *ix)
{
    bool all_cores = f->threads > 1;
    for (int p = 0; p < 2; p++)
        for (int all = 0; all < (all_cores ? 2 : 1); all++) {
            char name[32];
            snprintf(name, sizeof name, "%s_fma%s", prec_names[p],
                     !all && all_cores ? "_1core" : "");
            ix->fma[p][all] = add(s, name, CPU_G_FMA + 2 * p + all, f->fma[p][all], TOL_FMA);
        }
    char what[96];
    double cores = f->cores > 0 ? f->cores : 1;
    for (int p = 0; p < 2 && all_cores; p++) {
        /* a core's throughput does not grow when the others work too, and the
         * all-core frequency drop stays well inside 15% */
        snprintf(what, sizeof what, "all cores >= 0.85 x %d core(s) x 1 core", (int)cores);
        relate(s, ix->fma[p][1], ix->fma[p][0], 0.85 * cores, what);
        snprintf(what, sizeof what, "1 core >= 0.9 x all cores / %d core(s)", (int)cores);
        relate(s, ix->fma[p][0], ix->fma[p][1], 0.9 / cores, what);
    }
    /* one vector unit: fp32 runs lanes32/lanes64 times the fp64 rate */
    double ratio = f->lanes_ratio > 0 ? f->lanes_ratio : 2.0;
    snprintf(what, sizeof what, "1-core fp32 >= 0.85 x %.0f x fp64 (lanes)", ratio);
    relate(s, ix->fma[0][0], ix->fma[1][0], 0.85 * ratio, what);
    snprintf(what, sizeof what, "1-core fp64 >= 0.85 x fp32 / %.0f (lanes)", ratio);
    relate(s, ix->fma[1][0], ix->fma[0][0], 0.85 / ratio, what);
}

static void stream_checks(const cpu_figures *f, check_set *s, cpu_check_index *ix)
{
    for (int one = 0; one < (f->threads > 1 ? 2 : 1); one++)
        for (int k = 0; k < STREAM_KERNELS; k++) {
            if (one && k != STREAM_TRIAD)
                continue;
            char name[32];
            snprintf(name, sizeof name, "dram_%s%s", stream_kernel_name((stream_kernel)k),
                     one ? "_1core" : "");
            ix->stream[one][k] = add(s, name, one ? CPU_G_STREAM_ONE : CPU_G_STREAM_ALL,
                                     f->stream[one][k], TOL_DRAM);
        }
    /* STREAM's four kernels move the same arrays: within a quarter of each
     * other even where write-allocate adds a hidden read (copy counts 2 of
     * the 3 arrays it moves, triad 3 of 4) */
    for (int k = 0; k < STREAM_KERNELS; k++)
        for (int j = 0; j < STREAM_KERNELS; j++)
            if (j != k)
                relate(s, ix->stream[0][k], ix->stream[0][j], 0.75,
                       "STREAM kernels within 25% of each other");
    relate(s, ix->stream[0][STREAM_TRIAD], ix->stream[1][STREAM_TRIAD], 0.9,
           "all-thread triad >= 0.9 x 1-thread triad");
}

static void level_checks(const cpu_figures *f, check_set *s, cpu_check_index *ix)
{
    int dram_level = f->levels + 1;
    for (int level = 1; level <= dram_level; level++) {
        char name[32];
        if (level == dram_level)
            snprintf(name, sizeof name, "dram_read");
        else
            snprintf(name, sizeof name, "l%d", level);
        ix->level[level] = add(s, name, CPU_G_LEVEL + level - 1, f->level[level],
                               level == dram_level ? TOL_DRAM : TOL_CACHE);
    }
    /* a level is at least as fast as the one below it */
    for (int level = 1; level < dram_level; level++)
        relate(s, ix->level[level], ix->level[level + 1], 0.9,
               "a cache level >= 0.9 x the level below it");
    /* read-only sweeps and the triad draw on the same DRAM: a triad counts 3
     * of the 4 arrays it moves where stores allocate, hence the loose bound */
    int dram = ix->level[dram_level], triad = ix->stream[0][STREAM_TRIAD];
    relate(s, triad, dram, 0.4, "triad >= 0.4 x dram_read");
    relate(s, dram, triad, 0.5, "dram_read >= 0.5 x triad");
}

void cpu_checks_build(const cpu_figures *f, check_set *s, cpu_check_index *ix)
{
    memset(s, 0, sizeof *s);
    memset(ix, -1, sizeof *ix);
    fma_checks(f, s, ix);
    stream_checks(f, s, ix);
    level_checks(f, s, ix);
}
