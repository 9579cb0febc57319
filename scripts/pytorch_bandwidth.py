#!/usr/bin/env python3
"""PyTorch's own elementwise kernels as a yardstick for bin/peaks' HBM roofs.

    scripts/pytorch_bandwidth.py [--gib 2] [--trials 20] [--device 0]
                                 [--out FILE] [--env NAME]

Times b.copy_(a) and torch.add(a, b, alpha=3, out=c) on fp32 tensors of
--gib GiB each with CUDA events, one call per event pair, and keeps the best
of --trials. Bytes are counted as STREAM does (and as bin/peaks' hbm_copy and
hbm_triad rows do): copy moves 2 tensors, add 3; no write-allocate read. For
contiguous tensors of one dtype, copy_ is a device-to-device memcpy.

Prints one line per kernel in GB/s. --out writes the two figures as rows in
peaks.csv's schema (ceilings hbm_copy and hbm_triad, method "pytorch") to a
file of their own, beside the run's peaks.csv rather than in it: peaks.csv
keeps one figure per ceiling. Where torch or a CUDA GPU is missing it prints
one line saying so and exits 1; a bad option exits 2.
"""
import argparse
import csv
import os
import socket
import sys

PROG = "pytorch_bandwidth"
HEADER = ["env", "device", "ceiling", "value", "unit", "method", "spec_value",
          "threads_or_sms", "notes"]


def fail(message, status=1):
    print(f"{PROG}: {message}", file=sys.stderr)
    sys.exit(status)


def positive(kind, low, high):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number in {low}..{high}")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"'{text}' is not in {low}..{high}")
        return value
    return parse


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        fail(message, 2)


def parse_args():
    p = OneLineParser(prog=PROG, description="PyTorch copy_/add bandwidth, STREAM counting")
    p.add_argument("--gib", type=positive(float, 0.01, 64), default=2.0,
                   help="GiB per tensor (default 2)")
    p.add_argument("--trials", type=positive(int, 1, 1000), default=20,
                   help="timed calls per kernel, the best kept (default 20)")
    p.add_argument("--device", type=positive(int, 0, 64), default=0, help="CUDA device index")
    p.add_argument("--out", help="write peaks.csv-schema rows to this file")
    p.add_argument("--env", default=socket.gethostname().split(".")[0] or "local",
                   help="the env column of --out (default: host name)")
    return p.parse_args()


def best_ms(torch, call, trials):
    """The fastest of `trials` single calls, each between two CUDA events."""
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    best = None
    for _ in range(trials):
        start.record()
        call()
        stop.record()
        stop.synchronize()
        ms = start.elapsed_time(stop)
        best = ms if best is None or ms < best else best
    return best


def write_rows(path, rows):
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(HEADER)
            w.writerows(rows)
        os.replace(tmp, path)
    except OSError as e:
        fail(f"cannot write {path}: {e.strerror}")


def main():
    args = parse_args()
    try:
        import torch
    except ImportError as e:
        fail(f"torch is not installed here ({e}); install PyTorch with CUDA to use this script")
    if not torch.cuda.is_available():
        fail("no CUDA GPU visible to torch (torch.cuda.is_available() is False)")
    if args.device >= torch.cuda.device_count():
        fail(f"--device {args.device}: only {torch.cuda.device_count()} CUDA device(s)", 2)
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)
    props = torch.cuda.get_device_properties(dev)
    elems = int(args.gib * (1 << 30)) // 4
    nbytes = elems * 4
    try:
        a = torch.rand(elems, device=dev, dtype=torch.float32)
        b = torch.rand(elems, device=dev, dtype=torch.float32)
        c = torch.empty(elems, device=dev, dtype=torch.float32)
    except torch.cuda.OutOfMemoryError:
        fail(f"out of GPU memory for 3 tensors of {args.gib:g} GiB; try a smaller --gib")

    kernels = [
        ("copy_", "hbm_copy", 2, lambda: b.copy_(a)),
        ("add(out=)", "hbm_triad", 3, lambda: torch.add(a, b, alpha=3, out=c)),
    ]
    rows = []
    for label, ceiling, arrays, call in kernels:
        ms = best_ms(torch, call, args.trials)
        gbs = arrays * nbytes / (ms * 1e-3) / 1e9
        print(f"{label:10s} {gbs:9.1f} GB/s  ({arrays} x {nbytes / (1 << 30):.2f} GiB per call, "
              f"best of {args.trials}, {props.name})")
        notes = (f"PyTorch {torch.__version__} {label} on fp32 tensors of {nbytes >> 20} MiB; "
                 f"STREAM counting: {arrays} tensors per call, no write-allocate read; "
                 f"best of {args.trials} single calls timed with CUDA events")
        rows.append([args.env, props.name, ceiling, f"{gbs:.6g}", "GB/s", "pytorch", "",
                     props.multi_processor_count, notes])
    if args.out:
        write_rows(args.out, rows)


if __name__ == "__main__":
    main()
