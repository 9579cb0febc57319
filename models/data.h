/* Where a training batch comes from: synthetic (seeded normal pixels, uniform
 * labels) or the CIFAR-10 binary batches (data_batch_1.bin ...). */
#ifndef ROOFLINE_DATA_H
#define ROOFLINE_DATA_H

#include <stddef.h>
#include <stdint.h>

enum { CIFAR10_SIDE = 32, CIFAR10_CLASSES = 10, CIFAR10_RECORD = 1 + 3 * 32 * 32,
       CIFAR10_PER_FILE = 10000, CIFAR10_FILES = 5 };

/* batch x channels x side x side pixels and batch labels in [0, classes). */
void data_synthetic(uint64_t seed, int batch, int channels, int side, int classes, float *images,
                    int32_t *labels);

/* The first `batch` images of DIR/data_batch_1.bin, _2, ... normalised with
 * CIFAR-10's per-channel mean and std. 0, or -1 with a message naming the file
 * and what was expected. */
int data_cifar10(const char *dir, int batch, float *images, int32_t *labels, char *err,
                 size_t err_len);

#endif
