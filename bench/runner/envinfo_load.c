/* "load": how busy the machine was with other work as the run began. A
 * neighbour's process on a core lowers every roof and step measured there
 * (a spinning OpenMP team waits for the thread that lost its core), so the
 * report says so instead of leaving the numbers to look like the machine's
 * own. */
#include "envinfo_sections.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The jiffies of the CPUs this process may run on (its affinity: a
 * container's or a cpuset's share, not the whole host), busy and in total,
 * from /proc/stat's "cpuN" lines. */
static int cpu_jiffies(const cpu_set_t *mine, unsigned long long *busy,
                       unsigned long long *total, int *cpus)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    char line[512];
    *busy = *total = 0;
    *cpus = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long v[8] = {0};
        int cpu = -1;
        if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9' ||
            sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) < 5 ||
            cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, mine))
            continue;
        /* user nice system idle iowait irq softirq steal: idle and iowait are not busy */
        unsigned long long all = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
        *total += all;
        *busy += all - v[3] - v[4];
        (*cpus)++;
    }
    fclose(f);
    return *cpus > 0 ? 0 : -1;
}

void envinfo_write_load(json_writer *w, double sample_s, double *busy_cpus, int *cpus)
{
    *busy_cpus = -1;
    *cpus = 0;
    json_object_begin(w, "load");
    FILE *f = fopen("/proc/loadavg", "r");
    double avg[3];
    if (f && fscanf(f, "%lf %lf %lf", &avg[0], &avg[1], &avg[2]) == 3) {
        json_number(w, "loadavg_1min", avg[0]);
        json_number(w, "loadavg_5min", avg[1]);
        json_number(w, "loadavg_15min", avg[2]);
    } else {
        json_string(w, "loadavg_1min", "unknown (no /proc/loadavg)");
    }
    if (f)
        fclose(f);
    unsigned long long busy0, total0, busy1, total1;
    int n0 = 0, n1 = 0;
    struct timespec pause = {(time_t)sample_s, (long)((sample_s - (time_t)sample_s) * 1e9)};
    cpu_set_t mine;
    /* this process sleeps between the two readings: the busy time is others' */
    if (sched_getaffinity(0, sizeof mine, &mine) == 0 &&
        cpu_jiffies(&mine, &busy0, &total0, &n0) == 0 && nanosleep(&pause, NULL) == 0 &&
        cpu_jiffies(&mine, &busy1, &total1, &n1) == 0 && total1 > total0 && n1 == n0) {
        *cpus = n1;
        *busy_cpus = (double)(busy1 - busy0) / (double)(total1 - total0) * n1;
        json_number(w, "busy_cpus", *busy_cpus);
        json_int(w, "cpus", n1);
        json_number(w, "sampled_s", sample_s);
    } else {
        json_string(w, "busy_cpus", "unknown (/proc/stat unreadable)");
    }
    json_object_end(w);
}
