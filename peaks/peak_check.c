#include "peak_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int check_add(check_set *s, const char *name, int group, double best, double second,
              double stable_tol)
{
    if (s->n_fig >= CHECK_MAX_FIGURES)
        return -1;
    check_figure *f = &s->fig[s->n_fig];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    f->group = group;
    f->best = best;
    f->second = second;
    f->stable_tol = stable_tol;
    return s->n_fig++;
}

int check_find(const check_set *s, const char *name)
{
    for (int i = 0; i < s->n_fig; i++)
        if (strcmp(s->fig[i].name, name) == 0)
            return i;
    return -1;
}

int check_relate(check_set *s, int low, int high, double factor, const char *what)
{
    if (low < 0 || high < 0 || low >= s->n_fig || high >= s->n_fig || low == high ||
        s->n_rel >= CHECK_MAX_RELATIONS)
        return -1;
    check_relation *r = &s->rel[s->n_rel++];
    r->low = low;
    r->high = high;
    r->factor = factor;
    snprintf(r->what, sizeof r->what, "%s", what);
    return 0;
}

static bool measured(double v)
{
    return isfinite(v) && v > 0;
}

void check_top2(double v, double *best, double *second)
{
    if (!measured(v))
        return;
    if (!measured(*best) || v > *best) {
        *second = *best;
        *best = v;
    } else if (!measured(*second) || v > *second) {
        *second = v;
    }
}

void check_offer(check_set *s, int figure, double best, double second)
{
    if (figure < 0 || figure >= s->n_fig)
        return;
    check_figure *f = &s->fig[figure];
    /* the two largest of the old pair and the new pair */
    double v[4] = {f->best, f->second, best, second}, top = NAN, next = NAN;
    for (int i = 0; i < 4; i++)
        check_top2(v[i], &top, &next);
    f->best = top;
    f->second = next;
}

/* Fills fails[i] with the reason figure i fails (empty when it passes);
 * returns how many fail. */
static int evaluate(const check_set *s, char fails[][CHECK_WHY])
{
    int n = 0;
    for (int i = 0; i < s->n_fig; i++) {
        const check_figure *f = &s->fig[i];
        fails[i][0] = '\0';
        if (f->stable_tol > 0 && measured(f->best) && measured(f->second) &&
            f->second < (1.0 - f->stable_tol) * f->best)
            snprintf(fails[i], CHECK_WHY,
                     "trials disagree: best %.4g, next %.4g (more than %.0f%% apart)", f->best,
                     f->second, 100.0 * f->stable_tol);
    }
    for (int r = 0; r < s->n_rel; r++) {
        const check_relation *rel = &s->rel[r];
        const check_figure *lo = &s->fig[rel->low], *hi = &s->fig[rel->high];
        if (!measured(lo->best) || !measured(hi->best))
            continue;
        if (lo->best < rel->factor * hi->best && !fails[rel->low][0])
            snprintf(fails[rel->low], CHECK_WHY, "%s (%s %.4g < %.3g x %s %.4g)", rel->what,
                     lo->name, lo->best, rel->factor, hi->name, hi->best);
    }
    for (int i = 0; i < s->n_fig; i++)
        n += fails[i][0] != '\0';
    return n;
}

int check_run(check_set *s, const check_plan *p, char *err, size_t err_len)
{
    char why[CHECK_MAX_FIGURES][CHECK_WHY];
    double start = p->now(p->ctx);
    for (int round = 1;; round++) {
        int failing = evaluate(s, why);
        for (int i = 0; i < s->n_fig; i++)
            if (why[i][0])
                memcpy(s->fig[i].why, why[i], CHECK_WHY);
        if (failing == 0)
            return 0;
        double left = p->budget_s - (p->now(p->ctx) - start);
        if (round > p->max_rounds || left <= 0) {
            for (int i = 0; i < s->n_fig; i++)
                s->fig[i].suspect = why[i][0] != '\0';
            return failing;
        }
        /* each failing figure's group once per round, in figure order */
        bool done[CHECK_MAX_FIGURES] = {false};
        for (int i = 0; i < s->n_fig; i++) {
            if (!why[i][0] || done[i])
                continue;
            int group = s->fig[i].group;
            left = p->budget_s - (p->now(p->ctx) - start);
            if (left <= 0)
                break;
            if (p->measure(p->ctx, group, round, left, s, err, err_len) != 0)
                return -1;
            for (int j = 0; j < s->n_fig; j++)
                if (s->fig[j].group == group) {
                    done[j] = true;
                    s->fig[j].remeasured++;
                }
        }
    }
}

void check_note(const check_figure *f, char *out, size_t len)
{
    if (f->suspect)
        snprintf(out, len, "suspect: %s (re-measured %d x)", f->why, f->remeasured);
    else if (f->remeasured > 0)
        snprintf(out, len, "re-measured %d x until consistent (had failed: %s)", f->remeasured,
                 f->why);
    else
        snprintf(out, len, "%s", "");
}
