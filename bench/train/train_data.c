#include "train_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../models/data.h"
#include "../../models/rng.h"

uint64_t train_shard_seed(uint64_t seed, int shard)
{
    return shard == 0 ? seed : seed ^ rng_mix(0x5a4dull + (uint64_t)shard);
}

int train_batch(const train_options *o, const network *net, int first, int count, int per_shard,
                float *images, int32_t *labels, char *err, size_t err_len)
{
    int64_t per_image = shape_elems(net->input);
    if (!o->cifar_dir) {
        for (int s = 0; s < count; s++)
            data_synthetic(train_shard_seed(o->seed, first + s), per_shard, net->input.c, o->res,
                           o->classes, images + (int64_t)s * per_shard * per_image,
                           labels + (int64_t)s * per_shard);
        return 0;
    }
    /* CIFAR-10 is read from its first image: the shards before `first` are
     * read and dropped (50,000 images at most) */
    int64_t skip = (int64_t)first * per_shard, total = skip + (int64_t)count * per_shard;
    if (total > (int64_t)CIFAR10_PER_FILE * CIFAR10_FILES) {
        snprintf(err, err_len, "cifar10: shards %d..%d of %d images need %lld images, more than "
                 "the %d of the training set", first, first + count - 1, per_shard,
                 (long long)total, CIFAR10_PER_FILE * CIFAR10_FILES);
        return -1;
    }
    if (skip == 0)
        return data_cifar10(o->cifar_dir, (int)total, images, labels, err, err_len);
    float *all = malloc((size_t)(total * per_image) * sizeof *all);
    int32_t *all_labels = malloc((size_t)total * sizeof *all_labels);
    int rc = -1;
    if (!all || !all_labels)
        snprintf(err, err_len, "cifar10: out of memory for %lld images", (long long)total);
    else if (data_cifar10(o->cifar_dir, (int)total, all, all_labels, err, err_len) == 0) {
        memcpy(images, all + skip * per_image,
               (size_t)((total - skip) * per_image) * sizeof *images);
        memcpy(labels, all_labels + skip, (size_t)(total - skip) * sizeof *labels);
        rc = 0;
    }
    free(all);
    free(all_labels);
    return rc;
}
