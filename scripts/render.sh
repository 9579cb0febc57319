#!/bin/bash
# Renders one run folder from its CSV files alone (`make report RUN=...`; the
# runner calls it last): bin/analyze -> bin/plotdata -> gnuplot for every
# figure (PNG and SVG in RUN_DIR/figures/) -> bin/report (report.md, report.html).
#   scripts/render.sh RUN_DIR        (env: BIN = folder of the programs, default bin/;
#                                     GNUPLOT = the gnuplot to use)
# Without gnuplot the report is written without figures (one line says so).
# Every file lands whole: the programs write temporary files and rename them,
# and each figure is drawn under a temporary name and renamed (mv -T: a link
# planted at the figure's name is replaced, never followed).
set -uo pipefail
prog=render
if [ $# -ne 1 ] || [ "${1:0:1}" = "-" ]; then
    echo "usage: $0 RUN_DIR   (a run folder, runs/<ENV>/<ID>)" >&2
    exit 2
fi
run=${1%/}
here=$(cd "$(dirname "$0")" && pwd)
bin=${BIN:-$here/../bin}
gp_dir=$here/gnuplot
if [ ! -d "$run" ]; then
    echo "$prog: $run is not a folder (a run folder runs/<ENV>/<ID> was expected)" >&2
    exit 2
fi
for p in analyze plotdata report; do
    if [ ! -x "$bin/$p" ]; then
        echo "$prog: $bin/$p not found: build it with 'make' (or set BIN)" >&2
        exit 1
    fi
done

status=0
if ! "$bin/analyze" "$run"; then
    # With no timed step at all (every configuration failed) there is nothing to
    # analyse, but a report of the peaks and the failures is still worth having.
    if [ -e "$run/steps.csv" ]; then
        echo "$prog: bin/analyze failed on $run (its message is above)" >&2
        exit 1
    fi
    echo "$prog: no steps.csv in $run: the report shows the peaks and what failed" >&2
    status=1
fi
"$bin/plotdata" "$run" >/dev/null || { echo "$prog: bin/plotdata failed on $run" >&2; exit 1; }

gnuplot=${GNUPLOT:-$(command -v gnuplot || true)}
figs=$run/figures
# a text inside a gnuplot single-quoted string: a quote is doubled, nothing else
# is special
gp_quote() {
    printf '%s' "${1//\'/\'\'}"
}
if [ -z "$gnuplot" ]; then
    echo "$prog: gnuplot not found (apt-get install gnuplot-nox); the report has no figures" >&2
else
    # what is drawn now replaces what an earlier render drew
    rm -f "$figs"/*.png "$figs"/*.svg
    log=$figs/gnuplot.log
    rm -f "$log"
    : >"$log"
    drawn=0 failed=0
    while IFS=$'\t' read -r script stem title; do
        [ -n "$script" ] || continue
        # figures.tsv names a script of scripts/gnuplot and a plain file name
        # (bin/plotdata writes it so; anything else is not drawn)
        if [[ ! $script =~ ^[a-z_]+\.gp$ || ! -f $gp_dir/$script || ! $stem =~ ^[A-Za-z0-9_-][A-Za-z0-9._-]*$ ]]; then
            failed=$((failed + 1))
            echo "$prog: $figs/figures.tsv: '$script' '$stem' is not a script of scripts/gnuplot and a file name; not drawn" >&2
            continue
        fi
        tmp=$figs/$stem.tmp
        rm -f "$tmp.png" "$tmp.svg"
        if "$gnuplot" -e "datafile='$(gp_quote "$figs/data/$stem")'; outfile='$(gp_quote "$tmp.png")'; title='$(gp_quote "$title")'" \
            "$gp_dir/$script" >>"$log" 2>&1 && [ -s "$tmp.png" ] &&
            mv -f -T "$tmp.png" "$figs/$stem.png" &&
            { [ ! -e "$tmp.svg" ] || mv -f -T "$tmp.svg" "$figs/$stem.svg"; }; then
            drawn=$((drawn + 1))
        else
            rm -f "$tmp.png" "$tmp.svg"
            failed=$((failed + 1))
            echo "$prog: gnuplot could not draw $stem ($script); see $log" >&2
        fi
    done <"$figs/figures.tsv"
    echo "$prog: $drawn figure(s) drawn in $figs${failed:+, $failed failed}" | sed 's/, 0 failed//'
fi

"$bin/report" "$run" || { echo "$prog: bin/report failed on $run" >&2; exit 1; }
exit $status
