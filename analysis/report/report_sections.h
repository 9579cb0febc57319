/* The sections of a run's report, one job each (report_build.c puts them in
 * order), and the names they share (report_names.c). Internal to
 * analysis/report/. */
#ifndef ROOFLINE_REPORT_SECTIONS_H
#define ROOFLINE_REPORT_SECTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "../fmt.h"
#include "../plot/plot_figures.h"
#include "../run.h"
#include "../run_to_run.h"
#include "report_doc.h"

void report_findings(report_doc *d, const run_model *run);
void report_environment(report_doc *d, const run_model *run);
void report_peaks(report_doc *d, const run_model *run);
void report_results(report_doc *d, const run_model *run);
/* Ours beside reference.csv's PyTorch steps (report_reference.c); nothing
 * without that file. */
void report_reference(report_doc *d, const run_model *run);
void report_reference_finding(report_doc *d, const run_model *run);
void report_failures(report_doc *d, const run_model *run);
void report_scaling(report_doc *d, const run_model *run);
void report_figures(report_doc *d, const run_model *run, const plot_figure_list *figs);
void report_kernels(report_doc *d, const run_model *run);
void report_variability(report_doc *d, const run_model *run);
void report_sources(report_doc *d, const run_model *run);

/* The GPU sections (report_gpu_roofline.c, report_gpu_breakdown.c,
 * report_gpu_costs.c), each present only when the run has a GPU trace
 * (analysis/trace_gpu.h), and their findings (report_gpu_findings.c). */
void report_gpu_roofline(report_doc *d, const run_model *run, const plot_figure_list *figs);
void report_gpu_breakdown(report_doc *d, const run_model *run, const plot_figure_list *figs);
void report_gpu_costs(report_doc *d, const run_model *run, const plot_figure_list *figs);
void report_gpu_findings(report_doc *d, const run_model *run);

/* Whether <dir>/figures/<stem>.png was drawn; rel gets "figures/<stem>.png". */
bool report_png_exists(const char *dir, const char *stem, char *rel, size_t len);
/* The figure of `kind` drawn for GPU trace t, with its caption, when its PNG
 * exists; nothing otherwise. */
void report_gpu_figure(report_doc *d, const run_model *run, const plot_figure_list *figs,
                       plot_kind kind, const run_trace *t, const char *caption);

/* "resnet50 @224 b8 fp32" */
void report_key_short(char *out, size_t len, const char *model, int res, int batch,
                      const char *precision);
/* "resnet50 @224, batch 8, fp32" */
void report_key_name(char *out, size_t len, const char *model, int res, int batch,
                     const char *precision);
/* The summary row of a traced configuration: its eager steps, as the trace
 * pass runs them, else a graph configuration traced for want of an eager
 * twin; with `timed`, only a row with a median step. NULL when none. */
const summary_row *report_traced_summary(const run_model *run, const char *model, int res,
                                         int batch, const char *precision, bool timed);
/* "bf16", or "bf16 graph" for steps replayed from a CUDA graph: the
 * precision cell of a configuration that may run either way. Returns out. */
const char *report_precision_label(char *out, size_t len, const char *precision, bool graph);

/* A coefficient of variation above this reads "noisy" in a run's findings,
 * and makes a comparison's ratio of medians uncertain. */
#define REPORT_NOISY_CV 0.05

/* A traced step's duration over its configuration's median timed step (the
 * eager twin's for a graph configuration); NaN when either is unknown.
 * *graph (if not NULL): whether that timed configuration is a graph one,
 * i.e. the trace pass was the graph configuration's own (no eager twin). */
double report_trace_ratio(const run_model *run, const roof_config *c, bool *graph);
/* The configuration whose traced step is slowest against its timed steps, if
 * that is beyond the findings' threshold (*ratio its ratio); else NULL. */
const roof_config *report_slowest_trace(const run_model *run, double *ratio);

/* Run to run across the compared folders of one environment (the k
 * configurations of run_to_run_build): a finding per environment measured in
 * several (into the open list), and the section with its table and, where
 * out_dir/figures/run_to_run.png exists, its figure (none when k is 0). */
void report_run_to_run_findings(report_doc *d, const run_model *runs, const run_to_run *all,
                                int k);
void report_run_to_run_section(report_doc *d, const run_model *runs, const run_to_run *all,
                               int k, const char *out_dir);

/* The label of the run's DRAM-like memory level ("DRAM", "HBM"). */
const char *report_memory_name(const run_model *run);

/* Indexes of the n items that keep() accepts, ordered by key(), largest
 * first; NaN last, ties in their order. A malloc'd array (NULL out of
 * memory), *count its length. */
int *report_order_desc(int n, bool (*keep)(int i, const void *arg),
                       double (*key)(int i, const void *arg), const void *arg, int *count);

#endif
