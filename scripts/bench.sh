#!/usr/bin/env bash
# The runner behind `make bench ENV=x` (DESIGN.md §3): for one row of the run
# matrix it runs envinfo -> peaks -> every configuration's training repeats ->
# one trace pass per configuration -> scaling (when available) -> the report,
# into runs/<ENV>/<RUN_ID>/. Each process writes a part file that is renamed
# into place only when the process succeeds, so an interrupted run resumes by
# skipping what is complete; a failing configuration becomes a row of
# configs.csv with its status and the matrix goes on. A configuration the
# machine cannot run at all (bin/train's exit 3: a precision the GPU lacks, a
# batch its memory cannot hold) is a row "skipped here (why)", its other repeats
# and trace pass rows of the same, and is no failure.
#
#   scripts/bench.sh ENV [RUN=runs/ENV/ID|new] [MATRIX=run_matrix.md] [RUNS_DIR=runs]
#                        [BIN=bin] [THREADS=N] [REF=auto|off]
#
# REF=auto (the default): after the matrix, PyTorch runs the same configurations
# (scripts/pytorch_ref.py, one process) into reference.csv, where a python3
# imports torch and torchvision (PY=, else python3, else /usr/bin/python3; on a
# GPU row torch must see the GPU); the report then sets ours beside it.
#
# Interruptions (README, "Errors and recovery"). Killed at any moment, even
# with SIGKILL, a run resumes with RUN= and ends with every configuration's
# rows exactly once, because of three rules:
# - a run folder appears whole: it is made under a hidden name with its
#   matrix.tsv and then renamed into runs/<ENV>/;
# - every file is written under a temporary name and renamed (mv -T: a link
#   planted where the file goes is replaced, never followed);
# - a process's configs.csv row is written before its part is renamed into
#   place, and a resume skips a process only when its part is there, so a
#   part never lacks its row, and a row without its part is written again.
# SIGINT and SIGTERM stop the process running, remove the temporary files and
# say in one line how to resume (exit 130 / 143).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/run_status.sh
. "$here/run_status.sh"
accepted="RUN=, MATRIX=, RUNS_DIR=, BIN=, THREADS=, REF="

if [[ $# -ge 1 && ($1 == --help || $1 == -h) ]]; then
    echo "usage: scripts/bench.sh ENV [RUN=runs/ENV/ID|new] [MATRIX=run_matrix.md] [RUNS_DIR=runs] [BIN=bin] [THREADS=N] [REF=auto|off]"
    echo "Runs the row ENV of the run matrix (ENV local: this machine's row) into runs/ENV/ID/;"
    echo "RUN= resumes that run folder. The rows: bin/matrix --list. README.md, 'make bench'."
    exit 0
fi
if [[ $# -lt 1 || -z $1 || $1 == *=* ]]; then
    echo "bench: give the environment first: scripts/bench.sh ENV [$accepted] (ENV local: this machine)" >&2
    exit 2
fi
if [[ $1 == -* ]]; then
    echo "bench: '$1' is not an environment: scripts/bench.sh ENV [$accepted] (the rows: bin/matrix --list)" >&2
    exit 2
fi
env_req=$1
shift
RUN=${RUN:-} MATRIX=${MATRIX:-} RUNS_DIR=${RUNS_DIR:-} BIN=${BIN:-} THREADS=${THREADS:-} REF=${REF:-}
for arg in "$@"; do
    case $arg in
    RUN=*) RUN=${arg#RUN=} ;;
    MATRIX=*) MATRIX=${arg#MATRIX=} ;;
    RUNS_DIR=*) RUNS_DIR=${arg#RUNS_DIR=} ;;
    BIN=*) BIN=${arg#BIN=} ;;
    THREADS=*) THREADS=${arg#THREADS=} ;;
    REF=*) REF=${arg#REF=} ;;
    *)
        echo "bench: unexpected argument '$arg' (accepted: $accepted)" >&2
        exit 2
        ;;
    esac
done
MATRIX=${MATRIX:-run_matrix.md}
RUNS_DIR=${RUNS_DIR:-runs}
BIN=${BIN:-bin}
REF=${REF:-auto}
if [[ $REF != auto && $REF != off ]]; then
    echo "bench: REF: '$REF' is not auto or off (auto: PyTorch beside ours where it imports)" >&2
    exit 2
fi
cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
if [[ -n $THREADS && ! ($THREADS =~ ^[1-9][0-9]{0,5}$ && $THREADS -le $cores) ]]; then
    echo "bench: THREADS: '$THREADS' is not an integer in 1..$cores (the cores of this machine)" >&2
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
# it names a folder: never '.', '..' or a path (bin/matrix checks it too)
valid_name='^[A-Za-z0-9][A-Za-z0-9._-]*$'
if [[ ! $env_name =~ $valid_name ]]; then
    echo "bench: ENV '$env_name' is not a name of letters, digits, '.', '_', '-' starting with a letter or digit" >&2
    exit 2
fi

# The configurations of the row, with the line that names the run's ENV first.
write_matrix_tsv() {
    local dir=$1
    {
        echo "# env=$env_name requested=$env_req matrix=$MATRIX"
        "$BIN/matrix" --file "$MATRIX" "$env_name"
    } >"$dir/matrix.tsv.tmp"
    mv -f -T "$dir/matrix.tsv.tmp" "$dir/matrix.tsv"
}

# A new run folder appears whole: made under a hidden name (runs/<ENV>/.<ID>.new.<PID>),
# matrix.tsv written into it, then renamed. A kill before the rename leaves
# only the hidden folder, which the next start removes.
new_run_dir() {
    local parent=$RUNS_DIR/$env_name id dir n=1 stale pid
    id=$(date -u +%Y%m%dT%H%M%SZ)
    mkdir -p "$parent"
    shopt -s nullglob
    for stale in "$parent"/.*.new.*; do
        pid=${stale##*.new.}
        [[ $pid =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null && rm -rf -- "$stale"
    done
    shopt -u nullglob
    local tmp=$parent/.$id.new.$$
    rm -rf -- "$tmp"
    mkdir "$tmp"
    write_matrix_tsv "$tmp"
    dir=$parent/$id
    # rename(2) onto an existing folder that is not empty fails: two runs
    # never share one
    until mv -T "$tmp" "$dir" 2>/dev/null; do
        n=$((n + 1))
        dir=$parent/$id-$n
        if ((n > 100)); then
            rm -rf -- "$tmp"
            echo "bench: cannot create a run folder under $parent" >&2
            exit 1
        fi
    done
    echo "$dir"
}

# A folder without matrix.tsv and without any file is a start that was
# interrupted before this runner made folders whole: RUN= takes it over.
empty_folder() {
    [[ -d $1 && ! -L $1 && -z $(find "$1" -mindepth 1 -not -type d -print -quit 2>/dev/null) ]]
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
    if [[ ! -f $run/matrix.tsv ]] && empty_folder "$run"; then
        # the run keeps its own copy of the configurations (below)
        write_matrix_tsv "$run"
    fi
    if [[ ! -f $run/matrix.tsv ]]; then
        echo "bench: RUN: '$RUN' is not a run folder of the runner (no matrix.tsv); give runs/<ENV>/<RUN_ID>, or RUN=new" >&2
        exit 2
    fi
    run_env=$(sed -n '1s/^# env=\([^ ]*\).*/\1/p' "$run/matrix.tsv")
    if [[ ! $run_env =~ $valid_name ]]; then
        echo "bench: RUN: $run/matrix.tsv:1: '# env=NAME' with a name of letters, digits, '.', '_', '-' was expected" >&2
        exit 2
    fi
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
    # the run keeps its own copy of the configurations: a resume trains what
    # the run started with, whatever the matrix file says by then
    run=$(new_run_dir)
fi
# The runner's own folders must be folders of the run: a link planted there
# would send the logs and parts elsewhere.
for sub in logs parts; do
    if [[ -L $run/$sub || (-e $run/$sub && ! -d $run/$sub) ]]; then
        echo "bench: $run/$sub is not a folder (a link or a file): remove it; the runner writes only inside the run folder" >&2
        exit 2
    fi
done
mkdir -p "$run/logs" "$run/parts"
for f in "$run/.lock" "$run/logs/bench.log"; do
    [[ -L $f ]] && rm -f -- "$f"
done
# one runner per run folder: two would train the same parts (the processes it
# starts inherit the lock, so a runner killed alone keeps it until they end)
if command -v flock >/dev/null; then
    exec 9>>"$run/.lock"
    if ! flock -n 9; then
        echo "bench: another runner is working in $run (it holds $run/.lock); wait for it or give RUN=new" >&2
        exit 1
    fi
fi

# the command that resumes this run (a matrix file other than the default is named)
resume_cmd="make bench ENV=$env_name RUN=$run"
[[ $MATRIX == run_matrix.md ]] || resume_cmd+=" MATRIX=$MATRIX"

say() {
    echo "bench: $*" >&2
    echo "$(date -u +%H:%M:%S) $*" >>"$run/logs/bench.log"
}

# Writes go to files that are removed first: a link planted at the name is
# removed, never followed.
fresh() {
    rm -f -- "$@"
}

# ---- interruptions ---------------------------------------------------------------
# fd 8 is the runner's own stderr: a signal may arrive while a process's output
# is redirected to its log, and the line saying how to resume belongs on the
# terminal
exec 8>&2
# Every process runs in the background and the runner waits for it, so that a
# signal is handled at once (bash runs a trap only between commands) and the
# process is stopped with it.
child=''
run_child() {
    "$@" &
    child=$!
    local status=0
    wait "$child" || status=$?
    child=''
    return "$status"
}

interrupted() {
    local sig=$1 code=$2
    trap '' INT TERM
    if [[ -n $child ]]; then
        kill -TERM "$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
    fi
    # what was being written is incomplete: the temporary files go
    find "$run" \( -name '*.tmp' -o -name '*.tmp.png' -o -name '*.tmp.svg' \) -type f \
        -delete 2>/dev/null || true
    say "interrupted by SIG$sig: partial files removed; resume with: $resume_cmd" 2>&8
    exit "$code"
}
trap 'interrupted INT 130' INT
trap 'interrupted TERM 143' TERM

# ---- the configurations -------------------------------------------------------
models=() res=() batch=() prec=() warmup=() iters=() repeats=() backend=() counters=() graph=()
ranks='' peaks=''
# matrix.tsv is bin/matrix's output, but a resumed folder may come from
# elsewhere: its names become file names, so each field is checked
tsv_line=0
bad_tsv() {
    echo "bench: $run/matrix.tsv:$tsv_line: $1 (the file bin/matrix wrote was expected; give RUN=new)" >&2
    exit 2
}
number='^[0-9]{1,9}$'
while IFS=$'\t' read -r m r b p w i n be c rk pk g; do
    tsv_line=$((tsv_line + 1))
    [[ -z $m || $m == \#* ]] && continue
    [[ $m =~ $valid_name ]] || bad_tsv "model '$m' is not a name"
    for v in "$r" "$b" "$w" "$i" "$n"; do
        [[ $v =~ $number ]] || bad_tsv "'$v' is not a whole number"
    done
    [[ $p =~ ^[a-z0-9]+$ ]] || bad_tsv "precision '$p' is not a name"
    [[ $be == cpu || $be == cuda ]] || bad_tsv "backend '$be' is not cpu or cuda"
    [[ $c == perf || $c == cupti || $c == off ]] || bad_tsv "counters '$c' is not perf, cupti or off"
    [[ $rk =~ ^(-|[0-9]{1,6}(,[0-9]{1,6})*)$ ]] || bad_tsv "ranks '$rk' is not '-' or a list of numbers"
    [[ $pk == quick || $pk == full || $pk == off ]] || bad_tsv "peaks '$pk' is not quick, full or off"
    # a folder begun before the graph column ran every configuration eagerly
    [[ -z $g ]] && g=off
    [[ $g == on || $g == off ]] || bad_tsv "graph '$g' is not on or off"
    models+=("$m") res+=("$r") batch+=("$b") prec+=("$p") warmup+=("$w") iters+=("$i")
    repeats+=("$n") backend+=("$be") counters+=("$c") graph+=("$g")
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
    key=$run/parts/${models[k]}_r${res[k]}_b${batch[k]}_${prec[k]}
    [[ ${graph[k]} == on ]] && key+=_graph
    keys+=("$key")
done
# The trace pass times the step eagerly (kernel by kernel, graph or not): a
# graph configuration whose eager twin is in the matrix has its trace there.
declare -A in_matrix=()
for key in "${keys[@]}"; do in_matrix[$key]=1; done
traced=()
for ((k = 0; k < n_configs; k++)); do
    if [[ ${graph[k]} == on && -n ${in_matrix[${keys[k]%_graph}]:-} ]]; then
        traced+=(false)
    else
        traced+=(true)
    fi
done
# "bf16" or "bf16 graph": a configuration's precision and mode, for messages
mode_of() {
    if [[ ${graph[$1]} == on ]]; then echo "${prec[$1]} graph"; else echo "${prec[$1]}"; fi
}

total_runs=0 done_runs=0
for ((k = 0; k < n_configs; k++)); do
    for ((r = 1; r <= repeats[k]; r++)); do
        total_runs=$((total_runs + 1))
        [[ -f ${keys[k]}.rep$r.steps.csv ]] && done_runs=$((done_runs + 1))
    done
    ${traced[k]} || continue
    total_runs=$((total_runs + 1))
    [[ -f ${keys[k]}.kernels.csv ]] && done_runs=$((done_runs + 1))
done

if $resuming; then
    say "resuming $run: $done_runs of $total_runs runs complete, $((total_runs - done_runs)) to run"
else
    what="repeats and a trace pass each"
    [[ " ${traced[*]} " == *" false "* ]] && what+="; a graph configuration's trace is its eager twin's"
    say "new run $run: ENV $env_name, $n_configs configurations, $total_runs runs ($what)"
fi

# ---- provenance and roofs -----------------------------------------------------
if [[ ! -f $run/env.json ]]; then
    fresh "$run/logs/envinfo.log"
    if ! run_child "$BIN/envinfo" --out "$run/env.json" --env "$env_name" --backend "${backend[0]}" \
        --argv "$0 $env_req $*" \
        >"$run/logs/envinfo.log" 2>&1; then
        say "envinfo: failed: see $run/logs/envinfo.log (the run goes on without env.json)"
    elif busy=$(grep -m 1 '^envinfo: other work keeps ' "$run/logs/envinfo.log"); then
        # a neighbour on the machine lowers every figure of the run: said before them
        say "${busy#envinfo: }"
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
    # bin/peaks writes FILE.tmp and FILE.partial itself: a link planted there goes first
    fresh "$run/logs/peaks.log" "$run/peaks.csv.tmp" "$run/peaks.csv.partial"
    if run_child "$BIN/peaks" "${peaks_args[@]}" >"$run/logs/peaks.log" 2>&1; then
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
            fresh "$out.tmp"
            echo "env,backend,model,res,batch,precision,world_size,rank,repeat,iter,step_ms,images_per_s,loss,peak_mem_bytes,graph" >"$out.tmp"
            mv -f -T "$out.tmp" "$out"
            ;;
        esac
        return 0
    fi
    fresh "$out.tmp"
    case $out in
    */steps.csv)
        # parts of a folder begun by a runner before the graph column (its
        # last) are eager steps: they get the column, so that every row of
        # the file has the header's cells
        awk 'FNR == 1 { old = $0 !~ /,graph$/ }
             FNR == 1 && NR != 1 { next }
             old { $0 = $0 (FNR == 1 ? ",graph" : FILENAME ~ /_graph[.]rep/ ? ",on" : ",off") }
             { print }' "$@" >"$out.tmp"
        ;;
    *) awk 'FNR == 1 && NR != 1 { next } { print }' "$@" >"$out.tmp" ;;
    esac
    mv -f -T "$out.tmp" "$out"
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
    # the scaling stage's processes (scripts/scaling.sh), after the matrix's
    shopt -s nullglob
    rows+=("$run"/parts/*.scaling.config.csv)
    shopt -u nullglob
    assemble "$run/steps.csv" "${steps[@]}"
    assemble "$run/kernels.csv" "${kernels[@]}"
    fresh "$run/configs.csv.tmp"
    {
        echo "config,model,res,batch,precision,repeat,status,seconds,log,graph"
        # rows of a folder begun before the graph column (their last cell a
        # log's path, never on or off): eager
        if ((${#rows[@]})); then
            awk -F, '$NF != "on" && $NF != "off" { $0 = $0 ",off" } { print }' "${rows[@]}"
        fi
    } >"$run/configs.csv.tmp"
    mv -f -T "$run/configs.csv.tmp" "$run/configs.csv"
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
        ${traced[k]} && [[ ! -f ${keys[k]}.trace.config.csv ]] &&
            left=$((left + per * (warmup[k] + 2) / (warmup[k] + iters[k])))
    done
    human_ms "$left"
}

# Writes configuration k's configs.csv row for TAG (repR or trace).
write_row() {
    local k=$1 tag=$2 repeat=$3 status seconds=$5 log=$6
    status=$(csv_cell "$4")
    fresh "${keys[k]}.$tag.config.csv.tmp"
    echo "$((k + 1))/$n_configs,${models[k]},${res[k]},${batch[k]},${prec[k]},$repeat,$status,$seconds,$log,${graph[k]}" \
        >"${keys[k]}.$tag.config.csv.tmp"
    mv -f -T "${keys[k]}.$tag.config.csv.tmp" "${keys[k]}.$tag.config.csv"
}

# run_one K R: repeat R of configuration K as one bin/train process; R = trace:
# its trace pass (warm-up, one timed step, the traced step; no steps.csv rows).
run_one() {
    local k=$1 rep=$2 tag part rel args t0 ms status=0 what
    args=(--model "${models[k]}" --res "${res[k]}" --batch "${batch[k]}" --precision "${prec[k]}"
        --warmup "${warmup[k]}" --env "$env_name" --backend "${backend[k]}")
    [[ -n $THREADS ]] && args+=(--threads "$THREADS")
    # the convolution algorithms a configuration's first process chose serve its
    # other repeats and its trace pass (and any configuration of the same shapes)
    [[ ${backend[k]} == cuda ]] && args+=(--algo-cache "$run/algos.csv")
    [[ ${graph[k]} == on ]] && args+=(--graph)
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
    fresh "$part.tmp" "$run/$rel"
    say "configuration $((k + 1)) of $n_configs, $what (run $((done_runs + 1)) of $total_runs):" \
        "${models[k]} res ${res[k]} batch ${batch[k]} $(mode_of "$k"); est. time left $(estimate_left)"
    t0=$(now_ms)
    run_child "$BIN/train" "${args[@]}" >"$run/$rel" 2>&1 || status=$?
    ms=$(($(now_ms) - t0))
    local row_status=ok
    skip_status=
    if ((status == CANNOT_RUN_HERE)); then
        # a precision the GPU lacks, or a batch its memory cannot hold: not a failure
        skip_status=$(skipped_here_status "$run/$rel")
        row_status=$skip_status
    elif ((status != 0)) || [[ ! -f $part.tmp ]]; then
        ((status == 0)) && status=1 # exited 0 without writing its rows
        row_status="failed (exit $status)"
    fi
    if [[ $rep != trace ]]; then
        last_ms[$k]=$ms
        sum_ms=$((sum_ms + ms))
        n_timed=$((n_timed + 1))
    fi
    # the row first, then the part: a resume skips only a process whose part
    # is there, and by then its row is too
    write_row "$k" "$tag" "${rep}" "$row_status" "$(seconds_of_ms "$ms")" "$rel"
    if [[ $row_status == ok ]]; then
        mv -f -T "$part.tmp" "$part"
        say "  ok in $(human_ms "$ms")"
    elif [[ $row_status == skipped* ]]; then
        rm -f "$part.tmp"
        say "  $row_status"
    else
        # what it did measure stays beside the log, out of the run's CSV files
        if [[ -f $part.tmp ]]; then mv -f -T "$part.tmp" "$part.failed"; fi
        say "  failed (exit $status) after $(human_ms "$ms"): $(tail -n 1 "$run/$rel" 2>/dev/null || true) (log: $run/$rel)"
    fi
    done_runs=$((done_runs + 1))
    assemble_all
}

for ((k = 0; k < n_configs; k++)); do
    ok_repeats=0 skip_status=
    for ((r = 1; r <= repeats[k]; r++)); do
        [[ -f ${keys[k]}.rep$r.steps.csv ]] || run_one "$k" "$r"
        [[ -f ${keys[k]}.rep$r.steps.csv ]] && ok_repeats=$((ok_repeats + 1))
        [[ -n $skip_status ]] && break
    done
    if [[ -n $skip_status ]]; then
        # what the device cannot run with one seed it cannot run with
        # another: the other repeats and the trace pass are rows, not runs
        for ((r = r + 1; r <= repeats[k]; r++)); do
            write_row "$k" "rep$r" "$r" "$skip_status" 0.0 ""
            done_runs=$((done_runs + 1))
        done
        if ${traced[k]} && [[ ! -f ${keys[k]}.kernels.csv ]]; then
            write_row "$k" trace trace "$skip_status" 0.0 ""
            done_runs=$((done_runs + 1))
        fi
        continue
    fi
    [[ -f ${keys[k]}.kernels.csv ]] && continue
    ${traced[k]} || continue
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
elif ! train_help=$("$BIN/train" --help 2>/dev/null) || ! grep -q -- '--ddp' <<<"$train_help"; then
    say "scaling: skipped (bin/train has no --ddp yet: world sizes $ranks not run)"
elif grep -q -- '--ddp is not in this build' <<<"$train_help"; then
    say "scaling: skipped (this bin/train is built without MPI: world sizes $ranks not run; 'make deps', then rebuild)"
else
    # bin/train --ddp at each world size (strong and weak), the allreduce
    # curve and the model's predictions; world sizes this machine cannot
    # hold are skipped, one line each; failed runs become configs.csv rows
    say "scaling: world sizes $ranks (scripts/scaling.sh)"
    if ! BIN="$BIN" THREADS="$THREADS" "$here/scaling.sh" "$run" "$ranks"; then
        say "scaling: some runs failed (configs.csv and $run/logs say which)"
    fi
    assemble_all
fi

# ---- reference: PyTorch on the same configurations ---------------------------
# One scripts/pytorch_ref.py process for the eager configurations and, on a
# GPU, one with --mode graph for the graph ones (fp16 aside: PyTorch's
# GradScaler cannot be captured), each with the configuration's warm-up and
# iterations, its rows flushed step by step into a part; reference.csv is the
# parts with steps.csv's graph column. A part that is there is kept on resume
# (delete it to measure again). It is a reference, not a run of the matrix:
# what fails there is said, never a failure of the run.
# The python3 that imports torch and torchvision (and sees the GPU on a GPU
# row), or nothing.
reference_python() {
    local py check='import torch, torchvision'
    [[ ${backend[0]} == cuda ]] && check+='; assert torch.cuda.is_available()'
    for py in ${PY:-python3 /usr/bin/python3}; do
        if command -v "$py" >/dev/null 2>&1 && "$py" -c "$check" >/dev/null 2>&1; then
            echo "$py"
            return 0
        fi
    done
    return 1
}

# reference_part MODE PART: the configurations of MODE (eager or graph) through
# pytorch_ref.py (the python3 $py) into PART, then its summary lines said.
reference_part() {
    local mode=$1 part=$2 list=$run/parts/reference.$1.configs k n=0 status=0 device=cpu
    local log=$run/logs/reference.$1.log args=()
    fresh "$list"
    for ((k = 0; k < n_configs; k++)); do
        [[ ${graph[k]} == on && $mode == graph || ${graph[k]} == off && $mode == eager ]] || continue
        [[ $mode == graph && ${prec[k]} == fp16 ]] && continue
        echo "${models[k]} ${res[k]} ${batch[k]} ${prec[k]} ${warmup[k]} ${iters[k]}" >>"$list"
        n=$((n + 1))
    done
    ((n > 0)) || return 0
    [[ ${backend[0]} == cuda ]] && device=cuda
    args=(--configs "$list" --device "$device" --env "$env_name" --out "$part.tmp"
          --limit 1800 --mode "$mode" --backend-version)
    # as PyTorch is measured on GPUs (notes/gpu-machine.md): channels_last
    [[ $device == cuda ]] && args+=(--channels-last)
    if [[ -n $THREADS ]]; then args+=(--threads "$THREADS"); elif [[ $device == cpu ]]; then args+=(--threads "$cores"); fi
    say "reference: PyTorch $torch_version ($py), $n $mode configuration(s)"
    fresh "$part.tmp" "$log"
    run_child "$py" "$here/pytorch_ref.py" "${args[@]}" >"$log" 2>&1 || status=$?
    while IFS= read -r line; do
        say "reference:   ${line#pytorch }"
    done < <(grep '^pytorch ' "$log" || true)
    ((status == 0)) || say "reference: pytorch_ref.py exited $status (its log: $log)"
    # what was measured is kept, a failed configuration's rows included
    if [[ -f $part.tmp ]]; then mv -f -T "$part.tmp" "$part"; fi
    return 0
}

if [[ $REF == off ]]; then
    say "reference: off (REF=off)"
elif ! py=$(reference_python); then
    if [[ ${backend[0]} == cuda ]]; then
        say "reference: skipped (no python3 that imports torch and torchvision and sees the GPU; PY=... names one)"
    else
        say "reference: skipped (no python3 that imports torch and torchvision: apt-get install -y python3-torch python3-torchvision, or PY=...)"
    fi
else
    torch_version=$("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo "?")
    for mode in eager graph; do
        [[ $mode == graph && ${backend[0]} != cuda ]] && continue
        part=$run/parts/reference.$mode.steps.csv
        if [[ -f $part ]]; then
            say "reference: $mode: kept from before ($part)"
        else
            reference_part "$mode" "$part"
        fi
    done
    parts=()
    for mode in eager graph; do
        [[ -f $run/parts/reference.$mode.steps.csv ]] && parts+=("$run/parts/reference.$mode.steps.csv")
    done
    if ((${#parts[@]})); then
        fresh "$run/reference.csv.tmp"
        # steps.csv's graph column, from the part each row came from
        awk 'FNR == 1 && NR != 1 { next }
             FNR == 1 { print $0 ",graph"; next }
             { print $0 (FILENAME ~ /[.]graph[.]steps[.]csv$/ ? ",on" : ",off") }' \
            "${parts[@]}" >"$run/reference.csv.tmp"
        mv -f -T "$run/reference.csv.tmp" "$run/reference.csv"
    fi
fi

# ---- the run is complete: every configuration was attempted --------------------
n_ok=$(awk -F, 'NR > 1 && $7 == "ok"' "$run/configs.csv" | wc -l)
n_failed=$(awk -F, 'NR > 1 && $7 ~ /^failed/' "$run/configs.csv" | wc -l)
n_skipped=$(awk -F, 'NR > 1 && $7 ~ /^"?skipped here \(/' "$run/configs.csv" | wc -l)
fresh "$run/complete.tmp"
{
    echo "finished $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "runs ok $n_ok, failed $n_failed, skipped $n_skipped (this machine cannot run them), of $total_runs"
} >"$run/complete.tmp"
mv -f -T "$run/complete.tmp" "$run/complete"

# ---- analysis, figures, report ------------------------------------------------
rendered=true
if [[ -x $here/render.sh ]]; then
    say "report: rendering (scripts/render.sh)"
    [[ -L $run/logs/render.log ]] && fresh "$run/logs/render.log"
    if run_child env BIN="$BIN" "$here/render.sh" "$run" > >(tee -a "$run/logs/render.log" >&2) 2>&1; then
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
            say "  ${models[k]} res ${res[k]} batch ${batch[k]} $(mode_of "$k") $tag: ${why:-no output} (log: $log)"
            if [[ $tag == trace ]]; then
                r="--iters 1 --trace kernels.csv"
            else
                r="--iters ${iters[k]} --seed ${tag#rep}"
            fi
            # with the algorithms the run used (delete the file to search again)
            [[ ${backend[k]} == cuda ]] && r+=" --algo-cache $run/algos.csv"
            [[ ${graph[k]} == on ]] && r+=" --graph"
            say "    alone: $BIN/train --model ${models[k]} --res ${res[k]} --batch ${batch[k]} --precision ${prec[k]} --backend ${backend[k]} --warmup ${warmup[k]} $r"
        done
    done
    say "retry the failed runs (the others are kept): $resume_cmd"
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
if ((n_skipped > 0)); then
    say "done: $run ($n_ok runs ok; $n_skipped skipped: this machine cannot run them, configs.csv says why)"
else
    say "done: $run ($n_ok runs ok)"
fi
