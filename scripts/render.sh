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
# shellcheck source=scripts/draw_figures.sh
. "$here/draw_figures.sh"
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
"$bin/analyze" "$run"
rc=$?
if [ $rc -ne 0 ]; then
    # With no timed step at all (every configuration failed) there is nothing to
    # analyse, but a report of the peaks and the failures is still worth having.
    if [ -e "$run/steps.csv" ]; then
        # a malformed file: bin/analyze's one line names it
        [ $rc -eq 2 ] && exit 2
        echo "$prog: bin/analyze failed on $run (its message is above)" >&2
        exit 1
    fi
    echo "$prog: no steps.csv in $run: the report shows the peaks and what failed" >&2
    status=1
fi
"$bin/plotdata" "$run" >/dev/null
rc=$?
[ $rc -eq 2 ] && exit 2
[ $rc -ne 0 ] && { echo "$prog: bin/plotdata failed on $run" >&2; exit 1; }

gnuplot=${GNUPLOT:-$(command -v gnuplot || true)}
if [ -z "$gnuplot" ]; then
    echo "$prog: gnuplot not found (apt-get install gnuplot-nox); the report has no figures" >&2
else
    draw_figures "$run/figures" "$gnuplot"
fi

"$bin/report" "$run"
rc=$?
[ $rc -eq 2 ] && exit 2
[ $rc -ne 0 ] && { echo "$prog: bin/report failed on $run" >&2; exit 1; }
exit $status
