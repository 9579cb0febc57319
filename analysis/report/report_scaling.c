/* The report's scaling section: the data-parallel runs as scaling.csv
 * measured them (with the per-step breakdown into compute, communication and
 * exposed communication), then the scaling model of scaling_model.csv: its
 * assumptions, its predictions against every measured world size above one
 * rank, and the projection to 64 ranks over 8 nodes. Measurements and
 * predictions are always labelled as such. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_sections.h"

static void count_cell(report_doc *d, int v)
{
    if (v >= 0)
        doc_cell(d, "%d", v);
    else
        doc_cell(d, "%s", "");
}

static void num_cell(report_doc *d, double v)
{
    char a[FMT_LEN];
    doc_cell(d, "%s", fmt_num(a, v));
}

static void share_cell(report_doc *d, double fraction)
{
    char a[FMT_LEN];
    doc_cell(d, "%s", fmt_share(a, fraction));
}

/* The share of the step's reductions that backward hid: 1 - (exposed -
 * copying) / alone; and the same for all buckets but the last (the only ones
 * with backward left after them): what they cost the step over what they
 * take alone. On a host transport their cost is the time inside the
 * reduction calls during backward (their bytes moved and summed on the
 * computing core) plus whatever of the final wait the last bucket alone does
 * not explain; elsewhere the exposed time beyond the last bucket's. NaN
 * where it does not apply. */
static void hidden_shares(const run_scaling *s, double *all, double *hideable)
{
    *all = *hideable = NAN;
    if (s->world_size < 2 || !(s->comm_ms > 0) || isnan(s->exposed_comm_ms))
        return;
    double reductions = s->exposed_comm_ms - (isnan(s->copy_ms) ? 0 : s->copy_ms);
    *all = fmax(0, 1.0 - reductions / s->comm_ms);
    if (!(s->last_comm_ms >= 0) || !(s->comm_ms - s->last_comm_ms > 0))
        return;
    double cost = isnan(s->backward_comm_ms)
                      ? fmax(0, reductions - s->last_comm_ms)
                      : s->backward_comm_ms +
                            fmax(0, reductions - s->backward_comm_ms - s->last_comm_ms);
    *hideable = fmax(0, 1.0 - cost / (s->comm_ms - s->last_comm_ms));
}

static void hidden_cell(report_doc *d, const run_scaling *s)
{
    double all, hideable;
    hidden_shares(s, &all, &hideable);
    char a[FMT_LEN], b[FMT_LEN];
    if (isnan(all))
        doc_cell(d, "-");
    else if (isnan(hideable))
        doc_cell(d, "%s", fmt_share(a, all));
    else
        doc_cell(d, "%s / %s", fmt_share(a, all), fmt_share(b, hideable));
}

static void measured_table(report_doc *d, const run_model *run)
{
    bool threads = false;
    for (int i = 0; i < run->n_scaling; i++)
        threads |= run->scaling[i].threads_per_rank > 0;
    doc_para(d, "Measured: data-parallel training as scaling.csv records it (bin/train --ddp under "
                "mpirun or srun), one row per run. Weak scaling keeps the batch per rank, strong "
                "scaling splits the configuration's batch over the ranks; efficiency is T1 / TN "
                "(weak) and T1 / (N x TN) (strong), T1 the one-rank step. A step is compute + "
                "exposed communication, both of the rank that computed longest (the others' "
                "extra is waiting for it); comm is the step's reductions timed alone, with no "
                "compute; hidden is the share of comm that backward hid, 1 - (exposed - "
                "copying) / comm (copying: the host transport packing the gradients into the "
                "buckets and the averages back), and after the slash the same for all buckets "
                "but the last, which starts after the whole backward (on MPI their cost is the "
                "time inside the MPI calls during backward, where their bytes are moved and "
                "summed on the computing core, plus what of the final wait the last bucket "
                "alone does not explain).");
    doc_table(d, threads ? "lrlrrrrrrrrrrrr" : "lrlrrrrrrrrrrr",
              threads ? (const char *const[]){"model", "res", "mode", "ranks", "nodes",
                                              "threads per rank", "batch per rank",
                                              "global batch", "step ms", "images/s",
                                              "compute ms", "comm ms", "exposed comm ms",
                                              "hidden", "efficiency"}
                      : (const char *const[]){"model", "res", "mode", "ranks", "nodes",
                                              "batch per rank", "global batch", "step ms",
                                              "images/s", "compute ms", "comm ms",
                                              "exposed comm ms", "hidden", "efficiency"});
    for (int i = 0; i < run->n_scaling; i++) {
        const run_scaling *s = &run->scaling[i];
        doc_cell(d, "%s", s->model);
        doc_cell(d, "%d", s->res);
        doc_cell(d, "%s", s->mode);
        doc_cell(d, "%d", s->world_size);
        count_cell(d, s->nodes);
        if (threads)
            count_cell(d, s->threads_per_rank);
        count_cell(d, s->per_rank_batch);
        count_cell(d, s->global_batch);
        num_cell(d, s->step_ms);
        num_cell(d, s->images_per_s);
        num_cell(d, s->step_ms - s->exposed_comm_ms);
        num_cell(d, s->comm_ms);
        num_cell(d, s->exposed_comm_ms);
        hidden_cell(d, s);
        num_cell(d, s->efficiency);
    }
}

/* ---- the model ------------------------------------------------------------------ */

static const run_prediction *first_of(const run_model *run, const char *link)
{
    for (int i = 0; i < run->n_predictions; i++)
        if (!strcmp(run->predictions[i].link, link))
            return &run->predictions[i];
    return NULL;
}

/* A configuration's inputs once each: its one-rank step, the backward's
 * share, the overlap efficiency and the copying. */
static void configuration_items(report_doc *d, const run_model *run)
{
    for (int i = 0; i < run->n_predictions; i++) {
        const run_prediction *p = &run->predictions[i];
        bool seen = p->world_size != 1;
        for (int j = 0; j < i && !seen; j++) {
            const run_prediction *q = &run->predictions[j];
            seen = q->world_size == 1 && q->res == p->res && !strcmp(q->model, p->model) &&
                   !strcmp(q->mode, p->mode);
        }
        if (seen)
            continue;
        char a[FMT_LEN], b[FMT_LEN], c[FMT_LEN], e[FMT_LEN];
        doc_item(d, "%s @%d, %s scaling (%s ranks): one-rank step %s ms, backward %s of the "
                    "compute, overlap efficiency %s, host copying %s ms per step.",
                 p->model, p->res, p->mode, p->backend[0] ? p->backend : "unknown",
                 fmt_num(a, p->step_ms), fmt_share(b, p->backward_share),
                 fmt_num(c, p->overlap_efficiency), fmt_num(e, p->host_copy_ms));
    }
}

static void assumptions(report_doc *d, const run_model *run)
{
    const run_prediction *fit = first_of(run, "fit"), *links = first_of(run, "links");
    char a[FMT_LEN], b[FMT_LEN], c[FMT_LEN], e[FMT_LEN];
    doc_para(d, "The scaling model (analysis/scaling_model.c, bin/scaling_model; "
                "scaling_model.csv) predicts a step at N ranks from the one-rank run alone. Its "
                "assumptions:");
    doc_list(d);
    doc_item(d, "step(N) = compute(N) + max(0, allreduce(N) - overlap(N)) + host copying. "
                "compute(1) is the one-rank step less its exposed communication; strong scaling "
                "divides it by N (compute taken as linear in the batch), weak scaling keeps it.");
    doc_item(d, "allreduce(N): the sum over the gradient buckets as bin/train --ddp makes them "
                "(backward order, 25 MiB, the first 1 MiB) of an alpha-beta cost, the cheaper of "
                "a ring (2(N-1) alpha + 2(N-1)/N x bytes / busbw) and a tree (2 log2(N) alpha + "
                "2 x bytes / busbw). Across nodes it is hierarchical: a reduce-scatter and an "
                "all-gather inside each node of g ranks, and between the nodes an allreduce of "
                "bytes / g per rank, every rank on its own inter-node port.");
    if (fit)
        doc_item(d, "Rows marked fit: inside a node, the alpha-beta line fitted to this run's "
                    "measured allreduce curve (allreduce.csv, bin/allreduce on %d ranks, %d "
                    "sizes): alpha from the smallest size, the bandwidth from the sizes of at "
                    "least %s MiB (a CPU runs smaller ones from its caches, faster than the "
                    "buckets travel): alpha %s us per algorithm step, busbw %s; its worst point "
                    "is %s off the line. Across nodes the inter-node link below.",
                 fit->fit_ranks, fit->fit_points, fmt_num(a, fit->fit_min_mb),
                 fmt_num(b, fit->intra_alpha_us), fmt_gbs(c, fit->intra_busbw_gbs),
                 fmt_pct(e, fit->fit_worst_pct));
    if (links)
        doc_item(d, "Rows marked links (the projection): nodes of %d ranks; inside a node busbw "
                    "%s with alpha %s us%s; across nodes busbw %s per rank with alpha %s us%s. "
                    "These are parameters of bin/scaling_model (--intra-gbs, --inter-gbs, "
                    "--alpha-intra-us, --alpha-inter-us, --gpus-per-node), not measurements.",
                 links->ranks_per_node, fmt_gbs(a, links->intra_busbw_gbs),
                 fmt_num(b, links->intra_alpha_us),
                 links->intra_busbw_gbs == 450 ? " (NVLink 4, 450 GB/s per direction)" : "",
                 fmt_gbs(c, links->inter_busbw_gbs), fmt_num(e, links->inter_alpha_us),
                 links->inter_busbw_gbs == 50 ? " (an NDR InfiniBand port of 50 GB/s per GPU)"
                                              : "");
    doc_item(d, "Overlap: overlap(N) = min(window, allreduce(N) - the last bucket's allreduce), "
                "window = the backward's share of the compute (from the analytic FLOPs) x "
                "compute(N) x the overlap efficiency: 1 for GPU ranks, whose NCCL kernels run on "
                "a stream of their own beside the backward; 0 for CPU ranks, whose reductions "
                "move their bytes and add them up on the cores that compute (MPI progressed from "
                "the step's own thread, no idle core).");
    doc_item(d, "The last bucket is launched only after the whole backward (it holds the first "
                "layers' gradients): nothing is left to hide it in, so it is never hidden.");
    doc_item(d, "Host copying: CPU ranks pack every bucket and unpack the averages on the "
                "step's thread; the one-rank run's exposed time, added at every N. GPUs copy "
                "on their communication stream: 0.");
    doc_para(d, "What each configuration brings to it:");
    doc_list(d);
    configuration_items(d, run);
}

/* The row the measured point at (model, res, mode, n) is compared with: the
 * fit's when there is one, else the links'. */
static const run_prediction *prediction_for(const run_model *run, const run_prediction *p)
{
    const run_prediction *links = NULL;
    for (int i = 0; i < run->n_predictions; i++) {
        const run_prediction *q = &run->predictions[i];
        if (q->world_size != p->world_size || q->res != p->res || strcmp(q->model, p->model) ||
            strcmp(q->mode, p->mode) || isnan(q->measured_step_ms))
            continue;
        if (!strcmp(q->link, "fit"))
            return q;
        if (!links)
            links = q;
    }
    return links;
}

static void validation(report_doc *d, const run_model *run)
{
    doc_para(d, "Predicted against measured: every measured world size above one rank beside "
                "the model's prediction from the one-rank run (the fit's rows where the run "
                "measured an allreduce curve).");
    doc_table(d, "lrlrlrrrrr",
              (const char *const[]){"model", "res", "mode", "ranks", "link",
                                    "predicted step ms", "measured step ms", "model error",
                                    "predicted efficiency", "measured efficiency"});
    for (int i = 0; i < run->n_predictions; i++) {
        const run_prediction *p = &run->predictions[i];
        if (p->world_size < 2 || isnan(p->measured_step_ms) || prediction_for(run, p) != p)
            continue;
        char a[FMT_LEN];
        doc_cell(d, "%s", p->model);
        doc_cell(d, "%d", p->res);
        doc_cell(d, "%s", p->mode);
        doc_cell(d, "%d", p->world_size);
        doc_cell(d, "%s", p->link);
        num_cell(d, p->step_ms);
        num_cell(d, p->measured_step_ms);
        doc_cell(d, "%s", fmt_signed_pct(a, 100.0 * (p->step_ms / p->measured_step_ms - 1.0)));
        num_cell(d, p->efficiency);
        num_cell(d, p->measured_efficiency);
    }
    if (doc_table_rows(d) == 0) {
        doc_drop_empty_table(d);
        doc_para(d, "No world size above one rank was measured: there is nothing to check the "
                    "model against in this run.");
    }
}

/* The links' row of (model, res, mode) at n ranks, or NULL. */
static const run_prediction *link_row(const run_model *run, const run_prediction *p,
                                      const char *mode)
{
    for (int i = 0; i < run->n_predictions; i++) {
        const run_prediction *q = &run->predictions[i];
        if (q->world_size == p->world_size && q->res == p->res && !strcmp(q->link, "links") &&
            !strcmp(q->model, p->model) && !strcmp(q->mode, mode))
            return q;
    }
    return NULL;
}

static void projection(report_doc *d, const run_model *run)
{
    int most = 0, nodes = 0;
    bool cpu = false;
    for (int i = 0; i < run->n_predictions; i++) {
        const run_prediction *p = &run->predictions[i];
        if (strcmp(p->link, "links") || p->world_size < most)
            continue;
        most = p->world_size;
        nodes = p->nodes;
        cpu |= !strcmp(p->backend, "cpu");
    }
    if (most == 0)
        return;
    doc_para(d, "Predicted (not measured): efficiency on the links above, to %d ranks over %d "
                "node%s.%s",
             most, nodes, nodes == 1 ? "" : "s",
             cpu ? " The rows of CPU runs put this run's one-rank step on those links with the "
                   "CPU's overlap rule: what these ranks would do with GPU-class links, a "
                   "what-if rather than a forecast for this machine."
                 : "");
    doc_table(d, "lrrrrrrr",
              (const char *const[]){"model", "res", "ranks", "nodes", "strong step ms",
                                    "strong efficiency", "weak step ms", "weak efficiency"});
    for (int i = 0; i < run->n_predictions; i++) {
        const run_prediction *p = &run->predictions[i];
        if (strcmp(p->link, "links"))
            continue;
        const run_prediction *strong = link_row(run, p, "strong"), *weak = link_row(run, p, "weak");
        /* each (model, res, ranks) once: at its first row */
        if ((strong ? strong : weak) != p)
            continue;
        doc_cell(d, "%s", p->model);
        doc_cell(d, "%d", p->res);
        doc_cell(d, "%d", p->world_size);
        count_cell(d, p->nodes);
        num_cell(d, strong ? strong->step_ms : NAN);
        if (strong)
            share_cell(d, strong->efficiency);
        else
            doc_cell(d, "-");
        num_cell(d, weak ? weak->step_ms : NAN);
        if (weak)
            share_cell(d, weak->efficiency);
        else
            doc_cell(d, "-");
    }
}

void report_scaling(report_doc *d, const run_model *run)
{
    if (run->n_scaling == 0 && run->n_predictions == 0)
        return;
    doc_heading(d, 1, "Scaling");
    if (run->n_scaling > 0)
        measured_table(d, run);
    if (run->n_predictions == 0) {
        doc_para(d, "No scaling_model.csv: the scaling stage writes it (bin/scaling_model) once "
                    "a one-rank run is in scaling.csv.");
        return;
    }
    doc_heading(d, 2, "Scaling model");
    assumptions(d, run);
    validation(d, run);
    projection(d, run);
}
