/* The "environment" section of env.json: the variables set for the run that
 * change what the libraries do and so what is measured (CUDA_LAUNCH_BLOCKING
 * serialises every launch, NVIDIA_TF32_OVERRIDE=0 turns tf32 into fp32,
 * OMP_NUM_THREADS and NCCL_ALGO change the CPU and communication figures).
 * Only names under the prefixes below, and none that looks like a credential
 * (NVIDIA_API_KEY, ..._TOKEN): the rest of the environment (paths, user
 * names, tokens) is not the run's business. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "envinfo_sections.h"

extern char **environ;

static const char *const prefixes[] = {
    "CUDA_", "NVIDIA_", "CUDNN_", "CUBLAS", "NCCL_", "OMP_", "KMP_", "GOMP_", "DNNL_",
    "ONEDNN_", "MKL_", "OMPI_MCA_", "UCX_", "PYTORCH_", "TORCH_",
};

static const char *const secrets[] = {"KEY", "TOKEN", "SECRET", "PASS", "AUTH", "CREDENTIAL"};

/* entry: NAME=value */
static bool recorded(const char *entry)
{
    const char *eq = strchr(entry, '=');
    if (!eq)
        return false;
    for (size_t i = 0; i < sizeof secrets / sizeof *secrets; i++) {
        const char *at = strstr(entry, secrets[i]);
        if (at && at < eq)
            return false;
    }
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (!strncmp(entry, prefixes[i], strlen(prefixes[i])))
            return true;
    return false;
}

/* NAME=value entries by NAME alone ('=' sorts after the digits) */
static int by_name(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    size_t nx = strcspn(x, "="), ny = strcspn(y, "=");
    int c = strncmp(x, y, nx < ny ? nx : ny);
    return c ? c : (nx > ny) - (nx < ny);
}

void envinfo_write_environment(json_writer *w)
{
    size_t n = 0, total = 0;
    for (char **e = environ; e && *e; e++)
        total++;
    const char **picked = malloc((total > 0 ? total : 1) * sizeof *picked);
    json_object_begin(w, "environment");
    if (!picked) {
        json_string(w, "reason", "out of memory listing the environment");
        json_object_end(w);
        return;
    }
    for (char **e = environ; e && *e; e++)
        if (recorded(*e))
            picked[n++] = *e;
    qsort(picked, n, sizeof *picked, by_name);
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(picked[i], '=');
        char name[256];
        size_t len = (size_t)(eq - picked[i]);
        if (len >= sizeof name)
            continue; /* no library reads a name that long */
        memcpy(name, picked[i], len);
        name[len] = '\0';
        json_string(w, name, eq + 1);
    }
    json_object_end(w);
    free(picked);
}
