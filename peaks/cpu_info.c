#include "cpu_info.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The value of the first "key<blanks>: value" line of /proc/cpuinfo. */
static int cpuinfo_field(const char *key, char *out, size_t len)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    char line[512];
    size_t key_len = strlen(key);
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, key_len) != 0 || !strchr(line, ':'))
            continue;
        const char *p = line + key_len;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p != ':')
            continue;
        for (p++; *p == ' '; p++)
            ;
        snprintf(out, len, "%s", p);
        out[strcspn(out, "\n")] = '\0';
        found = 0;
        break;
    }
    fclose(f);
    return found;
}

void cpu_model_name(char *out, size_t len)
{
    if (cpuinfo_field("model name", out, len) != 0 || !out[0])
        snprintf(out, len, "cpu");
    /* peaks.csv fields stay plain */
    for (char *p = out; *p; p++)
        if (*p == ',' || *p == '"')
            *p = ' ';
}

void cpu_vendor_family(char *vendor, size_t len, int *family)
{
    char text[64];
    if (cpuinfo_field("vendor_id", vendor, len) != 0)
        vendor[0] = '\0';
    *family = cpuinfo_field("cpu family", text, sizeof text) == 0 ? atoi(text) : -1;
}

int cpu_read_first_line(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(out, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    out[strcspn(out, "\n")] = '\0';
    return 0;
}

/* "32K", "1024K", "32M" */
static size_t parse_size(const char *text)
{
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end == 'K')
        v <<= 10;
    else if (*end == 'M')
        v <<= 20;
    else if (*end == 'G')
        v <<= 30;
    return (size_t)v;
}

/* "0-1", "0,2,4-7" */
static int count_cpu_list(const char *list)
{
    int n = 0;
    const char *p = list;
    while (*p) {
        char *end;
        long a = strtol(p, &end, 10);
        if (end == p)
            break;
        long b = a;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        n += (int)(b - a + 1);
        p = *end == ',' ? end + 1 : end;
    }
    return n > 0 ? n : 1;
}

static int caches_from_sysfs(cpu_caches *c)
{
    for (int i = 0; i < 16; i++) {
        char path[128], text[128];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (cpu_read_first_line(path, text, sizeof text) != 0)
            break;
        int level = atoi(text);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if (cpu_read_first_line(path, text, sizeof text) != 0 ||
            strcmp(text, "Instruction") == 0)
            continue;
        if (level < 1 || level > CPU_CACHE_LEVELS)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (cpu_read_first_line(path, text, sizeof text) != 0)
            continue;
        c->bytes[level] = parse_size(text);
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", i);
        c->shared_by[level] =
            cpu_read_first_line(path, text, sizeof text) == 0 ? count_cpu_list(text) : 1;
        if (level > c->levels && c->bytes[level] > 0)
            c->levels = level;
    }
    return c->levels > 0 ? 0 : -1;
}

void cpu_caches_read(cpu_caches *c)
{
    memset(c, 0, sizeof *c);
    if (caches_from_sysfs(c) == 0) {
        snprintf(c->source, sizeof c->source, "sysfs");
        return;
    }
    memset(c, 0, sizeof *c);
    const int names[] = {0, _SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL2_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE,
                         _SC_LEVEL4_CACHE_SIZE};
    for (int level = 1; level <= CPU_CACHE_LEVELS; level++) {
        long v = sysconf(names[level]);
        if (v > 0) {
            c->bytes[level] = (size_t)v;
            c->shared_by[level] = 1;
            c->levels = level;
        }
    }
    if (c->levels > 0) {
        snprintf(c->source, sizeof c->source, "sysconf");
        return;
    }
    /* no cache information at all: a size that is large for most CPUs keeps
     * the DRAM arrays out of any cache */
    c->levels = 1;
    c->bytes[1] = 32u << 20;
    c->shared_by[1] = 1;
    snprintf(c->source, sizeof c->source, "assumed 32 MiB (no sysfs or sysconf)");
}

size_t cpu_caches_llc(const cpu_caches *c)
{
    size_t llc = 0;
    for (int level = 1; level <= c->levels; level++)
        llc = c->bytes[level] > llc ? c->bytes[level] : llc;
    return llc;
}
