/* Direct-loop forward passes in double, the reference the backends' layers
 * are checked against (values, and gradients by central differences). */
#ifndef ROOFLINE_TEST_REFERENCE_H
#define ROOFLINE_TEST_REFERENCE_H

#include <stdint.h>

#include "../models/graph.h"

/* y = layer(x [, x2]) for a batch; w/bias as PyTorch lays them out; keep is the
 * dropout mask (1 keeps). */
void ref_forward(const layer *l, int batch, const double *x, const double *x2, const double *w,
                 const double *bias, const uint8_t *keep, double *y);

#endif
