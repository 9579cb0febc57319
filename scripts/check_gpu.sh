#!/usr/bin/env bash
# `make check-gpu`: the one command that proves the suite's GPU code on a GPU
# node, in stages, so that a session with a lent GPU (at most 10 minutes a
# command, 15 minutes in all) runs what fits in one call. Every stage's
# output stays under OUT (OUT/<stage>/, its log, its result lines), with its
# wall time beside its estimate in the summary table printed last.
#
#   scripts/check_gpu.sh [STAGES=a,b,...] [OUT=dir] [JOBS=n] [DEADLINE=s] [TAR=file.tgz]
#                        [BUILD=dir] [BIN=dir]          (GPU_ARCH from the environment: native)
#   make check-gpu [STAGES=...] [OUT=...] [DEADLINE=...] [TAR=...]
#
# Stages run in this order whatever order STAGES gives them. The default,
# build,test,train,torch, validates a node (issue 11: the tests, the gpu-quick
# row, PyTorch beside it); STAGES=all adds peaks, allreduce, perf, ddp and
# counters, the GPU proofs of issue 13, issue 11's performance table, issues
# 15 and 14, and sanitize (the suite's kernels under compute-sanitizer). The
# default's estimate (725 s) is over the device tool's 10 minutes a command:
# there, give DEADLINE=570 (the calls below).
# Device time estimated from the work each does on one H100 with 16 cores
# (none of it has run on a GPU yet: the summary puts the real wall time beside
# each estimate):
#   stage      est.  what
#   build       15 s make all and the tests/gpu programs for the GPU present (make info
#                    first); nvcc for one architecture, 16 jobs (measured for sm_90 on
#                    the 2-core machine: 37 s, 51 s of nvcc, the longest file 7 s);
#                    seconds when built
#   test       270 s every tests/gpu program (make test-gpu's: device, every layer in
#                    every precision, whole training steps, CUPTI metric and trace
#                    passes (and ncu beside them where it is), the NCCL transport, the
#                    peaks kernels and the full GEMM sweep), each with its log and time
#   peaks       60 s bin/peaks --gpu --quick; scripts/pytorch_bandwidth.py beside it
#                    (HBM copy/triad/read/write, PCIe each way)
#   allreduce   40 s bin/allreduce --transport nccl, 1 KiB..1 GiB, one rank (under
#                    mpirun where it is)
#   train      300 s the gpu-quick row of run_matrix.md (scripts/bench.sh): 8
#                    configurations x (1 repeat + 1 trace pass), each process searching
#                    its cuDNN algorithms; quick peaks; the report; per configuration
#                    the traced step's four largest layer type x phase groups and
#                    how much of it its kernels would take at the roofs
#   torch      140 s scripts/pytorch_ref.py on the same 8 configurations, in one process
#                    (one import of torch and one CUDA context, a cudnn.benchmark search
#                    each); the table: ours and PyTorch's images/s and peak memory (ours
#                    from this OUT's train stage); then, after the timed steps, each
#                    built again and one step under PyTorch's profiler (--profile, some
#                    25 s in all), its kernel time by layer group beside our traced
#                    step's: where ours is behind, and the largest kernels there
#   perf       510 s issue 11's performance table: ours and PyTorch's images/s and peak
#                    memory at 224, batch 256 (VGG-16 128), fp32, tf32, fp16, bf16 eager
#                    and bf16 ours --graph against PyTorch's captured step and
#                    torch.compile (ResNet-50 only by default: some 50 s a model); each
#                    row's goal met or MISSED; bf16 first, each precision's rows as
#                    soon as both sides ran it; then, for each eager goal missed and
#                    while time is left, the kernels that cost it (a guess: 20 runs
#                    of ours, 7 PyTorch processes, one compilation; the missed
#                    goals' traced and profiled steps beyond it)
#   ddp         60 s resnet50 bf16 batch 64: one NCCL rank (mpirun -np 1 bin/train --ddp)
#                    and the plain step; the losses of the timed steps compared
#   counters   330 s resnet50 bf16 batch 64 --trace --counters cupti: kernels per step,
#                    replay passes, the metric pass's wall time, the timing pass's
#                    overhead on the step; then ncu on one step of the same run with the
#                    same metrics, totals side by side (skipped where ncu is missing)
#   sanitize   360 s the suite's kernels (models/cuda) under compute-sanitizer's memcheck,
#                    racecheck and synccheck: the layer check and three small steps
#                    (ResNet-18 fp32, MobileNetV2 fp16, VGG-16 bf16), each tool first
#                    made to report the bug tests/sanitize/planted.cu plants for it
#                    under the same kernel filter (skipped where compute-sanitizer is
#                    missing or cannot attach to the GPU)
#
# With a lent GPU (the device tool: 15 minutes of device time a session, the
# machine's start of a minute or more included, 10 minutes a command), one
# call of `run` (timeout_s 600, no carry) per session, the first session the
# default (issue 11's proof), later ones the other stages by what they prove:
#   bash scripts/check_gpu.sh DEADLINE=570 OUT=runs/check-gpu/1 TAR=$OUT/check-gpu-1.tgz
#   bash scripts/check_gpu.sh STAGES=build,peaks,allreduce,ddp,counters DEADLINE=570 OUT=runs/check-gpu/2 TAR=$OUT/check-gpu-2.tgz
#   bash scripts/check_gpu.sh STAGES=build,perf DEADLINE=570 OUT=runs/check-gpu/3 TAR=$OUT/check-gpu-3.tgz
#   bash scripts/check_gpu.sh STAGES=build,sanitize DEADLINE=570 OUT=runs/check-gpu/4 TAR=$OUT/check-gpu-4.tgz
# (about 725, 505, 525 and 375 s estimated: the first ends with its summary at
# the deadline, what did not fit "not run", to go first in the next call).
# Where the first call leaves time (status's budget_left_s over 150 and the
# machine still warm: it goes back 30 s after a call), a second at once, built
# already, with DEADLINE= budget_left_s - 60. The sanitize call also serves
# right after a GPU check that fails where the host emulator passes (a race or
# a misaligned access is then the likely cause).
# DEADLINE=s: no stage starts with less
# than 30 s left (30 s more are kept for the end); each runs under `timeout`
# with what is left (a stage cut short reads "timed out", one never started
# "not run"), so the summary and the archive always come before the caller's
# limit. TAR=file: OUT archived there after every stage and at the end (the
# device tool brings back 8 files at most). Within a stage a tests/gpu program
# gets TEST_LIMIT s and a process under mpirun or a pytorch_ref.py configuration
# RANK_LIMIT s (below), so that one hang leaves the stage's time to the rest;
# what a stage leaves running is ended before the next starts.
#
# Only what a GPU node has is needed (CUDA, cuDNN, NCCL, CUPTI, a compiler;
# mpirun, torch and ncu where present): without oneDNN, Criterion or gnuplot
# it says what is skipped and goes on. Exit status: 0 every stage run passed
# (or was skipped for a missing optional tool), 1 one failed, timed out or was
# not started, 2 a bad argument or no GPU. MAKE, PYTHON, BENCH (the runner), NCU
# and COMPUTE_SANITIZER may be set in the environment (tests/test_check_gpu.c runs
# the whole flow with fakes of them and of nvidia-smi, mpirun and the programs).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
SELF=scripts/check_gpu.sh

ALL_STAGES=(build test peaks allreduce train torch perf ddp counters sanitize)
DEFAULT_STAGES=(build test train torch)
declare -A ESTIMATE=([build]=15 [test]=270 [peaks]=60 [allreduce]=40 [train]=300 [torch]=140
    [perf]=510 [ddp]=60 [counters]=330 [sanitize]=360)
# under DEADLINE: seconds kept for the summary and the archive, and the least a
# stage is started with (the tests make both small)
RESERVE=${CHECK_GPU_RESERVE:-30} MIN_STAGE_S=${CHECK_GPU_MIN_STAGE:-30}
# the most one tests/gpu program, or one process under mpirun, may take
TEST_LIMIT=${CHECK_GPU_TEST_LIMIT:-240} RANK_LIMIT=${CHECK_GPU_RANK_LIMIT:-180}
# the counters and ddp stages' step (issue 14's figures); CHECK_GPU_MODEL, _PREC and _BATCH
# change it (the host emulator's test runs the stages small)
MODEL=${CHECK_GPU_MODEL:-resnet50} PREC=${CHECK_GPU_PREC:-bf16} BATCH=${CHECK_GPU_BATCH:-64}
# the perf stage's table: MODEL:BATCH pairs, the models torch.compile compiles
# (some 50 s each), the warm-up and timed steps of each run
read -r -a PERF_MODELS <<<"${CHECK_GPU_PERF_MODELS:-resnet18:256 resnet50:256 vgg16:128 mobilenet_v2:256}"
read -r -a PERF_COMPILE <<<"${CHECK_GPU_PERF_COMPILE-resnet50:256}"
PERF_WARMUP=${CHECK_GPU_PERF_WARMUP:-3} PERF_ITERS=${CHECK_GPU_PERF_ITERS:-20}

# ---- one stage, in a process of its own (run by the loop below) --------------------

# Lines of OUT/<stage>/result.txt: what the summary prints for the stage.
result() {
    echo "$*" >>"$OUT/$STAGE/result.txt"
}

# skip WHY: the stage cannot run here for a missing optional tool (exit 3).
skip() {
    result "skipped: $*"
    exit 3
}

# A program that must be there.
need() {
    [[ -x $1 ]] || {
        result "$1 is missing: run the build stage (STAGES=build,...)"
        exit 1
    }
}

have_torch() {
    "$PYTHON" -c 'import torch, torchvision; assert torch.cuda.is_available()' >"$OUT/$STAGE/torch-import.txt" 2>&1
}

# COMMAND within LIMIT s (KILL 10 s after TERM), its output to LOG; one stopped
# there ends its log with "check-gpu: stopped after WHY". The exit status is
# the command's (124 or 137 where it was stopped).
limited() { # LIMIT WHY LOG COMMAND ARGS...
    local limit=$1 why=$2 log=$3 rc
    shift 3
    timeout -k 10 "$limit" "$@" >"$log" 2>&1
    rc=$?
    ((rc == 124 || rc == 137)) && echo "check-gpu: stopped after $why" >>"$log"
    return $rc
}

# mpirun -np 1 where mpirun is (root needs Open MPI's consent), else alone;
# within RANK_LIMIT s (a hung mpirun ignores SIGTERM: KILL 10 s later), so
# that a hang leaves the stage's time to what comes after it.
one_rank() {
    if command -v mpirun >/dev/null 2>&1; then
        timeout -k 10 "$RANK_LIMIT" mpirun -np 1 "$@"
    else
        timeout -k 10 "$RANK_LIMIT" "$@"
    fi
}

stage_build() {
    ${MAKE:-make} --no-print-directory info >"$OUT/build/info.txt" 2>&1
    grep -E 'missing' "$OUT/build/info.txt" | sed 's/^ */not built here: /' >>"$OUT/build/result.txt"
    local tests=() planted=$BUILD/tests/sanitize/planted
    for t in tests/gpu/*.cu; do
        t=${t##*/}
        tests+=("$BUILD/tests/gpu/${t%.cu}")
    done
    # -k: a program that does not build leaves the others to their stages
    ${MAKE:-make} --no-print-directory -k -j"$JOBS" GPU_ARCH="$GPU_ARCH" BUILD="$BUILD" BIN="$BIN" \
        all "${tests[@]}" "$planted" || {
        result "the build failed (see build.log): the stages run what was built"
        # a copy left by an earlier build (a warm machine) is not this tree's
        # program: make -q says it is out of date; the stages then say "not built".
        # -o: the Makefile's two FORCE files (rewritten only when their text
        # changes) would make every program look out of date
        local f
        for f in "$BIN"/* "${tests[@]}" "$planted"; do
            [[ -f $f ]] || continue
            ${MAKE:-make} --no-print-directory -q GPU_ARCH="$GPU_ARCH" BUILD="$BUILD" BIN="$BIN" \
                -o "$BUILD/git-commit.txt" -o "$BUILD/own-depthwise-id.txt" "$f" >/dev/null 2>&1
            (($? == 1)) || continue
            rm -f "$f"
            result "removed $f: it did not build from this tree (an older copy)"
        done
        return 1
    }
    result "built $BIN/, ${#tests[@]} GPU test programs in $BUILD/tests/gpu/ and $planted for GPU_ARCH=$GPU_ARCH"
}

# Every tests/gpu program, device_check first (it decides whether to skip), from
# the repository root (cuda_train_check reads tests/gpu/cpu_losses.csv).
stage_test() {
    local dir=$OUT/test status=0 t name t0 rc
    need "$BUILD/tests/gpu/device_check"
    "$BUILD/tests/gpu/device_check" >"$dir/device_check.log" 2>&1
    rc=$?
    if grep -q '^skipped:' "$dir/device_check.log"; then
        result "device_check: $(grep -m1 '^skipped:' "$dir/device_check.log")"
        return 1 # a GPU node that test-gpu skips is a failure of the check
    fi
    result "device_check: $( ((rc == 0)) && echo ok || echo "FAILED (exit $rc)") ($(grep -m1 '^device 0' "$dir/device_check.log"))"
    ((rc == 0)) || status=1
    for t in tests/gpu/*.cu; do
        name=${t##*/}
        name=${name%.cu}
        [[ $name == device_check ]] && continue
        if [[ ! -x $BUILD/tests/gpu/$name ]]; then
            result "$(printf '%-18s not built (see the build stage)' "$name")"
            status=1
            continue
        fi
        t0=$SECONDS
        limited "$TEST_LIMIT" "TEST_LIMIT=$TEST_LIMIT s" "$dir/$name.log" "$BUILD/tests/gpu/$name"
        rc=$?
        result "$(printf '%-18s %s in %d s: %s' "$name" "$( ((rc == 0)) && echo ok || echo "FAILED (exit $rc)")" \
            $((SECONDS - t0)) "$(grep -E '^[0-9]+ passed, [0-9]+ failed|^skipped' "$dir/$name.log" | tail -n 1)")"
        grep -E '^(FAIL|SKIP)' "$dir/$name.log" | head -n 12 | sed "s/^/  $name: /" >>"$dir/result.txt"
        ((rc == 0)) || status=1
    done
    return $status
}

# hbm_copy and hbm_triad: ours (bin/peaks) and PyTorch's, side by side.
stage_peaks() {
    local dir=$OUT/peaks status=0
    need "$BIN/peaks"
    "$BIN/peaks" --gpu --quick --env check-gpu --out "$dir/peaks.csv" >"$dir/peaks.log" 2>&1 || status=1
    if [[ ! -f $dir/peaks.csv ]]; then
        result "bin/peaks --gpu --quick: FAILED (no peaks.csv; see peaks.log)"
        return 1
    fi
    result "bin/peaks --gpu --quick: $(($(wc -l <"$dir/peaks.csv") - 1)) rows$( ((status)) && echo ", exit non-zero")"
    awk -F, 'NR > 1 && /suspect:/ { print "  suspect (measured again and still off): " $3 }' "$dir/peaks.csv" >>"$dir/result.txt"
    if have_torch; then
        "$PYTHON" scripts/pytorch_bandwidth.py --env check-gpu --out "$dir/pytorch_bandwidth.csv" \
            >"$dir/pytorch_bandwidth.log" 2>&1 || status=1
    else
        result "PyTorch with CUDA not importable ($(tail -n 1 "$dir/torch-import.txt")): no side by side"
    fi
    result "$(printf '%-12s %12s %12s %7s' ceiling 'ours GB/s' 'torch GB/s' ratio)"
    local c ours theirs
    for c in hbm_copy hbm_triad hbm_read hbm_write l2 l1 smem pcie_h2d pcie_d2h; do
        ours=$(awk -F, -v c="$c" 'NR > 1 && $3 == c { print $4; exit }' "$dir/peaks.csv")
        theirs=$(awk -F, -v c="$c" 'NR > 1 && $3 == c { print $4; exit }' "$dir/pytorch_bandwidth.csv" 2>/dev/null)
        [[ -z $ours && -z $theirs ]] && continue
        result "$(printf '%-12s %12s %12s %7s' "$c" "${ours:--}" "${theirs:--}" \
            "$([[ -n $ours && -n $theirs ]] && awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }' || echo -)")"
    done
    for c in fp64_fma fp32_fma fp16_fma tf32_tensor fp16_tensor bf16_tensor fp8_tensor; do
        ours=$(awk -F, -v c="$c" 'NR > 1 && $3 == c { printf "%.1f TFLOP/s (spec %s)", $4 / 1000, $7 == "" ? "-" : sprintf("%.1f", $7 / 1000); exit }' "$dir/peaks.csv")
        [[ -n $ours ]] && result "$(printf '%-12s %s' "$c" "$ours")"
    done
    return $status
}

stage_allreduce() {
    local dir=$OUT/allreduce
    need "$BIN/allreduce"
    one_rank "$BIN/allreduce" --transport nccl --env check-gpu --out "$dir/allreduce.csv" \
        --peaks-out "$dir/allreduce_peaks.csv" >"$dir/allreduce.log" 2>&1 || return 1
    local sizes wrong
    sizes=$(awk 'END { print NR - 1 }' "$dir/allreduce.csv")
    wrong=$(awk -F, 'NR > 1 && $11 != "yes"' "$dir/allreduce.csv" | wc -l)
    result "NCCL on one rank: $sizes sizes, $wrong with a wrong sum"
    awk -F, 'NR > 1 { printf "  %s %.3f %s (%s)\n", $3, $4, $5, $6 }' "$dir/allreduce_peaks.csv" >>"$dir/result.txt"
    ((sizes > 0 && wrong == 0))
}

stage_train() {
    local dir=$OUT/train run ok skipped failed
    need "$BIN/train"
    # PyTorch beside it is the torch stage's (one process for the whole table)
    ${BENCH:-scripts/bench.sh} gpu-quick RUN=new RUNS_DIR="$dir/runs" BIN="$BIN" REF=off >"$dir/bench.log" 2>&1
    local rc=$?
    # shellcheck disable=SC2012 # run ids are letters, digits and '-'
    run=$(ls -d "$dir"/runs/gpu-quick/*/ 2>/dev/null | tail -n 1)
    run=${run%/}
    if [[ -z $run ]]; then
        result "scripts/bench.sh gpu-quick: no run folder (exit $rc; see bench.log)"
        return 1
    fi
    echo "$run" >"$dir/run_folder.txt"
    # (a status with a comma is quoted: the cell up to it still starts as the status)
    local count='NR == 1 { for (i = 1; i <= NF; i++) if ($i == "status") s = i }
        NR > 1 { st = $s; sub(/^"/, "", st)
                 n[st == "ok" ? "ok" : st ~ /^skipped here \(/ ? "skipped" : "failed"]++ }
        END { printf "%d %d %d\n", n["ok"], n["skipped"], n["failed"] }'
    read -r ok skipped failed <<<"$(awk -F, "$count" "$run/configs.csv" 2>/dev/null || echo 0 0 0)"
    result "run folder $run: $ok processes ok, $failed not$( ((skipped)) && echo ", $skipped skipped here (the GPU cannot run them: configs.csv says why)") (bench.sh exit $rc); report: $([[ -f $run/report.html ]] && echo "$run/report.html" || echo none)"
    grep -E 'failed|FAILED' "$dir/bench.log" | head -n 8 | sed 's/^/  /' >>"$dir/result.txt"
    # what --depthwise auto chose for MobileNetV2, --conv-bias auto for VGG-16
    # and --conv-api auto for every network (cuDNN's graph API against its
    # legacy calls), and what both sides cost
    grep -EH '^(depthwise convolutions|convolutions with bias under ReLU|convolution passes)' \
        "$run"/logs/*.log 2>/dev/null | sed "s|^$run/logs/|  |" | head -n 10 >>"$dir/result.txt"
    time_shares "$run/kernels.csv" >>"$dir/result.txt"
    roof_shares "$run/roofline.csv" >>"$dir/result.txt"
    return $rc
}

# How far each traced step ran from its roofs: roofline.csv's step rows, the
# time its kernels would take at max(FLOPs / peak, bytes / bandwidth) each
# (the report's "At their roofs the step's kernels would take ..."); the
# bytes are the backend's design where the row counts nothing (gpu-quick).
roof_shares() { # ROOFLINE_CSV
    [[ -s $1 ]] || return 0
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i
                       if (!("roof_ns" in col)) exit
                       print "each traced step against its roofs (roofline.csv):"; next }
        $col["level"] == "step" && $col["roof_ns"] != "" && $col["duration_ns"] > 0 {
            printf "  %-20s %8.2f ms, %8.2f ms of it at the roofs (%.0f%%)\n",
                $col["model"] " " $col["precision"], $col["duration_ns"] / 1e6,
                $col["roof_ns"] / 1e6, 100 * $col["roof_ns"] / $col["duration_ns"] }' "$1"
}

# Where each configuration's traced step spends its kernel time: the four
# largest layer type x phase groups of kernels.csv (the report's "step time by
# layer type and phase"), the first place to look where PyTorch is faster.
time_shares() { # KERNELS_CSV
    [[ -s $1 ]] || return 0
    echo "where the traced step's kernel time goes (the four largest layer type x phase groups):"
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        { cfg = $col["model"] " " $col["precision"]; grp = $col["layer_type"] " " $col["phase"]
          ns[cfg, grp] += $col["duration_ns"]; total[cfg] += $col["duration_ns"]
          if (!((cfg, grp) in seen)) { seen[cfg, grp] = 1; groups[cfg] = groups[cfg] SUBSEP grp }
          if (!(cfg in order)) { order[cfg] = ++n; name[n] = cfg } }
        END { for (k = 1; k <= n; k++) {
                cfg = name[k]; line = sprintf("  %-20s %8.2f ms:", cfg, total[cfg] / 1e6)
                m = split(substr(groups[cfg], 2), g, SUBSEP)
                for (shown = 0; shown < 4 && shown < m; shown++) {
                    best = 0
                    for (j = 1; j <= m; j++)
                        if (!(j in used) && (!best || ns[cfg, g[j]] > ns[cfg, g[best]])) best = j
                    used[best] = 1
                    line = line sprintf("%s %s %.0f%%", shown ? "," : "", g[best],
                                        total[cfg] > 0 ? 100 * ns[cfg, g[best]] / total[cfg] : 0)
                }
                delete used
                print line } }' "$1"
}

# images/s and peak GiB of one configuration in a steps.csv: median step, largest memory;
# GRAPH off takes the eager rows alone (bin/train's graph column, 15th; pytorch_ref.py's
# rows have none), any every row (a file of one mode)
config_figures() { # MODEL RES BATCH PREC FILE [GRAPH] -> "img/s GiB" or "- -"
    awk -F, -v m="$1" -v r="$2" -v b="$3" -v p="$4" -v g="${6:-any}" \
        'NR > 1 && $3 == m && $4 == r && $5 == b && $6 == p && (g == "any" || $15 != "on") {
             print $11, $14 }' "$5" 2>/dev/null |
        sort -g | awk -v b="$3" '{ ms[NR] = $1; if ($2 > mem) mem = $2 }
            END { if (!NR) { print "- -"; exit }
                  med = NR % 2 ? ms[(NR + 1) / 2] : (ms[NR / 2] + ms[NR / 2 + 1]) / 2
                  printf "%.1f %.2f\n", b / med * 1000, mem / 2^30 }'
}

# One configuration in two steps.csv files: "ours_img/s torch_img/s ratio ours_GiB
# torch_GiB" ('-' for what is missing), the ratio to DIGITS decimals (2).
side_by_side() { # MODEL RES BATCH PREC OURS_CSV TORCH_CSV [DIGITS] [GRAPH]
    local ratio o_ips o_gib t_ips t_gib
    read -r o_ips o_gib <<<"$(config_figures "$1" "$2" "$3" "$4" "$5" "${8:-any}")"
    read -r t_ips t_gib <<<"$(config_figures "$1" "$2" "$3" "$4" "$6" "${8:-any}")"
    ratio=-
    [[ $o_ips != - && $t_ips != - ]] &&
        ratio=$(awk -v a="$o_ips" -v b="$t_ips" -v d="${7:-2}" 'BEGIN { printf "%.*f", d, a / b }')
    echo "$o_ips $t_ips $ratio $o_gib $t_gib"
}

# The table's row of one configuration: ours and PyTorch's images/s, the ratio, the
# memory of each; PyTorch's steps are eager, and so are the ones of ours it is set beside.
torch_row() { # MODEL RES BATCH PREC OURS_CSV TORCH_CSV
    local o_ips t_ips ratio o_gib t_gib
    read -r o_ips t_ips ratio o_gib t_gib <<<"$(side_by_side "$@" 2 off)"
    printf '%-13s %-5s %5s %11s %11s %6s %9s %9s' "$1" "$4" "$3" "$o_ips" "$t_ips" "$ratio" "$o_gib" "$t_gib"
}

# Where each configuration's kernel time differs from PyTorch's: ours, the train
# stage's traced step (kernels.csv), against one step of PyTorch's under its
# profiler (pytorch_ref.py --profile: kernel time by the layer type and phase
# bin/train would give each operation), in groups both sides can be cut into:
# batch norm, activations, adds and dropout are one group, as ours fuses them,
# and a convolution's data and weight gradients are one pass, as PyTorch's.
# Every group of every configuration into TABLE, each group where ours is
# behind with the three largest kernels of each side; for each configuration a
# line with both totals and the three groups where ours is furthest behind.
time_gaps() { # CONFIGS_TSV OURS_KERNELS_CSV TORCH_PROFILE_CSV TABLE
    awk -F'[,\t]' -v table="$4" '
        function group(type, phase,   name) {
            if (type == "conv" || type == "fc") name = type
            else if (type ~ /^(bn|relu|relu6|add|dropout)$/) name = "bn+eltwise"
            else if (type ~ /pool$/) name = "pool"
            else if (type == "loss") return "loss"
            else if (type == "sgd") return "update"
            else name = "other"
            return name " " (phase ~ /^bwd/ ? "bwd" : "fwd")
        }
        function signed_ms(ns,   text) {
            text = sprintf("%+.3f", ns / 1e6)
            return text == "-0.000" ? "+0.000" : text
        }
        function note(side, cfg, type, phase, kernel, ns,   g) {
            g = group(type, phase)
            t[side, cfg, g] += ns; total[side, cfg] += ns; has[side, cfg] = 1; seen[cfg, g] = 1
            if (kernel == "") kernel = "(host time)"
            if (!((side, cfg, g, kernel) in kt))
                kernels[side, cfg, g] = kernels[side, cfg, g] SUBSEP kernel
            kt[side, cfg, g, kernel] += ns
        }
        # pick[1..n] = the indices of the (at most) three largest of value[1..m],
        # largest first, above floor where above_floor is set; n is returned
        function top3(value, m, pick, above_floor, floor,   n, j, best, taken) {
            for (n = 0; n < 3; n++) {
                best = 0
                for (j = 1; j <= m; j++)
                    if (!(j in taken) && (!above_floor || value[j] > floor) &&
                        (!best || value[j] > value[best]))
                        best = j
                if (!best) break
                taken[best] = 1
                pick[n + 1] = best
            }
            return n
        }
        # the three largest kernels of a side in a group, a line each
        function largest(side, cfg, g,   m, j, n, name, ns, pick) {
            m = split(substr(kernels[side, cfg, g], 2), name, SUBSEP)
            for (j = 1; j <= m; j++) ns[j] = kt[side, cfg, g, name[j]]
            n = top3(ns, m, pick, 0, 0)
            for (j = 1; j <= n; j++)
                printf "    %-6s %10.3f  %s\n", side, ns[pick[j]] / 1e6,
                    substr(name[pick[j]], 1, 100) >table
        }
        FILENAME == ARGV[1] { if (NF >= 4 && $1 !~ /^#/) order[++n] = $1 " " $2 " " $3 " " $4; next }
        FNR == 1 { delete col; for (i = 1; i <= NF; i++) col[$i] = i; next }
        {
            note(FILENAME == ARGV[2] ? "ours" : "torch",
                 $col["model"] " " $col["res"] " " $col["batch"] " " $col["precision"],
                 $col["layer_type"], $col["phase"], $col["kernel"], $col["duration_ns"])
        }
        END {
            ng = split("conv fwd,conv bwd,bn+eltwise fwd,bn+eltwise bwd,pool fwd,pool bwd,fc fwd," \
                       "fc bwd,loss,update,other fwd,other bwd", all, ",")
            print "where the kernel time differs (ours, the traced step, minus PyTorch'"'"'s, one profiled step; every group in " table "):"
            printf "%-13s %-5s %5s %-16s %10s %10s %10s\n", "model", "prec", "batch", "group", "ours ms", "torch ms", "diff ms" >table
            for (k = 1; k <= n; k++) {
                cfg = order[k]; split(cfg, f, " ")
                label = sprintf("  %-20s", f[1] " " f[4] ":")
                if (!has["torch", cfg]) { print label " no profiled step of PyTorch'"'"'s"; continue }
                if (!has["ours", cfg]) {
                    printf "%s no traced step of ours (PyTorch'"'"'s %.2f ms)\n", label, total["torch", cfg] / 1e6
                    continue
                }
                m = 0
                for (j = 1; j <= ng; j++)
                    if ((cfg, all[j]) in seen) g[++m] = all[j]
                for (j = 1; j <= m; j++) {
                    d[j] = t["ours", cfg, g[j]] - t["torch", cfg, g[j]]
                    printf "%-13s %-5s %5s %-16s %10.3f %10.3f %10s\n", f[1], f[4], f[3], g[j],
                        t["ours", cfg, g[j]] / 1e6, t["torch", cfg, g[j]] / 1e6, signed_ms(d[j]) >table
                    if (d[j] > 0) { largest("ours", cfg, g[j]); largest("torch", cfg, g[j]) }
                }
                line = sprintf("%s %8.2f ms against %.2f ms; behind most in", label,
                               total["ours", cfg] / 1e6, total["torch", cfg] / 1e6)
                behind = top3(d, m, pick, 1, 0)
                for (j = 1; j <= behind; j++)
                    line = line sprintf("%s %s +%.2f ms (%.2f against %.2f)", j > 1 ? "," : "",
                                        g[pick[j]], d[pick[j]] / 1e6, t["ours", cfg, g[pick[j]]] / 1e6,
                                        t["torch", cfg, g[pick[j]]] / 1e6)
                print behind ? line : line " no group"
            }
        }' "$1" "$2" "$3"
}

# One pytorch_ref.py process for the 8 configurations (one import of torch and one
# CUDA context for all), each within RANK_LIMIT s; a row as soon as its
# configuration has run (its summary line on the process's stdout), so that a
# stage cut short keeps them. A configuration without its line failed: PyTorch's
# line about it is in pytorch.log.
stage_torch() {
    local dir=$OUT/torch torch_csv=$OUT/torch/pytorch_steps.csv ours_csv=/dev/null status=0
    local profile=$OUT/torch/pytorch_profile.csv ours_kernels=/dev/null
    need "$BIN/matrix"
    have_torch || skip "PyTorch with CUDA is not importable ($(tail -n 1 "$dir/torch-import.txt"))"
    if [[ -f $OUT/train/run_folder.txt ]]; then
        ours_csv=$(cat "$OUT/train/run_folder.txt")/steps.csv
        [[ -f ${ours_csv%/*}/kernels.csv ]] && ours_kernels=${ours_csv%/*}/kernels.csv
    fi
    # eager configurations: PyTorch's side runs eagerly (a graph configuration of
    # the row would be its eager twin again)
    "$BIN/matrix" gpu-quick >"$dir/matrix.tsv" && awk -F'\t' '$12 != "on"' "$dir/matrix.tsv" >"$dir/configs.tsv" || {
        result "bin/matrix gpu-quick: FAILED"
        return 1
    }
    local configs=()
    mapfile -t configs <"$dir/configs.tsv"
    result "$(printf '%-13s %-5s %5s %11s %11s %6s %9s %9s' model prec batch 'ours img/s' 'torch img/s' ratio 'ours GiB' 'torch GiB')"
    local next=0 line model res batch prec rc k
    # the rows of configurations[next..k): those before k that gave no line failed
    rows_up_to() { # K
        local c
        for ((; next < $1; next++)); do
            IFS=$'\t' read -r model res batch prec _ <<<"${configs[next]}"
            c=$(torch_row "$model" "$res" "$batch" "$prec" "$ours_csv" "$torch_csv")
            if [[ -n ${ran[next]:-} ]]; then
                result "$c"
            else
                result "$c  FAILED (see pytorch.log)"
                status=1
            fi
        done
    }
    local ran=() profiling=''
    while IFS= read -r line; do
        echo "$line" >>"$dir/pytorch.log"
        [[ $line == 'pytorch_ref.py: --profile: profiling '* ]] && profiling=1
        [[ $line =~ ^pytorch\ ([^ ]+)\ res=([0-9]+)\ batch=([0-9]+)\ precision=([a-z0-9]+)\  ]] || continue
        for ((k = next; k < ${#configs[@]}; k++)); do
            IFS=$'\t' read -r model res batch prec _ <<<"${configs[k]}"
            [[ "$model $res $batch $prec" == "${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]} ${BASH_REMATCH[4]}" ]] && break
        done
        ((k < ${#configs[@]})) || continue
        ran[k]=1
        rows_up_to $((k + 1))
    done < <(timeout -k 10 $((RANK_LIMIT * ${#configs[@]})) "$PYTHON" scripts/pytorch_ref.py --device cuda \
        --channels-last --configs "$dir/configs.tsv" --limit "$RANK_LIMIT" --env check-gpu \
        --out "$torch_csv" --profile "$profile" 2>&1 </dev/null)
    wait $! 2>/dev/null
    rc=$?
    # past the profile pass's first line every figure is in: its rows (a
    # configuration's FAILED among them) decide, a failing profile does not
    ((rc == 0 || profiling)) || status=1
    ((rc == 124 || rc == 137)) &&
        echo "check-gpu: stopped after RANK_LIMIT=$RANK_LIMIT s x ${#configs[@]} configurations" >>"$dir/pytorch.log"
    rows_up_to ${#configs[@]}
    if ((rc != 0 && status == 0)); then
        result "pytorch_ref.py: exit $rc in its profile pass, after every figure (see pytorch.log): the figures stand"
    elif ((rc != 0)); then
        result "pytorch_ref.py: exit $rc (see pytorch.log)"
    fi
    result "(ratio = ours / PyTorch in images/s, medians of the timed steps; ours from $([[ $ours_csv == /dev/null ]] && echo "no train stage in this OUT" || echo "$ours_csv"); memory: what our backend holds, torch.cuda.max_memory_allocated)"
    [[ -s $profile ]] && time_gaps "$dir/configs.tsv" "$ours_kernels" "$profile" "$dir/time_by_group.txt" >>"$dir/result.txt"
    return $status
}

# Issue 11's performance table, side by side in one run: ours and PyTorch's
# images/s at 224 with the issue's batches (256, VGG-16 128), every precision
# eager, and bf16 in a CUDA graph (ours --graph against PyTorch's captured step,
# and against torch.compile, the goal); each row with its goal and verdict and
# the peak memory of both. Precision by precision, bf16 first (the goals that
# decide most), so that a deadline leaves whole rows; each precision's rows as
# soon as both sides ran it; after the table, where ours missed an eager goal,
# the kernels that cost it (perf_gaps). A missed goal is a finding, not a
# failure: the stage fails only where a run did.
stage_perf() {
    local dir=$OUT/perf torch=1 status=0 prec spec done_precs=()
    local -A tally=() # "speed met", "memory MISSED", ...: perf_row's verdicts
    local missed=()   # "model batch prec" of each eager row whose goal was missed
    need "$BIN/train"
    for spec in "${PERF_MODELS[@]}"; do
        [[ $spec =~ ^[a-z0-9_]+:[1-9][0-9]{0,5}$ ]] || {
            result "CHECK_GPU_PERF_MODELS: '$spec' is not model:batch"
            return 2
        }
    done
    for spec in "${PERF_COMPILE[@]}"; do
        [[ " ${PERF_MODELS[*]} " == *" $spec "* ]] || {
            result "CHECK_GPU_PERF_COMPILE: '$spec' is not one of the table's: ${PERF_MODELS[*]}"
            return 2
        }
    done
    mkdir -p "$dir/logs"
    if ! have_torch; then
        torch=''
        result "PyTorch with CUDA is not importable ($(tail -n 1 "$dir/torch-import.txt")): ours alone, no ratios"
    fi
    result "(ratio = ours / PyTorch in images/s, medians of $PERF_ITERS timed steps after $PERF_WARMUP warm-up; goals of issue 11: 1.10x eager in bf16 and fp16, 1.00x in fp32 and tf32 and against PyTorch's CUDA graph, ours --graph at or above torch.compile (compiled here: ${PERF_COMPILE[*]:-none}: CHECK_GPU_PERF_COMPILE names more, some 50 s each); memory: what our backend holds against torch.cuda.max_memory_allocated; runs in $dir/logs)"
    result "$(printf '%-13s %-5s %-6s %-8s %5s %11s %11s %6s %6s %-7s %8s %8s %-7s' model prec ours torch \
        batch 'ours img/s' 'torch img/s' ratio goal speed 'ours GiB' 'torch GiB' memory)"
    for prec in bf16 fp16 tf32 fp32; do
        perf_ours "$prec" eager || status=1
        [[ $prec == bf16 ]] && { perf_ours bf16 graph || status=1; }
        if [[ -n $torch ]]; then
            perf_torch "$prec" eager "${PERF_MODELS[@]}" || status=1
            if [[ $prec == bf16 ]]; then
                perf_torch bf16 graph "${PERF_MODELS[@]}" || status=1
                perf_torch bf16 compile "${PERF_COMPILE[@]}" || status=1
            fi
        fi
        perf_rows "$prec"
        conv_api_lines "$prec"
        done_precs+=("$prec")
        perf_goals # a deadline may end the stage here
    done
    if [[ -n $torch ]] && ((${#missed[@]})); then
        perf_gaps || status=1
        perf_goals
    fi
    return $status
}

# What --conv-api auto chose in PREC's eager runs of ours: how many
# convolution passes ran on cuDNN's graph API, and the legacy and graph time
# per step at plan time (the first GPU to run this says whether the graph
# API's engines pay); for VGG-16 first what --conv-bias auto chose for its
# forwards with bias under ReLU (the own kernel, the legacy fused call or
# the graph API's epilogue).
conv_api_lines() { # PREC
    local log name
    for log in "$OUT/perf/logs/ours-"*"-$1-eager.log"; do
        [[ -f $log ]] || continue
        name=$(basename "$log" -eager.log | sed 's/^ours-//')
        { sed -n 's/.*\(convolutions with bias under ReLU (--conv-bias.*\)/\1/p' "$log" |
            sed 's/; convolution passes.*//' | head -n 1
          sed -n 's/.*\(convolution passes (--conv-api.*\)/\1/p' "$log" |
            sed 's/; convolution algorithms.*//' | head -n 1
        } | sed "s|^|  $name: |" >>"$OUT/perf/result.txt"
    done
}

# The count of the goals, one line kept last and current.
perf_goals() {
    sed -i '/^goals: /d' "$OUT/perf/result.txt"
    result "goals: speed ${tally[speed met]:-0} met, ${tally[speed MISSED]:-0} MISSED, ${tally[speed -]:-0} not measured; memory at most PyTorch's ${tally[memory met]:-0} met, ${tally[memory MISSED]:-0} MISSED (precisions done: ${done_precs[*]})"
}

# The kernels that cost each missed eager goal (issue 11: "name the kernels
# that cost the difference"), once the table is in and while time is left: one
# traced step of ours (the timing pass, --counters analytic: no metric pass)
# and one of PyTorch's under its profiler, compared by layer group as the
# torch stage compares them (time_gaps), bf16's first.
perf_gaps() {
    local dir=$OUT/perf/gaps row model batch prec status=0
    mkdir -p "$dir"
    for row in "${missed[@]}"; do
        read -r model batch prec <<<"$row"
        # tabs: time_gaps reads this file too
        printf '%s\t224\t%s\t%s\t%s\t1\n' "$model" "$batch" "$prec" "$PERF_WARMUP" >>"$dir/configs.tsv"
        perf_train "$dir/ours-$model-$prec.log" "$model" "$batch" "$prec" --iters 1 \
            --trace "$dir/kernels.csv" --counters analytic --out "$dir/ours-steps.csv" || status=1
    done
    ((status == 0)) || result "the missed goals' traced steps of ours: not every one ran (see $dir)"
    # PyTorch's side only explains: its failure costs the comparison, not the stage
    perf_pytorch "$dir/pytorch.log" "$dir/configs.tsv" ${#missed[@]} \
        --out "$dir/torch-steps.csv" --profile "$dir/torch-profile.csv" ||
        result "the missed goals' profiled steps of PyTorch's: pytorch_ref.py exit $? (see $dir/pytorch.log)"
    [[ -s $dir/torch-profile.csv ]] &&
        time_gaps "$dir/configs.tsv" "$dir/kernels.csv" "$dir/torch-profile.csv" "$dir/time_by_group.txt" \
            >>"$OUT/perf/result.txt"
    return $status
}

# One run of ours as the table's are run (one algorithm cache for all: --graph
# and a missed goal's traced step take the eager runs' choices), its output in LOG.
perf_train() { # LOG MODEL BATCH PREC ARGS...
    local log=$1 model=$2 batch=$3 prec=$4
    shift 4
    limited "$RANK_LIMIT" "RANK_LIMIT=$RANK_LIMIT s" "$log" "$BIN/train" --backend cuda \
        --model "$model" --res 224 --batch "$batch" --precision "$prec" --warmup "$PERF_WARMUP" \
        --algo-cache "$OUT/perf/algos.csv" --env check-gpu "$@" </dev/null
}

# PyTorch on the COUNT configurations of CONFIGS in one process, its output in LOG.
perf_pytorch() { # LOG CONFIGS COUNT ARGS...
    local log=$1 list=$2 count=$3
    shift 3
    limited $((RANK_LIMIT * count)) "RANK_LIMIT=$RANK_LIMIT s x $count configurations" "$log" \
        "$PYTHON" scripts/pytorch_ref.py --device cuda --channels-last --configs "$list" \
        --limit "$RANK_LIMIT" --env check-gpu "$@" </dev/null
}

# ours in PREC, eager or --graph, for every model of the table: rows to
# OUT/perf/ours-MODE.csv.
perf_ours() { # PREC MODE
    local spec model batch graph=() status=0 log rc
    [[ $2 == graph ]] && graph=(--graph)
    for spec in "${PERF_MODELS[@]}"; do
        model=${spec%:*} batch=${spec#*:} log=$OUT/perf/logs/ours-$model-$1-$2.log
        perf_train "$log" "$model" "$batch" "$1" --iters "$PERF_ITERS" "${graph[@]}" \
            --out "$OUT/perf/ours-$2.csv"
        rc=$?
        ((rc == 0)) && continue
        result "ours $model $1 $2: FAILED (exit $rc): $(tail -n 1 "$log")"
        status=1
    done
    return $status
}

# PyTorch in PREC and MODE (eager, graph, compile) for MODEL:BATCH..., in one
# process: rows to OUT/perf/torch-MODE.csv.
perf_torch() { # PREC MODE MODEL:BATCH...
    local prec=$1 mode=$2 spec list=$OUT/perf/torch-$1-$2.tsv
    shift 2
    (($#)) || return 0
    for spec in "$@"; do
        printf '%s\t224\t%s\t%s\t%s\t%s\n' "${spec%:*}" "${spec#*:}" "$prec" "$PERF_WARMUP" "$PERF_ITERS"
    done >"$list"
    local log=$OUT/perf/logs/torch-$prec-$mode.log rc
    perf_pytorch "$log" "$list" $# --mode "$mode" --out "$OUT/perf/torch-$mode.csv"
    rc=$?
    ((rc == 0)) && return 0
    # its lines naming what failed, else its last
    result "pytorch_ref.py $prec $mode: exit $rc"
    { grep -E '^pytorch_ref.py: ' "$log" || tail -n 1 "$log"; } | head -n 4 | sed 's/^/  /' >>"$OUT/perf/result.txt"
    return 1
}

# The table's rows of PREC: every model eager against PyTorch eager (goal 1.10x
# in bf16 and fp16, 1.00x else), and in bf16 ours --graph against PyTorch's
# captured step (1.00x) and against torch.compile (1.00x; not measured for a
# model not compiled).
perf_rows() { # PREC
    local spec model batch goal
    goal=1.00
    [[ $1 == bf16 || $1 == fp16 ]] && goal=1.10
    for spec in "${PERF_MODELS[@]}"; do
        model=${spec%:*} batch=${spec#*:}
        perf_row "$model" "$batch" "$1" eager eager "$goal"
        [[ $1 == bf16 ]] || continue
        perf_row "$model" "$batch" bf16 graph graph 1.00
        perf_row "$model" "$batch" bf16 graph compile 1.00
    done
}

# One row and its verdicts: the ratio to three decimals decides the speed.
perf_row() { # MODEL BATCH PREC OURS_MODE TORCH_MODE GOAL
    local o_ips t_ips ratio o_gib t_gib speed=- memory=-
    read -r o_ips t_ips ratio o_gib t_gib <<<"$(side_by_side "$1" 224 "$2" "$3" \
        "$OUT/perf/ours-$4.csv" "$OUT/perf/torch-$5.csv" 3)"
    if [[ $ratio != - ]]; then
        speed=$(awk -v r="$ratio" -v g="$6" 'BEGIN { print (r >= g ? "met" : "MISSED") }')
        [[ $speed == MISSED && $4 == eager ]] && missed+=("$1 $2 $3")
    fi
    tally[speed $speed]=$((${tally[speed $speed]:-0} + 1))
    if [[ $o_gib != - && $t_gib != - ]]; then
        memory=$(awk -v o="$o_gib" -v t="$t_gib" 'BEGIN { print (o <= t ? "met" : "MISSED") }')
        tally[memory $memory]=$((${tally[memory $memory]:-0} + 1))
    fi
    result "$(printf '%-13s %-5s %-6s %-8s %5s %11s %11s %6s %6s %-7s %8s %8s %-7s' "$1" "$3" "$4" "$5" \
        "$2" "$o_ips" "$t_ips" "$ratio" "${6}x" "$speed" "$o_gib" "$t_gib" "$memory")"
}

# The losses of one steps.csv as "iter loss" lines, sorted as join wants them.
losses() {
    awk -F, 'NR > 1 { print $10, $13 }' "$1" 2>/dev/null | sort -k1,1
}

stage_ddp() {
    local dir=$OUT/ddp args
    need "$BIN/train"
    # both processes run the cuDNN algorithms the first one chose
    args=(--backend cuda --model "$MODEL" --precision "$PREC" --batch "$BATCH" --warmup 2 --iters 5 --env check-gpu
        --algo-cache "$dir/algos.csv")
    "$BIN/train" "${args[@]}" --out "$dir/plain.csv" >"$dir/plain.log" 2>&1 || {
        result "plain step: FAILED (see plain.log)"
        return 1
    }
    one_rank "$BIN/train" "${args[@]}" --ddp --out "$dir/ddp.csv" >"$dir/ddp.log" 2>&1 || {
        result "one-rank NCCL DDP step: FAILED (see ddp.log)"
        return 1
    }
    grep -E '^ddp' "$dir/ddp.log" | head -n 6 | sed 's/^/  /' >>"$dir/result.txt"
    # bf16: some backward-filter algorithms sum with atomics: equal to bf16 rounding
    join <(losses "$dir/plain.csv") <(losses "$dir/ddp.csv") |
        awk -v tol=1e-2 -v model="$MODEL" -v prec="$PREC" -v batch="$BATCH" '{ d = ($2 - $3) / ($2 != 0 ? $2 : 1); d = d < 0 ? -d : d; if (d > worst) worst = d
                           if ($2 != $3) same = 0; n++ }
            BEGIN { same = 1 }
            END { printf "%s %s b%s, %d timed steps: losses of the one-rank NCCL path against the plain path: largest relative difference %.3g (%s; %s allowed)\n",
                         model, prec, batch, n, worst, same ? "bit-identical" : "not bit-identical", tol
                  exit !(n > 0 && worst <= tol) }' >>"$dir/result.txt"
}

stage_counters() {
    local dir=$OUT/counters args t0 plain_s ncu_s
    need "$BIN/train"
    # every process runs the cuDNN algorithms the first one chose: ncu then
    # profiles the very kernels the suite counted
    args=(--backend cuda --model "$MODEL" --precision "$PREC" --batch "$BATCH" --env check-gpu
        --algo-cache "$dir/algos.csv")
    # the ddp stage searched the same step's algorithms: no second search
    [[ -f $OUT/ddp/algos.csv ]] && cp "$OUT/ddp/algos.csv" "$dir/algos.csv"
    t0=$SECONDS
    "$BIN/train" "${args[@]}" --warmup 3 --iters 10 --trace "$dir/kernels.csv" --counters cupti \
        --out "$dir/steps.csv" >"$dir/train.log" 2>&1 || {
        result "bin/train --trace --counters cupti: FAILED (see train.log)"
        return 1
    }
    result "bin/train $MODEL $PREC batch $BATCH --trace --counters cupti: $((SECONDS - t0)) s for the whole process"
    grep -E '^train: trace:|^trace:' "$dir/train.log" | sed 's/^/  /' >>"$dir/result.txt"
    if ! grep -q 'FLOPs and bytes cupti' "$dir/train.log"; then
        # refused by the machine's settings: nothing of ours to check here (the
        # line above says how to allow them); any other cause is a failure
        grep -q 'ERR_NVGPUCTRPERM' "$dir/train.log" &&
            skip "this machine does not permit GPU performance counters (see the line above): no metric pass, no ncu side by side"
        result "the metric pass did not count (see above): no ncu side by side"
        return 1
    fi
    local ncu=${NCU:-}
    [[ -n $ncu && -x $ncu ]] || skip "Nsight Compute (ncu) not found: no side by side"
    # the metrics the suite's pass reads for a bf16 step on GH100 (counters/README.md)
    local metrics=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__t_bytes.sum
    local op
    for op in dadd dmul dfma fadd fmul ffma hadd hmul hfma; do
        metrics+=,smsp__sass_thread_inst_executed_op_${op}_pred_on.sum
    done
    metrics+=,sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum,sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32.sum
    metrics=${NCU_METRICS:-$metrics}
    # the same process without ncu, so that ncu's own time can be told apart
    t0=$SECONDS
    "$BIN/train" "${args[@]}" --warmup 1 --iters 1 >"$dir/plain.log" 2>&1 || {
        result "bin/train (1 + 1 steps, the process ncu runs): FAILED (see plain.log)"
        return 1
    }
    plain_s=$((SECONDS - t0))
    t0=$SECONDS
    ROOFLINE_PROFILE_STEP=2 "$ncu" --profile-from-start off --replay-mode kernel --cache-control none \
        --clock-control none --metrics "$metrics" -f -o "$dir/ncu" \
        "$BIN/train" "${args[@]}" --warmup 1 --iters 1 >"$dir/ncu.log" 2>&1 || {
        result "ncu on one step: FAILED (see ncu.log)"
        return 1
    }
    ncu_s=$((SECONDS - t0))
    "$ncu" --import "$dir/ncu.ncu-rep" --csv --page raw >"$dir/ncu.csv" 2>"$dir/ncu-import.log" || {
        result "ncu --import: FAILED (see ncu-import.log)"
        return 1
    }
    result "ncu, same metrics, one step (--replay-mode kernel, no cache flush, no clock control): $ncu_s s for the process, $plain_s s without ncu: about $((ncu_s - plain_s)) s of profiling"
    "$PYTHON" scripts/check_gpu_ncu.py "$dir/ncu.csv" "$dir/kernels.csv" >>"$dir/result.txt" 2>"$dir/compare.log"
}

# The __global__ functions of the suite's training kernels (models/cuda), as one
# regex alternation for compute-sanitizer's --kernel-name.
own_kernels() {
    local f
    for f in models/cuda/*.cu models/cuda/*.cuh; do
        tr '\n' ' ' <"$f" | grep -oE '__global__[[:space:]]+void[[:space:]]+(__launch_bounds__\(([^()]|\([^()]*\))*\)[[:space:]]*)?[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\('
    done | sed -E 's/[[:space:]]*\($//; s/.*[[:space:]]//' | sort -u | paste -sd '|'
}

# PROGRAM under compute-sanitizer's TOOL with the stage's flags, within LIMIT s:
# the program's output to NAME.log, the tool's reports to NAME.sanitizer.log (so
# that the program's buffered output cannot split a report); prints the errors
# the tool's summary line counts (ERROR SUMMARY; racecheck's RACECHECK SUMMARY:
# its hazards of error severity), nothing where the tool did not finish; the
# exit status is the program's.
under_tool() { # TOOL LIMIT NAME PROGRAM ARGS...
    local tool=$1 limit=$2 log=$3.log reports=$3.sanitizer.log rc
    shift 3
    limited "$limit" "$limit s" "$log" "$SANITIZER" --tool "$tool" "${SANITIZER_FLAGS[@]}" \
        --log-file "$reports" "$@"
    rc=$?
    # past --print-limit a second ERROR SUMMARY line counts the reports not printed
    sed -n -e '/not printed/d' -e 's/^========= ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' \
        -e 's/^========= RACECHECK SUMMARY: .*(\([0-9][0-9]*\) error.*/\1/p' "$reports" 2>/dev/null |
        tail -n 1
    return $rc
}

# The first lines of NAME's reports (what, where: the kernel), for the summary;
# where the tool wrote none (it did not start: a refused option, a device it
# cannot attach to), the last lines of the output, which say why.
first_reports() { # NAME
    if [[ -s $1.sanitizer.log ]]; then
        grep -E '^========= ' "$1.sanitizer.log" |
            grep -vE '^========= (COMPUTE-SANITIZER|[A-Z]+ SUMMARY|Process ID)' |
            grep -vE '^=========[[:space:]]+(Saved host|Host Frame|by thread|Address|Device Frame|$)' |
            head -n 6 | sed 's/^=========/ /'
    else
        tail -n 3 "$1.log" | sed 's/^/  /'
    fi
}

# TOOL must report the bug tests/sanitize/planted.cu plants for it in KERNEL
# (within a minute: synccheck's bug is undefined behaviour on the GPU).
planted() { # TOOL KERNEL
    local name=$OUT/sanitize/$1-planted errors
    errors=$(under_tool "$1" 60 "$name" "$BUILD/tests/sanitize/planted" "$1")
    if [[ -n $errors ]] && ((errors > 0)) && grep -q "$2" "$name.sanitizer.log"; then
        result "$(printf '%-9s %-24s the planted bug reported, as it must be (%d error(s))' "$1" "$2" \
            "$errors")"
        return 0
    fi
    result "$(printf '%-9s %-24s the planted bug NOT reported (%s): %s' "$1" "$2" \
        "${errors:-no summary line}${errors:+ errors}" "this tool's 0 errors below prove nothing")"
    first_reports "$name" >>"$OUT/sanitize/result.txt"
    return 1
}

# One program of the suite under TOOL: its result line, and its first reports.
sanitized() { # TOOL LABEL PROGRAM ARGS...
    local tool=$1 label=$2 t0=$SECONDS errors rc what warnings
    shift 2
    local name=$OUT/sanitize/$tool-${label// /-}
    errors=$(under_tool "$tool" "$TEST_LIMIT" "$name" "$@")
    rc=$?
    if [[ -z $errors ]]; then
        what="FAILED: no summary line (the tool did not finish: exit $rc)"
    elif ((errors > 0)); then
        what="FAILED: $errors error(s)"
    elif ((rc != 0)); then
        what="FAILED: 0 errors, but the program failed (exit $rc)"
    else
        what="0 errors"
    fi
    # racecheck's warnings: hazards it judges possibly benign (shown, not failed)
    warnings=$(sed -n 's/^========= RACECHECK SUMMARY: .*, \([1-9][0-9]*\) warning.*/\1/p' \
        "$name.sanitizer.log" 2>/dev/null)
    result "$(printf '%-9s %-24s %s in %d s%s' "$tool" "$label" "$what" $((SECONDS - t0)) \
        "${warnings:+ ($warnings racecheck warning(s): see $name.sanitizer.log)}")"
    [[ $what == "0 errors" ]] && return 0
    first_reports "$name" >>"$OUT/sanitize/result.txt"
    return 1
}

# The suite's kernels under NVIDIA's compute-sanitizer, where the host emulator
# cannot look: it runs a block's threads one after another on x86, so a missing
# barrier, a shared-memory race or a misaligned vector access may pass there
# (and in make test-gpu, by luck of timing). memcheck (out-of-bounds and
# misaligned accesses), racecheck (shared-memory hazards) and synccheck (barrier
# misuse), each over the layer check (every layer alone, every precision) and
# three small whole steps that reach the fused kernels: ResNet-18 fp32 (NCHW
# batch norm + ReLU and add + ReLU, max pool, loss, SGD), MobileNetV2 fp16 with
# the own depthwise kernels (NHWC kernels, ReLU6, dropout, the loss scale) and
# VGG-16 bf16 with the own bias + ReLU. Only the suite's kernels are instrumented
# (--kernel-name; a name counts where no letter or '_' comes before it, so that
# a vendor's bias_add_kernel is not taken for add_kernel): cuDNN's and
# cuBLAS's run at full speed, and their hazards are not the suite's. Before a
# tool's "0 errors" counts, it must report the bug tests/sanitize/planted.cu
# plants for it under the same filter.
stage_sanitize() {
    local dir=$OUT/sanitize status=0 own tool
    [[ -n $SANITIZER && -x $SANITIZER ]] ||
        skip "NVIDIA compute-sanitizer not found (on PATH or in CUDA's bin/; COMPUTE_SANITIZER=path): nothing checked"
    need "$BUILD/tests/sanitize/planted"
    need "$BUILD/tests/gpu/cuda_layers_check"
    need "$BIN/train"
    own=$(own_kernels)
    [[ -n $own ]] || {
        result "no __global__ function found in models/cuda: nothing to instrument"
        return 1
    }
    # the tools in the order they run, each with the kernel its planted bug is in
    local tools=(memcheck racecheck synccheck) planted_kernels=''
    local -A planted_in=([memcheck]=planted_oob_kernel [racecheck]=planted_race_kernel
        [synccheck]=planted_sync_kernel)
    for tool in "${tools[@]}"; do
        planted_kernels+="|${planted_in[$tool]}"
    done
    local -a SANITIZER_FLAGS=(
        --kernel-name "regex=(^|[^A-Za-z_])($own$planted_kernels)"
        --report-api-errors no --print-limit 20)
    "$SANITIZER" --version 2>&1 | grep -m1 -i 'version' | sed 's/^/compute-sanitizer: /' >>"$dir/result.txt"
    result "instrumented: $(tr '|' '\n' <<<"$own" | wc -l) kernels of models/cuda and the planted ones"
    # the same steps as each other under every tool: one cuDNN search
    local step=(--backend cuda --warmup 1 --iters 2 --env check-gpu --algo-cache "$dir/algos.csv")
    for tool in "${tools[@]}"; do
        if ! planted "$tool" "${planted_in[$tool]}"; then
            status=1
            # a device the tool refuses (seen under gVisor): nothing here to check
            local refused
            refused=$(grep -hi -m1 'device not supported' "$dir/$tool-planted.log" \
                "$dir/$tool-planted.sanitizer.log" 2>/dev/null | head -n 1)
            [[ -n $refused ]] && skip "compute-sanitizer cannot check this GPU here ($refused): nothing checked"
        fi
        sanitized "$tool" cuda_layers_check "$BUILD/tests/gpu/cuda_layers_check" || status=1
        sanitized "$tool" "resnet18 fp32" "$BIN/train" "${step[@]}" --model resnet18 --res 64 \
            --batch 4 --precision fp32 || status=1
        sanitized "$tool" "mobilenet_v2 fp16 own dw" "$BIN/train" "${step[@]}" --model mobilenet_v2 \
            --res 64 --batch 4 --precision fp16 --depthwise own || status=1
        sanitized "$tool" "vgg16 bf16 own bias" "$BIN/train" "${step[@]}" --model vgg16 --res 32 \
            --batch 2 --precision bf16 --conv-bias own || status=1
    done
    return $status
}

if [[ -n ${CHECK_GPU_STAGE:-} ]]; then
    STAGE=$CHECK_GPU_STAGE
    echo $$ >"$OUT/$STAGE/.session" # for kill_session, should the stage be cut short
    "stage_$STAGE"
    exit $?
fi

# ---- options -------------------------------------------------------------------

OUT='' JOBS='' STAGES='' DEADLINE='' TAR='' BUILD='' BIN=''
for arg in "$@"; do
    case $arg in
    OUT=*) OUT=${arg#OUT=} ;;
    JOBS=*) JOBS=${arg#JOBS=} ;;
    STAGES=*) STAGES=${arg#STAGES=} ;;
    DEADLINE=*) DEADLINE=${arg#DEADLINE=} ;;
    TAR=*) TAR=${arg#TAR=} ;;
    BUILD=*) BUILD=${arg#BUILD=} ;;
    BIN=*) BIN=${arg#BIN=} ;;
    *)
        echo "check-gpu: unexpected argument '$arg' (accepted: STAGES=, OUT=, JOBS=, DEADLINE=, TAR=, BUILD=, BIN=)" >&2
        exit 2
        ;;
    esac
done
declare -A wanted=()
case ${STAGES:-} in
'') listed=("${DEFAULT_STAGES[@]}") ;;
all) listed=("${ALL_STAGES[@]}") ;;
*) IFS=, read -r -a listed <<<"$STAGES" ;;
esac
for s in "${listed[@]}"; do
    if [[ -z ${ESTIMATE[$s]+x} ]]; then
        echo "check-gpu: STAGES: unknown stage '$s' (stages: ${ALL_STAGES[*]}; or all, alone)" >&2
        exit 2
    fi
    wanted[$s]=1
done
if [[ -n $DEADLINE && ! $DEADLINE =~ ^[1-9][0-9]{0,5}$ ]]; then
    echo "check-gpu: DEADLINE: '$DEADLINE' is not a number of seconds 1..999999" >&2
    exit 2
fi
if [[ -n $JOBS && ! $JOBS =~ ^[1-9][0-9]{0,3}$ ]]; then
    echo "check-gpu: JOBS: '$JOBS' is not a number of jobs 1..9999" >&2
    exit 2
fi
OUT=${OUT:-runs/check-gpu/$(date -u +%Y%m%dT%H%M%SZ)}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
GPU_ARCH=${GPU_ARCH:-native}
BUILD=${BUILD:-build-${GPU_ARCH// /_}} BIN=${BIN:-bin-${GPU_ARCH// /_}}
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT" || exit 2
# Open MPI refuses root without both (the device machines run commands as root);
# and where neither ssh nor rsh is installed (a container) Open MPI 4's rsh
# launcher aborts mpirun, and a singleton's MPI_Init, even for one local rank
# (open-mpi/ompi#12386): the local launcher then does without it
[[ $EUID -eq 0 ]] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [[ -z ${OMPI_MCA_plm:-} ]] && ! command -v ssh >/dev/null 2>&1 && ! command -v rsh >/dev/null 2>&1; then
    export OMPI_MCA_plm=^rsh
fi
# Nsight Compute, on PATH (cupti_check looks for it there) wherever it is installed
# shellcheck disable=SC2012 # fixed install paths
NCU=${NCU-$(command -v ncu || ls "${CUDA_HOME:-/usr/local/cuda}"/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)}
[[ -n $NCU ]] && PATH=$(dirname "$NCU"):$PATH
export NCU PATH
# NVIDIA's compute-sanitizer (the sanitize stage), on PATH or in the toolkit
# shellcheck disable=SC2012 # fixed install paths
SANITIZER=${COMPUTE_SANITIZER-$(command -v compute-sanitizer ||
    ls "${CUDA_HOME:-/usr/local/cuda}"/bin/compute-sanitizer \
        "${CUDA_HOME:-/usr/local/cuda}"/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n 1)}
export SANITIZER
export OUT JOBS GPU_ARCH BUILD BIN PYTHON MODEL PREC BATCH PYTHONUNBUFFERED=1

say() {
    echo "check-gpu: $*" | tee -a "$OUT/check.log" >&2
}

# Ends every process left in session SID (a stage's, after its end: what a
# timeout left running would share the GPU with the next stage), from /proc
# (a GPU node's container may lack pkill).
kill_session() { # SID
    local f stat fields
    for f in /proc/[0-9]*/stat; do
        read -r stat <"$f" 2>/dev/null || continue
        read -ra fields <<<"${stat##*) }" # state ppid pgrp session ...
        [[ ${fields[3]:-} == "$1" ]] && kill -KILL "${f//[^0-9]/}" 2>/dev/null
    done
    return 0
}

# OUT into TAR (when asked), replaced whole: written again after every stage,
# so that a call cut short by its caller still brings back what was done.
# Not ncu's binary report (its CSV is there): the device tool brings back
# 16 MiB a file.
archive() {
    [[ -n $TAR ]] || return 0
    tar czf "$TAR.part" --exclude='*.ncu-rep' --exclude="$(basename "$TAR")" \
        --exclude="$(basename "$TAR").part" \
        -C "$(dirname "$OUT")" "$(basename "$OUT")" 2>"$OUT/tar.log" && mv -f "$TAR.part" "$TAR"
}

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >"$OUT/gpu.txt" 2>&1; then
    say "no GPU answers here (nvidia-smi -L: $(head -n 1 "$OUT/gpu.txt" 2>/dev/null)); nothing to check"
    exit 2
fi
left_out=()
for s in "${ALL_STAGES[@]}"; do
    [[ -n ${wanted[$s]:-} ]] || left_out+=("$s")
done
not_asked=''
((${#left_out[@]} == 0)) || not_asked="not asked: ${left_out[*]} (STAGES=all runs every stage)"
say "$(head -n 1 "$OUT/gpu.txt"); stages ${listed[*]}${not_asked:+; $not_asked}; results in $OUT"

# ---- the stages ------------------------------------------------------------------

declare -A status=() took=()
failures=0
for s in "${ALL_STAGES[@]}"; do
    [[ -n ${wanted[$s]:-} ]] || continue
    rm -rf "${OUT:?}/$s" && mkdir -p "$OUT/$s"
    limit=()
    if [[ -n $DEADLINE ]]; then
        left=$((DEADLINE - SECONDS - RESERVE))
        if ((left < MIN_STAGE_S)); then
            status[$s]="not run (deadline: ${left} s left)" took[$s]=0
            say "$s: not started, $((DEADLINE - SECONDS)) s left of DEADLINE=$DEADLINE"
            failures=$((failures + 1))
            continue
        fi
        limit=(timeout --kill-after=10 "$left")
    fi
    say "$s (estimated ${ESTIMATE[$s]} s) ..."
    t0=$SECONDS
    # a session of its own: the per-program timeouts put their programs in
    # process groups of their own, which a stage's timeout would not reach
    CHECK_GPU_STAGE=$s "${limit[@]}" setsid -w bash "$SELF" >"$OUT/$s/$s.log" 2>&1
    rc=$?
    [[ -f $OUT/$s/.session ]] && kill_session "$(cat "$OUT/$s/.session")"
    rm -f "$OUT/$s/.session"
    took[$s]=$((SECONDS - t0))
    case $rc in
    0) status[$s]=ok ;;
    3) status[$s]=skipped ;;
    124 | 137) status[$s]="timed out (DEADLINE)" ;;
    *) status[$s]="FAILED (exit $rc)" ;;
    esac
    [[ ${status[$s]} == ok || ${status[$s]} == skipped ]] || failures=$((failures + 1))
    say "$s: ${status[$s]} in ${took[$s]} s"
    archive >/dev/null 2>&1 # what is done so far, should the caller's limit come first
done

# ---- the summary ----------------------------------------------------------------

{
    echo
    echo "== check-gpu summary: $(head -n 1 "$OUT/gpu.txt")"
    printf '%-10s %-26s %7s %7s  %s\n' stage status 'wall s' 'est. s' log
    for s in "${ALL_STAGES[@]}"; do
        [[ -n ${status[$s]:-} ]] || continue
        printf '%-10s %-26s %7s %7s  %s\n' "$s" "${status[$s]}" "${took[$s]}" "${ESTIMATE[$s]}" "$OUT/$s/$s.log"
    done
    for s in "${ALL_STAGES[@]}"; do
        [[ -s $OUT/$s/result.txt ]] || continue
        echo "-- $s"
        cat "$OUT/$s/result.txt"
    done
    [[ -z $not_asked ]] || echo "-- $not_asked"
    if ((failures)); then
        echo "== exit 1: $failures stage(s) failed, timed out or not run; $SECONDS s in all"
    else
        echo "== exit 0: every stage run passed (or was skipped for a missing tool); $SECONDS s in all"
    fi
} | tee "$OUT/summary.txt"

if [[ -n $TAR ]]; then
    if archive; then
        say "archived $OUT in $TAR ($(du -h "$TAR" | cut -f1))"
    else
        say "archiving $OUT in $TAR failed: $(head -n 1 "$OUT/tar.log")"
    fi
fi
((failures == 0))
