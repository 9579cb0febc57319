# shellcheck shell=bash
# Sourced by bench.sh and scaling.sh: the configs.csv statuses that both write
# for a bin/train process.

# shellcheck disable=SC2034 # used by the scripts that source this file
CANNOT_RUN_HERE=3 # bin/train's exit status (bench/train/train_run.h)

# skipped_here_status LOG: the status of a process bin/train ended with
# CANNOT_RUN_HERE, from its "cannot run here: WHY" line in LOG (under mpirun
# the line starts with the rank).
skipped_here_status() {
    local why
    why=$(grep -m1 -o 'cannot run here: .*' "$1" 2>/dev/null || true)
    why=${why#cannot run here: }
    echo "skipped here (${why:-bin/train: this device cannot run it})"
}

# csv_cell TEXT: TEXT as one CSV cell, quoted where it holds a comma or a quote
# (a skipped run's reason does).
csv_cell() {
    local text=$1
    [[ $text == *[,\"]* ]] && text=\"${text//\"/\"\"}\"
    printf '%s' "$text"
}
