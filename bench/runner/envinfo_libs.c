/* Library versions asked from the libraries themselves. NCCL and MPI are
 * loaded with dlopen, so the suite need not link them and a machine without
 * them only reads "not found". */
#include "envinfo_sections.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#ifdef HAVE_CUDA
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#endif
#ifdef HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

/* NCCL and cuDNN encode major*10000 + minor*100 + patch since NCCL 2.9 and
 * cuDNN 9, major*1000 + minor*100 + patch before. */
static void decode_version(long v, char *out, size_t len)
{
    if (v >= 10000)
        snprintf(out, len, "%ld.%ld.%ld", v / 10000, v / 100 % 100, v % 100);
    else
        snprintf(out, len, "%ld.%ld.%ld", v / 1000, v / 100 % 10, v % 100);
}

static void write_compiler(json_writer *w)
{
#if defined(__clang__)
    json_stringf(w, "compiler", "clang %s", __clang_version__);
#elif defined(__GNUC__)
    json_stringf(w, "compiler", "gcc %s", __VERSION__);
#else
    json_string(w, "compiler", "unknown");
#endif
}

#ifdef HAVE_CUDA
/* CUDA's 1000*major + 10*minor. */
static void cuda_version(int v, char *out, size_t len)
{
    snprintf(out, len, "%d.%d", v / 1000, v % 1000 / 10);
}
#endif

static void write_cuda(json_writer *w)
{
#ifdef HAVE_CUDA
    char text[64];
    cuda_version(CUDART_VERSION, text, sizeof text);
    json_string(w, "cuda_toolkit_built_with", text);
    int v = 0;
    if (cudaRuntimeGetVersion(&v) == cudaSuccess) {
        cuda_version(v, text, sizeof text);
        json_string(w, "cuda_runtime", text);
    } else {
        json_string(w, "cuda_runtime", "not found (cudaRuntimeGetVersion failed)");
    }
    v = 0;
    if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0) {
        cuda_version(v, text, sizeof text);
        json_string(w, "cuda_driver", text);
    } else {
        json_string(w, "cuda_driver", "not found (no CUDA driver installed)");
    }
    decode_version((long)cudnnGetVersion(), text, sizeof text);
    json_string(w, "cudnn", text);
    int major = 0, minor = 0, patch = 0;
    if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
        json_stringf(w, "cublas", "%d.%d.%d", major, minor, patch);
    else
        json_string(w, "cublas", "not found (cublasGetProperty failed)");
#else
    static const char *const keys[] = {"cuda_toolkit_built_with", "cuda_runtime", "cuda_driver",
                                       "cudnn", "cublas"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        json_string(w, keys[i], "not built (no CUDA toolkit at build time)");
#endif
}

/* The first of `names` that dlopen loads, or NULL with dlerror's text. */
static void *open_first(const char *const names[], int n, char *why, size_t why_len)
{
    for (int i = 0; i < n; i++) {
        void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (lib)
            return lib;
    }
    const char *e = dlerror();
    snprintf(why, why_len, "not found (%s)", e ? e : names[0]);
    return NULL;
}

static void write_nccl(json_writer *w)
{
    static const char *const names[] = {"libnccl.so.2", "libnccl.so"};
    char text[512];
    void *lib = open_first(names, 2, text, sizeof text);
    if (lib) {
        int (*get_version)(int *) = (int (*)(int *))dlsym(lib, "ncclGetVersion");
        int v = 0;
        if (get_version && get_version(&v) == 0)
            decode_version(v, text, sizeof text);
        else
            snprintf(text, sizeof text, "not found (libnccl has no working ncclGetVersion)");
        dlclose(lib);
    }
    json_string(w, "nccl", text);
}

static void write_mpi(json_writer *w)
{
    /* Open MPI 3+ and MPICH-derived libraries */
    static const char *const names[] = {"libmpi.so.40", "libmpi.so.12", "libmpi.so"};
    char text[8192]; /* MPI_MAX_LIBRARY_VERSION_STRING: 256 in Open MPI, 8192 in MPICH */
    void *lib = open_first(names, 3, text, sizeof text);
    if (lib) {
        int (*get_version)(char *, int *) =
            (int (*)(char *, int *))dlsym(lib, "MPI_Get_library_version");
        int len = 0;
        /* MPI allows this call before MPI_Init */
        if (!get_version || get_version(text, &len) != 0)
            snprintf(text, sizeof text, "not found (libmpi has no working MPI_Get_library_version)");
        else if (len > 0 && len < (int)sizeof text)
            text[len] = '\0';
        else
            text[sizeof text - 1] = '\0';
        text[strcspn(text, "\n")] = '\0';
        dlclose(lib);
    }
    json_string(w, "mpi", text);
}

static void write_onednn(json_writer *w)
{
#ifdef HAVE_DNNL
    const dnnl_version_t *v = dnnl_version();
    json_stringf(w, "onednn", "%d.%d.%d (%s)", v->major, v->minor, v->patch,
                 v->hash ? v->hash : "no hash");
#else
    json_string(w, "onednn", "not built (no oneDNN at build time)");
#endif
}

void envinfo_write_versions(json_writer *w)
{
    json_object_begin(w, "versions");
    write_compiler(w);
    write_cuda(w);
    write_nccl(w);
    write_mpi(w);
    write_onednn(w);
    json_object_end(w);
}
