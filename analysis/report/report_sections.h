/* The sections of a run's report, one job each (report_build.c puts them in
 * order), and the helpers they share. Internal to analysis/report_*.c. */
#ifndef ROOFLINE_REPORT_SECTIONS_H
#define ROOFLINE_REPORT_SECTIONS_H

#include "plot_figures.h"
#include "report_doc.h"
#include "report_fmt.h"
#include "report_run.h"

void report_findings(report_doc *d, const report_run *run);
void report_environment(report_doc *d, const report_run *run);
void report_peaks(report_doc *d, const report_run *run);
void report_results(report_doc *d, const report_run *run);
void report_failures(report_doc *d, const report_run *run);
void report_scaling(report_doc *d, const report_run *run);
void report_figures(report_doc *d, const report_run *run, const plot_figure_list *figs);
void report_kernels(report_doc *d, const report_run *run);
void report_variability(report_doc *d, const report_run *run);
void report_sources(report_doc *d, const report_run *run);

/* "resnet50 @224 b8 fp32" */
void report_config_short(const report_config *c, char *out, size_t len);

/* The label of the run's DRAM-like memory level ("DRAM", "HBM"). */
const char *report_memory_name(const report_run *run);

#endif
