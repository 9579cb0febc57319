#!/usr/bin/env bash
# The runner behind `make bench ENV=x` (DESIGN.md §3): for one row of the run
# matrix it runs envinfo -> peaks -> every configuration's training repeats ->
# one trace pass per configuration -> scaling (when available) -> the report,
# into runs/<ENV>/<RUN_ID>/. Each process writes a part file that is renamed
# into place only when the process succeeds, so an interrupted run resumes by
# skipping what is complete; a failing configuration becomes a row of
# configs.csv with its status and the matrix goes on.
#
#   scripts/bench.sh ENV [RUN=runs/ENV/ID|new] [MATRIX=run_matrix.md] [RUNS_DIR=runs]
#                        [BIN=bin] [THREADS=N]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
accepted="RUN=, MATRIX=, RUNS_DIR=, BIN=, THREADS="

if [[ $# -lt 1 || -z $1 || $1 == *=* ]]; then
    echo "bench: give the environment first: scripts/bench.sh ENV [$accepted] (ENV local: this machine)" >&2
    exit 2
fi
env_req=$1
shift
RUN=${RUN:-} MATRIX=${MATRIX:-} RUNS_DIR=${RUNS_DIR:-} BIN=${BIN:-} THREADS=${THREADS:-}
for arg in "$@"; do
    case $arg in
    RUN=*) RUN=${arg#RUN=} ;;
    MATRIX=*) MATRIX=${arg#MATRIX=} ;;
    RUNS_DIR=*) RUNS_DIR=${arg#RUNS_DIR=} ;;
    BIN=*) BIN=${arg#BIN=} ;;
    THREADS=*) THREADS=${arg#THREADS=} ;;
    *)
        echo "bench: unexpected argument '$arg' (accepted: $accepted)" >&2
        exit 2
        ;;
    esac
done
MATRIX=${MATRIX:-run_matrix.md}
RUNS_DIR=${RUNS_DIR:-runs}
BIN=${BIN:-bin}
if [[ -n $THREADS && ! $THREADS =~ ^[1-9][0-9]*$ ]]; then
    echo "bench: THREADS: '$THREADS' is not a positive integer" >&2
    exit 2
fi
for program in matrix envinfo peaks train; do
    if [[ ! -x $BIN/$program ]]; then
        echo "bench: $BIN/$program is missing: run 'make' first (or 'make bench', which builds)" >&2
        exit 1
    fi
done

# ---- time ---------------------------------------------------------------------
now_ms() {
    if [[ -n ${EPOCHREALTIME:-} ]]; then
        local us=${EPOCHREALTIME//[!0-9]/}
        echo $((10#$us / 1000))
    else
        date +%s%3N
    fi
}

# 83400 -> "1 min 23 s"
human_ms() {
    local s=$((($1 + 500) / 1000))
    if ((s >= 3600)); then
        printf '%d h %02d min' $((s / 3600)) $((s % 3600 / 60))
    elif ((s >= 60)); then
        printf '%d min %02d s' $((s / 60)) $((s % 60))
    else
        printf '%d s' "$s"
    fi
}

# 83456 -> "83.5"
seconds_of_ms() {
    printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100))
}

# ---- the run folder -----------------------------------------------------------
# ENV as the matrix names it: local becomes the row of this machine.
env_name=$("$BIN/matrix" --file "$MATRIX" --resolve "$env_req") || exit $?

new_run_dir() {
    local parent=$RUNS_DIR/$env_name id dir n=1
    id=$(date -u +%Y%m%dT%H%M%SZ)
    mkdir -p "$parent"
    dir=$parent/$id
    # mkdir without -p fails when the folder exists: two runs never share one
    until mkdir "$dir" 2>/dev/null; do
        n=$((n + 1))
        dir=$parent/$id-$n
        if ((n > 100)); then
            echo "bench: cannot create a run folder under $parent" >&2
            exit 1
        fi
    done
    echo "$dir"
}

latest_unfinished() {
    local d latest=
    shopt -s nullglob
    for d in "$RUNS_DIR/$env_name"/*/; do
        if [[ -f $d/matrix.tsv && ! -f $d/complete ]]; then
            latest=${d%/}
        fi
    done
    shopt -u nullglob
    echo "$latest"
}

resuming=false
if [[ -n $RUN && $RUN != new ]]; then
    run=${RUN%/}
    if [[ ! -f $run/matrix.tsv ]]; then
        echo "bench: RUN: '$RUN' is not a run folder of the runner (no matrix.tsv); give runs/<ENV>/<RUN_ID>, or RUN=new" >&2
        exit 2
    fi
    run_env=$(sed -n '1s/^# env=\([^ ]*\).*/\1/p' "$run/matrix.tsv")
    if [[ $env_req != local && $run_env != "$env_name" ]]; then
        echo "bench: RUN: '$RUN' is a run of ENV $run_env, not $env_name" >&2
        exit 2
    fi
    env_name=$run_env
    resuming=true
elif [[ -z $RUN ]]; then
    run=$(latest_unfinished)
    [[ -n $run ]] && resuming=true
fi
if ! $resuming; then
    run=$(new_run_dir)
    # the run keeps its own copy of the configurations: a resume trains what
    # the run started with, whatever the matrix file says by then
    "$BIN/matrix" --file "$MATRIX" "$env_name" >"$run/matrix.tsv.tmp"
    {
        echo "# env=$env_name requested=$env_req matrix=$MATRIX"
        cat "$run/matrix.tsv.tmp"
    } >"$run/matrix.tsv.tmp2"
    mv "$run/matrix.tsv.tmp2" "$run/matrix.tsv"
    rm -f "$run/matrix.tsv.tmp"
fi
mkdir -p "$run/logs" "$run/parts"
# one runner per run folder: two would train the same parts
if command -v flock >/dev/null; then
    exec 9>"$run/.lock"
    if ! flock -n 9; then
        echo "bench: another runner is working in $run (it holds $run/.lock); wait for it or give RUN=new" >&2
        exit 1
    fi
fi

say() {
    echo "bench: $*" >&2
    echo "$(date -u +%H:%M:%S) $*" >>"$run/logs/bench.log"
}

trap 'say "interrupted; resume with: make bench ENV=$env_name RUN=$run"; exit 130' INT TERM

# ---- the configurations -------------------------------------------------------
models=() res=() batch=() prec=() warmup=() iters=() repeats=() backend=() counters=()
ranks='' peaks=''
while IFS=$'\t' read -r m r b p w i n be c rk pk; do
    [[ -z $m || $m == \#* ]] && continue
    models+=("$m") res+=("$r") batch+=("$b") prec+=("$p") warmup+=("$w") iters+=("$i")
    repeats+=("$n") backend+=("$be") counters+=("$c")
    ranks=$rk peaks=$pk
done <"$run/matrix.tsv"
n_configs=${#models[@]}
if ((n_configs == 0)); then
    echo "bench: $run/matrix.tsv holds no configurations" >&2
    exit 1
fi

# Part files of configuration k, in $run/parts: PREFIX.repR.steps.csv for
# repeat R, PREFIX.kernels.csv for its trace pass, PREFIX.TAG.config.csv for
# its configs.csv row of each (TAG repR or trace).
keys=()
for ((k = 0; k < n_configs; k++)); do
    keys+=("$run/parts/${models[k]}_r${res[k]}_b${batch[k]}_${prec[k]}")
done

total_runs=0 done_runs=0
for ((k = 0; k < n_configs; k++)); do
    for ((r = 1; r <= repeats[k]; r++)); do
        total_runs=$((total_runs + 1))
        [[ -f ${keys[k]}.rep$r.steps.csv ]] && done_runs=$((done_runs + 1))
    done
    total_runs=$((total_runs + 1))
    [[ -f ${keys[k]}.kernels.csv ]] && done_runs=$((done_runs + 1))
done

if $resuming; then
    say "resuming $run: $done_runs of $total_runs runs complete, $((total_runs - done_runs)) to run"
else
    say "new run $run: ENV $env_name, $n_configs configurations, $total_runs runs (repeats and a trace pass each)"
fi

# ---- provenance and roofs -----------------------------------------------------
if [[ ! -f $run/env.json ]]; then
    if ! "$BIN/envinfo" --out "$run/env.json" --env "$env_name" --backend "${backend[0]}" \
        --argv "$0 $env_req $*" \
        >"$run/logs/envinfo.log" 2>&1; then
        say "envinfo: failed: see $run/logs/envinfo.log (the run goes on without env.json)"
    fi
fi

if [[ $peaks == off ]]; then
    say "peaks: off in the matrix (no roofs: the report has no roofline ceilings)"
elif [[ ! -f $run/peaks.csv ]]; then
    peaks_args=(--env "$env_name" --out "$run/peaks.csv" --quiet)
    # both parts named for a GPU row: without a GPU bin/peaks then fails
    # (peaks.csv.partial keeps the CPU rows) instead of a CPU-only peaks.csv
    if [[ ${backend[0]} == cpu ]]; then peaks_args+=(--cpu); else peaks_args+=(--cpu --gpu); fi
    [[ $peaks == quick ]] && peaks_args+=(--quick)
    [[ -n $THREADS ]] && peaks_args+=(--threads "$THREADS")
    say "peaks: measuring the roofs ($peaks)"
    t0=$(now_ms)
    if "$BIN/peaks" "${peaks_args[@]}" >"$run/logs/peaks.log" 2>&1; then
        say "peaks: done in $(human_ms $(($(now_ms) - t0)))"
    else
        say "peaks: failed (exit $?): see $run/logs/peaks.log (the run goes on)"
    fi
fi

# ---- assembling the run's CSV files from the parts ----------------------------
# Header of the first part, then every part's rows, in matrix order; written
# under a temporary name and renamed, so a reader never sees half a file.
assemble() {
    local out=$1
    shift
    if (($# == 0)); then
        # every process failed: a header-only steps.csv still lets the analysis
        # list each configuration with its status
        case $out in
        */steps.csv)
            echo "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,images_per_s,loss,peak_mem_bytes" >"$out.tmp"
            mv "$out.tmp" "$out"
            ;;
        esac
        return 0
    fi
    awk 'FNR == 1 && NR != 1 { next } { print }' "$@" >"$out.tmp"
    mv "$out.tmp" "$out"
}

assemble_all() {
    local k r steps=() kernels=() rows=() f
    for ((k = 0; k < n_configs; k++)); do
        for ((r = 1; r <= repeats[k]; r++)); do
            f=${keys[k]}.rep$r.steps.csv
            [[ -f $f ]] && steps+=("$f")
            f=${keys[k]}.rep$r.config.csv
            [[ -f $f ]] && rows+=("$f")
        done
        f=${keys[k]}.kernels.csv
        [[ -f $f ]] && kernels+=("$f")
        f=${keys[k]}.trace.config.csv
        [[ -f $f ]] && rows+=("$f")
    done
    assemble "$run/steps.csv" "${steps[@]}"
    assemble "$run/kernels.csv" "${kernels[@]}"
    {
        echo "config,model,res,batch,precision,repeat,status,seconds,log"
        if ((${#rows[@]})); then cat "${rows[@]}"; fi
    } >"$run/configs.csv.tmp"
    mv "$run/configs.csv.tmp" "$run/configs.csv"
}

# ---- training and trace passes ------------------------------------------------
declare -A last_ms=() # duration of configuration k's last repeat, for the estimate
sum_ms=0 n_timed=0

# Estimated time of what is left: each configuration's repeats at its last
# repeat's duration (else the mean so far), its trace pass at the share of
# steps it runs (warm-up, one timed step, the traced step).
estimate_left() {
    local k r left=0 per
    if ((n_timed == 0)); then
        echo "unknown until the first run ends"
        return
    fi
    for ((k = 0; k < n_configs; k++)); do
        per=${last_ms[$k]:-$((sum_ms / n_timed))}
        for ((r = 1; r <= repeats[k]; r++)); do
            [[ -f ${keys[k]}.rep$r.config.csv ]] || left=$((left + per))
        done
        [[ -f ${keys[k]}.trace.config.csv ]] ||
            left=$((left + per * (warmup[k] + 2) / (warmup[k] + iters[k])))
    done
    human_ms "$left"
}

# Writes configuration k's configs.csv row for TAG (repR or trace).
write_row() {
    local k=$1 tag=$2 repeat=$3 status=$4 seconds=$5 log=$6
    echo "$((k + 1))/$n_configs,${models[k]},${res[k]},${batch[k]},${prec[k]},$repeat,$status,$seconds,$log" \
        >"${keys[k]}.$tag.config.csv.tmp"
    mv "${keys[k]}.$tag.config.csv.tmp" "${keys[k]}.$tag.config.csv"
}

# run_one K R: repeat R of configuration K as one bin/train process; R = trace:
# its trace pass (warm-up, one timed step, the traced step; no steps.csv rows).
run_one() {
    local k=$1 rep=$2 tag part rel args t0 ms status=0 what
    args=(--model "${models[k]}" --res "${res[k]}" --batch "${batch[k]}" --precision "${prec[k]}"
        --warmup "${warmup[k]}" --env "$env_name" --backend "${backend[k]}")
    [[ -n $THREADS ]] && args+=(--threads "$THREADS")
    if [[ $rep == trace ]]; then
        tag=trace
        part=${keys[k]}.kernels.csv
        what="trace pass"
        args+=(--iters 1 --repeat 0 --trace "$part.tmp")
        case ${counters[k]} in
        perf) args+=(--counters perf) ;;
        cupti) args+=(--counters cupti) ;;
        off) args+=(--counters analytic) ;;
        esac
    else
        tag=rep$rep
        part=${keys[k]}.rep$rep.steps.csv
        what="repeat $rep of ${repeats[k]}"
        # each repeat its own seed (data, initial weights, dropout masks), so
        # run-to-run variability includes what the seed changes
        args+=(--iters "${iters[k]}" --repeat "$rep" --seed "$rep" --out "$part.tmp")
    fi
    rel=logs/${keys[k]##*/}.$tag.log
    rm -f "$part.tmp"
    say "configuration $((k + 1)) of $n_configs, $what (run $((done_runs + 1)) of $total_runs):" \
        "${models[k]} res ${res[k]} batch ${batch[k]} ${prec[k]}; est. time left $(estimate_left)"
    t0=$(now_ms)
    "$BIN/train" "${args[@]}" >"$run/$rel" 2>&1 || status=$?
    ms=$(($(now_ms) - t0))
    local row_status=ok
    if ((status == 0)) && [[ -f $part.tmp ]]; then
        mv "$part.tmp" "$part"
        say "  ok in $(human_ms "$ms")"
    else
        ((status == 0)) && status=1 # exited 0 without writing its rows
        row_status="failed (exit $status)"
        # what it did measure stays beside the log, out of the run's CSV files
        if [[ -f $part.tmp ]]; then mv "$part.tmp" "$part.failed"; fi
        say "  failed (exit $status) after $(human_ms "$ms"): $(tail -n 1 "$run/$rel" 2>/dev/null || true) (log: $run/$rel)"
    fi
    if [[ $rep != trace ]]; then
        last_ms[$k]=$ms
        sum_ms=$((sum_ms + ms))
        n_timed=$((n_timed + 1))
    fi
    write_row "$k" "$tag" "${rep}" "$row_status" "$(seconds_of_ms "$ms")" "$rel"
    done_runs=$((done_runs + 1))
    assemble_all
}

for ((k = 0; k < n_configs; k++)); do
    ok_repeats=0
    for ((r = 1; r <= repeats[k]; r++)); do
        [[ -f ${keys[k]}.rep$r.steps.csv ]] || run_one "$k" "$r"
        [[ -f ${keys[k]}.rep$r.steps.csv ]] && ok_repeats=$((ok_repeats + 1))
    done
    [[ -f ${keys[k]}.kernels.csv ]] && continue
    if ((ok_repeats > 0)); then
        run_one "$k" trace
    else
        write_row "$k" trace trace "skipped (every repeat failed)" 0.0 ""
        say "configuration $((k + 1)) of $n_configs, trace pass: skipped (every repeat failed)"
        done_runs=$((done_runs + 1))
    fi
done
assemble_all

# ---- scaling ------------------------------------------------------------------
multi_rank=false
IFS=, read -r -a rank_list <<<"${ranks//-/}"
for n in "${rank_list[@]}"; do
    ((n > 1)) && multi_rank=true
done
if ! $multi_rank; then
    say "scaling: skipped (the matrix lists no world size above 1 for $env_name)"
elif ! "$BIN/train" --help 2>/dev/null | grep -q -- '--ddp'; then
    say "scaling: skipped (bin/train has no --ddp yet: world sizes $ranks not run)"
else
    # bin/train --ddp at each world size (strong and weak), the allreduce
    # curve and the model's predictions; world sizes this machine cannot
    # hold are skipped, one line each; failed runs become configs.csv rows
    say "scaling: world sizes $ranks (scripts/scaling.sh)"
    if ! BIN="$BIN" THREADS="$THREADS" "$here/scaling.sh" "$run" "$ranks"; then
        say "scaling: some runs failed (configs.csv and $run/logs say which)"
    fi
fi

# ---- the run is complete: every configuration was attempted --------------------
n_ok=$(awk -F, 'NR > 1 && $7 == "ok"' "$run/configs.csv" | wc -l)
n_failed=$(awk -F, 'NR > 1 && $7 ~ /^failed/' "$run/configs.csv" | wc -l)
{
    echo "finished $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "runs ok $n_ok, failed $n_failed, of $total_runs"
} >"$run/complete.tmp"
mv "$run/complete.tmp" "$run/complete"

# ---- analysis, figures, report ------------------------------------------------
rendered=true
if [[ -x $here/render.sh ]]; then
    say "report: rendering (scripts/render.sh)"
    if BIN="$BIN" "$here/render.sh" "$run" 2>&1 | tee -a "$run/logs/render.log" >&2; then
        say "report: $run/report.html"
    else
        rendered=false
        say "report: rendering failed: see $run/logs/render.log; re-render with: make report RUN=$run"
    fi
else
    say "report: rendering is not available (no scripts/render.sh); the CSV files are in $run"
fi

# The failed runs, each with why (the first error line of its log) and the
# command that reproduces it alone; the resume command retries them all.
report_failures() {
    local k r tag log why
    say "failed runs:"
    for ((k = 0; k < n_configs; k++)); do
        for tag in $(seq -f 'rep%g' 1 "${repeats[k]}") trace; do
            [[ -f ${keys[k]}.$tag.config.csv ]] || continue
            grep -q ',failed' "${keys[k]}.$tag.config.csv" || continue
            log=$run/logs/${keys[k]##*/}.$tag.log
            why=$(grep -m1 -E '^[a-z_]+: ' "$log" 2>/dev/null || head -n 1 "$log" 2>/dev/null || true)
            say "  ${models[k]} res ${res[k]} batch ${batch[k]} ${prec[k]} $tag: ${why:-no output} (log: $log)"
            if [[ $tag == trace ]]; then
                r="--iters 1 --trace kernels.csv"
            else
                r="--iters ${iters[k]} --seed ${tag#rep}"
            fi
            say "    alone: $BIN/train --model ${models[k]} --res ${res[k]} --batch ${batch[k]} --precision ${prec[k]} --backend ${backend[k]} --warmup ${warmup[k]} $r"
        done
    done
    say "retry the failed runs (the others are kept): make bench ENV=$env_name RUN=$run"
}

if ((n_failed > 0)); then
    say "done: $run; $n_failed of $total_runs runs failed (see $run/configs.csv)"
    report_failures
    exit 1
fi
if ! $rendered; then
    say "done: $run ($n_ok runs ok) but without a report"
    exit 1
fi
say "done: $run ($n_ok runs ok)"
