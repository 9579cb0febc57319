/* The fixed batch of a bin/train process as rank shards: in a data-parallel
 * run rank r trains on shard r alone; a single process given --shards N
 * trains on shards 0..N-1 concatenated, the global batch of N ranks, so that
 * the two can be compared. */
#ifndef ROOFLINE_TRAIN_DATA_H
#define ROOFLINE_TRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "../../models/graph.h"
#include "train_run.h"

/* The seed of shard s's synthetic images and of its rank's dropout masks:
 * --seed itself for shard 0 (a run without shards is unchanged). */
uint64_t train_shard_seed(uint64_t seed, int shard);

/* Shards first .. first + count - 1 of per_shard images each into images
 * and labels: synthetic, or CIFAR-10 images [s x per_shard, (s+1) x
 * per_shard) for shard s (disjoint between ranks). 0, or -1 with the reason. */
int train_batch(const train_options *o, const network *net, int first, int count, int per_shard,
                float *images, int32_t *labels, char *err, size_t err_len);

#endif
