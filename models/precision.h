/* The four training precisions of DESIGN.md §5. */
#ifndef ROOFLINE_PRECISION_H
#define ROOFLINE_PRECISION_H

#include <stdbool.h>

typedef enum { PREC_FP32, PREC_TF32, PREC_FP16, PREC_BF16, PREC_COUNT } precision;

const char *precision_name(precision p);
/* Returns false for an unknown name. */
bool precision_parse(const char *name, precision *out);
/* Bytes of one activation, gradient or weight-copy element as computed on. */
int precision_bytes(precision p);
/* fp16 and bf16 keep fp32 master weights beside a low-precision copy. */
bool precision_has_master_copy(precision p);
/* "fp32, tf32, fp16, bf16" */
const char *precision_names(void);

#endif
