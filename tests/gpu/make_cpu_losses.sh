#!/usr/bin/env bash
# Writes tests/gpu/cpu_losses.csv: the CPU backend's losses of five fp32 steps
# (seed 1, the default learning rate, one thread) for the configurations that
# tests/gpu/cuda_train_check.cu runs on the GPU and compares with. The GPU node
# has no oneDNN, so the reference travels as this file; run it again (and
# commit the file) when a model, the initialisation, the data or the step
# change.
#
#   tests/gpu/make_cpu_losses.sh [BIN=bin]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-}
BIN=${BIN#BIN=}
BIN=${BIN:-bin}
out=tests/gpu/cpu_losses.csv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
configs=("resnet18-cifar 32 8" "resnet50 64 4" "vgg16 64 4" "mobilenet_v2 64 8"
    "mobilenet_v2-cifar 32 8" "vgg16-cifar 32 8")
echo "model,res,batch,seed,step,loss" >"$tmp/losses.csv"
for c in "${configs[@]}"; do
    read -r model res batch <<<"$c"
    "$BIN/train" --backend cpu --model "$model" --res "$res" --batch "$batch" --seed 1 \
        --warmup 0 --iters 5 --threads 1 --out "$tmp/steps.csv" >/dev/null
    awk -F, -v m="$model" -v r="$res" -v b="$batch" \
        'NR > 1 && $3 == m && $4 == r && $5 == b { print m "," r "," b ",1," $10 "," $13 }' \
        "$tmp/steps.csv" >>"$tmp/losses.csv"
done
mv "$tmp/losses.csv" "$out"
echo "wrote $out ($(($(wc -l <"$out") - 1)) losses)"
