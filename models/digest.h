/* FNV-1a (64-bit) over bytes: digests that ranks or runs compare for
 * equality (equal digests: equal bytes, but for a collision). */
#ifndef ROOFLINE_DIGEST_H
#define ROOFLINE_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define DIGEST_START 1469598103934665603ull

static inline uint64_t digest_bytes(uint64_t h, const void *data, size_t n)
{
    const unsigned char *bytes = data;
    for (size_t j = 0; j < n; j++)
        h = (h ^ bytes[j]) * 1099511628211ull;
    return h;
}

#endif
