#!/bin/bash
# Puts several run folders side by side (`make compare RUNS="runs/a/ID runs/b/ID"`):
# OUTDIR/compare.md and a self-contained OUTDIR/compare.html with each model's
# best images/s and share of peak per environment, the roofs side by side and
# a combined roofline (OUTDIR/figures/roofline_compare.png and .svg).
#   scripts/compare.sh OUTDIR RUN_DIR...   (env: BIN = folder of the programs, default
#                                           bin/; GNUPLOT = the gnuplot to use)
# A run folder without summary.csv is analysed first (bin/analyze).
set -uo pipefail
prog=compare
if [ $# -lt 2 ] || [ "${1:0:1}" = "-" ]; then
    echo "usage: $0 OUTDIR RUN_DIR...   (one or more run folders runs/<ENV>/<ID>)" >&2
    exit 2
fi
out=${1%/}
shift
here=$(cd "$(dirname "$0")" && pwd)
bin=${BIN:-$here/../bin}
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
        "$bin/analyze" "$r" >/dev/null || { echo "$prog: bin/analyze failed on $r" >&2; exit 1; }
    fi
    runs+=("$r")
done

mkdir -p "$out" || exit 1
"$bin/plotdata" --compare "$out" "${runs[@]}" || { echo "$prog: bin/plotdata failed" >&2; exit 1; }
gnuplot=${GNUPLOT:-$(command -v gnuplot || true)}
figs=$out/figures
if [ -z "$gnuplot" ]; then
    echo "$prog: gnuplot not found (apt-get install gnuplot-nox); the comparison has no figure" >&2
else
    rm -f "$figs"/*.png "$figs"/*.svg "$figs/gnuplot.log"
    # as scripts/render.sh: checked names, quoted paths, drawn under a
    # temporary name and renamed
    gp_quote() { printf '%s' "${1//\'/\'\'}"; }
    while IFS=$'\t' read -r script stem title; do
        [ -n "$script" ] || continue
        if [[ ! $script =~ ^[a-z_]+\.gp$ || ! -f $here/gnuplot/$script || ! $stem =~ ^[A-Za-z0-9_-][A-Za-z0-9._-]*$ ]]; then
            echo "$prog: $figs/figures.tsv: '$script' '$stem' is not a script and a file name; not drawn" >&2
            continue
        fi
        tmp=$figs/$stem.tmp
        rm -f "$tmp.png" "$tmp.svg"
        if "$gnuplot" -e "datafile='$(gp_quote "$figs/data/$stem")'; outfile='$(gp_quote "$tmp.png")'; title='$(gp_quote "$title")'" \
            "$here/gnuplot/$script" >>"$figs/gnuplot.log" 2>&1 && [ -s "$tmp.png" ] &&
            mv -f -T "$tmp.png" "$figs/$stem.png" &&
            { [ ! -e "$tmp.svg" ] || mv -f -T "$tmp.svg" "$figs/$stem.svg"; }; then
            :
        else
            rm -f "$tmp.png" "$tmp.svg"
            echo "$prog: gnuplot could not draw $stem; see $figs/gnuplot.log" >&2
        fi
    done <"$figs/figures.tsv"
fi
"$bin/report" --compare "$out" "${runs[@]}" || { echo "$prog: bin/report failed" >&2; exit 1; }
