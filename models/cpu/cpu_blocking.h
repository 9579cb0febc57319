/* Which activations the CPU backend keeps in oneDNN's channel-blocked layout
 * (nChw8c / nChw16c) instead of NCHW, so that a convolution reads and writes
 * them without a reorder (cpu_blocking.c). */
#ifndef ROOFLINE_CPU_BLOCKING_H
#define ROOFLINE_CPU_BLOCKING_H

#include "../graph.h"

/* block[i]: the channels per block of layer i's output and of its gradient
 * (0: NCHW). conv_src[i] and conv_dst[i] are, for a convolution, the block of
 * the layouts its forward chose for its input and output (0: any other). A
 * tensor stays blocked where its producer can write it so and every consumer
 * can read it so: convolutions in the layouts they chose, batch norms always,
 * ReLU, ReLU6, add and the pools when their own output is blocked too (they
 * keep the layout), a fully connected layer or dropout only over 1 x 1 planes
 * (where both layouts are one). The network's output and its input stay NCHW.
 * Returns how many layers' outputs are blocked. */
int cpu_decide_blocks(const network *net, const int *conv_src, const int *conv_dst, int *block);

#endif
