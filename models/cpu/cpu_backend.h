/* The CPU training backend: oneDNN for convolutions and fully connected
 * layers, OpenMP loops for the rest; fp32, NCHW. */
#ifndef ROOFLINE_CPU_BACKEND_H
#define ROOFLINE_CPU_BACKEND_H

#include "../backend.h"

extern const backend_ops cpu_backend_ops;

#endif
