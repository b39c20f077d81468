"""TensorFlow's device strings: the one grammar every layer reads them with.

A TF1 device is ``/job:<job>/replica:<r>/task:<t>/device:<TYPE>:<n>``; the GPU
tracer adds lanes below a GPU (``.../stream:<id>``, ``.../stream:all``,
``.../stream:<id><MemcpyHtoD>``, ``.../memcpy``, ``.../sync``); an XSpace's
devices are read into the same strings. The patterns that work on lower-cased
devices are tfprof's own rules (canonical devices, tracer devices, the CPU of a
GPU device) and are applied as tfprof applies them; the others ignore case.
"""

from __future__ import annotations

import re

__all__ = [
    "CANONICAL",
    "GPU_INDEX",
    "GPU_TRACER",
    "SHORT_TASK",
    "STREAM",
    "TASK",
    "TRACER",
    "gpu_ordinal",
    "task_parts",
    "task_text",
    "tracer_parts",
]

#: ``/job:J/replica:R/task:T`` at the start of a device (then ``/`` or the end).
TASK = re.compile(r"/job:([^/]+)/replica:(\d+)/task:(\d+)(?=/|$)", re.IGNORECASE)
#: ``/job:J/task:T``, a task named without its replica (replica 0).
SHORT_TASK = re.compile(r"^/job:([^/]+)/task:(\d+)$", re.IGNORECASE)
#: tfprof's canonical CPU/GPU device, on a lower-cased device (full match).
CANONICAL = re.compile(r".*/(device:gpu|gpu|device:cpu|cpu):\d+")
#: The GPU part of a lower-cased device, which tfprof replaces by ``cpu:0``
#: for the device's host.
GPU_INDEX = re.compile(r"gpu:\d+")
#: A GPU tracer lane, on a lower-cased device (full match).
TRACER = re.compile(r".*/(stream:[^/]*|memcpy|sync)")
#: A lower-cased XSpace tracer device without a task: ``/device:gpu:<n>/...``.
GPU_TRACER = re.compile(r"/device:gpu:(\d+)/")
#: A tracer lane's stream id and copy kind (``stream:7<MemcpyHtoD>``).
STREAM = re.compile(r"stream:(\d+)(<.*>)?", re.IGNORECASE)
_TRACER_PARTS = re.compile(r"(.*?)/(stream:[^/]*|memcpy|sync)", re.IGNORECASE)
_GPU_ORDINAL = re.compile(r"gpu:(\d+)", re.IGNORECASE)


def task_parts(device: str) -> tuple[str, int, int] | None:
    """(job as written, replica, task) of the task ``device`` starts with, or None."""
    match = TASK.match(device)
    if match is None:
        return None
    return match.group(1), int(match.group(2)), int(match.group(3))


def task_text(device: str) -> str | None:
    """The ``/job:J/replica:R/task:T`` text ``device`` starts with, as written, or None."""
    match = TASK.match(device)
    return match.group(0) if match is not None else None


def gpu_ordinal(device: str) -> int | None:
    """The ``n`` of the first ``gpu:<n>`` in ``device`` (any case), or None."""
    match = _GPU_ORDINAL.search(device)
    return int(match.group(1)) if match is not None else None


def tracer_parts(device: str) -> tuple[str, str] | None:
    """(the device above the lane, the lane) of a GPU tracer device, both as
    written, or None for another device (``/gpu:0/stream:7`` -> (``/gpu:0``,
    ``stream:7``))."""
    match = _TRACER_PARTS.fullmatch(device)
    return (match.group(1), match.group(2)) if match is not None else None
