#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages the suite builds against (DESIGN.md §8).
# Quick and silent when everything is there. The CUDA toolkit, cuDNN and NCCL
# come from NVIDIA and are never installed here.
#
#   scripts/deps.sh            `make deps`: everything, tests included
#   scripts/deps.sh --bench    before `make bench`: what a study needs (no test
#                              framework). Not root: one line with the command,
#                              exit 2. Root but the install fails (a GPU node
#                              that reaches no package registry): one line, and
#                              the study goes on without (make info says what
#                              that turns off).
set -euo pipefail

mode=deps
case ${1:-} in
'') ;;
--bench) mode=bench ;;
*)
    echo "deps: unknown argument '$1' (accepted: --bench)" >&2
    exit 2
    ;;
esac

packages=(build-essential pkg-config libdnnl-dev libopenmpi-dev openmpi-bin gnuplot-nox)
[[ $mode == deps ]] && packages+=(libcriterion-dev)

missing=()
for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [[ $status == installed ]] || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

install_line="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
if ! command -v apt-get >/dev/null; then
    echo "deps: missing ${missing[*]} and no apt-get here: install them with your package manager" >&2
    [[ $mode == bench ]] && exit 2
    exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
    if [[ $mode == bench ]]; then
        echo "bench: missing packages ${missing[*]}: as root run '$install_line' (or 'make bench DEPS=off' to go on without them)" >&2
        exit 2
    fi
    echo "deps: missing ${missing[*]}; as root run:"
    echo "  $install_line"
    exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
if apt-get update -qq >"$log" 2>&1 &&
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
    rm -f "$log"
    exit 0
fi
why=$(grep -m1 -E '^(E|W): ' "$log" || tail -n 1 "$log")
rm -f "$log"
if [[ $mode == bench ]]; then
    echo "bench: could not install ${missing[*]} (${why:-apt-get failed}); going on without them ('make info' says what that turns off)" >&2
    exit 0
fi
echo "deps: apt-get failed: ${why:-no message}" >&2
exit 1
