#include "fuzz_scratch.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One folder per process, not per input: libFuzzer calls a target millions
 * of times, and a mkdtemp each would cost more than most parsers. Its name
 * is the one piece of state the harness keeps between calls. */
static char scratch[64];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    if (ftw->level > 0)
        remove(path);
    return 0;
}

static void empty(void)
{
    nftw(scratch, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void remove_scratch(void)
{
    empty();
    rmdir(scratch);
}

const char *scratch_empty(void)
{
    if (!scratch[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(scratch, sizeof scratch, "%s/roofline-fuzz-XXXXXX", base);
        if (!mkdtemp(scratch)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(remove_scratch);
    } else {
        empty();
    }
    return scratch;
}

void scratch_write(const char *dir, const char *name, const void *data, size_t size)
{
    char path[512];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
        abort();
    const char *slash = strchr(name, '/');
    if (slash) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s/%.*s", dir, (int)(slash - name), name);
        mkdir(sub, 0777);
    }
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

char *scratch_string(const void *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}
