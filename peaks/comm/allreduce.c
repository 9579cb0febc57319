/* The sweep over sizes, its summary and its two files. */
#include "allreduce.h"

#include <stdlib.h>
#include <string.h>

#include "../../analysis/csv.h"

void allreduce_expected_table(int ranks, float table[8])
{
    for (int j = 0; j < 8; j++) {
        int64_t sum = 0;
        for (int r = 0; r < ranks; r++)
            sum += (r + j) % 8 + 1;
        table[j] = (float)sum;
    }
}

double allreduce_bus_factor(int ranks)
{
    return ranks > 1 ? 2.0 * (ranks - 1) / ranks : 0.0;
}

void allreduce_curve_free(allreduce_curve *c)
{
    free(c->points);
    c->points = NULL;
    c->n = 0;
}

/* Every rank's time and check, combined on every rank: the slowest time,
 * and correct only where every rank found its result right. */
static int combine(ddp_world *w, double *seconds, bool *correct, char *err, size_t err_len)
{
    if (w->size == 1)
        return 0;
    uint64_t mine, lo, hi;
    memcpy(&mine, seconds, sizeof mine); /* a positive double orders as its bits do */
    if (ddp_min_max_u64(w, mine, &lo, &hi, "combining the benchmark's times", err, err_len))
        return -1;
    memcpy(seconds, &hi, sizeof hi);
    bool all = false;
    if (ddp_all_true(w, *correct, &all, "combining the benchmark's checks", err, err_len))
        return -1;
    *correct = all;
    return 0;
}

static int run_one(ddp_world *w, const allreduce_options *o, nccl_bench *nb, int64_t bytes,
                   int warmup, int iters, double *seconds, bool *correct, char *err,
                   size_t err_len)
{
    int rc = o->transport == COMM_NCCL
                 ? allreduce_nccl_run(nb, bytes, warmup, iters, seconds, correct, err, err_len)
                 : allreduce_mpi_run(w, bytes, warmup, iters, seconds, correct, err, err_len);
    return rc ? -1 : combine(w, seconds, correct, err, err_len);
}

int allreduce_sweep(ddp_world *w, const allreduce_options *o, allreduce_curve *c)
{
    memset(c, 0, sizeof *c);
    int cap = 1;
    for (int64_t b = o->min_bytes; b < o->max_bytes; b *= o->factor)
        cap++;
    c->points = calloc((size_t)cap, sizeof *c->points);
    if (!c->points) {
        snprintf(c->err, sizeof c->err, "out of memory");
        return -1;
    }
    nccl_bench *nb = NULL;
    if (o->transport == COMM_NCCL && !(nb = allreduce_nccl_open(w, o->device, c->err,
                                                                 sizeof c->err)))
        return -1;
    int rc = 0;
    for (int64_t bytes = o->min_bytes; bytes <= o->max_bytes && rc == 0; bytes *= o->factor) {
        /* a trial sets the iterations: about target_s per size, 3 at least */
        double trial = 0.0;
        bool correct = false;
        rc = run_one(w, o, nb, bytes, o->warmup, 1, &trial, &correct, c->err, sizeof c->err);
        if (rc)
            break;
        double want = trial > 0 ? o->target_s / trial : 1000.0;
        int iters = want < 3 ? 3 : want > 1000 ? 1000 : (int)want;
        allreduce_point *p = &c->points[c->n];
        double seconds = 0.0;
        rc = run_one(w, o, nb, bytes, 1, iters, &seconds, &p->correct, c->err, sizeof c->err);
        if (rc)
            break;
        p->bytes = bytes;
        p->iters = iters;
        p->time_us = seconds / iters * 1e6;
        p->algbw_gbs = bytes / (p->time_us * 1e-6) / 1e9;
        p->busbw_gbs = p->algbw_gbs * allreduce_bus_factor(w->size);
        p->correct = p->correct && correct;
        c->n++;
        if (bytes > o->max_bytes / o->factor)
            break; /* the next size would overflow past the last */
    }
    allreduce_nccl_close(nb);
    return rc;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

allreduce_summary allreduce_summarise(const allreduce_curve *c)
{
    allreduce_summary s = {0};
    if (c->n == 0)
        return s;
    s.latency_us = c->points[0].time_us;
    s.latency_bytes = c->points[0].bytes;
    int64_t top = c->points[c->n - 1].bytes;
    s.plateau_from_bytes = top / 16 > c->points[0].bytes ? top / 16 : c->points[0].bytes;
    s.plateau_is_algbw = c->points[0].busbw_gbs == 0.0;
    double v[64];
    int n = 0;
    for (int i = 0; i < c->n && n < 64; i++)
        if (c->points[i].bytes >= s.plateau_from_bytes)
            v[n++] = s.plateau_is_algbw ? c->points[i].algbw_gbs : c->points[i].busbw_gbs;
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    s.plateau_gbs = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    return s;
}

int allreduce_write_curve(const char *path, const char *env, const char *transport, int ranks,
                          int nodes, const allreduce_curve *c, char *err, size_t err_len)
{
    char tmp[4096];
    FILE *f = csv_create(path, tmp, sizeof tmp, err, err_len);
    if (!f)
        return -1;
    fputs("env,transport,world_size,nodes,dtype,bytes,iters,time_us,algbw_gbs,busbw_gbs,"
          "correct\n", f);
    for (int i = 0; i < c->n; i++) {
        const allreduce_point *p = &c->points[i];
        fprintf(f, "%s,%s,%d,%d,fp32,%lld,%d,%.3f,%.4f,%.4f,%s\n", env, transport, ranks, nodes,
                (long long)p->bytes, p->iters, p->time_us, p->algbw_gbs, p->busbw_gbs,
                p->correct ? "yes" : "no");
    }
    return csv_commit(f, tmp, path, err, err_len);
}

static void human_bytes(int64_t b, char *out, size_t len)
{
    if (b >= (int64_t)1 << 30)
        snprintf(out, len, "%g GiB", b / 1073741824.0);
    else if (b >= 1 << 20)
        snprintf(out, len, "%g MiB", b / 1048576.0);
    else
        snprintf(out, len, "%g KiB", b / 1024.0);
}

int allreduce_write_peaks(const char *path, const char *env, const char *device,
                          const char *transport, int ranks, int nodes, const allreduce_summary *s,
                          char *err, size_t err_len)
{
    char tmp[4096], from[32], lat[32];
    FILE *f = csv_create(path, tmp, sizeof tmp, err, err_len);
    if (!f)
        return -1;
    human_bytes(s->plateau_from_bytes, from, sizeof from);
    human_bytes(s->latency_bytes, lat, sizeof lat);
    fputs("env,device,ceiling,value,unit,method,spec_value,threads_or_sms,notes\n", f);
    fprintf(f, "%s,%s,allreduce,%.4f,GB/s,%s_allreduce,,%d,\"%s: median over sizes >= %s; "
               "%d ranks on %d node(s)\"\n",
            env, device, s->plateau_gbs, transport, ranks,
            s->plateau_is_algbw ? "algbw plateau (one rank: a copy within the device, busbw "
                                  "is 0 by definition)"
                                : "busbw plateau (algbw x 2(n-1)/n, as nccl-tests)",
            from, ranks, nodes);
    fprintf(f, "%s,%s,allreduce_latency,%.3f,us,%s_allreduce,,%d,\"time of one %s allreduce; "
               "%d ranks on %d node(s)\"\n",
            env, device, s->latency_us, transport, ranks, lat, ranks, nodes);
    return csv_commit(f, tmp, path, err, err_len);
}
