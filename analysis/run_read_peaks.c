/* peaks.csv (DESIGN.md §7): the measured roofs, each with its unit, memory
 * level, spec value and how it was measured. */
#include <stdlib.h>
#include <string.h>

#include "run_read.h"

/* "dram", "dram_triad", ... but not "dramatic": the family name alone or
 * followed by an underscore. */
static bool in_family(const char *ceiling, const char *family)
{
    size_t m = strlen(family);
    return strncmp(ceiling, family, m) == 0 && (ceiling[m] == '\0' || ceiling[m] == '_');
}

static mem_level level_of(const char *ceiling)
{
    static const struct {
        const char *family;
        mem_level level;
    } levels[] = {{"dram", MEM_DRAM}, {"hbm", MEM_HBM}, {"l3", MEM_L3},
                  {"l2", MEM_L2},     {"l1", MEM_L1},   {"smem", MEM_SMEM}};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
        if (in_family(ceiling, levels[i].family))
            return levels[i].level;
    return MEM_NONE;
}

/* bin/peaks appends its checks' verdict to what the measurement says
 * ("...; suspect: ..."), or writes it alone. */
static const char *suspect_of(const char *notes)
{
    if (strncmp(notes, "suspect:", 8) == 0)
        return notes;
    const char *at = strstr(notes, "; suspect:");
    return at ? at + 2 : NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int run_read_peaks(run_model *m, col_file *f)
{
    static const char *const names[] = {"ceiling", "value", "unit", NULL};
    int cols[3];
    if (col_require(f, names, cols))
        return -1;
    int device = col_optional(f, "device"), method = col_optional(f, "method"),
        spec = col_optional(f, "spec_value"), threads = col_optional(f, "threads_or_sms"),
        notes = col_optional(f, "notes");
    int n = csv_rows(f->t);
    m->roofs = calloc((size_t)n + 1, sizeof *m->roofs);
    if (!m->roofs)
        return col_oom(f);
    for (int i = 0; i < n; i++) {
        run_roof *r = &m->roofs[i];
        r->ceiling = col_text(f, i, cols[0]);
        r->unit = col_text(f, i, cols[2]);
        r->device = col_text(f, i, device);
        r->method = col_text(f, i, method);
        r->threads_or_sms = col_text(f, i, threads);
        r->notes = col_text(f, i, notes);
        if (col_num(f, i, cols[1], &COL_OPT_ANY, &r->value) ||
            col_num(f, i, spec, &COL_OPT_ANY, &r->spec_value))
            return -1;
        r->rate = strcmp(r->unit, "GFLOP/s") == 0 ? ROOF_RATE_COMPUTE
                  : strcmp(r->unit, "GB/s") == 0  ? ROOF_RATE_BANDWIDTH
                                                  : ROOF_RATE_OTHER;
        r->level = r->rate == ROOF_RATE_BANDWIDTH ? level_of(r->ceiling) : MEM_NONE;
        r->one_core = ends_with(r->ceiling, "_1core");
        r->suspect = suspect_of(r->notes);
    }
    m->n_roofs = n;
    return 0;
}
