#include "kernel_groups.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void nan_add(double *acc, double v)
{
    if (!isnan(v))
        *acc = isnan(*acc) ? v : *acc + v;
}

kernel_sums kernel_sums_empty(void)
{
    return (kernel_sums){0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
}

void kernel_sums_add(kernel_sums *s, const run_kernel *k)
{
    s->rows += 1;
    nan_add(&s->duration_ns, k->duration_ns);
    nan_add(&s->fp64, k->flops_fp64);
    nan_add(&s->fp32, k->flops_fp32);
    nan_add(&s->fp16, k->flops_fp16);
    nan_add(&s->tensor, k->flops_tensor);
    nan_add(&s->dram_bytes, k->dram_read_bytes);
    nan_add(&s->dram_bytes, k->dram_write_bytes);
    nan_add(&s->l2_bytes, k->l2_bytes);
    nan_add(&s->l1_bytes, k->l1_bytes);
}

double kernel_sums_flops(const kernel_sums *s)
{
    double f = NAN;
    nan_add(&f, s->fp64);
    nan_add(&f, s->fp32);
    nan_add(&f, s->fp16);
    nan_add(&f, s->tensor);
    return f;
}

typedef struct {
    const run_kernel *k;
    int index; /* in the trace: a key's rows keep the file's order */
} keyed;

static int cmp_key(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    int d = strcmp(a->k->kernel, b->k->kernel);
    if (!d)
        d = strcmp(a->k->layer, b->k->layer);
    if (!d)
        d = strcmp(a->k->phase, b->k->phase);
    return d ? d : (a->index > b->index) - (a->index < b->index);
}

static bool same_group(const run_kernel *a, const run_kernel *b)
{
    return strcmp(a->kernel, b->kernel) == 0 && strcmp(a->layer, b->layer) == 0 &&
           strcmp(a->phase, b->phase) == 0;
}

typedef struct {
    int first; /* the group's first row in the trace */
    int sorted; /* the group's number in key order */
} group;

static int cmp_first(const void *pa, const void *pb)
{
    int a = ((const group *)pa)->first, b = ((const group *)pb)->first;
    return (a > b) - (a < b);
}

int kernel_groups(const run_trace *t, int *group_of, int *first_row)
{
    keyed *order = malloc(((size_t)t->n + 1) * sizeof *order);
    group *groups = malloc(((size_t)t->n + 1) * sizeof *groups);
    int *renumber = malloc(((size_t)t->n + 1) * sizeof *renumber);
    if (!order || !groups || !renumber) {
        free(order);
        free(groups);
        free(renumber);
        return -1;
    }
    for (int i = 0; i < t->n; i++)
        order[i] = (keyed){&t->rows[i], i};
    /* sorted by key, a group's rows are adjacent and its first row comes first */
    qsort(order, (size_t)t->n, sizeof *order, cmp_key);
    int n = 0;
    for (int i = 0; i < t->n; i++) {
        if (i == 0 || !same_group(order[i - 1].k, order[i].k)) {
            groups[n] = (group){order[i].index, n};
            n++;
        }
        group_of[order[i].index] = n - 1;
    }
    /* numbered again in order of first appearance */
    qsort(groups, (size_t)n, sizeof *groups, cmp_first);
    for (int g = 0; g < n; g++) {
        first_row[g] = groups[g].first;
        renumber[groups[g].sorted] = g;
    }
    for (int i = 0; i < t->n; i++)
        group_of[i] = renumber[group_of[i]];
    free(order);
    free(groups);
    free(renumber);
    return n;
}
