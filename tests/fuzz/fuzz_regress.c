/* Replays inputs through a fuzz target without libFuzzer: the regression
 * inputs (tests/fuzz/regress/<target>/, each a crash the fuzzer once found)
 * and the seed corpus, in `make test` and `make test-asan`.
 *   fuzz_regress TARGET FILE_OR_FOLDER...
 * Exit 0 when every input ran (a defect crashes it or makes a sanitizer
 * report), 2 for bad arguments. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_targets.h"

static int run_file(const fuzz_target *t, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_regress: cannot read %s\n", path);
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            unsigned char *more = realloc(buf, cap * 2);
            if (!more) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = more;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "fuzz_regress: out of memory for %s\n", path);
        return -1;
    }
    /* the exact size, as libFuzzer hands it: a read past the end must be seen */
    unsigned char *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, len);
    free(buf);
    fprintf(stderr, "fuzz_regress: %s %s\n", t->name, path);
    t->fn(exact, len);
    free(exact);
    return 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every file of a folder, in name order; -1 when one cannot be read. */
static int run_folder(const fuzz_target *t, const char *dir, int *count)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0; /* a target without regression inputs yet */
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **more = realloc(names, (size_t)cap * sizeof *more);
            if (!more) {
                rc = -1;
                break;
            }
            names = more;
        }
        if (!(names[n] = strdup(e->d_name))) {
            rc = -1;
            break;
        }
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, (size_t)n, sizeof *names, compare_names);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (rc == 0 && run_file(t, path) != 0)
            rc = -1;
        (*count)++;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !fuzz_find(argv[1])) {
        fprintf(stderr, "usage: fuzz_regress TARGET FILE_OR_FOLDER... (targets:");
        for (const fuzz_target *t = fuzz_targets; t->name; t++)
            fprintf(stderr, " %s", t->name);
        fprintf(stderr, ")\n");
        return 2;
    }
    const fuzz_target *t = fuzz_find(argv[1]);
    int count = 0;
    for (int i = 2; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0)
            continue; /* a target without regression inputs yet */
        int rc = S_ISDIR(st.st_mode) ? run_folder(t, argv[i], &count) : (count++, run_file(t, argv[i]));
        if (rc)
            return 1;
    }
    printf("fuzz_regress: %s: %d input(s) ran clean\n", t->name, count);
    return 0;
}
