"""A stand-in for the few torch calls scripts/pytorch_bandwidth.py makes, so that
tests/test_peaks.c runs the script without a GPU: every operation books the bytes
its operands hold (each input read once, each output written once; a copy
between host and device once, the bytes that cross the link) on a clock that
runs at GB_PER_S, and a CUDA event reads that clock. A figure the script
prints is then GB_PER_S exactly when its byte count is the operation's.
"""

import types

__version__ = "0.0-stand-in"
GB_PER_S = 1000.0
float32, uint8 = ("float32", 4), ("uint8", 1)
moved = [0]  # bytes booked so far


def _book(*tensors):
    for t in tensors:  # not sum(): this module's sum is torch's
        moved[0] += t.nbytes


class Tensor:
    def __init__(self, elems, dtype, on_device):
        self.nbytes = elems * dtype[1]
        self.on_device = on_device

    def copy_(self, src, non_blocking=False):
        if src.on_device == self.on_device:
            _book(src, self)
        else:
            _book(self)
        return self

    def fill_(self, value):
        _book(self)
        return self

    def zero_(self):
        return self

    def pin_memory(self):
        return self


def rand(elems, device=None, dtype=float32):
    return Tensor(elems, dtype, device is not None)


empty = rand


def ones(elems, dtype=float32):
    return Tensor(elems, dtype, False)


def add(a, b, alpha=1, out=None):
    _book(a, b, out)
    return out


def sum(a):  # noqa: A001 (torch's name)
    _book(a)
    return Tensor(1, float32, True)


def device(kind, index):
    return (kind, index)


class Event:
    def __init__(self, enable_timing=False):
        self.at = None

    def record(self):
        self.at = moved[0]

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return (end.at - self.at) / (GB_PER_S * 1e9) * 1e3


class OutOfMemoryError(RuntimeError):
    pass


cuda = types.SimpleNamespace(
    is_available=lambda: True,
    device_count=lambda: 1,
    set_device=lambda d: None,
    get_device_properties=lambda d: types.SimpleNamespace(name="Stand-in GPU",
                                                          multi_processor_count=4),
    synchronize=lambda: None,
    Event=Event,
    OutOfMemoryError=OutOfMemoryError,
)
