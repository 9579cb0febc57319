#!/usr/bin/python3
"""PyTorch reference for bin/train: the same synthetic training step, the same steps.csv.

Only a reference for side-by-side numbers, never a dependency of the suite. On the CPU it
needs the Debian packages python3-torch and python3-torchvision (run it with
/usr/bin/python3); on a GPU any torch with CUDA and torchvision.

  python3 scripts/pytorch_ref.py --model M [--res R] [--batch N] [--device cpu|cuda]
      [--precision fp32|tf32|fp16|bf16] [--warmup W] [--iters I] [--threads T] [--seed S]
      [--lr X] [--repeat K] [--env NAME] [--classes K] [--out steps.csv] [--channels-last]

Step: model.train(); one seeded synthetic batch (torch.randn images, random labels) reused
every step; SGD(lr, momentum 0.9, weight decay 5e-4); zero_grad(set_to_none=True),
forward, cross-entropy, backward, optimizer.step(). The default lr is bin/train's:
base x batch / 256 (base 0.1, 0.01 for vgg16). Warm-up steps are not written. One row per
timed step is appended to --out and flushed at once, so an interrupted run loses nothing
measured; peak_mem_bytes is the process's peak RSS on the CPU and
torch.cuda.max_memory_allocated() on a GPU.

On the CPU the step is timed with time.perf_counter (the CPU is synchronous). On a GPU
(--device cuda): cudnn.benchmark on, CUDA events around each step; fp32 with TF32 off
(matmul and cuDNN), tf32 with it on, fp16 under autocast with a GradScaler (dynamic loss
scale, as bin/train's), bf16 under autocast; the master weights stay fp32.
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
            "--device": "cpu",
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
    device = opts["--device"]
    if device not in ("cpu", "cuda"):
        usage_error(f"--device: '{device}' is not cpu or cuda")
    a["device"] = device
    prec = opts["--precision"]
    if prec not in PRECISIONS_KNOWN:
        usage_error(f"--precision: '{prec}' is not a precision (accepted: "
                    + ", ".join(PRECISIONS_KNOWN) + ")")
    if prec != "fp32" and device == "cpu":
        usage_error(f"--precision: '{prec}' needs --device cuda (the CPU reference runs fp32)")
    a["precision"] = prec
    a["warmup"] = int_option("--warmup", opts["--warmup"], 0, 1_000_000)
    a["iters"] = int_option("--iters", opts["--iters"], 1, 1_000_000)
    a["threads"] = int_option("--threads", opts["--threads"], 1, 4096)
    a["seed"] = int_option("--seed", opts["--seed"], 0, 2**63 - 1)
    a["repeat"] = int_option("--repeat", opts["--repeat"], 0, 1_000_000)
    a["classes"] = (int_option("--classes", opts["--classes"], 1, 1_000_000)
                    if opts["--classes"] is not None else dcls)
    if opts["--lr"] is None:  # bin/train's default: the recipe's rate scaled to the batch
        base = 0.01 if a["model"] == "vgg16" else 0.1
        opts["--lr"] = repr(base * a["batch"] / 256)
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
    cuda = a["device"] == "cuda"
    if cuda:
        if not torch.cuda.is_available():
            fail("--device cuda: torch sees no CUDA device")
        torch.backends.cudnn.benchmark = True
        tf32 = a["precision"] == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        model, images, labels = model.cuda(), images.cuda(), labels.cuda()
    if a["channels_last"]:
        model = model.to(memory_format=torch.channels_last)
        images = images.contiguous(memory_format=torch.channels_last)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=a["lr"], momentum=0.9,
                          weight_decay=5e-4)
    autocast_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a["precision"])
    scaler = None
    if a["precision"] == "fp16":  # torch.amp's since 2.3, torch.cuda.amp's before
        amp = getattr(torch, "amp", None)
        scaler = (amp.GradScaler("cuda") if hasattr(amp, "GradScaler")
                  else torch.cuda.amp.GradScaler())

    def step():
        opt.zero_grad(set_to_none=True)
        if autocast_dtype is not None:
            with torch.autocast("cuda", dtype=autocast_dtype):
                loss = F.cross_entropy(model(images), labels)
        else:
            loss = F.cross_entropy(model(images), labels)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss

    def timed_step():
        """The step's loss and milliseconds: CUDA events on a GPU, else the host's clock."""
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            loss = step()
            end.record()
            lv = loss.item()  # waits for the step
            return lv, start.elapsed_time(end)
        t0 = time.perf_counter()
        loss = step()
        t1 = time.perf_counter()
        return loss.item(), (t1 - t0) * 1e3

    def peak_memory():
        if cuda:
            return torch.cuda.max_memory_allocated()
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    out = open_out(a["out"])
    prefix = (f"{a['env']},pytorch,{a['model']},{r},{n},{a['precision']},1,0,"
              f"{a['repeat']},")
    times = []
    try:
        for i in range(a["warmup"] + a["iters"]):
            lv, ms = timed_step()
            if i < a["warmup"]:
                continue
            times.append(ms)
            out.write(prefix + f"{i - a['warmup']},{ms:.4f},{n / (ms / 1e3):.3f},"
                      f"{lv:.6g},{peak_memory()}\n")
            out.flush()
    except (RuntimeError, ValueError, MemoryError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        fail(f"training step failed for {a['model']} res {r} batch {n}: {msg}")
    finally:
        out.close()

    med = statistics.median(times)
    if cuda:
        where = (f"device={torch.cuda.get_device_name()} "
                 f"peak_mem_gib={peak_memory() / 2**30:.2f}")
    else:
        alloc = "glibc"
        if "jemalloc" in os.environ.get("LD_PRELOAD", ""):
            conf = os.environ.get("MALLOC_CONF", "")
            alloc = "jemalloc" + (f"[{conf}]" if conf else "")
        where = (f"threads={a['threads']} malloc={alloc} "
                 f"peak_rss_mib={peak_memory() / 2**20:.0f}")
    print(f"pytorch {a['model']} res={r} batch={n} precision={a['precision']} "
          f"{where}{' channels_last' if a['channels_last'] else ''} "
          f"median_step_ms={med:.2f} images_per_s={n / (med / 1e3):.2f}")


if __name__ == "__main__":
    main()
