/* Every roof checks itself before it is written. A figure is the best trial
 * of a measurement; other work on the machine only ever lowers a trial, so a
 * figure is trusted when (a) its best and runner-up trials agree and (b) it
 * stands in the relations the hardware imposes on the figures of the same run
 * (all cores >= cores x one core, L1 >= L2 >= L3 >= DRAM, ...). A figure
 * that fails is measured again, with more and longer trials, and its best
 * kept, until every check passes or a time budget runs out; what still fails
 * is marked suspect, with the check it failed, for the notes column.
 *
 * The measuring is injected (a callback per group of figures that one
 * measurement yields), so the logic is tested with made-up figures. Plain C,
 * callable from the .cu files. */
#ifndef ROOFLINE_PEAK_CHECK_H
#define ROOFLINE_PEAK_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { CHECK_MAX_FIGURES = 48, CHECK_MAX_RELATIONS = 64, CHECK_WHY = 160 };

typedef struct {
    char name[32];      /* the ceiling, e.g. fp32_fma */
    int group;          /* the measurement that refreshes it (caller's numbering) */
    double best;        /* best trial so far: the figure */
    double second;      /* runner-up trial; NAN when there was only one */
    double stable_tol;  /* best and runner-up must agree within this fraction; 0: no check */
    int remeasured;     /* times its group was measured again */
    bool suspect;       /* still failing a check when the budget ran out */
    char why[CHECK_WHY]; /* the check it failed last (empty if none) */
} check_figure;

/* fig[low].best >= factor x fig[high].best; when not, `low` is measured again
 * (noise only lowers figures, so the lower side is the suspect one). */
typedef struct {
    int low, high;
    double factor;
    char what[96];
} check_relation;

typedef struct {
    check_figure fig[CHECK_MAX_FIGURES];
    int n_fig;
    check_relation rel[CHECK_MAX_RELATIONS];
    int n_rel;
} check_set;

/* Adds a figure; returns its index, or -1 when the set is full. */
int check_add(check_set *s, const char *name, int group, double best, double second,
              double stable_tol);

/* Index of the figure named `name`, or -1. */
int check_find(const check_set *s, const char *name);

/* Adds the relation fig[low] >= factor x fig[high]; `what` says it in words
 * for the notes. Ignored (returns -1) when an index is out of range or the
 * set is full; 0 otherwise. */
int check_relate(check_set *s, int low, int high, double factor, const char *what);

/* Folds one trial into a best / runner-up pair (both start as NAN); values
 * that are not positive and finite are ignored. */
void check_top2(double v, double *best, double *second);

/* Merges a new measurement into a figure: the best of all trials so far
 * stays, the runner-up becomes the second best of the four values. */
void check_offer(check_set *s, int figure, double best, double second);

/* Measures group `group` again at effort `round` (1, 2, ...: more and longer
 * trials each time) within about `seconds_left`, and hands each refreshed
 * figure to check_offer. Returns 0, or -1 with the reason in err. */
typedef int (*check_measure_fn)(void *ctx, int group, int round, double seconds_left,
                                check_set *s, char *err, size_t err_len);

typedef struct {
    check_measure_fn measure;
    double (*now)(void *ctx); /* seconds, monotonic */
    void *ctx;
    double budget_s;          /* re-measuring stops once this much time has gone */
    int max_rounds;           /* and after this many rounds */
} check_plan;

/* Evaluates the checks; measures the failing figures' groups again until all
 * pass, max_rounds are done or the budget is spent; marks what still fails as
 * suspect. Returns the number of suspect figures, or -1 when a measurement
 * failed (err says why). */
int check_run(check_set *s, const check_plan *p, char *err, size_t err_len);

/* The note a row gets from its check: "" when it passed at once, else
 * "re-measured N x: <check>" or "suspect: <check> (re-measured N x)". */
void check_note(const check_figure *f, char *out, size_t len);

#ifdef __cplusplus
}
#endif

#endif
