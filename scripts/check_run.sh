#!/usr/bin/env bash
# Checks that a finished run folder holds the whole study: every configuration
# ok (or skipped here: one the machine cannot run), the CSV files of every stage with rows, and a report whose HTML has every
# section of report.md and embeds every figure. CI runs it after the smoke row;
# it is the test that the default path works end to end.
#
#   scripts/check_run.sh RUN_DIR
set -euo pipefail

if [[ $# -ne 1 || ! -d $1 ]]; then
    echo "check_run: give a run folder: scripts/check_run.sh runs/<ENV>/<RUN_ID>" >&2
    exit 2
fi
run=${1%/}
problems=()

# occurrences of a fixed string in a file (0 when none)
count() {
    grep -oF -- "$1" "$2" | wc -l || true
}

for f in env.json peaks.csv steps.csv kernels.csv configs.csv roofline.csv summary.csv \
    variability.csv report.md report.html complete; do
    [[ -s $run/$f ]] || problems+=("$f is missing or empty")
done
for f in peaks.csv steps.csv kernels.csv roofline.csv summary.csv variability.csv; do
    if [[ -s $run/$f ]] && (($(wc -l <"$run/$f") < 2)); then
        problems+=("$f has no rows")
    fi
done
skipped=0
if [[ -s $run/configs.csv ]]; then
    # "skipped here (why)": what the machine cannot run (bin/train's exit 3) is
    # no gap in the study (a quoted status still starts its cell so)
    bad=$(awk -F, 'NR > 1 && $7 != "ok" && $7 !~ /^"?skipped here \(/' "$run/configs.csv" | wc -l)
    skipped=$(awk -F, 'NR > 1 && $7 ~ /^"?skipped here \(/' "$run/configs.csv" | wc -l)
    ((bad == 0)) || problems+=("configs.csv has $bad runs that are not ok")
fi

if [[ -s $run/report.md && -s $run/report.html ]]; then
    while IFS= read -r heading; do
        title=${heading#\#* }
        title=${title#\#* }
        # the HTML escapes what Markdown leaves as is
        plain=$(sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' <<<"$title")
        grep -qF -- "$plain" "$run/report.html" || problems+=("report.html lacks the section '$title'")
    done < <(grep -E '^#{1,3} ' "$run/report.md")
    shopt -s nullglob
    figures=("$run"/figures/*.png)
    shopt -u nullglob
    ((${#figures[@]} > 0)) || problems+=("no figures in $run/figures")
    images=$(count '<img ' "$run/report.html")
    ((images >= ${#figures[@]})) ||
        problems+=("report.html embeds $images images, figures/ holds ${#figures[@]}")
    embedded=$(count 'src="data:image/png;base64,' "$run/report.html")
    ((embedded == images)) || problems+=("report.html links $((images - embedded)) images instead of embedding them")
fi

if ((${#problems[@]})); then
    echo "check_run: $run is not a complete study:" >&2
    printf '  %s\n' "${problems[@]}" >&2
    exit 1
fi
echo "check_run: $run: every run ok$( ((skipped)) && echo " or skipped here ($skipped: the machine cannot run them)"); CSVs, $(grep -cE '^#{1,3} ' "$run/report.md") sections and ${#figures[@]} figures in report.html"
