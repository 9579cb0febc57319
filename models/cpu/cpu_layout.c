/* Copies between the host layout (NCHW) and the channel-blocked layout
 * (oneDNN's nChw8c / nChw16c) that activations keep between convolutions
 * (cpu_blocking.c), for read and write. */
#include "cpu_internal.h"

void cpu_layout_copy(float *dst, const float *src, int images, int channels, int64_t plane,
                     int block, bool to_blocked)
{
    int blocks = channels / block;
#pragma omp parallel for collapse(2) schedule(static)
    for (int k = 0; k < images; k++)
        for (int cb = 0; cb < blocks; cb++) {
            int64_t base = ((int64_t)k * blocks + cb) * plane * block;
            for (int j = 0; j < block; j++)
                for (int64_t p = 0; p < plane; p++) {
                    int64_t blocked = base + p * block + j, plain = base + j * plane + p;
                    if (to_blocked)
                        dst[blocked] = src[plain];
                    else
                        dst[plain] = src[blocked];
                }
        }
}
