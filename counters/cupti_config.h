/* HAVE_CUPTI for the .cu files of counters/ and tests/gpu/. The Makefile
 * defines it for cc and nvcc alike when it finds cupti.h; a .cu file built
 * outside the Makefile still looks for the header on nvcc's own include path
 * (CUDA_HOME/include with CUDA 13). Include this first. */
#ifndef ROOFLINE_CUPTI_CONFIG_H
#define ROOFLINE_CUPTI_CONFIG_H

#if !defined(HAVE_CUPTI) && defined(__CUDACC__) && defined(__has_include)
#if __has_include(<cupti.h>) && __has_include(<cupti_profiler_host.h>)
#define HAVE_CUPTI 1
#endif
#endif

#endif
