"""pytorch_ref.py --mode graph's capture, over a stand-in for the torch.cuda calls it
makes: prints each call in order, so that tests/test_check_gpu.c can check the
whole-network capture's order (warm-up on a side stream, the peak memory reset after
it, the capture on that stream, replays returning the captured loss) without a GPU.

  python3 -B tests/fakes/capture_calls.py SCRIPTS_DIR WARMUP
"""

import sys
import types

sys.path.insert(0, sys.argv[1])
import pytorch_ref  # noqa: E402  (after its folder is on the path)


class Stream:
    def __init__(self, name):
        self.name = name

    def wait_stream(self, other):
        print(f"{self.name} waits for {other.name}")


class StreamContext:
    def __init__(self, stream, verb):
        self.stream, self.verb = stream, verb

    def __enter__(self):
        print(f"{self.verb} on {self.stream.name}")

    def __exit__(self, *exc):
        print(f"end of {self.verb} on {self.stream.name}")


class Graph:
    def replay(self):
        print("replay")


CURRENT = Stream("current")
cuda = types.SimpleNamespace(
    Stream=lambda: Stream("side"),
    current_stream=lambda: CURRENT,
    stream=lambda s: StreamContext(s, "work"),
    CUDAGraph=Graph,
    graph=lambda g, stream=None: StreamContext(stream or Stream("its own"), "capture"),
    synchronize=lambda: print("synchronize"),
    reset_peak_memory_stats=lambda: print("peak memory reset"),
)
torch = types.SimpleNamespace(cuda=cuda)
steps = []


def step():
    steps.append(f"loss of step {len(steps) + 1}")
    print(f"step {len(steps)}")
    return steps[-1]


replay = pytorch_ref.captured(torch, step, int(sys.argv[2]))
print("returns", replay())
print("returns", replay())
