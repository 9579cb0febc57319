/* bin/train's command line as a fuzz target. bin/train's own main() runs in
 * this process (bench/train.c compiled by the Makefile's fuzz section with
 * main, exit and train_run renamed), so the fuzzer sees the coverage of its
 * option parsing, and nothing trains: every path ends in exit() or
 * train_run(), and both come back here. */
#include "fuzz_targets.h"
#include "fuzz_scratch.h"

#include <getopt.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_ARGS = 48, MAX_ARG_LEN = 256, TRAINED = 1000 };

/* bench/train.c's main(), renamed by -Dmain=fuzz_train_main. */
int fuzz_train_main(int argc, char **argv);

/* Where exit() and train_run() land: set for the duration of one call.
 * exit() is called from deep inside the parser, so a jump is the only way
 * back without changing bench/train.c. */
static jmp_buf *landing;

/* exit() of bench/train.c and bench/cli.c (-Dexit=fuzz_exit). */
_Noreturn void fuzz_exit(int status);
void fuzz_exit(int status)
{
    fflush(stdout);
    fflush(stderr);
    longjmp(*landing, status + 1);
}

/* train_run() of bench/train.c (-Dtrain_run=fuzz_train_run): the options were
 * accepted. It is defined without its parameters so that the harness does not
 * follow every change of train_run's signature; the caller's arguments are
 * ignored, which every C calling convention allows. */
int fuzz_train_run(void);
int fuzz_train_run(void)
{
    longjmp(*landing, TRAINED + 1);
}

/* Arguments are the input split at NUL and newline; a '/' is refused (the
 * accepted --out or --trace must not name a file outside the scratch
 * folder: the parser checks that files can be created, and never creates
 * them, but a later change might). */
static int split_args(const uint8_t *data, size_t size, char store[][MAX_ARG_LEN], char **argv)
{
    int argc = 0;
    argv[argc++] = (char *)"train";
    size_t len = 0;
    for (size_t i = 0; i <= size && argc < MAX_ARGS; i++) {
        if (i == size || data[i] == '\0' || data[i] == '\n') {
            if (len > 0 || (i < size && data[i] == '\0')) {
                store[argc][len] = '\0';
                argv[argc] = store[argc];
                argc++;
            }
            len = 0;
            continue;
        }
        char c = (char)data[i];
        if (c == '/')
            c = '_';
        if (len + 1 < MAX_ARG_LEN)
            store[argc][len++] = c;
    }
    argv[argc] = NULL;
#ifdef HAVE_MPI
    /* --ddp starts MPI, which a process can do once: left out where MPI is built
     * in (the libFuzzer builds have no MPI and keep it) */
    int kept = 1;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--ddp") != 0)
            argv[kept++] = argv[i];
    argv[kept] = NULL;
    argc = kept;
#endif
    return argc;
}

/* bin/train's main() on argv; 0 when it returned, else 1 + its exit status
 * (TRAINED + 1: it reached train_run). */
static int call_main(int argc, char **argv)
{
    jmp_buf here;
    landing = &here;
    int code = setjmp(here);
    if (code == 0) {
        optind = 0; /* glibc: start the scan again */
        fuzz_train_main(argc, argv);
    }
    landing = NULL;
    return code;
}

int fuzz_train_options(const uint8_t *data, size_t size)
{
    static char store[MAX_ARGS + 1][MAX_ARG_LEN];
    char *argv[MAX_ARGS + 1];
    int argc = split_args(data, size, store, argv);
    /* relative file names land in the scratch folder */
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd) || chdir(scratch_empty()) != 0)
        abort();
    int code = call_main(argc, argv);
    if (chdir(cwd) != 0)
        abort();
    /* exit statuses 0 (--help), 1 (a run-time failure) and 2 (a usage error) are
     * the documented ones */
    int status = code - 1;
    if (code != 0 && status != TRAINED && status > 2) {
        fprintf(stderr, "fuzz: bin/train exited %d\n", status);
        abort();
    }
    return 0;
}
