"""What a GPU tracer record is: its kind, kernel name, launching op and GPU.

The parsing behind :mod:`tfprof_lite.analysis.kernels` (its module docstring
describes the devices, names and labels of TensorFlow's GPU tracer), and
:func:`chosen`, the records to count once each (a kernel sits on both
``stream:all`` and ``stream:N``, a copy on ``memcpy`` and ``stream:N<...>``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tfprof_lite.analysis.kernel_launch import split_label
from tfprof_lite.base.device_names import gpu_ordinal, tracer_parts
from tfprof_lite.model.execs import KernelColumns
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.window import KIND_COPY as WINDOW_COPY
from tfprof_lite.model.window import KIND_KERNEL as WINDOW_KERNEL
from tfprof_lite.model.window import EventWindow, window_lane

__all__ = [
    "BYTES_RE",
    "DIRECTIONS",
    "DIRECTION_RE",
    "KIND_KERNEL",
    "KIND_MEMCPY",
    "KIND_OTHER",
    "KIND_SYNC",
    "NOT_RECORDED",
    "StepDevices",
    "chosen",
    "copied_bytes",
    "device_parts",
    "gpu_name",
    "kernel_name",
    "launcher",
    "record_kind",
    "step_devices",
    "window_records",
]

#: The kinds of record: a kernel, a copy, a ``cuStreamSynchronize``, other activity.
KIND_KERNEL = "kernel"
KIND_MEMCPY = "memcpy"
KIND_SYNC = "sync"
KIND_OTHER = "other"

#: Kernel name of a TF 1.x kernel record (its timeline_label is empty).
NOT_RECORDED = "(kernel name not recorded)"

#: A copy's direction as the tracer spells it; :data:`DIRECTIONS` normalizes it.
DIRECTION_RE = re.compile(r"(HtoD|H2D|DtoH|D2H|DtoD|D2D|P2P|HtoH|DtoA|AtoD)", re.IGNORECASE)
#: The bytes a copy's label gives (``bytes:N``, ``size:N`` or ``N bytes``).
BYTES_RE = re.compile(r"(?:bytes|size):(\d+)|(\d+) bytes")
DIRECTIONS = {
    "htod": "HtoD",
    "h2d": "HtoD",
    "dtoh": "DtoH",
    "d2h": "DtoH",
    "dtod": "DtoD",
    "d2d": "DtoD",
    "p2p": "P2P",
    "htoh": "HtoH",
    "dtoa": "DtoA",
    "atod": "AtoD",
}


def kernel_name(label: str, name: str, kind: str = KIND_KERNEL, annotated: bool = False) -> str:
    """The kernel (or copy) name of a GPU tracer record.

    Args:
        label: the record's ``timeline_label``.
        name: its ``node_name``.
        kind: ``kernel``, ``memcpy``, ``sync`` or ``other``.
        annotated: ``name`` is known to be an op (so not a kernel name).
    """
    if kind == KIND_MEMCPY:
        match = DIRECTION_RE.search(label) or DIRECTION_RE.search(name)
        if match is None:
            return "Memcpy"
        return "Memcpy" + DIRECTIONS[match.group(1).lower()]
    if kind == KIND_SYNC:
        return name
    if not label:
        return NOT_RECORDED if annotated or ":" in name else name
    return split_label(label)[0] or NOT_RECORDED


def launcher(model: ProfileModel, name: str) -> tuple[str, str]:
    """(op name, op type) of the op that launched a record; ``("", "")`` if none.

    ``name:Type`` is an annotation; a bare name is an op only when it is a node
    of the graph (the model also holds pseudo nodes, named like their op type,
    for the kernel names it met in RunMetadata).
    """
    op, sep, rest = name.partition(":")
    nid = model.index.get(op)
    known = nid is not None and model.ops[nid] != op
    if sep:
        return op, model.ops[nid] if known and nid is not None else rest.split("#", 1)[0]
    if known and nid is not None:
        return op, model.ops[nid]
    return "", ""


def copied_bytes(label: str) -> int:
    """The bytes a copy's label says it moved (0 when it does not say)."""
    match = BYTES_RE.search(label)
    if match is None:
        return 0
    return int(match.group(1) or match.group(2))


def record_kind(sub: str, name: str, label: str) -> str:
    """What a record is, from its device (and, on ``stream:N``, its names)."""
    if sub == "memcpy" or "<" in sub:
        return KIND_MEMCPY
    if sub == "sync":
        return KIND_SYNC
    if sub == "stream:":
        return KIND_OTHER
    if " regs:" in label:
        return KIND_KERNEL
    if ":memcpy" in name.lower() or label.lower().startswith("memcpy"):
        return KIND_MEMCPY
    return KIND_KERNEL


def gpu_name(prefix: str) -> str:
    """``/device:GPU:N`` for any spelling of a GPU device prefix (the tracer's
    devices may or may not carry the ``/job:.../task:N`` part)."""
    ordinal = gpu_ordinal(prefix)
    return f"/device:GPU:{ordinal}" if ordinal is not None else prefix


def device_parts(dev: str) -> tuple[str, str] | None:
    """(GPU, lower-cased sub-device) of a tracer device, or None for another device."""
    parts = tracer_parts(dev)
    if parts is None:
        return None
    return gpu_name(parts[0]), parts[1].lower()


#: The GPUs of one step that have a ``stream:all`` device, and those that have a
#: ``memcpy`` device (their records count; the copies elsewhere do not).
StepDevices = tuple[frozenset[str], frozenset[str]]


def _parts(dev: str, devices: dict[str, tuple[str, str] | None]) -> tuple[str, str] | None:
    if dev in devices:
        return devices[dev]
    parts = devices[dev] = device_parts(dev)
    return parts


def step_devices(devs: Iterable[str], devices: dict[str, tuple[str, str] | None]) -> StepDevices:
    """The :data:`StepDevices` of a step whose records sit on ``devs`` (``devices``
    caches :func:`device_parts` across steps)."""
    has_all: set[str] = set()
    has_memcpy: set[str] = set()
    for dev in devs:
        parts = _parts(dev, devices)
        if parts is not None and parts[1] == "stream:all":
            has_all.add(parts[0])
        elif parts is not None and parts[1] == "memcpy":
            has_memcpy.add(parts[0])
    return frozenset(has_all), frozenset(has_memcpy)


def chosen(
    dev: str,
    name: str,
    label: str,
    devices: dict[str, tuple[str, str] | None],
    kinds: dict[tuple[str, str, str], str],
    step: StepDevices,
) -> tuple[str, str] | None:
    """(GPU, kind) of a record to count, or None: not a GPU's, or a copy of a
    record counted on another device of its GPU (``step``: the step's
    :func:`step_devices`).

    ``devices`` caches :func:`device_parts` and ``kinds`` :func:`record_kind` across
    steps (a trace has a few devices and hundreds of distinct records among
    thousands).
    """
    parts = _parts(dev, devices)
    if parts is None:
        return None
    gpu, sub = parts
    kind = kinds.get((sub, name, label))
    if kind is None:
        kind = kinds[(sub, name, label)] = record_kind(sub, name, label)
    has_all, has_memcpy = step
    per_stream = sub not in ("stream:all", "memcpy", "sync", "stream:")
    if per_stream and kind == KIND_MEMCPY and gpu in has_memcpy:
        return None
    if per_stream and kind == KIND_KERNEL and gpu in has_all:
        return None
    if sub == "stream:all" and kind == KIND_MEMCPY and gpu in has_memcpy:
        return None
    return gpu, kind


def window_records(window: EventWindow) -> KernelColumns:
    """The GPU events of a profile's whole window (``ProfileModel.event_window``)
    as tracer records, one per event, on the device that counts it: a kernel on
    ``stream:all`` labelled ``<kernel> <details>``, a copy on ``memcpy`` labelled
    ``<MemcpyXXX> <details>``, other activity on ``stream:`` labelled with its op;
    named after the op each adds its time to, as the steps' records are."""
    events = window.device
    dev: list[str] = []
    label: list[str] = []
    gpus = events.gpu.tolist()
    for gpu, kind, name, said, op in zip(
        gpus, events.kind.tolist(), events.name, events.details, events.op
    ):
        dev.append(window_lane(gpu, kind))
        if kind == WINDOW_KERNEL:
            label.append(f"{name} {said}")
        elif kind == WINDOW_COPY:
            copy = name if name.startswith("Memcpy") else "Memcpy"
            label.append(f"{copy} {said}" if said else copy)
        else:
            label.append(op)
    dur_ns = events.dur_ns.tolist()
    return KernelColumns(
        dev=dev,
        name=list(events.op),
        label=label,
        start=(events.start_ns // 1000).tolist(),
        dur=[d // 1000 for d in dur_ns],
        dur_ns=dur_ns,
    )
