/* Parameter initialisation as torchvision's: Kaiming normal (fan_out, ReLU
 * gain) for conv weights, N(0, 0.01) for FC weights, zero biases, BN gamma 1
 * and beta 0 with running mean 0 and variance 1. Seeded and reproducible. */
#ifndef ROOFLINE_INIT_H
#define ROOFLINE_INIT_H

#include <stdint.h>

#include "backend.h"

/* Writes every layer's parameters and BN buffers; 0 or -1 (message in err). */
int init_parameters(const backend_ops *ops, backend *b, const network *net, uint64_t seed,
                    char *err, size_t err_len);

#endif
