/* What the CPU is: its name, vendor and family (for the FMA pipes per core),
 * and its data caches from sysfs (for the array sizes and the sweep's levels). */
#ifndef ROOFLINE_CPU_INFO_H
#define ROOFLINE_CPU_INFO_H

#include <stddef.h>

enum { CPU_CACHE_LEVELS = 4 };

typedef struct {
    int levels;                        /* deepest data/unified level found */
    size_t bytes[CPU_CACHE_LEVELS + 1]; /* by level, 1-based; 0 where absent */
    int shared_by[CPU_CACHE_LEVELS + 1]; /* CPUs sharing one instance */
    char source[64];                   /* sysfs, sysconf or a default */
} cpu_caches;

/* "model name" of /proc/cpuinfo, or "cpu" where there is none. */
void cpu_model_name(char *out, size_t len);

/* vendor_id and "cpu family" of /proc/cpuinfo (x86); "" and -1 elsewhere. */
void cpu_vendor_family(char *vendor, size_t len, int *family);

/* The first line of a small file (sysfs, procfs), without its newline; -1
 * when it cannot be read. */
int cpu_read_first_line(const char *path, char *out, size_t len);

/* Reads /sys/devices/system/cpu/cpu0/cache; falls back to sysconf, then to a
 * 32 MiB last level, and says which in source. */
void cpu_caches_read(cpu_caches *c);

/* Size of the last level (the largest level found). */
size_t cpu_caches_llc(const cpu_caches *c);

#endif
