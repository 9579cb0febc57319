#include "cuda_driver_dl.h"

#include <dlfcn.h>
#include <stdio.h>

void cuda_no_device_why(bool insufficient_driver, const char *runtime_message,
                        int runtime_version, char *why, size_t why_len)
{
    if (!insufficient_driver) {
        snprintf(why, why_len, "%s", runtime_message);
        return;
    }
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, why_len, "no NVIDIA driver on this machine: libcuda.so.1 not found");
        return;
    }
    /* cuDriverGetVersion(int *): the one call that needs no cuInit */
    int (*driver_version)(int *) = (int (*)(int *))dlsym(lib, "cuDriverGetVersion");
    int v = 0;
    if (driver_version && driver_version(&v) == 0 && v > 0 && v < runtime_version)
        snprintf(why, why_len,
                 "the NVIDIA driver supports CUDA %d.%d, older than this build's runtime %d.%d: "
                 "update the driver",
                 v / 1000, v % 1000 / 10, runtime_version / 1000, runtime_version % 1000 / 10);
    else
        snprintf(why, why_len, "%s", runtime_message);
    dlclose(lib);
}
