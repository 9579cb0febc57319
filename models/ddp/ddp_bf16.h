/* bf16 on the host: the upper half of an fp32, rounded to nearest even (NaN
 * kept a NaN), as the CUDA intrinsics and PyTorch convert. */
#ifndef ROOFLINE_DDP_BF16_H
#define ROOFLINE_DDP_BF16_H

#include <stdint.h>
#include <string.h>

static inline uint16_t ddp_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float ddp_from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#endif
