#!/usr/bin/python3
"""PyTorch reference for bin/train: the same synthetic training step, the same steps.csv.

Only a reference for side-by-side numbers, never a dependency of the suite. On the CPU it
needs the Debian packages python3-torch and python3-torchvision (run it with
/usr/bin/python3); on a GPU any torch with CUDA and torchvision.

  python3 scripts/pytorch_ref.py --model M [--res R] [--batch N] [--device cpu|cuda]
      [--precision fp32|tf32|fp16|bf16] [--warmup W] [--iters I] [--threads T] [--seed S]
      [--lr X] [--repeat K] [--env NAME] [--classes K] [--out steps.csv] [--channels-last]
      [--limit S] [--profile FILE] [--mode eager|graph|compile] [--backend-version] [--check]
  python3 scripts/pytorch_ref.py --configs FILE [the options above but --model, --res,
      --batch, --precision, --warmup and --iters]

--configs FILE runs several configurations in this one process, one after another: a line
each, "model res batch precision warmup iters" separated by tabs or spaces (what
`bin/matrix ENV` prints; later fields are ignored). One import of torch and one CUDA
context serve them all, which `make check-gpu` would otherwise pay for each. Every line is
checked before the first runs. A configuration whose step fails (out of memory, say) gets
its line on stderr and the next one runs; the exit status is then 1. The peak memory is
each configuration's own (torch.cuda.reset_peak_memory_stats on a GPU, the peak RSS reset
through /proc/self/clear_refs on the CPU). --limit S: a configuration still running after
S seconds ends the process, with the stack of every thread on stderr (faulthandler: it
fires even while a CUDA call blocks).

--profile FILE: once every configuration's timed steps are done (the profiler may leave
CUPTI attached to the process, which slows what runs after it), each configuration that
ran is built again, warmed by its warm-up steps (its cuDNN algorithms are cached in the
process) and profiled for one more step under torch.profiler, neither timed nor written
to --out: rows appended to FILE (header PROFILE_HEADER below) for each outermost
operation PyTorch ran in it, with the layer type and phase bin/train's kernels.csv would
give it (classify_op): on a GPU a row for each kernel (copy, fill) it or what it called
launched, with its launches and device time (what no operation launched is one row
"(no operation)"), on the CPU one row, its calls and host time, the kernel empty.
Beside bin/train's trace pass it says which layers and kernels cost the difference
(scripts/check_gpu.sh). The pass begins with the line "pytorch_ref.py: --profile:
profiling N configuration(s)" on stdout, once every figure is written; a profile that
fails is one line on stderr and no rows (a hang under --limit ends the process, exit
1): the figures stand.

--mode: how the step runs. eager (the default): as written below. graph (--device cuda;
not fp16, whose GradScaler reads its overflow flag on the host every step): PyTorch's
whole-network capture, the step of bin/train --graph: the configuration's warm-up
steps (at least 2: cuDNN's benchmark search, the momentum buffers) run eagerly on a side
stream, one step (zero_grad, forward under autocast without its weight-cast cache,
backward, SGD) is captured there as a CUDA graph, and every step after it, warm-up and
timed, replays it. compile (PyTorch 2.0 or newer): the model through torch.compile with
its defaults; its compilation runs in the first warm-up step. The rows do not name the
mode (steps.csv has no column for it): give each mode its own --out. The summary line
adds mode=graph or mode=compile; --profile is taken with eager only.

--backend-version: the rows' backend column is "pytorch-<torch.__version__>" (e.g.
pytorch-2.11.0+cu130), not "pytorch": the version travels with the figures
(scripts/bench.sh's reference.csv).

--check: checks the options (and --configs' lines) and exits, without importing torch:
0 when they are good, 2 with one line when not (scripts/compare_cpu.sh asks first).

Step: model.train(); one seeded synthetic batch (torch.randn images, random labels) reused
every step; SGD(lr, momentum 0.9, weight decay 5e-4); zero_grad(set_to_none=True),
forward, cross-entropy, backward, optimizer.step(). The default lr is bin/train's:
base x batch / 256 (base 0.1, 0.01 for vgg16). Warm-up steps are not written. One row per
timed step is appended to --out and flushed at once, so an interrupted run loses nothing
measured; peak_mem_bytes is the configuration's peak RSS on the CPU (VmHWM) and
torch.cuda.max_memory_allocated() on a GPU, over the timed steps: the peak is reset
once the warm-up is done, because cudnn.benchmark's search during the warm-up takes
workspaces sized by the free memory from PyTorch's allocator, which that figure would
count (bin/train's searches are outside its figure too); with --mode graph, just
before the capture, whose allocations are the graph's memory.

On the CPU the step is timed with time.perf_counter (the CPU is synchronous). On a GPU
(--device cuda): cudnn.benchmark on, CUDA events around each step; fp32 with TF32 off
(matmul and cuDNN), tf32 with it on, fp16 under autocast with a GradScaler (dynamic loss
scale, as bin/train's), bf16 under autocast; the master weights stay fp32.
"""

import faulthandler
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
PROFILE_HEADER = ("env,model,res,batch,precision,op,kernel,calls,layer_type,phase,"
                  "duration_ns")
PRECISIONS_KNOWN = ("fp32", "tf32", "fp16", "bf16")
VGG_D = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M",
         512, 512, 512, "M", 512, 512, 512, "M"]


def usage_error(msg):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(2)


def fail(msg):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(1)


def int_option(opt, text, lo, hi, where=""):
    if not re.fullmatch(r"[+-]?[0-9]+", text or "") or not lo <= int(text) <= hi:
        usage_error(f"{where}{opt}: '{text}' is not an integer in {lo}..{hi}")
    return int(text)


CONFIG_OPTS = ("--model", "--res", "--batch", "--precision", "--warmup", "--iters")


def parse_args(argv):
    """The process's options, and its configurations: one from the options or, with
    --configs, one per line of that file."""
    ncpu = len(os.sched_getaffinity(0))
    opts = {"--model": None, "--res": None, "--batch": None, "--precision": None,
            "--device": "cpu",
            "--warmup": None, "--iters": None, "--threads": str(ncpu), "--seed": "1",
            "--lr": None, "--repeat": "0", "--env": "local", "--out": None,
            "--classes": None, "--configs": None, "--limit": None, "--profile": None,
            "--mode": "eager"}
    flags = {"--channels-last": False, "--check": False, "--backend-version": False}
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
    device = opts["--device"]
    if device not in ("cpu", "cuda"):
        usage_error(f"--device: '{device}' is not cpu or cuda")
    a["device"] = device
    a["threads"] = int_option("--threads", opts["--threads"], 1, 4096)
    a["seed"] = int_option("--seed", opts["--seed"], 0, 2**63 - 1)
    a["repeat"] = int_option("--repeat", opts["--repeat"], 0, 1_000_000)
    a["classes"] = (int_option("--classes", opts["--classes"], 1, 1_000_000)
                    if opts["--classes"] is not None else None)
    a["lr"] = None
    if opts["--lr"] is not None:
        try:
            a["lr"] = float(opts["--lr"])
        except ValueError:
            a["lr"] = float("nan")
        if not (math.isfinite(a["lr"]) and a["lr"] > 0):
            usage_error(f"--lr: '{opts['--lr']}' is not a finite number > 0")
    env = opts["--env"]
    if not re.fullmatch(r"[A-Za-z0-9._+:@-]+", env):
        usage_error(f"--env: '{env}' is not a name of letters, digits and ._+:@-")
    a["env"] = env
    a["out"] = opts["--out"] or "steps.csv"
    a["profile"] = opts["--profile"]
    a["channels_last"] = flags["--channels-last"]
    a["check"] = flags["--check"]
    a["backend_version"] = flags["--backend-version"]
    a["limit"] = (int_option("--limit", opts["--limit"], 1, 1_000_000)
                  if opts["--limit"] is not None else None)
    a["mode"] = mode_of(opts["--mode"], device, a["profile"])

    if opts["--configs"] is None:
        fields = {o: opts[o] for o in CONFIG_OPTS}
        fields["--precision"] = fields["--precision"] or "fp32"
        fields["--warmup"] = fields["--warmup"] or "5"
        fields["--iters"] = fields["--iters"] or "20"
        a["configs"] = [config_of(fields, device, "")]
    else:
        given = [o for o in CONFIG_OPTS if opts[o] is not None]
        if given:
            usage_error(f"{given[0]}: not taken with --configs (its lines give model, res, "
                        "batch, precision, warmup and iters)")
        a["configs"] = read_configs(opts["--configs"], device)
    if a["mode"] == "graph":
        for c in a["configs"]:
            if c["precision"] == "fp16":
                usage_error(f"--mode graph: {c['model']} fp16: the GradScaler reads its "
                            "overflow flag on the host every step, which a CUDA graph "
                            "cannot capture (bf16, tf32 and fp32 can)")
    return a


MODES = ("eager", "graph", "compile")


def mode_of(mode, device, profile):
    """--mode, checked against the device and --profile."""
    if mode not in MODES:
        usage_error(f"--mode: '{mode}' is not one of " + ", ".join(MODES))
    if mode == "graph" and device != "cuda":
        usage_error("--mode graph: needs --device cuda (it captures a CUDA graph)")
    if mode != "eager" and profile:
        usage_error(f"--profile: taken with --mode eager only (the kernels of a {mode} "
                    "step belong to no operation of the model)")
    return mode


def read_configs(path, device):
    """The configurations of a --configs file, every line checked."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        usage_error(f"--configs: cannot read '{path}': {getattr(e, 'strerror', None) or e}")
    configs = []
    for n, line in enumerate(lines, 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if len(words) < len(CONFIG_OPTS):
            usage_error(f"--configs: {path} line {n}: '{line}' is not 'model res batch "
                        "precision warmup iters'")
        configs.append(config_of(dict(zip(CONFIG_OPTS, words)), device,
                                 f"{path} line {n}: "))
    if not configs:
        usage_error(f"--configs: {path} holds no configuration")
    return configs


def config_of(fields, device, where):
    """One configuration from its six fields (option name: text), checked; `where` starts
    every complaint (the --configs line, or nothing for the options)."""
    def number(opt, lo, hi):
        return int_option(opt, fields[opt], lo, hi, where)

    c = {}
    model = fields["--model"]
    if model is None:
        usage_error("--model: missing (accepted: " + ", ".join(MODELS) + ")")
    if model not in MODELS:
        usage_error(f"{where}--model: '{model}' is not one of " + ", ".join(MODELS))
    c["model"] = model
    _, dres, _, minres = MODELS[model]
    c["res"] = number("--res", minres, 4096) if fields["--res"] is not None else dres
    c["batch"] = number("--batch", 1, 1 << 20) if fields["--batch"] is not None else 32
    prec = fields["--precision"]
    if prec not in PRECISIONS_KNOWN:
        usage_error(f"{where}--precision: '{prec}' is not a precision (accepted: "
                    + ", ".join(PRECISIONS_KNOWN) + ")")
    if prec != "fp32" and device == "cpu":
        usage_error(f"{where}--precision: '{prec}' needs --device cuda (the CPU reference "
                    "runs fp32)")
    c["precision"] = prec
    c["warmup"] = number("--warmup", 0, 1_000_000)
    c["iters"] = number("--iters", 1, 1_000_000)
    return c


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


def open_out(path, header=HEADER, option="--out"):
    """Appends to path, writing the header when the file is new or empty."""
    try:
        f = open(path, "a+", encoding="ascii", newline="")
        f.seek(0)
        first = f.readline().rstrip("\r\n")
        if first == "":
            f.write(header + "\n")
            f.flush()
        elif first != header:
            fail(f"{path} has a different header; expected '{header}' "
                 f"(use another {option})")
        return f
    except OSError as e:
        fail(f"cannot open {option} '{path}': {e.strerror}")


# PyTorch's operations by the layer type bin/train's kernels.csv gives the same work:
# the pattern matches the name as op_family leaves it. First match wins; the rest is
# "other" (views, casts, allocations).
OP_TYPES = (
    (r"(cudnn|mkldnn|slow|thnn)?conv\w*", "conv"),
    (r"(native|cudnn|miopen)?batchnorm\w*", "bn"),
    (r"relu|threshold", "relu"),
    (r"hardtanh|relu6", "relu6"),
    (r"add", "add"),
    (r"maxpool\w*", "maxpool"),
    (r"(adaptive)?avgpool\w*|mean", "avgpool"),
    (r"linear|addmm|mm|matmul|t", "fc"),
    (r"(native|feature)?dropout", "dropout"),
    (r"crossentropyloss|nllloss\w*|logsoftmax|oneslike", "loss"),
    (r"optimizer\.\w+|foreach\w*|ampforeach\w*|ampupdatescale|accumulategrad", "sgd"),
)


def op_family(name):
    """An operation's name without its namespace, underscores, case and backward
    suffix, and whether it is backward work: ('convolution', True) for
    'autograd::engine::evaluate_function: ConvolutionBackward0'."""
    bare = name.split(": ", 1)[-1].split("#", 1)[0]
    bare = bare.rsplit("::", 1)[-1].replace("_", "").lower()
    backward = "evaluate_function" in name or bool(re.search(r"backward\d*$", bare))
    return re.sub(r"backward\d*$", "", bare), backward


def classify_op(name):
    """(layer_type, phase) of an operation in kernels.csv's terms: the update's and the
    loss's work are phases of their own, the rest fwd or bwd (PyTorch computes a
    convolution's data and weight gradients in one operation)."""
    family, backward = op_family(name)
    kind = next((t for pattern, t in OP_TYPES if re.fullmatch(pattern, family)), "other")
    if kind == "sgd":
        return kind, "update"
    if kind == "loss":
        return kind, "loss"
    return kind, "bwd" if backward else "fwd"


def first_line(error):
    """An exception's message's first line ('' where it has none)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def reset_peak_memory(torch, cuda):
    """Starts a configuration's peak memory afresh: false where the CPU's peak RSS
    cannot be reset (then it is the process's)."""
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        return True
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # resets VmHWM, the peak RSS (Linux 4.0)
        return True
    except OSError:
        return False


def peak_memory(torch, cuda):
    if cuda:
        return torch.cuda.max_memory_allocated()
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def csv_field(text):
    """text as one field of a comma-separated row that awk also splits at tabs"""
    return re.sub(r"[\t\r\n]", " ", text).replace(",", ";")


def outermost_on_cpu(events):
    """The profiler's tree roots less those that lie within a root of their thread to
    the microsecond its timestamps are rounded to: torch 1.13 leaves a child that ends
    a rounding after its parent unparented, and its host time, already in its
    parent's, would be counted twice. (On a GPU such a child keeps its own kernels,
    which its parent's tree does not hold: there every root counts.)"""
    roots = sorted((e for e in events if e.cpu_parent is None),
                   key=lambda e: (e.thread, e.time_range.start, -e.time_range.end))
    kept, last = [], None
    for e in roots:
        if (last is not None and e.thread == last.thread
                and e.time_range.start < last.time_range.end
                and e.time_range.end <= last.time_range.end + 1):
            continue
        kept.append(e)
        last = e
    return kept


# a CUDA runtime or driver call: its id is CUPTI's, which an operation's may equal,
# so the profiler may attach that operation's kernels to it too
RUNTIME_CALL = re.compile(r"cu(da)?[A-Z]")


def op_rows(events, cuda, cpu):
    """{(operation, kernel): [calls, ns]} of a profiled step's events (FunctionEvents;
    cpu: the profiler's DeviceType.CPU) over the operations no other encloses (each
    thread's outermost). On a GPU, each kernel, copy and fill they and what they
    called launched (calls: its launches), and the device work no operation
    launched as ('(no operation)', '(unattributed device time)'); on the CPU each
    operation's host time, kernel ''. Also the device time seen and the part of it
    attributed."""
    # a range the profiler also draws on the GPU's timeline (record_function's,
    # the optimizer's) has its operation's name: not device work of its own
    ranges = {e.name for e in events if e.device_type == cpu}
    rows, device_ns, attributed = {}, 0, 0

    def add(op, kernel, calls, ns):
        row = rows.setdefault((csv_field(op), csv_field(kernel)), [0, 0])
        row[0] += calls
        row[1] += ns

    for e in events:
        if e.device_type != cpu and e.name not in ranges \
                and not getattr(e, "is_user_annotation", False):
            device_ns += round(e.time_range.elapsed_us() * 1000)
    operations = [e for e in events if e.device_type == cpu and not e.is_async
                  and not RUNTIME_CALL.match(e.name)]
    if not cuda:
        for e in outermost_on_cpu(operations):
            add(e.name, "", 1, round(e.cpu_time_total * 1000))
    else:
        for e in (e for e in operations if e.cpu_parent is None):
            under = [e]
            while under:  # the kernels the profiler attached to e and to what e called
                ev = under.pop()
                for k in ev.kernels:
                    add(e.name, k.name, 1, round(k.duration * 1000))
                    attributed += round(k.duration * 1000)
                under.extend(c for c in ev.cpu_children if not RUNTIME_CALL.match(c.name))
    if device_ns > attributed:
        add("(no operation)", "(unattributed device time)", 1, device_ns - attributed)
    return {key: row for key, row in rows.items() if row[1] > 0}, device_ns, attributed


def profile_step(torch, step, cuda):
    """One step under torch.profiler: its op_rows, with a line on stderr where a GPU
    step shows no device work or more attributed than seen."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        step()
        if cuda:
            torch.cuda.synchronize()
    rows, device_ns, attributed = op_rows(prof.events(), cuda, DeviceType.CPU)
    if cuda and device_ns == 0:
        print(f"{PROG}: --profile: the profiler saw no device work (is CUPTI "
              "usable here?)", file=sys.stderr, flush=True)
    elif attributed > 1.01 * device_ns:
        print(f"{PROG}: --profile: the operations' device time, {attributed / 1e6:.2f} ms, "
              f"exceeds the device's, {device_ns / 1e6:.2f} ms: some counted twice",
              file=sys.stderr, flush=True)
    return rows


def training_step(torch, a, c):
    """Configuration c's model, optimiser and batch, built afresh: its step function,
    which returns the loss (a tensor; on a GPU the step may still be running)."""
    import torch.nn.functional as F

    torch.manual_seed(a["seed"])
    classes = a["classes"] or MODELS[c["model"]][0]
    model = build_model(c["model"], classes, c["res"])
    nparams = sum(p.numel() for p in model.parameters())
    want = expected_params(c["model"], classes, c["res"])
    if nparams != want:
        raise ValueError(f"self-check failed: {c['model']} with {classes} classes at res "
                         f"{c['res']} has {nparams:,} parameters, expected {want:,}")

    gen = torch.Generator().manual_seed(a["seed"])
    n, r = c["batch"], c["res"]
    images = torch.randn(n, 3, r, r, generator=gen)
    labels = torch.randint(0, classes, (n,), generator=gen)
    cuda = a["device"] == "cuda"
    if cuda:
        torch.backends.cudnn.benchmark = True
        tf32 = c["precision"] == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        model, images, labels = model.cuda(), images.cuda(), labels.cuda()
    if a["channels_last"]:
        model = model.to(memory_format=torch.channels_last)
        images = images.contiguous(memory_format=torch.channels_last)
    model.train()
    if a["mode"] == "compile":
        model = torch.compile(model)
    # bin/train's default: the recipe's rate scaled to the batch
    lr = a["lr"] or (0.01 if c["model"] == "vgg16" else 0.1) * n / 256
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=5e-4)
    autocast_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(c["precision"])
    scaler = None
    if c["precision"] == "fp16":  # torch.amp's since 2.3, torch.cuda.amp's before
        amp = getattr(torch, "amp", None)
        scaler = (amp.GradScaler("cuda") if hasattr(amp, "GradScaler")
                  else torch.cuda.amp.GradScaler())

    graph = a["mode"] == "graph"

    def step():
        opt.zero_grad(set_to_none=True)
        if autocast_dtype is not None:
            # no weight-cast cache under capture, as PyTorch's CUDA-graph notes
            # ask (the cache empties when the context exits, so the captured
            # casts run in every replay either way)
            with torch.autocast("cuda", dtype=autocast_dtype, cache_enabled=not graph):
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

    if graph:
        return captured(torch, step, c["warmup"])
    step.scaler = scaler  # profile_config warms fp16 until a step is not skipped
    return step


def captured(torch, step, warmup):
    """PyTorch's whole-network capture of step: warmed eagerly on a side stream (cuDNN's
    benchmark search and the momentum buffers happen there), then captured on it; the
    step returned replays the graph and returns the captured step's loss tensor, which
    each replay writes again. zero_grad(set_to_none) in the captured step makes backward
    allocate the gradients from the graph's own memory pool."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(max(2, warmup)):
            step()
    torch.cuda.current_stream().wait_stream(side)
    # the graph's peak: what its capture allocates (its pool's blocks count as
    # allocated while captured, not in the replays after), not the search before
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        loss = step()

    def replay():
        graph.replay()
        return loss

    return replay


def run_config(torch, a, c, out):
    """Trains configuration c for its warm-up and timed steps, a row to out for each
    timed step; its summary line, or raises the step's error."""
    step = training_step(torch, a, c)
    cuda = a["device"] == "cuda"
    n, r = c["batch"], c["res"]

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

    backend = f"pytorch-{torch.__version__}" if a["backend_version"] else "pytorch"
    prefix = (f"{a['env']},{backend},{c['model']},{r},{n},{c['precision']},1,0,"
              f"{a['repeat']},")
    times = []
    for i in range(c["warmup"] + c["iters"]):
        if cuda and i == c["warmup"] and i > 0 and a["mode"] != "graph":
            # the timed steps' own peak, not the warm-up's algorithm searches (a
            # graph's was reset before its capture: replays allocate nothing)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        lv, ms = timed_step()
        if i < c["warmup"]:
            continue
        times.append(ms)
        out.write(prefix + f"{i - c['warmup']},{ms:.4f},{n / (ms / 1e3):.3f},"
                  f"{lv:.6g},{peak_memory(torch, cuda)}\n")
        out.flush()

    med = statistics.median(times)
    if cuda:
        where = (f"device={torch.cuda.get_device_name()} "
                 f"peak_mem_gib={peak_memory(torch, cuda) / 2**30:.2f}")
    else:
        alloc = "glibc"
        if "jemalloc" in os.environ.get("LD_PRELOAD", ""):
            conf = os.environ.get("MALLOC_CONF", "")
            alloc = "jemalloc" + (f"[{conf}]" if conf else "")
        where = (f"threads={a['threads']} malloc={alloc} "
                 f"peak_rss_mib={peak_memory(torch, cuda) / 2**20:.0f}")
    mode = "" if a["mode"] == "eager" else f"mode={a['mode']} "
    return (f"pytorch {c['model']} res={r} batch={n} precision={c['precision']} {mode}"
            f"{where}{' channels_last' if a['channels_last'] else ''} "
            f"median_step_ms={med:.2f} images_per_s={n / (med / 1e3):.2f}")


def profile_config(torch, a, c, profile_out):
    """Configuration c built again, warmed by its warm-up steps (the cuDNN algorithms
    its timed run chose are cached in this process; a fresh fp16 loss scale skips
    its first steps), then one step under the profiler: its operations' rows to
    profile_out. A profile that fails is one line on stderr: it only explains the
    figures, which stand without it."""
    cuda = a["device"] == "cuda"
    try:
        reset_peak_memory(torch, cuda)  # the previous configuration's cache freed
        step = training_step(torch, a, c)
        for _ in range(max(1, c["warmup"])):
            step()
        # fp16: on until a step keeps its loss scale (one that lowers it skipped
        # its update, and the profiled step should not be such a one)
        scaler = getattr(step, "scaler", None)
        for _ in range(8 if scaler is not None else 0):
            before = scaler.get_scale()
            step()
            if scaler.get_scale() >= before:
                break
        if cuda:
            torch.cuda.synchronize()
        at = f"{a['env']},{c['model']},{c['res']},{c['batch']},{c['precision']},"
        for (name, kernel), (calls, ns) in profile_step(torch, step, cuda).items():
            kind, phase = classify_op(name)
            profile_out.write(f"{at}{name},{kernel},{calls},{kind},{phase},{ns}\n")
        profile_out.flush()
    except Exception as e:  # pylint: disable=broad-except
        print(f"{PROG}: --profile: {c['model']} res {c['res']} batch {c['batch']} "
              f"{c['precision']}: {type(e).__name__}: {first_line(e)}", file=sys.stderr,
              flush=True)


def main():
    a = parse_args(sys.argv[1:])
    if a["check"]:
        return 0
    try:
        import torch
    except ImportError:
        fail("PyTorch is not importable by this python; run /usr/bin/python3 after "
             "'apt-get install -y python3-torch python3-torchvision'")
    torch.set_num_threads(a["threads"])
    cuda = a["device"] == "cuda"
    if cuda and not torch.cuda.is_available():
        fail("--device cuda: torch sees no CUDA device")
    if a["mode"] == "compile" and not hasattr(torch, "compile"):
        fail(f"--mode compile: torch.compile needs PyTorch 2.0 or newer; this is "
             f"{torch.__version__}")

    out = open_out(a["out"])
    profile_out = (open_out(a["profile"], PROFILE_HEADER, "--profile") if a["profile"]
                   else None)
    failed, ran = 0, []
    try:
        for c in a["configs"]:
            if not reset_peak_memory(torch, cuda) and len(a["configs"]) > 1:
                fail("cannot reset the peak RSS (/proc/self/clear_refs): run one "
                     "configuration a process")
            if a["limit"]:
                faulthandler.dump_traceback_later(a["limit"], exit=True)
            try:
                line = run_config(torch, a, c, out)
            except (RuntimeError, ValueError, MemoryError) as e:
                msg = first_line(e) or type(e).__name__
                line = None
            if a["limit"]:
                faulthandler.cancel_dump_traceback_later()
            if a["mode"] == "compile":
                # the next configuration compiles afresh: no cached graphs, no
                # dynamic-shape recompilation, nothing held in its peak memory
                torch._dynamo.reset()  # pylint: disable=protected-access
            if line is None:
                # the failed step's tensors go with the exception, before the next
                # configuration measures its peak memory
                print(f"{PROG}: {c['model']} res {c['res']} batch {c['batch']} "
                      f"{c['precision']} failed: {msg}", file=sys.stderr, flush=True)
                failed += 1
                continue
            print(line, flush=True)
            ran.append(c)
        # after every timed step: the profiler may keep CUPTI attached to the
        # process once it is done, which slows the kernels launched after it
        if profile_out is not None and ran:
            # every figure is in: what follows is the profile (check_gpu.sh reads
            # a failure after this line as the profile's, not the figures')
            print(f"{PROG}: --profile: profiling {len(ran)} configuration(s)", flush=True)
            for c in ran:
                if a["limit"]:
                    faulthandler.dump_traceback_later(a["limit"], exit=True)
                profile_config(torch, a, c, profile_out)
                if a["limit"]:
                    faulthandler.cancel_dump_traceback_later()
    finally:
        out.close()
        if profile_out is not None:
            profile_out.close()
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
