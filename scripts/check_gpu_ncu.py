#!/usr/bin/env python3
"""The suite's metric pass against Nsight Compute on one training step.

    scripts/check_gpu_ncu.py NCU_CSV KERNELS_CSV

NCU_CSV: `ncu --import REPORT --csv --page raw` of one step profiled with the
metrics the suite reads (scripts/check_gpu.sh's counters stage); KERNELS_CSV:
the suite's kernels.csv of a step of the same run (bin/train --trace
--counters cupti). Prints the kernel counts and, per quantity, both totals
over the step and their ratio, with the suite's conventions applied to ncu's
counters (counters/gpu_metrics.h: an FMA is 2 FLOPs, fp16 instructions count
as half2, tensor FLOPs are the sum of the sm__ops_path_tensor_* counters).
Exit status 0 where every total is within 2% (the issue's tolerance), 1
otherwise, 2 when a file cannot be read.
"""
import csv
import sys

SASS = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
TOLERANCE = 0.02
QUANTITIES = ["flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor", "dram_read_bytes",
              "dram_write_bytes", "l2_bytes", "l1_bytes"]


def number(text):
    """A value as ncu prints it (thousands separators dropped); None if not one."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def ncu_totals(path):
    """Kernels and the suite's quantities summed over ncu's rows."""
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    header = next((r for r in rows if r and r[0] == "ID"), None)
    if header is None:
        raise ValueError(f"{path}: no header line starting with \"ID\"")
    col = {name: i for i, name in enumerate(header)}
    totals = dict.fromkeys(QUANTITIES, 0.0)
    kernels = 0
    for r in rows:
        if len(r) != len(header) or number(r[0]) is None:
            continue  # the header, the units line, anything else
        kernels += 1

        def v(name):
            i = col.get(name)
            x = number(r[i]) if i is not None else None
            return x or 0.0

        s = {op: v(SASS.format(op)) for op in
             ("dadd", "dmul", "dfma", "fadd", "fmul", "ffma", "hadd", "hmul", "hfma")}
        totals["flops_fp64"] += s["dadd"] + s["dmul"] + 2 * s["dfma"]
        totals["flops_fp32"] += s["fadd"] + s["fmul"] + 2 * s["ffma"]
        totals["flops_fp16"] += 2 * s["hadd"] + 2 * s["hmul"] + 4 * s["hfma"]
        totals["flops_tensor"] += sum(v(n) for n in col if n.startswith("sm__ops_path_tensor_"))
        totals["dram_read_bytes"] += v("dram__bytes_read.sum")
        totals["dram_write_bytes"] += v("dram__bytes_write.sum")
        totals["l2_bytes"] += v("lts__t_bytes.sum")
        totals["l1_bytes"] += v("l1tex__t_bytes.sum")
    return kernels, totals


def suite_totals(path):
    """Kernels (communication excluded: ncu never sees the hooks) and sums."""
    totals = dict.fromkeys(QUANTITIES, 0.0)
    kernels = 0
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("phase") == "comm":
                continue
            kernels += 1
            for q in QUANTITIES:
                x = number(r.get(q) or "")
                totals[q] += x or 0.0
    return kernels, totals


def main():
    if len(sys.argv) != 3:
        print("usage: check_gpu_ncu.py NCU_CSV KERNELS_CSV", file=sys.stderr)
        return 2
    try:
        ncu_kernels, theirs = ncu_totals(sys.argv[1])
        our_kernels, ours = suite_totals(sys.argv[2])
    except (OSError, ValueError) as e:
        print(f"check_gpu_ncu: {e}", file=sys.stderr)
        return 2
    print(f"kernels in the step: suite {our_kernels}, ncu {ncu_kernels}")
    print(f"{'quantity':18} {'suite':>14} {'ncu':>14} {'suite/ncu':>10}")
    ok = our_kernels == ncu_kernels
    for q in QUANTITIES:
        a, b = ours[q], theirs[q]
        ratio = a / b if b else (1.0 if a == 0 else float("inf"))
        close = abs(a - b) <= TOLERANCE * max(abs(a), abs(b))
        ok = ok and close
        print(f"{q:18} {a:14.6g} {b:14.6g} {ratio:10.4f}{'' if close else '  (beyond 2%)'}")
    print("suite and ncu agree within 2%" if ok else "suite and ncu differ (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
