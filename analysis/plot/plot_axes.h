/* The axes of the roofline figures (plot_roofline.c, plot_models.c): log
 * ranges in whole decades around what is drawn. */
#ifndef ROOFLINE_PLOT_AXES_H
#define ROOFLINE_PLOT_AXES_H

#include <stdio.h>

#include "../roofs.h"

typedef struct {
    double lo, hi;
} plot_span;

/* Widens s to v when v is positive and finite. */
void plot_span_add(plot_span *s, double v);

/* The rate unit of a figure: from its highest ceiling or point. */
double plot_figure_yscale(const roof_lines *roofs, double top_point, const char **unit);

/* Axis ranges (y in the figure's unit) in whole decades around the points
 * (x: FLOP/byte, y: GFLOP/s), the ridge points and the ceilings' starts, at
 * least two decades wide and at most seven tall; then the ceilings
 * (plot_write_ceilings). */
void plot_write_axes(FILE *f, plot_span x, plot_span y, const roof_lines *roofs,
                     const char *main_ceiling, double main_gflops);

#endif
