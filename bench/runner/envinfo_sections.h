/* The sections of env.json (DESIGN.md §7) that bin/envinfo writes, each asked
 * from the machine or the library itself rather than guessed: envinfo_host.c
 * (host, CPU, memory, CPU clocks), envinfo_libs.c (library versions) and
 * envinfo_gpu.h (GPUs). Where something is absent the member says why. */
#ifndef ROOFLINE_ENVINFO_SECTIONS_H
#define ROOFLINE_ENVINFO_SECTIONS_H

#include "envinfo_gpu.h"
#include "envinfo_json.h"

/* "host": name, OS, kernel, architecture. */
void envinfo_write_host(json_writer *w);

/* "cpu": model, logical/usable CPUs, sockets, cores per socket, memory. */
void envinfo_write_cpu(json_writer *w);

/* "cpu_clocks": per-CPU MHz of /proc/cpuinfo, cpufreq governor and limits. */
void envinfo_write_cpu_clocks(json_writer *w);

/* "versions": compiler, CUDA toolkit/runtime/driver, cuDNN, cuBLAS, NCCL, MPI,
 * oneDNN; "not found (...)" or "not built (...)" where absent. */
void envinfo_write_versions(json_writer *w);

/* "load": the load averages and the CPUs other work kept busy over a
 * sample_s pause of this process (busy_cpus, of the cpus its affinity
 * allows), also into *busy_cpus and *cpus (-1 and 0 when /proc could not
 * tell). */
void envinfo_write_load(json_writer *w, double sample_s, double *busy_cpus, int *cpus);

/* "environment": the variables set that change what the libraries do
 * (CUDA_*, NCCL_*, OMP_*, ...; envinfo_vars.c lists the prefixes), by name. */
void envinfo_write_environment(json_writer *w);

#endif
