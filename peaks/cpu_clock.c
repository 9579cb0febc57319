#include "cpu_clock.h"

#include <time.h>

#include "cpu_team.h"

/* The empty asm makes x opaque after every add, so the compiler can neither
 * fold the chain into one multiply nor reorder it; it costs no instruction. */
#define ADD_1 x += one; __asm__ volatile("" : "+r"(x));
#define ADD_8 ADD_1 ADD_1 ADD_1 ADD_1 ADD_1 ADD_1 ADD_1 ADD_1
#define ADD_64 ADD_8 ADD_8 ADD_8 ADD_8 ADD_8 ADD_8 ADD_8 ADD_8

enum { ADDS_PER_ROUND = 256 };

static unsigned long add_chain(long rounds)
{
    unsigned long x = 0, one = 1;
    __asm__ volatile("" : "+r"(one));
    for (long i = 0; i < rounds; i++) {
        ADD_64 ADD_64 ADD_64 ADD_64
    }
    return x;
}

/* CPU time of this thread: it stands still while the thread waits for a
 * core, so a slice preempted by other work does not read as a slow clock
 * (under load, whole 5 ms windows of wall time went by off the CPU). */
static double thread_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return cpu_now();
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double cpu_clock_ghz(double seconds)
{
    /* 2^14 rounds = 4M adds, about a millisecond: short enough that most
     * slices see no interrupt, long enough for the clock's resolution */
    const long rounds = 1L << 14;
    double best = 0.0, start = cpu_now();
    volatile unsigned long sink = 0;
    add_chain(rounds); /* wakes the core up from a low-power state */
    do {
        double t0 = thread_seconds();
        sink += add_chain(rounds);
        double dt = thread_seconds() - t0;
        double ghz = dt > 0 ? (double)rounds * ADDS_PER_ROUND / dt * 1e-9 : 0.0;
        best = ghz > best ? ghz : best;
    } while (cpu_now() - start < seconds);
    (void)sink;
    return best;
}
