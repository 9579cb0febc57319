/* Seeded, reproducible random numbers: splitmix64, counter-based so that a
 * value depends only on (seed, stream, index), never on thread scheduling. */
#ifndef ROOFLINE_RNG_H
#define ROOFLINE_RNG_H

#include <math.h>
#include <stdint.h>

/* The CUDA backend draws the same dropout masks on the device. */
#ifdef __CUDACC__
#define RNG_FN static inline __host__ __device__
#else
#define RNG_FN static inline
#endif

RNG_FN uint64_t rng_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Uniform in (0, 1): never 0, so log() is safe. */
RNG_FN double rng_uniform(uint64_t seed, uint64_t stream, uint64_t index)
{
    uint64_t bits = rng_mix(rng_mix(seed ^ rng_mix(stream)) + index);
    return ((bits >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Standard normal by Box-Muller over two uniforms of the same index. */
RNG_FN double rng_normal(uint64_t seed, uint64_t stream, uint64_t index)
{
    double u1 = rng_uniform(seed, stream, 2 * index);
    double u2 = rng_uniform(seed, stream, 2 * index + 1);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
