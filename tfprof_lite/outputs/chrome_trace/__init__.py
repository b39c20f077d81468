"""A drop-in for ``tensorflow.python.client.timeline``: one step as a Chrome trace.

Contract: ``Timeline(step_stats, graph=None)`` followed by
``generate_chrome_trace_format(show_dataflow=True, show_memory=False,
op_time="schedule")`` returns the same JSON text as TensorFlow 2.21's
``tensorflow.python.client.timeline.Timeline`` (``json.dumps(trace, indent=4,
separators=(",", ": "))``), and ``analyze_step_stats(...)`` the same
``StepStatsAnalysis(chrome_trace, allocator_maximums)``:

* pid 0 is ``Allocators``; every ``dev_stats`` entry gets ``<device> Compute`` and
  ``<device> Tensors`` processes, in order.
* Each node is an ``X`` event named after its op type (parsed from the
  ``timeline_label`` ``name = Op(in0, in1)``; GPU-tracer devices take the node and
  op from the kernel label), in a lane (``tid``) of its device: the first lane whose
  last activity ended strictly before the node starts.
* Every output is a tensor; ``show_memory`` adds tensor create/snapshot/delete
  events and one cumulative counter per allocator; ``show_dataflow`` adds a flow
  between producer and consumer when they are on different lanes or devices.
* ``op_time="gpu"`` or ``"all"`` (any value but ``"schedule"``) stretches the ops of
  ``/job`` devices over their ``stream:all`` kernels, on a copy of the step stats.

``op_time="schedule"`` writes the lanes into the step stats' ``thread_id`` (into
the caller's message when it is one of ours; a TensorFlow message is never
written to, bytes are parsed into a message of our own). ROCm builds of
TensorFlow add an ``args.kernel`` entry; this package behaves like the CUDA/CPU
builds.

Modules, lowest first: :mod:`.encoder` (the JSON text), :mod:`.labels` (node
labels), :mod:`.columns` (a step's nodes as columns; a device's op events and
flows), :mod:`.formatter` (``ChromeTraceFormatter``), :mod:`.flows` (which
inputs get a flow), :mod:`.tensors` (``show_memory``), :mod:`.client`
(``Timeline``). Cyclic garbage collection is paused while a trace is built and
written.
"""

from __future__ import annotations

from tfprof_lite.outputs.chrome_trace.client import StepStatsAnalysis, Timeline
from tfprof_lite.outputs.chrome_trace.formatter import ChromeTraceFormatter
from tfprof_lite.outputs.chrome_trace.labels import parse_kernel_label, parse_op_label
from tfprof_lite.outputs.chrome_trace.tensors import AllocationMaximum

__all__ = [
    "AllocationMaximum",
    "ChromeTraceFormatter",
    "StepStatsAnalysis",
    "Timeline",
    "parse_kernel_label",
    "parse_op_label",
]
