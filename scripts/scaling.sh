#!/usr/bin/env bash
# The scaling stage of `make bench` (called by scripts/bench.sh): for every
# configuration of the run's matrix and every world size of its ranks column,
# bin/train --ddp under mpirun (or srun inside a Slurm allocation), in weak
# scaling (the row's batch per rank) and strong scaling (the row's batch split
# over the ranks); one rank trains once for both. World sizes above this
# machine's GPUs (cuda rows) or cores (cpu rows) are skipped with one line
# each. Then the allreduce curve of the largest world size that runs
# (bin/allreduce; its latency and plateau appended to peaks.csv) and the
# scaling model's predictions (bin/scaling_model -> scaling_model.csv).
# Every process writes a part file renamed into place when it succeeds, so a
# resumed run skips what is done; every process leaves its configs.csv row in a
# part (parts/*.scaling.config.csv) that bench.sh gathers into configs.csv.
#
#   scripts/scaling.sh RUN_DIR RANKS          (RANKS: the matrix's "1, 2, 4")
#   environment: BIN (default bin), THREADS (all ranks of a node together),
#   LAUNCHER (default: srun inside a Slurm job, else mpirun)
set -euo pipefail
# shellcheck source=SCRIPTDIR/run_status.sh
. "$(dirname "${BASH_SOURCE[0]}")/run_status.sh"

if [[ $# -ne 2 || ! -f $1/matrix.tsv ]]; then
    echo "scaling: give the run folder and the ranks column: scripts/scaling.sh RUN_DIR '1, 2'" >&2
    exit 2
fi
run=${1%/}
ranks_column=$2
BIN=${BIN:-bin}
THREADS=${THREADS:-}
mkdir -p "$run/parts" "$run/logs"

say() {
    echo "bench: scaling: $*" >&2
    echo "$(date -u +%H:%M:%S) scaling: $*" >>"$run/logs/bench.log"
}

for program in train allreduce scaling_model; do
    if [[ ! -x $BIN/$program ]]; then
        say "skipped ($BIN/$program is missing: run 'make')"
        exit 0
    fi
done
# the help read whole first: grep -q leaving a pipe early kills a writer still
# writing (SIGPIPE), which pipefail takes for a train without --ddp
if ! train_help=$("$BIN/train" --help 2>/dev/null) || ! grep -q -- '--ddp' <<<"$train_help"; then
    say "skipped ($BIN/train has no --ddp)"
    exit 0
fi

# ---- the launcher -------------------------------------------------------------
if [[ -z ${LAUNCHER:-} ]]; then
    if [[ -n ${SLURM_JOB_ID:-} ]] && command -v srun >/dev/null; then
        LAUNCHER=srun
    else
        LAUNCHER=mpirun
    fi
fi
if ! command -v "${LAUNCHER%% *}" >/dev/null; then
    say "skipped (no ${LAUNCHER%% *}: install Open MPI, 'make deps')"
    exit 0
fi

# launch N THREADS_PER_RANK BACKEND -- command...: the launcher's arguments
# for N ranks; CPU ranks get THREADS_PER_RANK cores each (mpirun binds them).
launch_args() {
    local n=$1 t=$2 be=$3
    case ${LAUNCHER##*/} in
    srun*)
        # as few nodes as hold the ranks: without -N a job step spreads over
        # every node of the allocation, and 8 ranks on two nodes would measure
        # the network where one node's NVLink was meant
        # (one count for every node: "8" or "8(x2)"; a mixed list is left to srun)
        local per=${SLURM_NTASKS_PER_NODE:-} place=""
        if [[ $per =~ ^([1-9][0-9]*)(\(x[0-9]+\))?$ ]]; then
            per=${BASH_REMATCH[1]}
            place=" -N $(((n + per - 1) / per)) --ntasks-per-node=$((n < per ? n : per))"
        fi
        echo "$LAUNCHER -n $n$place --cpus-per-task=$t"
        ;;
    *)
        local extra=""
        [[ $(id -u) == 0 ]] && extra="--allow-run-as-root"
        if [[ $be == cpu ]]; then
            echo "$LAUNCHER $extra -np $n --map-by slot:PE=$t --bind-to core"
        else
            echo "$LAUNCHER $extra -np $n --bind-to none"
        fi
        ;;
    esac
}

# ---- what this machine can run ----------------------------------------------
cores=$(nproc 2>/dev/null || echo 1)
gpus=0
if command -v nvidia-smi >/dev/null; then
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
IFS=', ' read -r -a world_sizes <<<"${ranks_column//-/}"

models=() res=() batch=() prec=() warmup=() iters=() backend=()
# --ddp steps eagerly (the reductions are not captured in a CUDA graph): a
# graph configuration scales as its eager twin, once, and eagerly where the
# matrix has no twin
eager=$(awk -F'\t' '$12 != "on" { print $1, $2, $3, $4 }' "$run/matrix.tsv")
while IFS=$'\t' read -r m r b p w i _n be _c _rk _pk g; do
    [[ -z $m || $m == \#* ]] && continue
    [[ $g == on ]] && grep -qxF "$m $r $b $p" <<<"$eager" && continue
    models+=("$m") res+=("$r") batch+=("$b") prec+=("$p") warmup+=("$w") iters+=("$i")
    backend+=("$be")
done <"$run/matrix.tsv"
n_configs=${#models[@]}
env_name=$(sed -n '1s/^# env=\([^ ]*\).*/\1/p' "$run/matrix.tsv")

# The world sizes that run here (the rest skipped, one line each); the
# threads of a CPU rank: a share of the cores for the largest world size,
# the same at every size, so that one rank is the unit the efficiency counts.
be=${backend[0]:-cpu}
limit=$cores what=cores
if [[ $be == cuda ]]; then limit=$gpus what="GPU(s)"; fi
# inside a Slurm allocation the job's tasks are the ranks there are (one per
# GPU, or per share of a node's cores, as the sbatch templates ask)
if [[ ${LAUNCHER##*/} == srun* && -n ${SLURM_NTASKS:-} ]]; then
    limit=$SLURM_NTASKS what="tasks in Slurm job $SLURM_JOB_ID"
fi
sizes=()
for n in "${world_sizes[@]}"; do
    [[ -z $n ]] && continue
    if ((n > limit)); then
        say "skipped (world size $n: only $limit $what here)"
    else
        sizes+=("$n")
    fi
done
if ((${#sizes[@]} == 0)); then
    exit 0
fi
largest=${sizes[-1]}
for n in "${sizes[@]}"; do ((n > largest)) && largest=$n; done
total_threads=${THREADS:-$cores}
per_rank=$((total_threads / largest))
# Slurm: the cores each task was given, whatever the world size
[[ ${LAUNCHER##*/} == srun* && -n ${SLURM_CPUS_PER_TASK:-} ]] && per_rank=$SLURM_CPUS_PER_TASK
((per_rank >= 1)) || per_rank=1

# ---- one scaling process ----------------------------------------------------------
failed=0
# run_scaling K MODE N: configuration K at N ranks; its row in a part file.
run_scaling() {
    local k=$1 mode=$2 n=$3 key part rel args per t0 status=0 baseline
    key=${models[k]}_r${res[k]}_b${batch[k]}_${prec[k]}
    part=$run/parts/$key.$mode.n$n.scaling.csv
    rel=logs/$key.$mode.n$n.scaling.log
    [[ -f $part ]] && return 0
    per=${batch[k]}
    if [[ $mode == strong ]]; then
        if ((batch[k] % n)); then
            say "skipped ($key strong at $n ranks: the batch of ${batch[k]} does not split into $n)"
            return 0
        fi
        per=$((batch[k] / n))
    fi
    args=(--ddp --model "${models[k]}" --res "${res[k]}" --batch "$per" --precision "${prec[k]}"
        --warmup "${warmup[k]}" --iters "${iters[k]}" --env "$env_name" --backend "${backend[k]}"
        --repeat 1 --scaling-out "$part.tmp" --scaling-mode "$mode")
    # bin/train's default learning rate follows the global batch: strong runs
    # train as the one rank does, weak ones as the larger batch wants
    [[ ${backend[k]} == cpu ]] && args+=(--threads "$per_rank")
    if ((n > 1)); then
        baseline=$(awk -F, 'NR == 2 { print $9 }' "$run/parts/$key.weak.n1.scaling.csv" 2>/dev/null || true)
        [[ -n $baseline ]] && args+=(--baseline-ms "$baseline")
    fi
    rm -f "$part.tmp"
    say "${models[k]} res ${res[k]} batch $per per rank ${prec[k]}, $mode, $n rank(s)"
    t0=$(date +%s)
    # shellcheck disable=SC2046 # the launcher's words split on purpose
    $(launch_args "$n" "$per_rank" "${backend[k]}") "$BIN/train" "${args[@]}" >"$run/$rel" 2>&1 || status=$?
    local seconds=$(($(date +%s) - t0)) row_status=ok
    if ((status == 0)) && [[ -f $part.tmp ]]; then
        mv "$part.tmp" "$part"
        say "  ok in $seconds s"
    elif ((status == CANNOT_RUN_HERE)); then
        # a precision the GPU lacks, a batch its memory cannot hold: skipped, not failed
        row_status=$(skipped_here_status "$run/$rel")
        rm -f "$part.tmp"
        say "  $row_status"
    else
        ((status == 0)) && status=1
        row_status="failed (exit $status)"
        failed=$((failed + 1))
        rm -f "$part.tmp"
        say "  failed (exit $status): $(grep -m1 -E '^[a-z_]+: ' "$run/$rel" 2>/dev/null || tail -n 1 "$run/$rel" 2>/dev/null || true) (log: $run/$rel)"
    fi
    # the configuration's own batch: the row joins its configuration's
    # attempts (repeat names the mode and the world size)
    echo "scaling,${models[k]},${res[k]},${batch[k]},${prec[k]},$mode-$n,$(csv_cell "$row_status"),$seconds,$rel,off" \
        >"$run/parts/$key.$mode.n$n.scaling.config.csv"
}

for ((k = 0; k < n_configs; k++)); do
    key=${models[k]}_r${res[k]}_b${batch[k]}_${prec[k]}
    # one rank: once, the baseline of both modes
    run_scaling "$k" weak 1
    # what one device cannot run has no baseline to scale from
    if grep -q ',"\?skipped here (' "$run/parts/$key.weak.n1.scaling.config.csv" 2>/dev/null; then
        ((${#sizes[@]} > 1)) && say "skipped (${models[k]} res ${res[k]} batch ${batch[k]} ${prec[k]} at more ranks: one rank cannot run it)"
        continue
    fi
    if [[ -f $run/parts/$key.weak.n1.scaling.csv && ! -f $run/parts/$key.strong.n1.scaling.csv ]]; then
        awk -F, -v OFS=, 'NR == 1 { print; next } { $4 = "strong"; print }' \
            "$run/parts/$key.weak.n1.scaling.csv" >"$run/parts/$key.strong.n1.scaling.csv.tmp"
        mv "$run/parts/$key.strong.n1.scaling.csv.tmp" "$run/parts/$key.strong.n1.scaling.csv"
    fi
    for n in "${sizes[@]}"; do
        ((n == 1)) && continue
        run_scaling "$k" weak "$n"
        run_scaling "$k" strong "$n"
    done
done

# ---- scaling.csv (the processes' configs.csv rows: bench.sh gathers their parts) ----
shopt -s nullglob
parts=("$run"/parts/*.scaling.csv)
shopt -u nullglob
if ((${#parts[@]})); then
    awk 'FNR == 1 && NR != 1 { next } { print }' "${parts[@]}" >"$run/scaling.csv.tmp"
    mv "$run/scaling.csv.tmp" "$run/scaling.csv"
fi

# ---- the allreduce curve and the peaks rows -----------------------------------------
if ((largest > 1)) && [[ ! -f $run/allreduce.csv ]]; then
    transport=mpi
    [[ $be == cuda ]] && transport=nccl
    say "allreduce: the $transport curve of $largest ranks"
    if $(launch_args "$largest" "$per_rank" "$be") "$BIN/allreduce" --transport "$transport" \
        --env "$env_name" --out "$run/allreduce.csv" --peaks-out "$run/parts/allreduce.peaks.csv" \
        >"$run/logs/allreduce.log" 2>&1; then
        say "  $(grep -m1 '^# latency' "$run/logs/allreduce.log" || echo "done")"
    else
        say "  failed: see $run/logs/allreduce.log"
    fi
fi
# appended once: the file is replaced whole, never edited in place
if [[ -f $run/parts/allreduce.peaks.csv && -f $run/peaks.csv ]] &&
    ! grep -q ',allreduce,' "$run/peaks.csv"; then
    { cat "$run/peaks.csv"; tail -n +2 "$run/parts/allreduce.peaks.csv"; } >"$run/peaks.csv.tmp"
    mv "$run/peaks.csv.tmp" "$run/peaks.csv"
fi

# ---- the model's predictions ------------------------------------------------------
if [[ -f $run/scaling.csv ]]; then
    model_args=(--scaling "$run/scaling.csv" --out "$run/scaling_model.csv")
    # always the projection on the NVLink and InfiniBand links, to 64 ranks
    # over 8 nodes; with a measured curve also the fit to it (CPU ranks: up to
    # the sizes run, which is what the rows can be checked against)
    if [[ -f $run/allreduce.csv ]]; then
        model_args+=(--allreduce "$run/allreduce.csv")
        [[ $be == cpu ]] && model_args+=(--fit-max-ranks "$largest")
    fi
    if "$BIN/scaling_model" "${model_args[@]}" >"$run/logs/scaling_model.log" 2>&1; then
        say "model: $run/scaling_model.csv"
    else
        say "model: failed: see $run/logs/scaling_model.log"
    fi
fi

((failed == 0)) || exit 1
