/* Division by a divisor fixed for a whole kernel launch, as a multiply and a
 * shift (Granlund and Montgomery's round-up method), for numerators below
 * 2^31: an integer division costs a GPU tens of instructions, and an
 * elementwise kernel that splits every index into (n, c, h, w) does three.
 * Plain C, so that make test checks the arithmetic on the host; the same
 * inline functions run on the device. */
#ifndef ROOFLINE_FAST_DIVIDE_H
#define ROOFLINE_FAST_DIVIDE_H

#include <stdint.h>

#ifdef __CUDACC__
#define FAST_DIVIDE_FN __host__ __device__
#else
#define FAST_DIVIDE_FN
#endif

typedef struct {
    uint32_t divisor;
    uint32_t multiplier;  /* ceil(2^(31 + l) / divisor), l = ceil(log2(divisor)) */
    uint32_t shift;       /* 31 + l */
} fast_divisor;

/* divisor >= 1. With d in (2^(l-1), 2^l], m d - 2^(31+l) < d <= 2^l, which
 * makes floor(n m / 2^(31+l)) = floor(n / d) for every n < 2^31, and m
 * fits in 32 bits. */
static inline FAST_DIVIDE_FN fast_divisor fast_divisor_of(uint32_t divisor)
{
    uint32_t l = 0;
    while (l < 31 && ((uint32_t)1 << l) < divisor)
        l++;
    uint64_t power = (uint64_t)1 << (31 + l);
    fast_divisor f;
    f.divisor = divisor;
    f.multiplier = (uint32_t)((power + divisor - 1) / divisor);
    f.shift = 31 + l;
    return f;
}

/* n / f.divisor, for n < 2^31 */
static inline FAST_DIVIDE_FN uint32_t fast_div(fast_divisor f, uint32_t n)
{
    return (uint32_t)(((uint64_t)n * f.multiplier) >> f.shift);
}

/* q = n / f.divisor, and the remainder n - q * f.divisor */
static inline FAST_DIVIDE_FN uint32_t fast_divmod(fast_divisor f, uint32_t n, uint32_t *rem)
{
    uint32_t q = fast_div(f, n);
    *rem = n - q * f.divisor;
    return q;
}

#endif
