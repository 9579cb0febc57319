/* Ours beside PyTorch: the configurations that reference.csv (PyTorch's
 * steps, measured by the runner in the same run) also holds, as a table and
 * one finding. Nothing at all where the run has no reference.csv. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../stats.h"
#include "report_sections.h"

/* Ours against a PyTorch configuration of the same shape. */
typedef struct {
    const summary_row *ours;
    double ips;      /* PyTorch's median images/s */
    double peak_mem; /* PyTorch's peak memory, bytes; NaN when not recorded */
    const char *backend; /* reference.csv's: "pytorch-2.11.0+cu130" (or "pytorch") */
} reference_pair;

/* PyTorch's median images/s: of its rows' images/s, as summary.csv takes
 * ours, else the batch over the median step. NaN when it cannot be had. */
static double median_ips(const run_steps *r)
{
    stats_summary s;
    bool all_ips = r->n > 0;
    for (int i = 0; i < r->n && all_ips; i++)
        all_ips = !isnan(r->images_per_s[i]);
    if (stats_describe(all_ips ? r->images_per_s : r->step_ms, r->n, &s) || isnan(s.median))
        return NAN;
    return all_ips ? s.median : (s.median > 0 ? r->key.batch * 1e3 / s.median : NAN);
}

static const run_steps *find_reference(const run_model *run, const summary_row *s)
{
    for (int k = 0; k < run->n_reference; k++) {
        const run_key *key = &run->reference[k].key;
        if (key->res == s->res && key->batch == s->batch && key->graph == s->graph &&
            key->world_size == 1 && strcmp(key->model, s->model) == 0 &&
            strcmp(key->precision, s->precision) == 0)
            return &run->reference[k];
    }
    return NULL;
}

/* The pairs in summary order (one rank, both sides measured); NULL when
 * there are none (*n 0) or memory ran out (d marked). */
static reference_pair *pairs_of(report_doc *d, const run_model *run, int *n)
{
    *n = 0;
    if (run->n_reference == 0 || run->summary.n == 0)
        return NULL;
    reference_pair *p = calloc((size_t)run->summary.n, sizeof *p);
    if (!p) {
        d->failed = true;
        return NULL;
    }
    for (int i = 0; i < run->summary.n; i++) {
        const summary_row *s = &run->summary.rows[i];
        const run_steps *r = s->world_size == 1 ? find_reference(run, s) : NULL;
        double ips = r ? median_ips(r) : NAN;
        if (r && ips > 0 && s->ips_median > 0)
            p[(*n)++] = (reference_pair){s, ips, r->peak_mem_bytes, r->key.backend};
    }
    if (*n == 0) {
        free(p);
        return NULL;
    }
    return p;
}

static void pair_name(char *out, size_t len, const reference_pair *p)
{
    char prec[64];
    report_key_short(out, len, p->ours->model, p->ours->res, p->ours->batch,
                     report_precision_label(prec, sizeof prec, p->ours->precision,
                                            p->ours->graph));
}

void report_reference_finding(report_doc *d, const run_model *run)
{
    int n;
    reference_pair *p = pairs_of(d, run, &n);
    if (!p)
        return;
    const reference_pair *lo = &p[0], *hi = &p[0];
    int below = 0;
    for (int i = 0; i < n; i++) {
        double ratio = p[i].ours->ips_median / p[i].ips;
        below += ratio < 1;
        if (ratio < lo->ours->ips_median / lo->ips)
            lo = &p[i];
        if (ratio > hi->ours->ips_median / hi->ips)
            hi = &p[i];
    }
    char a[160], b[160];
    pair_name(a, sizeof a, lo);
    pair_name(b, sizeof b, hi);
    double r_lo = lo->ours->ips_median / lo->ips, r_hi = hi->ours->ips_median / hi->ips;
    if (n == 1)
        doc_item(d, "Against PyTorch on this machine, in this run: %.2fx its images/s (%s).", r_lo,
                 a);
    else
        doc_item(d, "Against PyTorch on this machine, in this run: from %.2fx its images/s (%s) "
                    "to %.2fx (%s) over %d configurations%s.",
                 r_lo, a, r_hi, b, n,
                 below == 0  ? "; faster in every one"
                 : below == n ? "; slower in every one"
                              : "");
    if (below > 0 && below < n)
        doc_item(d, "Slower than PyTorch in %d of %d configurations; the slowest against it is "
                    "%s: the tables under \"Where the time goes\" show where its step goes.",
                 below, n, a);
    free(p);
}

void report_reference(report_doc *d, const run_model *run)
{
    int n;
    reference_pair *p = pairs_of(d, run, &n);
    if (!p)
        return;
    /* the versions the figures were measured with, each once */
    char backends[512] = "";
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(p[j].backend, p[i].backend) == 0;
        if (!seen)
            fmt_append(backends, sizeof backends, &used, "%s%s", used ? ", " : "", p[i].backend);
    }
    doc_heading(d, 1, "Against PyTorch");
    doc_para(d, "PyTorch (%s) on the same configurations, measured by the runner after ours in this "
                "run (scripts/pytorch_ref.py: the same synthetic batch, loss and SGD with "
                "momentum; its rows in reference.csv). Medians of images/s over every timed step; "
                "the ratio is ours over PyTorch's, above 1 when ours is faster. Peak memory: "
                "ours as in the results table, PyTorch's its process's resident set (CPU) or "
                "torch.cuda.max_memory_allocated (GPU).",
             backends);
    doc_table(d, "lrrlrrrrr",
              (const char *const[]){"model", "res", "batch", "precision", "ours images/s",
                                    "PyTorch images/s", "ours / PyTorch", "ours peak GiB",
                                    "PyTorch peak GiB"});
    for (int i = 0; i < n; i++) {
        const summary_row *s = p[i].ours;
        char a[FMT_LEN];
        doc_cell(d, "%s", s->model);
        doc_cell(d, "%d", s->res);
        doc_cell(d, "%d", s->batch);
        doc_cell(d, "%s", report_precision_label(a, sizeof a, s->precision, s->graph));
        doc_cell(d, "%s", fmt_num(a, s->ips_median));
        doc_cell(d, "%s", fmt_num(a, p[i].ips));
        doc_cell(d, "%.2fx", s->ips_median / p[i].ips);
        doc_cell(d, "%s", fmt_num(a, s->peak_mem_bytes / (1024.0 * 1024 * 1024)));
        doc_cell(d, "%s", fmt_num(a, p[i].peak_mem / (1024.0 * 1024 * 1024)));
    }
    free(p);
}
