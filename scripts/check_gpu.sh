#!/usr/bin/env bash
# `make check-gpu`: the one command that validates a GPU node. Builds for the
# GPU present, runs `make test-gpu`, runs the `gpu-quick` row of run_matrix.md
# into a run folder with its report, and where `python3 -c 'import torch'`
# works runs scripts/pytorch_ref.py on the same GPU with the same models,
# batches and precisions; then prints one table: model, precision, ours and
# PyTorch's images/s, their ratio, and each one's peak device memory.
#
# It uses only what a GPU node has (CUDA, cuDNN, NCCL, a compiler, maybe
# torch): without oneDNN, Criterion or gnuplot it says what is skipped and
# goes on. Every stage's output is kept under OUT (default
# runs/check-gpu/<time>), with each stage's wall time.
#
#   scripts/check_gpu.sh [OUT=dir] [JOBS=n]     (GPU_ARCH from the environment: native)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

OUT='' JOBS=''
for arg in "$@"; do
    case $arg in
    OUT=*) OUT=${arg#OUT=} ;;
    JOBS=*) JOBS=${arg#JOBS=} ;;
    *)
        echo "check-gpu: unexpected argument '$arg' (accepted: OUT=, JOBS=)" >&2
        exit 2
        ;;
    esac
done
OUT=${OUT:-runs/check-gpu/$(date -u +%Y%m%dT%H%M%SZ)}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
GPU_ARCH=${GPU_ARCH:-native}
PYTHON=${PYTHON:-python3}
BUILD=build-$GPU_ARCH BIN=bin-$GPU_ARCH
BUILD=${BUILD// /_} BIN=${BIN// /_}
mkdir -p "$OUT" || exit 1
failures=()

say() {
    echo "check-gpu: $*" | tee -a "$OUT/check.log" >&2
}

# stage NAME LOG command...: runs a stage with its output in OUT/LOG, says how
# long it took and whether it passed.
stage() {
    local name=$1 log=$OUT/$2 t0 status
    shift 2
    t0=$(date +%s)
    say "$name ..."
    "$@" >"$log" 2>&1
    status=$?
    say "$name: $([ $status -eq 0 ] && echo ok || echo "FAILED (exit $status)") in $(($(date +%s) - t0)) s (log: $log)"
    ((status == 0)) || failures+=("$name")
    return $status
}

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >"$OUT/gpu.txt" 2>&1; then
    say "no GPU answers here (nvidia-smi -L: $(head -n 1 "$OUT/gpu.txt" 2>/dev/null)); nothing to check"
    exit 2
fi
say "$(head -n 1 "$OUT/gpu.txt"); results in $OUT"
make --no-print-directory info >"$OUT/info.txt" 2>&1
grep -E 'missing' "$OUT/info.txt" | sed 's/^ */check-gpu: skipped: /' | tee -a "$OUT/check.log" >&2

stage "build for the GPU present" build.log \
    make --no-print-directory -j"$JOBS" GPU_ARCH="$GPU_ARCH" BUILD=$BUILD BIN=$BIN all || {
    say "the build failed: nothing else can run"
    exit 1
}
stage "make test-gpu" test-gpu.log \
    make --no-print-directory -j"$JOBS" GPU_ARCH="$GPU_ARCH" BUILD=$BUILD BIN=$BIN test-gpu
grep -E '^(FAIL|skipped)' "$OUT/test-gpu.log" | head -n 40 | sed 's/^/check-gpu:   /' >&2

stage "the gpu-quick row" bench.log \
    scripts/bench.sh gpu-quick RUN=new RUNS_DIR="$OUT/runs" BIN=$BIN
run=$(ls -d "$OUT"/runs/gpu-quick/*/ 2>/dev/null | tail -n 1)
run=${run%/}
[[ -n $run ]] && say "run folder: $run (report: $run/report.html)"

# ---- PyTorch on the same GPU, same configurations --------------------------------
torch_csv=$OUT/pytorch_steps.csv
if "$PYTHON" -c 'import torch, torchvision; assert torch.cuda.is_available()' 2>"$OUT/torch.txt"; then
    while IFS=$'\t' read -r model res batch prec warmup iters _; do
        [[ -z $model || $model == \#* ]] && continue
        stage "pytorch $model $prec" "pytorch_${model}_$prec.log" \
            "$PYTHON" scripts/pytorch_ref.py --device cuda --channels-last --model "$model" \
            --res "$res" --batch "$batch" --precision "$prec" --warmup "$warmup" \
            --iters "$iters" --env check-gpu --out "$torch_csv"
    done < <("$BIN/matrix" gpu-quick)
else
    say "skipped: PyTorch with CUDA is not importable ($(tail -n 1 "$OUT/torch.txt")): no side-by-side table"
fi

# ---- the table ------------------------------------------------------------------
# median step_ms and largest peak_mem_bytes of one configuration in a steps.csv
median_ms() {
    awk -F, -v m="$1" -v r="$2" -v b="$3" -v p="$4" \
        'NR > 1 && $3 == m && $4 == r && $5 == b && $6 == p { print $11 }' "$5" 2>/dev/null |
        sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
peak_gib() {
    awk -F, -v m="$1" -v r="$2" -v b="$3" -v p="$4" \
        'NR > 1 && $3 == m && $4 == r && $5 == b && $6 == p && $14 > x { x = $14 } END { if (x) printf "%.2f", x / 2^30 }' "$5" 2>/dev/null
}
{
    printf '%-14s %-5s %5s %12s %12s %7s %10s %10s\n' model prec batch "ours img/s" \
        "torch img/s" ratio "ours GiB" "torch GiB"
    while IFS=$'\t' read -r model res batch prec _; do
        [[ -z $model || $model == \#* ]] && continue
        ours=$([[ -n $run ]] && median_ms "$model" "$res" "$batch" "$prec" "$run/steps.csv")
        theirs=$(median_ms "$model" "$res" "$batch" "$prec" "$torch_csv")
        ips() { [[ -n $1 ]] && awk -v b="$batch" -v ms="$1" 'BEGIN { printf "%.1f", b / ms * 1000 }' || echo -; }
        ratio=-
        [[ -n $ours && -n $theirs ]] && ratio=$(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", b / a }')
        printf '%-14s %-5s %5s %12s %12s %7s %10s %10s\n' "$model" "$prec" "$batch" \
            "$(ips "$ours")" "$(ips "$theirs")" "$ratio" \
            "$([[ -n $run ]] && peak_gib "$model" "$res" "$batch" "$prec" "$run/steps.csv" || true)" \
            "$(peak_gib "$model" "$res" "$batch" "$prec" "$torch_csv")"
    done < <("$BIN/matrix" gpu-quick)
} | tee "$OUT/table.txt"
echo "(ratio = ours / PyTorch in images/s; medians of the timed steps; peak memory: the" \
    "device memory the suite's backend holds, torch.cuda.max_memory_allocated for PyTorch)" |
    tee -a "$OUT/table.txt"

if ((${#failures[@]})); then
    say "done in $SECONDS s: FAILED: ${failures[*]} (logs in $OUT)"
    exit 1
fi
say "done in $SECONDS s: every stage passed (logs in $OUT)"
