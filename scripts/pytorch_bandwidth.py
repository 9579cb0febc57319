#!/usr/bin/env python3
"""PyTorch's own kernels and copies as a yardstick for bin/peaks' bandwidth roofs.

    scripts/pytorch_bandwidth.py [--gib 2] [--pcie-mib 256] [--trials 20] [--device 0]
                                 [--out FILE] [--env NAME]

Times, with CUDA events, one call per event pair, the best of --trials kept:
  hbm_copy   b.copy_(a)                        2 tensors of --gib GiB (fp32)
  hbm_triad  torch.add(a, b, alpha=3, out=c)   3 tensors
  hbm_read   torch.sum(a)                      1 tensor (the reduction reads it once)
  hbm_write  c.fill_(3.0)                      1 tensor
  pcie_h2d   d.copy_(h, non_blocking=True)     --pcie-mib MiB from pinned host memory
  pcie_d2h   h.copy_(d, non_blocking=True)     the same, back
Bytes are counted as bin/peaks' rows of the same ceilings count them: in
device memory as STREAM does (bytes read plus bytes written, no
write-allocate read), over PCIe the bytes that cross the link, once. For
contiguous tensors of one dtype, copy_ is a memcpy (device to device, or over
PCIe from pinned memory; bin/peaks' pcie rows copy 256 MiB in full mode).

Prints one line per figure in GB/s. --out writes them as rows in peaks.csv's
schema (method "pytorch") to a file of their own, beside the run's peaks.csv
rather than in it: peaks.csv keeps one figure per ceiling. Where torch or a
CUDA GPU is missing it prints one line saying so and exits 1; a bad option
exits 2.
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
    p = OneLineParser(prog=PROG, description="PyTorch copy_/add/sum/fill_ and PCIe bandwidth, "
                      "STREAM counting")
    p.add_argument("--gib", type=positive(float, 0.01, 64), default=2.0,
                   help="GiB per tensor (default 2)")
    p.add_argument("--pcie-mib", type=positive(int, 1, 65536), default=256,
                   help="MiB per host<->device copy (default 256, as bin/peaks' full mode)")
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
    pcie_bytes = args.pcie_mib << 20
    try:
        a = torch.rand(elems, device=dev, dtype=torch.float32)
        b = torch.rand(elems, device=dev, dtype=torch.float32)
        c = torch.empty(elems, device=dev, dtype=torch.float32)
        d = torch.empty(pcie_bytes, device=dev, dtype=torch.uint8)
    except torch.cuda.OutOfMemoryError:
        fail(f"out of GPU memory for 3 tensors of {args.gib:g} GiB and one of "
             f"{args.pcie_mib} MiB; try a smaller --gib")
    try:
        # every page touched before timing, as bin/peaks' pcie rows do
        h = torch.ones(pcie_bytes, dtype=torch.uint8).pin_memory()
    except RuntimeError as e:
        fail(f"cannot pin {args.pcie_mib} MiB of host memory ({e}); try a smaller --pcie-mib")
    d.zero_()
    torch.cuda.synchronize()

    gib = nbytes / (1 << 30)
    tensors = f"fp32 tensors of {nbytes >> 20} MiB"
    pinned = f"{args.pcie_mib} MiB, pinned host memory"
    stream = "STREAM counting: bytes read + bytes written, no write-allocate read"
    link = "the bytes over the link, once"
    # (label, ceiling, bytes per call, what they are, on what, how counted, call)
    figures = [
        ("copy_", "hbm_copy", 2 * nbytes, f"2 x {gib:.2f} GiB", tensors, stream,
         lambda: b.copy_(a)),
        ("add(out=)", "hbm_triad", 3 * nbytes, f"3 x {gib:.2f} GiB", tensors, stream,
         lambda: torch.add(a, b, alpha=3, out=c)),
        ("sum", "hbm_read", nbytes, f"1 x {gib:.2f} GiB", tensors, stream,
         lambda: torch.sum(a)),
        ("fill_", "hbm_write", nbytes, f"1 x {gib:.2f} GiB", tensors, stream,
         lambda: c.fill_(3.0)),
        ("copy_ H2D", "pcie_h2d", pcie_bytes, f"{args.pcie_mib} MiB", pinned, link,
         lambda: d.copy_(h, non_blocking=True)),
        ("copy_ D2H", "pcie_d2h", pcie_bytes, f"{args.pcie_mib} MiB", pinned, link,
         lambda: h.copy_(d, non_blocking=True)),
    ]
    rows = []
    for label, ceiling, moved, per_call, on_what, counting, call in figures:
        ms = best_ms(torch, call, args.trials)
        gbs = moved / (ms * 1e-3) / 1e9
        print(f"{label:10s} {gbs:9.1f} GB/s  ({per_call} per call, best of {args.trials}, "
              f"{props.name})")
        notes = (f"PyTorch {torch.__version__} {label} on {on_what}; {counting}, "
                 f"{per_call} per call; best of {args.trials} single calls timed with "
                 f"CUDA events")
        rows.append([args.env, props.name, ceiling, f"{gbs:.6g}", "GB/s", "pytorch", "",
                     props.multi_processor_count, notes])
    if args.out:
        write_rows(args.out, rows)


if __name__ == "__main__":
    main()
