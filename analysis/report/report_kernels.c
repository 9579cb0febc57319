/* Per traced configuration: where the step's time goes, by layer type and by
 * the ten costliest kernels, each with its roofline position and bound. */
#include <stdlib.h>
#include <string.h>

#include "../roofline_table.h"
#include "../roofs.h"
#include "report_sections.h"

#define TOP_KERNELS 10

typedef struct {
    const roof_config *c;
    const char *level;
} level_of_config;

static bool is_level(int i, const void *arg)
{
    const level_of_config *w = arg;
    return strcmp(w->c->rows[i].level, w->level) == 0;
}

static double share_key(int i, const void *arg)
{
    return ((const level_of_config *)arg)->c->rows[i].time_share;
}

static double duration_key(int i, const void *arg)
{
    return ((const level_of_config *)arg)->c->rows[i].pt.duration_ns;
}

/* The roofline columns every row of both tables shows. */
static void roofline_cells(report_doc *d, const roof_row *r)
{
    char a[FMT_LEN];
    doc_cell(d, "%s", fmt_ms_of_ns(a, r->pt.duration_ns));
    doc_cell(d, "%s", fmt_share(a, r->time_share));
    doc_cell(d, "%s", fmt_num(a, r->pt.ai_dram));
    doc_cell(d, "%s", fmt_num(a, r->pt.achieved_gflops));
    doc_cell(d, "%s", fmt_pct(a, r->pt.pct_of_attainable));
    doc_cell(d, "%s", fmt_ms_of_ns(a, r->above_roof_ns));
    doc_cell(d, "%s", roof_bound_name(r->pt.bound));
}

/* A row printed above 100% of its attainable rate. */
static bool above_attainable(const roof_row *r)
{
    return r->pt.pct_of_attainable >= 100.5 &&
           (r->pt.bound == BOUND_MEMORY || r->pt.bound == BOUND_COMPUTE);
}

/* Why layer types sit above their roof, which the reader of a roofline would
 * otherwise take for an error of the suite. Memory-bound with bytes from the
 * cost model: their operands were partly in a cache, which the model's "each
 * tensor once from DRAM" does not see; with counted bytes, or compute-bound,
 * the roof itself (or the FLOP count) is what falls short. */
static void explain_above(report_doc *d, const run_model *run, const roof_config *c,
                          const int *rows, int n)
{
    roof_lines lines;
    roof_lines_of(run->roofs, run->n_roofs, &lines);
    const roof_line *main_mem = roof_lines_main_memory(&lines);
    char mem[1024] = "", cpu[1024] = "", a[FMT_LEN], b[FMT_LEN];
    size_t mem_used = 0, cpu_used = 0;
    int n_mem = 0, n_cpu = 0, n_counted = 0;
    double fastest = 0;
    const char *ceiling = NULL;
    for (int i = 0; i < n; i++) {
        const roof_row *r = &c->rows[rows[i]];
        if (!above_attainable(r))
            continue;
        if (r->pt.bound == BOUND_MEMORY) {
            double gbs = r->pt.dram_bytes / r->pt.duration_ns;
            fastest = gbs > fastest ? gbs : fastest;
            n_counted += strcmp(r->source, "cupti") == 0;
            fmt_append(mem, sizeof mem, &mem_used, "%s%s %s (%s)", n_mem++ ? ", " : "", r->name,
                       fmt_pct(a, r->pt.pct_of_attainable), fmt_gbs(b, gbs));
        } else {
            ceiling = ceiling ? ceiling : r->ceiling;
            fmt_append(cpu, sizeof cpu, &cpu_used, "%s%s %s (%s)", n_cpu++ ? ", " : "", r->name,
                       fmt_pct(a, r->pt.pct_of_attainable),
                       fmt_gflops(b, r->pt.achieved_gflops));
        }
    }
    const char *memory = report_memory_name(run);
    if (n_mem && n_counted == 0) {
        /* the slowest cache level that could have fed the fastest of them */
        const roof_line *cache = NULL;
        for (int i = 0; i < lines.n_memory && !cache; i++)
            if (lines.memory[i].level != MEM_DRAM && lines.memory[i].level != MEM_HBM &&
                lines.memory[i].value >= fastest)
                cache = &lines.memory[i];
        char bound[128] = "";
        if (cache)
            snprintf(bound, sizeof bound, " (the %s roof, %s, is above them all)", cache->label,
                     fmt_gbs(a, cache->value));
        doc_para(d, "Above the attainable rate: %s. In brackets, the rate at which each moved "
                    "the bytes the cost model counts: faster than the %s roof (%s). The model "
                    "counts each tensor once from %s: these took part of theirs from a cache%s, or "
                    "the %s roof was measured low.",
                 mem, memory, main_mem ? fmt_gbs(b, main_mem->value) : "-", memory, bound,
                 memory);
    } else if (n_mem) {
        doc_para(d, "Above the attainable rate from counted %s bytes: %s, faster than the "
                    "measured %s roof (%s): that roof falls short of what these kernels reach; "
                    "measure it again (remove peaks.csv from the run folder and resume it with "
                    "RUN=) before reading the percentages.",
                 memory, mem, memory, main_mem ? fmt_gbs(b, main_mem->value) : "-");
    }
    if (n_cpu)
        doc_para(d, "Above the compute roof: %s against %s: either the FLOPs counted exceed "
                    "those that ran (the cost model counts a direct convolution; Winograd and "
                    "FFT algorithms do fewer multiplications) or the peak was measured low.",
                 cpu, ceiling && ceiling[0] ? ceiling : "its ceiling");
}

static void config_tables(report_doc *d, const run_model *run, const roof_config *c,
                          const roof_row *step)
{
    char name[256], a[FMT_LEN], b[FMT_LEN], g[FMT_LEN], count[FMT_LEN];
    report_key_name(name, sizeof name, c->model, c->res, c->batch, c->precision);
    doc_heading(d, 2, "%s", name);
    doc_para(d, "%s kernels in one traced step of %s ms; the whole step at %s FLOP/byte and %s "
                "is %s-bound. FLOPs and bytes: %s.",
             fmt_count(count, step->count), fmt_ms_of_ns(a, step->pt.duration_ns),
             fmt_num(b, step->pt.ai_dram), fmt_gflops(g, step->pt.achieved_gflops),
             roof_bound_name(step->pt.bound), step->source);

    level_of_config types = {c, "layer_type"}, kernels = {c, "kernel"};
    int n;
    int *rows = report_order_desc(c->n, is_level, share_key, &types, &n);
    if (!rows) {
        d->failed = true;
        return;
    }
    doc_table(d, "lrrrrrrrl",
              (const char *const[]){"layer type", "kernels", "time ms", "share", "FLOP/byte",
                                    "GFLOP/s", "% of attainable", "ms above roof", "bound"});
    for (int i = 0; i < n; i++) {
        const roof_row *r = &c->rows[rows[i]];
        doc_cell(d, "%s", r->name);
        doc_cell(d, "%s", fmt_count(count, r->count));
        roofline_cells(d, r);
    }
    explain_above(d, run, c, rows, n);
    free(rows);

    rows = report_order_desc(c->n, is_level, duration_key, &kernels, &n);
    if (!rows) {
        d->failed = true;
        return;
    }
    doc_para(d, "The %d costliest kernels:", n < TOP_KERNELS ? n : TOP_KERNELS);
    doc_table(d, "rllllrrrrrrl",
              (const char *const[]){"#", "kernel", "layer", "type", "phase", "time ms", "share",
                                    "FLOP/byte", "GFLOP/s", "% of attainable", "ms above roof",
                                    "bound"});
    for (int i = 0; i < n && i < TOP_KERNELS; i++) {
        const roof_row *r = &c->rows[rows[i]];
        doc_cell(d, "%d", i + 1);
        doc_cell(d, "%s", r->name);
        doc_cell(d, "%s", r->layer);
        doc_cell(d, "%s", r->layer_type);
        doc_cell(d, "%s", r->phase);
        roofline_cells(d, r);
    }
    free(rows);
}

void report_kernels(report_doc *d, const run_model *run)
{
    doc_heading(d, 1, "Where the time goes");
    int traced = 0;
    for (int k = 0; k < run->roofline.n; k++)
        traced += roofline_step(&run->roofline.configs[k]) != NULL;
    if (traced == 0)
        doc_para(d, "No traced step in roofline.csv: the trace pass (bin/train --trace) did not "
                    "run or bin/analyze has not been run.");
    else
        doc_para(d, "Per traced configuration: the layer types and the costliest kernels, each "
                    "with its arithmetic intensity against %s traffic, achieved rate, share of its "
                    "attainable rate min(intensity x bandwidth, peak), the time it took beyond what "
                    "that rate allows (a layer type's: the sum over its kernels) and bound.",
                 report_memory_name(run));
    for (int k = 0; k < run->roofline.n; k++) {
        const roof_row *step = roofline_step(&run->roofline.configs[k]);
        if (step)
            config_tables(d, run, &run->roofline.configs[k], step);
    }
}
