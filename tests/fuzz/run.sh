#!/bin/bash
# Runs each libFuzzer target for a while (`make fuzz FUZZ_S=60`) and prints,
# per target, the executions, the corpus it grew, crashes and hangs.
#   tests/fuzz/run.sh BUILD SECONDS TARGET...
# The seed corpus (tests/fuzz/corpus/<target>) is only read; what the fuzzer
# adds goes to BUILD/fuzz-corpus/<target>, a crash or hang input to
# BUILD/fuzz-crashes/ with the sanitizer's report in BUILD/fuzz-logs/<target>.log.
# Exit 1 when any target crashed or hung: turn each input into
# a regression test (tests/fuzz/regress/<target>/) once the defect is fixed.
set -uo pipefail
if [[ $# -lt 3 || ! $2 =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: tests/fuzz/run.sh BUILD SECONDS TARGET..." >&2
    exit 2
fi
build=$1 seconds=$2
shift 2
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$build/fuzz-corpus" "$build/fuzz-crashes" "$build/fuzz-logs"
bad=0
printf '%-14s %8s %12s %9s %7s %8s %6s\n' target seconds executions exec/s corpus crashes hangs
for t in "$@"; do
    bin=$build/fuzz/fuzz_$t log=$build/fuzz-logs/$t.log
    if [[ ! -x $bin ]]; then
        echo "fuzz: $bin is missing (make fuzz builds it)" >&2
        exit 1
    fi
    mkdir -p "$build/fuzz-corpus/$t"
    rm -f "$build/fuzz-crashes/$t-"*
    args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -close_fd_mask=3 -artifact_prefix="$build/fuzz-crashes/$t-")
    dict=$src/dict/$t.dict
    case $t in
    train_options) args+=(-detect_leaks=0) ;; # bin/train's parser exits without freeing
    matrix) ;;
    *) dict=$src/dict/run.dict ;;
    esac
    [[ -f $dict ]] && args+=(-dict="$dict")
    # the programs' own lines are closed off (-close_fd_mask); libFuzzer's and the
    # sanitizers' reports go to the log
    UBSAN_OPTIONS=print_stacktrace=1 \
        "$bin" "${args[@]}" "$build/fuzz-corpus/$t" "$src/corpus/$t" >"$log" 2>&1
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    corpus=$(find "$build/fuzz-corpus/$t" -type f | wc -l)
    crashes=$(find "$build/fuzz-crashes" -name "$t-crash-*" -o -name "$t-leak-*" -o -name "$t-oom-*" \
        -o -name "$t-deadly-*" | wc -l)
    hangs=$(find "$build/fuzz-crashes" -name "$t-timeout-*" | wc -l)
    printf '%-14s %8s %12s %9s %7s %8s %6s\n' "$t" "$seconds" "${execs:-?}" \
        "$((${execs:-0} / seconds))" "$corpus" "$crashes" "$hangs"
    if ((crashes + hangs > 0)) || [[ -z $execs ]]; then
        bad=1
        echo "  $t: see $log; the input is in $build/fuzz-crashes/" >&2
    fi
done
exit $bad
