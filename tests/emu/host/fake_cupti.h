/* Between the two halves of the CUPTI stand-in: fake_cupti.cpp (the Activity
 * API, and the one observer of emulated kernels) and fake_cupti_profiler.cpp
 * (the metric pass: the driver's launch callbacks, the Range Profiler and the
 * Profiler Host API). */
#ifndef ROOFLINE_FAKE_CUPTI_H
#define ROOFLINE_FAKE_CUPTI_H

#include "host_launch.h"

namespace fake_cupti {

/* Installs the observer of emulated kernels while the Activity API records
 * or profiler_watches(), removes it otherwise; after every change of either. */
void watch_kernels();

/* A subscriber takes the driver's launch callbacks, or a range profiler is
 * enabled. */
bool profiler_watches();

/* At a kernel's launch, on the launching thread: the subscriber's callback. */
void profiler_launched(const char *name);

/* When the kernel has run: its range, while the range profiler is started. */
void profiler_ran(const emu_host::kernel_work &work);

} // namespace fake_cupti

#endif
