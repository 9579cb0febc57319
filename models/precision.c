#include "precision.h"

#include <string.h>

static const char *const names[PREC_COUNT] = {"fp32", "tf32", "fp16", "bf16"};

const char *precision_name(precision p)
{
    return (unsigned)p < PREC_COUNT ? names[p] : "?";
}

bool precision_parse(const char *name, precision *out)
{
    for (int p = 0; p < PREC_COUNT; p++) {
        if (strcmp(name, names[p]) == 0) {
            *out = (precision)p;
            return true;
        }
    }
    return false;
}

int precision_bytes(precision p)
{
    return (p == PREC_FP16 || p == PREC_BF16) ? 2 : 4;
}

bool precision_has_master_copy(precision p)
{
    return precision_bytes(p) < 4;
}

const char *precision_names(void)
{
    return "fp32, tf32, fp16, bf16";
}
