/* The footprint meter (footprint.h says what it measures and how). */
#include "footprint.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

namespace {

enum : uint8_t { PAGE_READ = 1, PAGE_WRITTEN = 2 };

struct region {
    char *start = nullptr;
    size_t bytes = 0, pages = 0;
    std::vector<uint8_t> state; /* per page: PAGE_READ | PAGE_WRITTEN */
};

/* The fault handler's view of the running kernel: regions is never resized
 * while running is set. */
struct meter {
    size_t page = 0;
    std::vector<region> regions;
    size_t used = 0;
    std::vector<std::pair<const char *, const char *>> excluded; /* [first, end) */
    volatile sig_atomic_t running = 0;
    bool installed = false;
    struct sigaction previous;
};

meter &the_meter()
{
    static meter m;
    return m;
}

size_t page_bytes()
{
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (size_t)page : 4096;
}

size_t mapped_bytes(size_t bytes, size_t page)
{
    size_t pages = (bytes + page - 1) / page;
    return (pages ? pages : 1) * page;
}

bool is_write(void *context)
{
#if defined(__x86_64__)
    return (((ucontext_t *)context)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#else
    (void)context;
    return true;
#endif
}

void on_fault(int, siginfo_t *info, void *context)
{
    meter &m = the_meter();
    char *at = (char *)info->si_addr;
    for (size_t k = 0; m.running && k < m.used; k++) {
        region &r = m.regions[k];
        if (at < r.start || at >= r.start + r.pages * m.page)
            continue;
        size_t p = (size_t)(at - r.start) / m.page;
        r.state[p] |= is_write(context) ? PAGE_WRITTEN : PAGE_READ;
        int open = r.state[p] & PAGE_WRITTEN ? PROT_READ | PROT_WRITE : PROT_READ;
        if (mprotect(r.start + p * m.page, m.page, open) == 0)
            return;
        break;
    }
    /* not a page the meter closed: the fault is the program's, handled as
     * it was before the meter (the instruction faults again) */
    sigaction(SIGSEGV, &m.previous, nullptr);
}

bool excluded(const meter &m, const char *first, const char *end)
{
    for (const auto &e : m.excluded)
        if (first >= e.first && end <= e.second)
            return true;
    return false;
}

void fail(const char *what)
{
    fprintf(stderr, "footprint meter: %s: %s\n", what, strerror(errno));
    abort();
}

} // namespace

bool emu_host::footprint_on()
{
#if defined(__x86_64__) && defined(__linux__)
    static const bool on = [] {
        const char *text = getenv("ROOFLINE_EMU_FOOTPRINT");
        return text && strcmp(text, "1") == 0;
    }();
    return on;
#else
    return false;
#endif
}

void *emu_host::footprint_map(size_t bytes)
{
    void *p = mmap(nullptr, mapped_bytes(bytes, page_bytes()), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}

void emu_host::footprint_unmap(void *p, size_t bytes)
{
    munmap(p, mapped_bytes(bytes, page_bytes()));
}

void emu_host::footprint_begin(const std::map<void *, size_t> &allocations)
{
    meter &m = the_meter();
    m.page = page_bytes();
    if (!m.installed) {
        struct sigaction a;
        memset(&a, 0, sizeof a);
        a.sa_sigaction = on_fault;
        a.sa_flags = SA_SIGINFO;
        sigemptyset(&a.sa_mask);
        if (sigaction(SIGSEGV, &a, &m.previous))
            fail("sigaction");
        m.installed = true;
    }
    if (m.regions.size() < allocations.size())
        m.regions.resize(allocations.size());
    m.used = 0;
    m.excluded.clear();
    for (const auto &a : allocations) {
        region &r = m.regions[m.used++];
        r.start = (char *)a.first;
        r.bytes = a.second;
        r.pages = mapped_bytes(a.second, m.page) / m.page;
        r.state.assign(r.pages, 0);
        if (mprotect(r.start, r.pages * m.page, PROT_NONE))
            fail("mprotect");
    }
    m.running = 1;
}

void emu_host::footprint_end(double *bytes_read, double *bytes_written)
{
    meter &m = the_meter();
    m.running = 0;
    double read = 0.0, written = 0.0;
    for (size_t k = 0; k < m.used; k++) {
        region &r = m.regions[k];
        if (mprotect(r.start, r.pages * m.page, PROT_READ | PROT_WRITE))
            fail("mprotect");
        for (size_t p = 0; p < r.pages; p++) {
            size_t first = p * m.page, end = std::min(first + m.page, r.bytes);
            if (!r.state[p] || end <= first || excluded(m, r.start + first, r.start + end))
                continue;
            if (r.state[p] & PAGE_READ)
                read += (double)(end - first);
            if (r.state[p] & PAGE_WRITTEN)
                written += (double)(end - first);
        }
    }
    *bytes_read = read;
    *bytes_written = written;
}

void emu_host::footprint_exclude(const void *p, size_t bytes)
{
    meter &m = the_meter();
    if (m.running && p)
        m.excluded.emplace_back((const char *)p, (const char *)p + bytes);
}
