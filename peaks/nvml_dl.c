#include "nvml_dl.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The few NVML declarations used, as nvml.h has them: the header is not
 * part of every CUDA install, and the library is loaded by name. */
typedef int nvml_return;
typedef void *nvml_device;
enum { NVML_OK = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };

struct nvml_gpu {
    void *lib;
    nvml_device dev;
    nvml_return (*shutdown)(void);
    nvml_return (*clock_info)(nvml_device, int, unsigned *);
    nvml_return (*max_link_gen)(nvml_device, unsigned *);
    nvml_return (*max_link_width)(nvml_device, unsigned *);
};

struct nvml_sampler {
    nvml_gpu *gpu;
    int period_ms;
    atomic_int stop;
    pthread_t thread;
    double sm_sum, mem_sum;
    int samples;
};

nvml_gpu *nvml_open(const char *bus_id, char *why, size_t why_len)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, why_len, "libnvidia-ml.so.1 not loadable");
        return NULL;
    }
    nvml_return (*init)(void) = (nvml_return(*)(void))dlsym(lib, "nvmlInit_v2");
    nvml_return (*by_bus)(const char *, nvml_device *) =
        (nvml_return(*)(const char *, nvml_device *))dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    const char *(*error_string)(nvml_return) =
        (const char *(*)(nvml_return))dlsym(lib, "nvmlErrorString");
    nvml_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(why, why_len, "out of memory");
        dlclose(lib);
        return NULL;
    }
    g->lib = lib;
    g->shutdown = (nvml_return(*)(void))dlsym(lib, "nvmlShutdown");
    g->clock_info = (nvml_return(*)(nvml_device, int, unsigned *))dlsym(lib, "nvmlDeviceGetClockInfo");
    g->max_link_gen =
        (nvml_return(*)(nvml_device, unsigned *))dlsym(lib, "nvmlDeviceGetMaxPcieLinkGeneration");
    g->max_link_width =
        (nvml_return(*)(nvml_device, unsigned *))dlsym(lib, "nvmlDeviceGetMaxPcieLinkWidth");
    if (!init || !by_bus || !g->shutdown || !g->clock_info) {
        snprintf(why, why_len, "libnvidia-ml.so.1 lacks nvmlInit_v2 or the clock queries");
        dlclose(lib);
        free(g);
        return NULL;
    }
    nvml_return rc = init();
    if (rc != NVML_OK) {
        snprintf(why, why_len, "nvmlInit: %s", error_string ? error_string(rc) : "failed");
        dlclose(lib);
        free(g);
        return NULL;
    }
    rc = by_bus(bus_id, &g->dev);
    if (rc != NVML_OK) {
        snprintf(why, why_len, "no NVML device at %s: %s", bus_id,
                 error_string ? error_string(rc) : "failed");
        g->shutdown();
        dlclose(lib);
        free(g);
        return NULL;
    }
    return g;
}

void nvml_close(nvml_gpu *g)
{
    if (!g)
        return;
    g->shutdown();
    dlclose(g->lib);
    free(g);
}

int nvml_clocks_mhz(nvml_gpu *g, unsigned *sm, unsigned *mem)
{
    if (!g || g->clock_info(g->dev, NVML_CLOCK_SM, sm) != NVML_OK ||
        g->clock_info(g->dev, NVML_CLOCK_MEM, mem) != NVML_OK)
        return -1;
    return 0;
}

int nvml_pcie_link(nvml_gpu *g, unsigned *gen, unsigned *width)
{
    if (!g || !g->max_link_gen || !g->max_link_width ||
        g->max_link_gen(g->dev, gen) != NVML_OK || g->max_link_width(g->dev, width) != NVML_OK)
        return -1;
    return 0;
}

static void *sampler_main(void *p)
{
    nvml_sampler *s = p;
    struct timespec period = {s->period_ms / 1000, (long)(s->period_ms % 1000) * 1000000L};
    /* a period before the first reading: one taken as the work starts
     * reads the clock it had before (an idle GPU's, far below its boost),
     * and for work shorter than a period it would be the only reading */
    for (;;) {
        nanosleep(&period, NULL);
        if (atomic_load(&s->stop))
            break;
        unsigned sm, mem;
        if (nvml_clocks_mhz(s->gpu, &sm, &mem) == 0) {
            s->sm_sum += sm;
            s->mem_sum += mem;
            s->samples++;
        }
    }
    return NULL;
}

nvml_sampler *nvml_sampler_start(nvml_gpu *g, int period_ms)
{
    nvml_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return NULL; /* the means become NAN: a clock column is not worth failing for */
    s->gpu = g;
    s->period_ms = period_ms > 0 ? period_ms : 10;
    atomic_init(&s->stop, 0);
    if (g && pthread_create(&s->thread, NULL, sampler_main, s) != 0)
        s->gpu = NULL;
    return s;
}

void nvml_sampler_stop(nvml_sampler *s, double *sm_mhz, double *mem_mhz)
{
    *sm_mhz = *mem_mhz = NAN;
    if (!s)
        return;
    if (s->gpu) {
        atomic_store(&s->stop, 1);
        pthread_join(s->thread, NULL);
        if (s->samples > 0) {
            *sm_mhz = s->sm_sum / s->samples;
            *mem_mhz = s->mem_sum / s->samples;
        }
    }
    free(s);
}
