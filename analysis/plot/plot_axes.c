#include "plot_axes.h"

#include <math.h>

#include "plot_ceilings.h"
#include "plot_out.h"

void plot_span_add(plot_span *s, double v)
{
    if (!(v > 0) || !isfinite(v))
        return;
    if (!(s->lo > 0) || v < s->lo)
        s->lo = v;
    if (v > s->hi)
        s->hi = v;
}

double plot_figure_yscale(const roof_lines *roofs, double top_point, const char **unit)
{
    return plot_rate_unit(fmax(roof_lines_top_compute(roofs), top_point), unit);
}

void plot_write_axes(FILE *f, plot_span x, plot_span y, const roof_lines *roofs,
                     const char *main_ceiling, double main_gflops)
{
    const char *unit;
    double yscale = plot_figure_yscale(roofs, y.hi, &unit);
    for (int i = 0; i < roofs->n_memory; i++)
        plot_span_add(&x, main_gflops / roofs->memory[i].value);
    const roof_line *dram = roof_lines_main_memory(roofs);
    for (int i = 0; dram && i < roofs->n_compute; i++)
        plot_span_add(&x, roofs->compute[i].value / dram->value);
    plot_span_add(&y, roof_lines_top_compute(roofs));
    if (!(x.lo > 0)) {
        x.lo = 0.1;
        x.hi = 100;
    }
    if (!(y.lo > 0)) {
        y.lo = 1;
        y.hi = 1000;
    }
    double xmin = plot_decade_below(x.lo / 1.3), xmax = plot_decade_above(x.hi * 1.3);
    if (xmax / xmin < 100)
        xmax = xmin * 100;
    double ymax = plot_nice_above(y.hi * yscale * 1.5), ymin = plot_decade_below(y.lo * yscale / 1.3);
    if (ymax / ymin > 1e7)
        ymin = ymax / 1e7;
    if (ymax / ymin < 100)
        ymin = ymax / 100;
    plot_var_num(f, "xmin", xmin);
    plot_var_num(f, "xmax", xmax);
    plot_var_num(f, "ymin", ymin);
    plot_var_num(f, "ymax", ymax);
    plot_write_ceilings(f, roofs, main_ceiling, main_gflops, yscale, unit);
}
