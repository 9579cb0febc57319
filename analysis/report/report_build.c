/* The order of a run's report: what a reader wants first (the findings),
 * then the machine, the numbers per configuration, the figures, and the
 * detail (kernels, variability, failures, sources). */
#include "report_build.h"

#include "report_sections.h"

void report_build_run(report_doc *d, const run_model *run, const plot_figure_list *figs)
{
    doc_para(d, "Run folder %s, environment %s. Every number below comes from the CSV files of "
                "this folder (bin/analyze, then bin/report); make report RUN=%s renders it again.",
             run->dir, run->env_name[0] ? run->env_name : "(unknown)", run->dir);
    report_findings(d, run);
    report_environment(d, run);
    report_peaks(d, run);
    report_results(d, run);
    report_reference(d, run);
    report_figures(d, run, figs);
    report_kernels(d, run);
    report_gpu_roofline(d, run, figs);
    report_gpu_breakdown(d, run, figs);
    report_gpu_costs(d, run, figs);
    report_variability(d, run);
    report_scaling(d, run);
    report_failures(d, run);
    report_sources(d, run);
}
