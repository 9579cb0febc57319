#include "gpu_ops.h"

#include <string.h>

#include "../models/backend.h"

static const char *const phase_names[GPU_PHASE_COUNT] = {"fwd",    "bwd_data", "bwd_weights",
                                                         "update", "loss",     "comm"};

const char *gpu_phase_name(gpu_phase p)
{
    return (unsigned)p < GPU_PHASE_COUNT ? phase_names[p] : "?";
}

gpu_phase gpu_phase_of(int layer, pass phase)
{
    return layer == STEP_LOSS ? GPU_PHASE_LOSS : (gpu_phase)phase;
}

/* A tag in the high bits tells our ids from any other tool's (and from a
 * stray 0 or small counter), so a decode never invents an operation. */
enum { LAYER_SHIFT = 8, LAYER_BIAS = 8 };
static const uint64_t OP_TAG = 0x5246000000000000ull; /* "RF" */
static const uint64_t OP_TAG_MASK = 0xffff000000000000ull;

uint64_t gpu_op_id(int layer, gpu_phase phase)
{
    return OP_TAG | ((uint64_t)(uint32_t)(layer + LAYER_BIAS) << LAYER_SHIFT) | (uint64_t)phase;
}

bool gpu_op_decode(uint64_t id, int *layer, gpu_phase *phase)
{
    if ((id & OP_TAG_MASK) != OP_TAG)
        return false;
    uint64_t p = id & 0xff;
    uint64_t l = (id & ~OP_TAG_MASK) >> LAYER_SHIFT;
    if (p >= GPU_PHASE_COUNT || l > 0x7fffffffull || (int64_t)l - LAYER_BIAS < STEP_ALL_LAYERS)
        return false;
    *layer = (int)l - LAYER_BIAS;
    *phase = (gpu_phase)p;
    return true;
}

bool gpu_kernel_name_is_nccl(const char *name)
{
    /* a mangled name starts with _Z<length> or, in a namespace, _ZN<length> */
    if (name[0] == '_' && name[1] == 'Z') {
        name += name[2] == 'N' ? 3 : 2;
        while (*name >= '0' && *name <= '9')
            name++;
    }
    return strncmp(name, "nccl", 4) == 0;
}
