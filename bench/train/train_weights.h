/* --save-weights PREFIX: every parameter after the run, as raw fp32 in layer
 * order (weight, then bias), to PREFIX.rank<R>.bin; tests compare ranks and
 * runs with it. */
#ifndef ROOFLINE_TRAIN_WEIGHTS_H
#define ROOFLINE_TRAIN_WEIGHTS_H

#include <stddef.h>

#include "../../models/backend.h"

int train_save_weights(const char *prefix, int rank, const backend_ops *ops, backend *b,
                       const network *net, char *err, size_t err_len);

#endif
