#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages the suite builds against (DESIGN.md §8).
# Quick and silent when everything is there; prints the exact command when not root.
# The CUDA toolkit, cuDNN and NCCL come from NVIDIA and are never installed here.
set -euo pipefail

packages=(build-essential pkg-config libdnnl-dev libopenmpi-dev openmpi-bin gnuplot-nox libcriterion-dev)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$status" = "installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

command -v apt-get >/dev/null || { echo "deps: no apt-get here; install: ${missing[*]}" >&2; exit 1; }
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing ${missing[*]}; as root run:"
  echo "  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
  exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
