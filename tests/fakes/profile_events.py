"""A GPU profile and a CPU profile of one step as torch.profiler's FunctionEvents would
give them, made by hand, through scripts/pytorch_ref.py's op_rows: the rows of each on
stdout, sorted, the GPU's followed by the device time seen and the part attributed
(tests/test_check_gpu.c). Runs without torch: op_rows takes the CPU device type as an
argument."""
import sys
from collections import namedtuple
from types import SimpleNamespace as Event

sys.path.insert(0, sys.argv[1])  # scripts/
import pytorch_ref  # noqa: E402  pylint: disable=wrong-import-position

CPU, CUDA = "cpu", "cuda"


Kernel = namedtuple("Kernel", "name device duration")  # torch's, duration in us


def kernel(name, us):
    return Kernel(name, 0, us)


def device(name, us, **more):
    return Event(name=name, device_type=CUDA, time_range=Event(elapsed_us=lambda: us),
                 **more)


def op(name, kernels=(), children=(), parent=None, is_async=False):
    e = Event(name=name, device_type=CPU, cpu_parent=parent, is_async=is_async,
              kernels=list(kernels), cpu_children=list(children), cpu_time_total=0.0)
    for c in children:
        c.cpu_parent = e
    return e


# aten::conv2d launches a transform itself and its child cudnn_convolution the GEMM;
# the launch's runtime call, whose CUPTI id equals the backward's, holds its kernel too
launch = op("cudaLaunchKernel", [kernel("dgrad\nkernel", 20.0)])
gemm = op("aten::cudnn_convolution",
          [kernel("void xmma_fprop<bf16, 4, 2>(Params)", 30.0)], [launch])
conv = op("aten::conv2d", [kernel("nhwc_transform", 2.0)], [gemm])
# the optimizer's range, also drawn on the GPU's timeline under its own name
sgd = op("Optimizer.step#SGD.step", [kernel("multi_tensor_apply_kernel", 5.0)])
sgd_child = op("aten::_foreach_add_", [kernel("multi_tensor_apply_kernel", 1.0)])
sgd.cpu_children.append(sgd_child)
sgd_child.cpu_parent = sgd
backward = op("autograd::engine::evaluate_function: ConvolutionBackward0",
              [kernel("dgrad\nkernel", 20.0), kernel("wgrad,\tsplit", 25.0)])
events = [
    conv, gemm, launch, sgd, sgd_child, backward,
    op("cudaDeviceSynchronize"),                       # a runtime call outside any operation
    op("aten::empty"),                                  # launches nothing
    op("async thing", [kernel("k", 7.0)], is_async=True),
    device("nhwc_transform", 2.0), device("void xmma_fprop<bf16, 4, 2>(Params)", 30.0),
    device("multi_tensor_apply_kernel", 5.0), device("multi_tensor_apply_kernel", 1.0),
    device("dgrad\nkernel", 20.0), device("wgrad,\tsplit", 25.0),
    device("Memset (Device)", 0.5),                     # no operation launched it
    device("Optimizer.step#SGD.step", 6.5),             # the optimizer's range on the GPU
    device("ProfilerStep#1", 90.0, is_user_annotation=True),
]
rows, seen, attributed = pytorch_ref.op_rows(events, True, CPU)
for (name, k), (calls, ns) in sorted(rows.items()):
    print(f"{name}|{k}|{calls}|{ns}|{' '.join(pytorch_ref.classify_op(name))}")
print(f"device {seen} attributed {attributed}")


def timed(name, thread, start, end):
    e = op(name)
    e.thread, e.time_range, e.cpu_time_total = thread, Event(start=start, end=end), end - start
    return e


# torch 1.13 on the CPU: _batch_norm_impl_index ends a rounding after its parent
# and is left a root; relu_ begins where batch_norm ends; the backward's thread
cpu_events = [
    timed("aten::batch_norm", 1, 1353.0, 1382.0),
    timed("aten::_batch_norm_impl_index", 1, 1354.0, 1383.0),
    timed("aten::relu_", 1, 1382.0, 1383.0),
    timed("aten::conv2d", 1, 1400.0, 1500.0),
    timed("autograd::engine::evaluate_function: ConvolutionBackward0", 2, 1360.0, 1460.0),
]
rows, _, _ = pytorch_ref.op_rows(cpu_events, False, CPU)
for (name, k), (calls, ns) in sorted(rows.items()):
    print(f"cpu {name}|{k}|{calls}|{ns}|{' '.join(pytorch_ref.classify_op(name))}")
