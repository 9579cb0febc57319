#include "perf.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

typedef enum { COUNT_FP64, COUNT_FP32, COUNT_UNSPLIT } count_kind;

typedef struct {
    uint64_t config;  /* raw event: event select | umask << 8 */
    int lanes;        /* FLOPs per count */
    count_kind kind;
} fp_event;

/* Intel SDM, FP_ARITH_INST_RETIRED (event 0xC7): one umask per width. */
static const fp_event intel_events[] = {
    {0xC7 | 0x01 << 8, 1, COUNT_FP64},  {0xC7 | 0x02 << 8, 1, COUNT_FP32},
    {0xC7 | 0x04 << 8, 2, COUNT_FP64},  {0xC7 | 0x08 << 8, 4, COUNT_FP32},
    {0xC7 | 0x10 << 8, 4, COUNT_FP64},  {0xC7 | 0x20 << 8, 8, COUNT_FP32},
    {0xC7 | 0x40 << 8, 8, COUNT_FP64},  {0xC7 | 0x80 << 8, 16, COUNT_FP32},
};

/* AMD PPR, PMCx003 FpRetSseAvxOps, all umask bits: already counts FLOPs. */
static const fp_event amd_events[] = {{0x03 | 0xFF << 8, 1, COUNT_UNSPLIT}};

struct perf_fp {
    const fp_event *events;
    int n_events, n_threads;
    int *fds;                 /* n_threads x n_events */
    const char *name;
};

static bool cpu_events(const fp_event **events, int *n, const char **name, char *why,
                       size_t why_len)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) {
        snprintf(why, why_len, "cpuid gives no vendor");
        return false;
    }
    char vendor[13];
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &c, 4);
    vendor[12] = '\0';
    if (strcmp(vendor, "GenuineIntel") == 0) {
        *events = intel_events;
        *n = (int)(sizeof intel_events / sizeof intel_events[0]);
        *name = "Intel FP_ARITH_INST_RETIRED (8 widths)";
        return true;
    }
    if (strcmp(vendor, "AuthenticAMD") == 0) {
        __get_cpuid(1, &a, &b, &c, &d);
        unsigned family = ((a >> 8) & 0xF) + ((a >> 20) & 0xFF);
        if (family < 0x17) {
            snprintf(why, why_len, "AMD family 0x%x predates the Zen FLOP counter", family);
            return false;
        }
        *events = amd_events;
        *n = 1;
        *name = "AMD PMCx003 retired SSE/AVX FLOPs";
        return true;
    }
    snprintf(why, why_len, "no floating-point counter events known for CPU vendor %s", vendor);
    return false;
#else
    (void)events, (void)n, (void)name;
    snprintf(why, why_len, "no floating-point counter events known for this architecture");
    return false;
#endif
}

static int open_event(uint64_t config, pid_t tid)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_RAW;
    attr.config = config;
    attr.exclude_kernel = 1; /* user space only: allowed at perf_event_paranoid 2 */
    attr.exclude_hv = 1;
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    return (int)syscall(SYS_perf_event_open, &attr, tid, -1, -1, 0);
}

static int list_threads(pid_t **tids, int *n, char *why, size_t why_len)
{
    DIR *dir = opendir("/proc/self/task");
    if (!dir) {
        snprintf(why, why_len, "cannot list threads in /proc/self/task: %s", strerror(errno));
        return -1;
    }
    int cap = 16;
    *n = 0;
    *tids = malloc(cap * sizeof **tids);
    struct dirent *e;
    while (*tids && (e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (*n == cap) {
            cap *= 2;
            pid_t *grown = realloc(*tids, cap * sizeof **tids);
            if (!grown) {
                free(*tids);
                *tids = NULL;
                break;
            }
            *tids = grown;
        }
        (*tids)[(*n)++] = (pid_t)atoi(e->d_name);
    }
    closedir(dir);
    if (!*tids) {
        snprintf(why, why_len, "out of memory listing threads");
        return -1;
    }
    return 0;
}

void perf_fp_close(perf_fp *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n_threads * p->n_events; i++)
        if (p->fds[i] >= 0)
            close(p->fds[i]);
    free(p->fds);
    free(p);
}

perf_fp *perf_fp_open(char *why, size_t why_len)
{
    const fp_event *events;
    int n_events;
    const char *name;
    if (!cpu_events(&events, &n_events, &name, why, why_len))
        return NULL;
    pid_t *tids;
    int n_threads;
    if (list_threads(&tids, &n_threads, why, why_len))
        return NULL;
    perf_fp *p = calloc(1, sizeof *p);
    int *fds = p ? malloc((size_t)n_threads * n_events * sizeof *fds) : NULL;
    if (!fds) {
        free(p);
        free(tids);
        snprintf(why, why_len, "out of memory for %d counters", n_threads * n_events);
        return NULL;
    }
    *p = (perf_fp){.events = events, .n_events = n_events, .n_threads = n_threads,
                   .fds = fds, .name = name};
    for (int i = 0; i < n_threads * n_events; i++)
        fds[i] = -1;
    for (int t = 0; t < n_threads; t++) {
        for (int e = 0; e < n_events; e++) {
            int fd = open_event(events[e].config, tids[t]);
            if (fd < 0) {
                int err = errno;
                snprintf(why, why_len,
                         "perf_event_open(%s, raw 0x%llx): %s%s", name,
                         (unsigned long long)events[e].config, strerror(err),
                         err == EACCES || err == EPERM
                             ? " (lower /proc/sys/kernel/perf_event_paranoid to 2 or below)"
                             : err == ENOENT || err == ENODEV || err == EOPNOTSUPP
                                   ? " (no PMU exposed: a virtual machine?)"
                                   : "");
                free(tids);
                perf_fp_close(p);
                return NULL;
            }
            fds[t * n_events + e] = fd;
        }
    }
    free(tids);
    return p;
}

int perf_fp_read(perf_fp *p, perf_fp_counts *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    for (int t = 0; t < p->n_threads; t++) {
        for (int e = 0; e < p->n_events; e++) {
            uint64_t v[3]; /* value, time enabled, time running */
            int fd = p->fds[t * p->n_events + e];
            if (read(fd, v, sizeof v) != (ssize_t)sizeof v) {
                snprintf(why, why_len, "reading a FLOP counter failed: %s", strerror(errno));
                return -1;
            }
            /* a thread that has exited reads 0 enabled time: nothing to add */
            double scale = v[2] > 0 ? (double)v[1] / (double)v[2] : 0.0;
            int64_t flops = (int64_t)((double)v[0] * scale) * p->events[e].lanes;
            switch (p->events[e].kind) {
            case COUNT_FP64: out->fp64 += flops; break;
            case COUNT_FP32: out->fp32 += flops; break;
            case COUNT_UNSPLIT: out->unsplit += flops; break;
            }
        }
    }
    return 0;
}

const char *perf_fp_events(const perf_fp *p)
{
    return p->name;
}
