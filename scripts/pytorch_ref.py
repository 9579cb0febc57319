#!/usr/bin/python3
"""PyTorch reference for bin/train: the same synthetic training step, the same steps.csv.

Only a reference for side-by-side numbers, never a dependency of the suite. Needs the
Debian packages python3-torch and python3-torchvision; run it with /usr/bin/python3.

  /usr/bin/python3 scripts/pytorch_ref.py --model M [--res R] [--batch N]
      [--precision fp32] [--warmup W] [--iters I] [--threads T] [--seed S] [--lr X]
      [--repeat K] [--env NAME] [--classes K] [--out steps.csv] [--channels-last]

Step: model.train(); one seeded synthetic batch (torch.randn images, random labels) reused
every step; SGD(lr, momentum 0.9, weight decay 5e-4); zero_grad(set_to_none=True),
forward, cross-entropy, backward, optimizer.step(), timed with time.perf_counter around
the whole step (the CPU is synchronous). Warm-up steps are not written. One row per timed
step is appended to --out and flushed at once, so an interrupted run loses nothing measured.
"""

import math
import os
import re
import resource
import statistics
import sys
import time

PROG = "pytorch_ref.py"
HEADER = ("env,backend,model,res,batch,precision,world_size,rank,repeat,iter,"
          "step_ms,images_per_s,loss,peak_mem_bytes")

# name: (default classes, default res, torchvision parameter count at the defaults,
#        minimum res)
MODELS = {
    "resnet18": (1000, 224, 11_689_512, 1),
    "resnet50": (1000, 224, 25_557_032, 1),
    "vgg16": (1000, 224, 138_357_544, 32),
    "mobilenet_v2": (1000, 224, 3_504_872, 1),
    "resnet18-cifar": (10, 32, 11_173_962, 1),
    "resnet50-cifar": (10, 32, 23_520_842, 1),
    "vgg16-cifar": (10, 32, 14_728_266, 32),
    "mobilenet_v2-cifar": (10, 32, 2_236_682, 1),
}
PRECISIONS_KNOWN = ("fp32", "tf32", "fp16", "bf16")
VGG_D = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M",
         512, 512, 512, "M", 512, 512, 512, "M"]


def usage_error(msg):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(2)


def fail(msg):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(1)


def int_option(opt, text, lo, hi):
    if not re.fullmatch(r"[+-]?[0-9]+", text or "") or not lo <= int(text) <= hi:
        usage_error(f"{opt}: '{text}' is not an integer in {lo}..{hi}")
    return int(text)


def parse_args(argv):
    ncpu = len(os.sched_getaffinity(0))
    opts = {"--model": None, "--res": None, "--batch": None, "--precision": "fp32",
            "--warmup": "5", "--iters": "20", "--threads": str(ncpu), "--seed": "1",
            "--lr": None, "--repeat": "0", "--env": "local", "--out": None,
            "--classes": None}
    flags = {"--channels-last": False}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            print(__doc__.strip())
            sys.exit(0)
        if arg in flags:
            flags[arg] = True
            i += 1
            continue
        name, eq, value = arg.partition("=")
        if name not in opts:
            usage_error(f"unknown option '{arg}' (accepted: "
                        + ", ".join(list(opts) + list(flags)) + ")")
        if not eq:
            if i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                usage_error(f"{name}: missing value")
            value = argv[i + 1]
            i += 1
        opts[name] = value
        i += 1

    a = {}
    model = opts["--model"]
    if model is None:
        usage_error("--model: missing (accepted: " + ", ".join(MODELS) + ")")
    if model not in MODELS:
        usage_error(f"--model: '{model}' is not one of " + ", ".join(MODELS))
    a["model"] = model
    dcls, dres, _, minres = MODELS[model]
    a["res"] = (int_option("--res", opts["--res"], minres, 4096)
                if opts["--res"] is not None else dres)
    a["batch"] = (int_option("--batch", opts["--batch"], 1, 1 << 20)
                  if opts["--batch"] is not None else 32)
    prec = opts["--precision"]
    if prec != "fp32":
        if prec in PRECISIONS_KNOWN:
            usage_error(f"--precision: '{prec}' is not supported by the CPU reference "
                        "(accepted: fp32)")
        usage_error(f"--precision: '{prec}' is not a precision (accepted: fp32)")
    a["precision"] = prec
    a["warmup"] = int_option("--warmup", opts["--warmup"], 0, 1_000_000)
    a["iters"] = int_option("--iters", opts["--iters"], 1, 1_000_000)
    a["threads"] = int_option("--threads", opts["--threads"], 1, 4096)
    a["seed"] = int_option("--seed", opts["--seed"], 0, 2**63 - 1)
    a["repeat"] = int_option("--repeat", opts["--repeat"], 0, 1_000_000)
    a["classes"] = (int_option("--classes", opts["--classes"], 1, 1_000_000)
                    if opts["--classes"] is not None else dcls)
    if opts["--lr"] is None:  # bin/train's default: torchvision's recipe
        opts["--lr"] = "0.01" if a["model"] == "vgg16" else "0.1"
    try:
        lr = float(opts["--lr"])
    except ValueError:
        lr = float("nan")
    if not (math.isfinite(lr) and lr > 0):
        usage_error(f"--lr: '{opts['--lr']}' is not a finite number > 0")
    a["lr"] = lr
    env = opts["--env"]
    if not re.fullmatch(r"[A-Za-z0-9._+:@-]+", env):
        usage_error(f"--env: '{env}' is not a name of letters, digits and ._+:@-")
    a["env"] = env
    a["out"] = opts["--out"] or "steps.csv"
    a["channels_last"] = flags["--channels-last"]
    return a


def build_model(name, classes, res):
    import torch.nn as nn
    import torchvision.models as tvm

    if name in ("resnet18", "resnet50", "vgg16", "mobilenet_v2"):
        return getattr(tvm, name)(weights=None, num_classes=classes)
    if name in ("resnet18-cifar", "resnet50-cifar"):
        m = getattr(tvm, name.split("-")[0])(weights=None, num_classes=classes)
        m.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1, bias=False)
        nn.init.kaiming_normal_(m.conv1.weight, mode="fan_out", nonlinearity="relu")
        m.maxpool = nn.Identity()
        return m
    if name == "vgg16-cifar":  # kuangliu VGG('VGG16')
        layers, c = [], 3
        for v in VGG_D:
            if v == "M":
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            else:
                layers += [nn.Conv2d(c, v, kernel_size=3, padding=1),
                           nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                c = v
        side = res // 32
        return nn.Sequential(nn.Sequential(*layers), nn.Flatten(),
                             nn.Linear(512 * side * side, classes))
    if name == "mobilenet_v2-cifar":  # torchvision code, stem and stage 2 at stride 1
        m = tvm.mobilenet_v2(weights=None, num_classes=classes)
        m.features[0][0].stride = (1, 1)
        m.features[2].conv[1][0].stride = (1, 1)
        m.features[2].stride = 1
        return m
    raise AssertionError(name)


def fc_in(name, res):
    return {"resnet18": 512, "resnet50": 2048, "vgg16": 4096, "mobilenet_v2": 1280,
            "resnet18-cifar": 512, "resnet50-cifar": 2048,
            "vgg16-cifar": 512 * (res // 32) ** 2, "mobilenet_v2-cifar": 1280}[name]


def expected_params(name, classes, res):
    dcls, dres, count, _ = MODELS[name]
    return count - (fc_in(name, dres) + 1) * dcls + (fc_in(name, res) + 1) * classes


def open_out(path):
    """Appends to path, writing the header when the file is new or empty."""
    try:
        f = open(path, "a+", encoding="ascii", newline="")
        f.seek(0)
        first = f.readline().rstrip("\r\n")
        if first == "":
            f.write(HEADER + "\n")
            f.flush()
        elif first != HEADER:
            fail(f"{path} has a different header; expected '{HEADER}' "
                 "(use another --out)")
        return f
    except OSError as e:
        fail(f"cannot open --out '{path}': {e.strerror}")


def main():
    a = parse_args(sys.argv[1:])
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        fail("PyTorch is not importable by this python; run /usr/bin/python3 after "
             "'apt-get install -y python3-torch python3-torchvision'")

    torch.set_num_threads(a["threads"])
    torch.manual_seed(a["seed"])
    model = build_model(a["model"], a["classes"], a["res"])
    nparams = sum(p.numel() for p in model.parameters())
    want = expected_params(a["model"], a["classes"], a["res"])
    if nparams != want:
        fail(f"self-check failed: {a['model']} with {a['classes']} classes at res "
             f"{a['res']} has {nparams:,} parameters, expected {want:,}")

    gen = torch.Generator().manual_seed(a["seed"])
    n, r = a["batch"], a["res"]
    images = torch.randn(n, 3, r, r, generator=gen)
    labels = torch.randint(0, a["classes"], (n,), generator=gen)
    if a["channels_last"]:
        model = model.to(memory_format=torch.channels_last)
        images = images.contiguous(memory_format=torch.channels_last)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=a["lr"], momentum=0.9,
                          weight_decay=5e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        opt.step()
        return loss

    out = open_out(a["out"])
    prefix = (f"{a['env']},pytorch,{a['model']},{r},{n},{a['precision']},1,0,"
              f"{a['repeat']},")
    times = []
    try:
        for i in range(a["warmup"] + a["iters"]):
            t0 = time.perf_counter()
            loss = step()
            t1 = time.perf_counter()
            lv = loss.item()
            if i < a["warmup"]:
                continue
            ms = (t1 - t0) * 1e3
            times.append(ms)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            out.write(prefix + f"{i - a['warmup']},{ms:.4f},{n / (ms / 1e3):.3f},"
                      f"{lv:.6g},{rss}\n")
            out.flush()
    except (RuntimeError, ValueError, MemoryError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        fail(f"training step failed for {a['model']} res {r} batch {n}: {msg}")
    finally:
        out.close()

    med = statistics.median(times)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    alloc = "glibc"
    if "jemalloc" in os.environ.get("LD_PRELOAD", ""):
        conf = os.environ.get("MALLOC_CONF", "")
        alloc = "jemalloc" + (f"[{conf}]" if conf else "")
    print(f"pytorch {a['model']} res={r} batch={n} precision={a['precision']} "
          f"threads={a['threads']}{' channels_last' if a['channels_last'] else ''} "
          f"malloc={alloc} median_step_ms={med:.2f} images_per_s={n / (med / 1e3):.2f} "
          f"peak_rss_mib={rss_mib:.0f}")


if __name__ == "__main__":
    main()
