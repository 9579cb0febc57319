#!/usr/bin/env bash
# `make info`: what the Makefile found (it passes the paths in the environment)
# and what will be built. Versions are read from the headers and tools found.
set -u

define() { # define HEADER NAME -> the value of "#define NAME value"
  awk -v n="$2" '$1 == "#define" && $2 == n { print $3; exit }' "$1" 2>/dev/null
}

row() { # row PART STATUS DETAIL
  printf '  %-14s %-8s %s\n' "$1" "$2" "$3"
}

part() { # part NAME PATH VERSION FEATURE
  if [ -n "$2" ]; then row "$1" found "$3  ($2)"; else row "$1" missing "-> $4"; fi
}

echo "Optional parts (CUDA_HOME=${CUDA_HOME}):"
cuda_ver=""
[ -n "${NVCC}" ] && cuda_ver=$("${NVCC}" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
part "CUDA toolkit" "${NVCC}" "${cuda_ver}" "no GPU code is compiled"

cudnn_ver=""
[ -n "${CUDNN_H}" ] && cudnn_ver="$(define "${CUDNN_H}" CUDNN_MAJOR).$(define "${CUDNN_H}" CUDNN_MINOR).$(define "${CUDNN_H}" CUDNN_PATCHLEVEL)"
part "cuDNN" "${CUDNN_H}" "${cudnn_ver}" "no GPU training backend"

cupti_ver=""
[ -n "${CUPTI_H}" ] && cupti_ver="API $(define "$(dirname "${CUPTI_H}")/cupti_version.h" CUPTI_API_VERSION)"
part "CUPTI" "${CUPTI_H}" "${cupti_ver}" "no per-kernel GPU counters"

nccl_ver=""
[ -n "${NCCL_H}" ] && nccl_ver="$(define "${NCCL_H}" NCCL_MAJOR).$(define "${NCCL_H}" NCCL_MINOR).$(define "${NCCL_H}" NCCL_PATCH)"
part "NCCL" "${NCCL_H}" "${nccl_ver}" "no multi-GPU data parallelism"

mpi_ver=""
[ -n "${MPICC}" ] && mpi_ver=$("${MPICC}" --showme:version 2>/dev/null | sed 's/^[^ ]*: //')
part "MPI" "${MPICC}" "${mpi_ver}" "no multi-process runs (make deps installs Open MPI)"

dnnl_ver=""
if [ -n "${DNNL_H}" ]; then
  v="$(dirname "${DNNL_H}")/dnnl_version.h"
  dnnl_ver="$(define "$v" DNNL_VERSION_MAJOR).$(define "$v" DNNL_VERSION_MINOR).$(define "$v" DNNL_VERSION_PATCH)"
fi
part "oneDNN" "${DNNL_H}" "${dnnl_ver}" "no CPU training backend (make deps installs libdnnl-dev)"

gp_ver=""
[ -n "${GNUPLOT}" ] && gp_ver=$("${GNUPLOT}" --version 2>/dev/null)
part "gnuplot" "${GNUPLOT}" "${gp_ver}" "no figures (make deps installs gnuplot-nox)"

crit_ver=""
[ -n "${CRITERION_H}" ] && crit_ver=$(pkg-config --modversion criterion 2>/dev/null)
part "Criterion" "${CRITERION_H}" "${crit_ver}" "make test cannot run (make deps installs libcriterion-dev)"

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${gpus:-0}" -gt 0 ]; then row "GPU" "found" "$(nvidia-smi -L | head -1)"; else row "GPU" "none" "make test-gpu will skip"; fi

echo
echo "Will build:"
echo "  bin/: ${BINS}"
if [ -n "${NVCC}" ]; then
  echo "  CUDA: every .cu file compiled by make test, for ${GPU_ARCH_DESC}"
else
  echo "  CUDA: nothing (toolkit missing)"
fi
