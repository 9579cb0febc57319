#include "scaling_model.h"

#include <math.h>
#include <stddef.h>

int sm_fit_allreduce(const double *bytes, const double *seconds, int n, int ranks,
                     double bw_min_bytes, sm_fit *out)
{
    if (n < 2 || ranks < 2)
        return -1;
    for (int i = 0; i < n; i++)
        if (!(seconds[i] > 0) || !(bytes[i] > 0) || (i > 0 && !(bytes[i] > bytes[i - 1])))
            return -1;
    /* sizes from bw_min_bytes carry the bandwidth; at least the largest */
    int from = n - 1;
    while (from > 1 && bytes[from - 1] >= bw_min_bytes)
        from--;
    /* the line through (x0, t0): the slope minimising the relative error
     * (weights 1/t^2) of the large sizes */
    double x0 = bytes[0], t0 = seconds[0], num = 0, den = 0;
    for (int i = from; i < n; i++) {
        double w = 1.0 / (seconds[i] * seconds[i]);
        num += w * (bytes[i] - x0) * (seconds[i] - t0);
        den += w * (bytes[i] - x0) * (bytes[i] - x0);
    }
    double b = den > 0 ? num / den : 0.0;
    double a = t0 - b * x0;
    if (a < 0) { /* no latency to speak of: the line through the origin */
        num = den = 0;
        for (int i = from; i < n; i++) {
            double w = 1.0 / (seconds[i] * seconds[i]);
            num += w * bytes[i] * seconds[i];
            den += w * bytes[i] * bytes[i];
        }
        a = 0;
        b = num / den;
    }
    if (!(b > 0))
        return -1;
    double steps = 2.0 * (ranks - 1);
    *out = (sm_fit){.link = {.alpha_s = a / steps, .busbw_Bps = steps / ranks / b},
                    .ranks = ranks, .points = n};
    for (int i = 0; i < n; i++) {
        double e = fabs(a + b * bytes[i] - seconds[i]) / seconds[i];
        out->max_rel_err = e > out->max_rel_err ? e : out->max_rel_err;
    }
    return 0;
}

double sm_allreduce_flat(const sm_link *l, int n, double bytes)
{
    if (n <= 1)
        return 0.0;
    double ring = 2.0 * (n - 1) * l->alpha_s + 2.0 * (n - 1) / n * bytes / l->busbw_Bps;
    double tree = 2.0 * ceil(log2((double)n)) * l->alpha_s + 2.0 * bytes / l->busbw_Bps;
    return ring < tree ? ring : tree;
}

double sm_allreduce(const sm_topology *t, int n, double bytes)
{
    int g = t->ranks_per_node > 0 ? t->ranks_per_node : 1;
    if (n <= g)
        return sm_allreduce_flat(&t->intra, n, bytes);
    int nodes = (n + g - 1) / g;
    /* reduce-scatter and all-gather inside the node: each half of a ring */
    double intra = g > 1 ? 2.0 * (g - 1) * t->intra.alpha_s +
                               2.0 * (g - 1) / g * bytes / t->intra.busbw_Bps
                         : 0.0;
    /* each rank's 1/g share across the nodes, every rank on its own port */
    return intra + sm_allreduce_flat(&t->inter, nodes, bytes / g);
}

sm_prediction sm_predict(const sm_topology *t, const sm_step_inputs *in, int n)
{
    int g = t->ranks_per_node > 0 ? t->ranks_per_node : 1;
    sm_prediction p = {.ranks = n, .nodes = (n + g - 1) / g};
    p.compute_ms = in->strong ? in->compute1_ms / n : in->compute1_ms;
    for (int k = 0; k < in->n_buckets; k++)
        p.allreduce_ms += sm_allreduce(t, n, in->bucket_bytes[k]) * 1e3;
    if (in->n_buckets > 0)
        p.last_bucket_ms = sm_allreduce(t, n, in->bucket_bytes[in->n_buckets - 1]) * 1e3;
    double window = in->backward_share * p.compute_ms * in->overlap_efficiency;
    double hideable = p.allreduce_ms - p.last_bucket_ms;
    p.overlap_ms = window < hideable ? window : hideable;
    if (p.overlap_ms < 0)
        p.overlap_ms = 0;
    /* packing and unpacking on the step's own thread are never hidden */
    p.exposed_ms = p.allreduce_ms - p.overlap_ms + in->host_copy_ms;
    p.step_ms = p.compute_ms + p.exposed_ms;
    p.efficiency = in->strong ? in->step1_ms / (n * p.step_ms) : in->step1_ms / p.step_ms;
    return p;
}
