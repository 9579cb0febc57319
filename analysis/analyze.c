#include "analyze.h"

#include <stdio.h>
#include <stdlib.h>

#include "roofline_table.h"
#include "roofs.h"
#include "summary.h"
#include "variability.h"

int run_analyze(run_model *m, char *err, size_t err_len)
{
    roofs r;
    roofs_init(&r, m->roofs, m->n_roofs);
    bool has_peaks = m->present & RUN_PEAKS;
    roofline_free(&m->roofline);
    summary_free(&m->summary);
    variability_free(&m->variability);
    /* without peaks.csv there is no roof to put a kernel under */
    if (has_peaks && roofline_build(m->traces, m->n_traces, &r, &m->roofline, err, err_len))
        return -1;
    if (summary_build(m, &m->roofline, has_peaks ? &r : NULL, &m->summary, err, err_len))
        return -1;
    if (variability_build(m->steps, m->n_steps, &m->variability)) {
        snprintf(err, err_len, "variability: out of memory");
        return -1;
    }
    m->present |= RUN_OUTPUTS;
    return 0;
}
