/* HAVE_CUPTI for the .cu files of counters/ and tests/gpu/. The Makefile
 * defines it for the C files when it finds cupti.h; nvcc does not get it
 * today (ALL_NVCCFLAGS is expanded before GPU_DEFS is filled in), so a .cu
 * file also looks for the header on nvcc's own include path, which is where
 * the Makefile finds it with CUDA 13 (CUDA_HOME/include). Include this first. */
#ifndef ROOFLINE_CUPTI_CONFIG_H
#define ROOFLINE_CUPTI_CONFIG_H

#if !defined(HAVE_CUPTI) && defined(__CUDACC__) && defined(__has_include)
#if __has_include(<cupti.h>) && __has_include(<cupti_profiler_host.h>)
#define HAVE_CUPTI 1
#endif
#endif

#endif
