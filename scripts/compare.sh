#!/bin/bash
# Puts several run folders side by side (`make compare RUNS="runs/a/ID runs/b/ID"`):
# OUTDIR/compare.md and a self-contained OUTDIR/compare.html with each model's
# best images/s and share of peak per environment, the roofs side by side and
# a combined roofline (OUTDIR/figures/roofline_compare.png and .svg); for several
# runs of one environment, run to run (OUTDIR/figures/run_to_run.png).
#   scripts/compare.sh OUTDIR RUN_DIR...   (env: BIN = folder of the programs, default
#                                           bin/; GNUPLOT = the gnuplot to use)
#   scripts/compare.sh OUTDIR --env ENV [RUNS_DIR]   (make compare ENV=cpu: the
#       finished runs of one environment, RUNS_DIR/ENV/<ID> holding summary.csv,
#       the 14 newest of them at most, oldest first: its run-to-run study)
# A run folder without summary.csv is analysed first (bin/analyze).
set -uo pipefail
prog=compare
if [ $# -lt 2 ] || [ "${1:0:1}" = "-" ]; then
    echo "usage: $0 OUTDIR RUN_DIR...   (one or more run folders runs/<ENV>/<ID>), or $0 OUTDIR --env ENV [RUNS_DIR]" >&2
    exit 2
fi
out=${1%/}
shift
if [ "$1" = "--env" ]; then
    env_name=${2:-}
    runs_dir=${3:-runs}
    if [[ ! $env_name =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || [ $# -gt 3 ]; then
        echo "$prog: --env needs an environment name (letters, digits, '.', '_', '-') and at most a RUNS_DIR after it" >&2
        exit 2
    fi
    finished=()
    for r in "$runs_dir/$env_name"/*/; do
        [ -f "$r/summary.csv" ] && finished+=("${r%/}")
    done
    if [ ${#finished[@]} -eq 0 ]; then
        echo "$prog: no finished run of $env_name in $runs_dir/$env_name (a finished run holds summary.csv: make bench ENV=$env_name)" >&2
        exit 2
    fi
    # the folders' names are their start times: in name order, the newest last
    first=$((${#finished[@]} > 14 ? ${#finished[@]} - 14 : 0))
    set -- "${finished[@]:first}"
    echo "$prog: $# of the ${#finished[@]} finished runs of $env_name in $runs_dir/$env_name${finished[14]:+ (the newest 14)}"
fi
# bin/report's limit (a table row has 2 columns a run), checked before any work
if [ $# -gt 14 ]; then
    echo "$prog: $# run folders given, at most 14 are accepted" >&2
    exit 2
fi
if [ -e "$out" ] && [ ! -d "$out" ]; then
    echo "$prog: OUTDIR $out exists and is not a folder" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
bin=${BIN:-$here/../bin}
# shellcheck source=scripts/draw_figures.sh
. "$here/draw_figures.sh"
# Runs a program; a bad input (status 2: the program's one line is on stderr)
# is this script's too, any other failure adds the line WHAT.
step() {
    local what=$1 rc
    shift
    "$@"
    rc=$?
    [ $rc -eq 0 ] && return 0
    [ $rc -eq 2 ] && exit 2
    echo "$prog: $what" >&2
    exit 1
}
for p in analyze plotdata report; do
    if [ ! -x "$bin/$p" ]; then
        echo "$prog: $bin/$p not found: build it with 'make' (or set BIN)" >&2
        exit 1
    fi
done
runs=()
for r in "$@"; do
    r=${r%/}
    if [ ! -d "$r" ]; then
        echo "$prog: $r is not a folder (a run folder runs/<ENV>/<ID> was expected)" >&2
        exit 2
    fi
    if [ ! -f "$r/summary.csv" ]; then
        step "bin/analyze failed on $r" "$bin/analyze" "$r" >/dev/null
    fi
    runs+=("$r")
done

mkdir -p "$out" 2>/dev/null || { echo "$prog: cannot create OUTDIR $out" >&2; exit 1; }
step "bin/plotdata failed" "$bin/plotdata" --compare "$out" "${runs[@]}"
gnuplot=${GNUPLOT:-$(command -v gnuplot || true)}
if [ -z "$gnuplot" ]; then
    echo "$prog: gnuplot not found (apt-get install gnuplot-nox); the comparison has no figure" >&2
else
    draw_figures "$out/figures" "$gnuplot"
fi
step "bin/report failed" "$bin/report" --compare "$out" "${runs[@]}"
