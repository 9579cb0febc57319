#!/bin/bash
# PyTorch CPU reference with both allocators: glibc malloc, then LD_PRELOAD of Debian's
# libjemalloc2 (notes/machine.md: either can win by tens of percent; a fair reference
# takes the better). Both runs append their rows to steps.csv (or $OUT), told apart by
# the env column: NAME-glibc and NAME-jemalloc (NAME: $REF_ENV, default local); the
# summary lines and the winner go to stdout. MALLOC_CONF, if set, reaches jemalloc (glibc ignores
# it); "dirty_decay_ms:-1,muzzy_decay_ms:-1" stops jemalloc returning pages to the kernel.
#   scripts/compare_cpu.sh MODEL RES BATCH THREADS [ITERS]   (env: OUT, WARMUP=3, PY, REF_ENV)
set -euo pipefail
if [ $# -lt 4 ] || [ $# -gt 5 ]; then
    echo "usage: $0 MODEL RES BATCH THREADS [ITERS=10]" >&2
    exit 2
fi
model=$1 res=$2 batch=$3 threads=$4 iters=${5:-10}
py=${PY:-/usr/bin/python3}
ref="$(dirname "$0")/pytorch_ref.py"
args=(--model "$model" --res "$res" --batch "$batch" --threads "$threads"
      --iters "$iters" --warmup "${WARMUP:-3}" --out "${OUT:-steps.csv}")
name=${REF_ENV:-local}
# bad arguments are one line from pytorch_ref.py, before anything is looked for
"$py" "$ref" "${args[@]}" --env "$name-jemalloc" --check || exit $?

jemalloc=$( { ldconfig -p | awk '$1 == "libjemalloc.so.2" {print $NF}'
              dpkg -L libjemalloc2 2>/dev/null | grep '/libjemalloc\.so\.2$'; } | head -n 1 || true)
if [ -z "$jemalloc" ] || [ ! -e "$jemalloc" ]; then
    echo "$0: libjemalloc.so.2 not found; install it with: apt-get install -y libjemalloc2" >&2
    exit 1
fi

glibc=$("$py" "$ref" "${args[@]}" --env "$name-glibc" | tail -n 1)
echo "$glibc"
jem=$(LD_PRELOAD="$jemalloc" "$py" "$ref" "${args[@]}" --env "$name-jemalloc" | tail -n 1)
echo "$jem"

ips() { sed -n 's/.*images_per_s=\([0-9.]*\).*/\1/p' <<<"$1"; }
awk -v g="$(ips "$glibc")" -v j="$(ips "$jem")" 'BEGIN {
    if (g + 0 >= j + 0) printf "better: glibc malloc (%.2f vs %.2f images/s, jemalloc %+.1f%%)\n", g, j, 100 * (j / g - 1)
    else                printf "better: jemalloc (%.2f vs %.2f images/s, %+.1f%% over glibc)\n", j, g, 100 * (j / g - 1)
}'
