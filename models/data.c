#include "data.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rng.h"

void data_synthetic(uint64_t seed, int batch, int channels, int side, int classes, float *images,
                    int32_t *labels)
{
    int64_t n = (int64_t)batch * channels * side * side;
    for (int64_t j = 0; j < n; j++)
        images[j] = (float)rng_normal(seed, 0x1a6e5ull, (uint64_t)j);
    for (int k = 0; k < batch; k++)
        labels[k] = (int32_t)(rng_uniform(seed, 0x1abe1ull, (uint64_t)k) * classes);
}

/* The usual per-channel statistics of the CIFAR-10 training set. */
static const float cifar_mean[3] = {0.4914f, 0.4822f, 0.4465f};
static const float cifar_std[3] = {0.2470f, 0.2435f, 0.2616f};

int data_cifar10(const char *dir, int batch, float *images, int32_t *labels, char *err,
                 size_t err_len)
{
    const int plane = CIFAR10_SIDE * CIFAR10_SIDE;
    int done = 0;
    for (int file = 1; file <= CIFAR10_FILES && done < batch; file++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/data_batch_%d.bin", dir, file);
        FILE *f = fopen(path, "rb");
        if (!f) {
            snprintf(err, err_len, "cifar10: cannot open %s (%s); expected the binary version's "
                     "data_batch_1.bin .. data_batch_5.bin", path, strerror(errno));
            return -1;
        }
        unsigned char record[CIFAR10_RECORD];
        for (int r = 0; r < CIFAR10_PER_FILE && done < batch; r++, done++) {
            size_t got = fread(record, 1, sizeof record, f);
            if (got != sizeof record) {
                snprintf(err, err_len, "cifar10: %s is truncated: record %d has %zu of %d bytes "
                         "(a whole file is %d records of %d bytes)", path, r, got, CIFAR10_RECORD,
                         CIFAR10_PER_FILE, CIFAR10_RECORD);
                fclose(f);
                return -1;
            }
            if (record[0] >= CIFAR10_CLASSES) {
                snprintf(err, err_len, "cifar10: %s record %d has label %d, expected 0..9", path,
                         r, record[0]);
                fclose(f);
                return -1;
            }
            labels[done] = record[0];
            for (int c = 0; c < 3; c++)
                for (int j = 0; j < plane; j++)
                    images[((int64_t)done * 3 + c) * plane + j] =
                        (record[1 + c * plane + j] / 255.0f - cifar_mean[c]) / cifar_std[c];
        }
        fclose(f);
    }
    if (done < batch) {
        snprintf(err, err_len, "cifar10: %s holds %d images, fewer than the batch of %d", dir,
                 done, batch);
        return -1;
    }
    return 0;
}
