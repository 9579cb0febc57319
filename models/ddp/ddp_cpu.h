/* The CPU backend's gradient storage for DDP (defined in
 * models/cpu/cpu_ddp.c, which sees the backend's internals; built with
 * oneDNN, HAVE_DNNL). */
#ifndef ROOFLINE_DDP_CPU_H
#define ROOFLINE_DDP_CPU_H

#include "ddp.h"

int cpu_ddp_grad_storage(backend *b, int layer, buffer_kind kind, ddp_grad_storage *out);

extern const ddp_backend_access cpu_ddp_access;

#endif
