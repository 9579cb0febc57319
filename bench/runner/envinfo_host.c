#include "envinfo_sections.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../../peaks/cpu_info.h"
#include "../../peaks/cpu_team.h"

/* PRETTY_NAME of /etc/os-release, unquoted. */
static int os_pretty_name(char *out, size_t len)
{
    FILE *f = fopen("/etc/os-release", "r");
    if (!f)
        return -1;
    char line[512];
    int rc = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "PRETTY_NAME=", 12) != 0)
            continue;
        char *v = line + 12;
        v[strcspn(v, "\n")] = '\0';
        size_t n = strlen(v);
        if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
            v[n - 1] = '\0';
            v++;
        }
        snprintf(out, len, "%s", v);
        rc = 0;
        break;
    }
    fclose(f);
    return rc;
}

void envinfo_write_host(json_writer *w)
{
    char host[256] = "", os[512];
    struct utsname u;
    bool have_uname = uname(&u) == 0;
    if (gethostname(host, sizeof host) != 0)
        snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    json_object_begin(w, "host");
    json_string(w, "name", host);
    json_string(w, "os", os_pretty_name(os, sizeof os) == 0 ? os : "unknown");
    json_string(w, "kernel", have_uname ? u.release : "unknown");
    json_string(w, "arch", have_uname ? u.machine : "unknown");
    json_object_end(w);
}

/* A "Key:   123 kB" line of /proc/meminfo, in GiB; -1 when absent. */
static double meminfo_gib(const char *key)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return -1.0;
    char line[256];
    double gib = -1.0;
    size_t key_len = strlen(key);
    while (fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (strncmp(line, key, key_len) == 0 && line[key_len] == ':' &&
            sscanf(line + key_len + 1, "%llu", &kb) == 1) {
            gib = (double)kb / (1024.0 * 1024.0);
            break;
        }
    }
    fclose(f);
    return gib;
}

/* Sockets (distinct "physical id") and "cpu cores" of /proc/cpuinfo; 0 where
 * the file does not say (some VMs and non-x86 kernels). */
static void cpu_topology(int *sockets, int *cores_per_socket)
{
    *sockets = *cores_per_socket = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    unsigned long long seen = 0; /* bit per physical id below 64 */
    while (fgets(line, sizeof line, f)) {
        int v;
        const char *colon = strchr(line, ':');
        if (!colon || sscanf(colon + 1, "%d", &v) != 1)
            continue;
        if (strncmp(line, "physical id", 11) == 0 && v >= 0 && v < 64)
            seen |= 1ull << v;
        else if (strncmp(line, "cpu cores", 9) == 0)
            *cores_per_socket = v;
    }
    fclose(f);
    *sockets = __builtin_popcountll(seen);
}

void envinfo_write_cpu(json_writer *w)
{
    char model[256];
    cpu_model_name(model, sizeof model);
    int sockets, cores;
    cpu_topology(&sockets, &cores);
    json_object_begin(w, "cpu");
    json_string(w, "model", model);
    json_int(w, "logical_cpus", sysconf(_SC_NPROCESSORS_ONLN));
    json_int(w, "usable_cpus", cpu_usable_count());
    json_int(w, "sockets", sockets);
    json_int(w, "cores_per_socket", cores);
    double total = meminfo_gib("MemTotal"), available = meminfo_gib("MemAvailable");
    json_number(w, "memory_total_gib", total >= 0 ? total : NAN);
    json_number(w, "memory_available_gib", available >= 0 ? available : NAN);
    json_object_end(w);
}

/* "cpu MHz" of every CPU in /proc/cpuinfo (x86 kernels report it). */
static void write_cpuinfo_mhz(json_writer *w)
{
    json_array_begin(w, "cpuinfo_mhz");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            double mhz;
            const char *colon = strchr(line, ':');
            if (strncmp(line, "cpu MHz", 7) == 0 && colon && sscanf(colon + 1, "%lf", &mhz) == 1)
                json_number(w, NULL, mhz);
        }
        fclose(f);
    }
    json_array_end(w);
}

static void write_cpufreq(json_writer *w)
{
    const char *dir = "/sys/devices/system/cpu/cpu0/cpufreq";
    char path[256], text[128];
    json_object_begin(w, "cpufreq");
    snprintf(path, sizeof path, "%s/scaling_governor", dir);
    if (cpu_read_first_line(path, text, sizeof text) != 0) {
        json_bool(w, "available", false);
        json_stringf(w, "reason", "no %s (a VM or a kernel without cpufreq)", dir);
        json_object_end(w);
        return;
    }
    json_bool(w, "available", true);
    json_string(w, "governor_cpu0", text);
    static const char *const limits[] = {"cpuinfo_min_freq", "cpuinfo_max_freq",
                                         "scaling_min_freq", "scaling_max_freq"};
    for (size_t i = 0; i < sizeof limits / sizeof *limits; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, limits[i]);
        char key[64];
        snprintf(key, sizeof key, "%s_khz_cpu0", limits[i]);
        json_int(w, key, cpu_read_first_line(path, text, sizeof text) == 0 ? atoll(text) : 0);
    }
    json_array_begin(w, "scaling_cur_khz");
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long cpu = 0; cpu < n; cpu++) {
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/cpufreq/scaling_cur_freq", cpu);
        if (cpu_read_first_line(path, text, sizeof text) == 0)
            json_int(w, NULL, atoll(text));
    }
    json_array_end(w);
    json_object_end(w);
}

void envinfo_write_cpu_clocks(json_writer *w)
{
    json_object_begin(w, "cpu_clocks");
    write_cpuinfo_mhz(w);
    write_cpufreq(w);
    json_object_end(w);
}
