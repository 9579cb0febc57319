#include "gpu_kernels.h"

#include <stdlib.h>
#include <string.h>

/* Grows *v (of *cap elements of `size` bytes) to hold one more. */
static int grow(void **v, int *cap, int n, size_t size)
{
    if (n < *cap)
        return 0;
    int cap2 = *cap ? 2 * *cap : 256;
    void *p = realloc(*v, (size_t)cap2 * size);
    if (!p)
        return -1;
    *v = p;
    *cap = cap2;
    return 0;
}

int gpu_kernel_list_add(gpu_kernel_list *l, const gpu_kernel *k)
{
    if (grow((void **)&l->v, &l->cap, l->n, sizeof *l->v))
        return -1;
    char *name = strdup(k->name ? k->name : "");
    if (!name)
        return -1;
    l->v[l->n] = *k;
    l->v[l->n++].name = name;
    return 0;
}

void gpu_kernel_list_free(gpu_kernel_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
    *l = (gpu_kernel_list){0};
}

static int by_launch(const void *a, const void *b)
{
    const gpu_kernel *x = a, *y = b;
    if (x->correlation != y->correlation)
        return x->correlation < y->correlation ? -1 : 1;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

void gpu_kernel_list_sort(gpu_kernel_list *l)
{
    if (l->n > 1)
        qsort(l->v, (size_t)l->n, sizeof *l->v, by_launch);
}

int gpu_metric_pass_add_launch(gpu_metric_pass *m, const char *name, uint64_t op)
{
    if (grow((void **)&m->launch, &m->cap_launches, m->n_launches, sizeof *m->launch))
        return -1;
    char *copy = strdup(name ? name : "");
    if (!copy)
        return -1;
    m->launch[m->n_launches++] = (gpu_launch){.name = copy, .op = op};
    m->unnamed += copy[0] == '\0';
    return 0;
}

void gpu_metric_pass_free(gpu_metric_pass *m)
{
    for (int i = 0; i < m->n_launches; i++)
        free(m->launch[i].name);
    free(m->launch);
    free(m->counts);
    *m = (gpu_metric_pass){0};
}
