"""Hand-made tfprof inputs built with tfprof_lite's own message classes (no TensorFlow).

GraphDefs (`node`, `graph_def`), RunMetadata (`ns`, `run_meta`) and op logs
(`op_log`) for small synthetic profiles. The messages are wire-compatible with
TensorFlow's, so their serialized bytes feed TF's tfprof and ours alike.
`HandCase` bundles one such profile (GraphDef, op log, steps); `ALL_SELECT` is
every ``-select`` column, for the queries that show them all.

Device strings used by the GPU-style cases (tfprof classifies them after
lower-casing): `GPU` (canonical device, CPU-side time), `STREAM_ALL`
(accelerator time), `STREAM_7`, `MEMCPY`, `STREAM_7_H2D` (no time).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

from tfprof_lite.proto import messages as pb

__all__ = [
    "ALL_SELECT",
    "CPU",
    "CPU1",
    "GPU",
    "GPU1",
    "MEMCPY",
    "STREAM_7",
    "STREAM_7_H2D",
    "STREAM_ALL",
    "HandCase",
    "Mem",
    "code_entry",
    "graph_def",
    "node",
    "ns",
    "op_log",
    "run_meta",
]

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
CPU1 = "/job:localhost/replica:0/task:0/device:CPU:1"
GPU = "/job:localhost/replica:0/task:0/device:GPU:0"
GPU1 = "/job:localhost/replica:0/task:0/device:GPU:1"
STREAM_ALL = "/device:GPU:0/stream:all"
STREAM_7 = "/device:GPU:0/stream:7"
MEMCPY = "/device:GPU:0/memcpy"
STREAM_7_H2D = "/job:localhost/replica:0/task:0/device:GPU:0/stream:7<memcpyh2d>"

#: Every ``-select`` column tfprof shows (``tensor_value`` last: only nodes with a
#: recorded value show it).
ALL_SELECT: list[str] = [
    "micros",
    "bytes",
    "peak_bytes",
    "residual_bytes",
    "output_bytes",
    "occurrence",
    "params",
    "float_ops",
    "device",
    "op_types",
    "input_shapes",
    "accelerator_micros",
    "cpu_micros",
    "tensor_value",
]

#: A dims list; None = unknown rank, [] = scalar.
Dims = Optional[Sequence[int]]


def _shape(msg: Any, dims: Dims) -> None:
    msg.SetInParent()
    if dims is None:
        msg.unknown_rank = True
        return
    for d in dims:
        msg.dim.add().size = d


def node(
    name: str,
    op: str,
    inputs: Sequence[str] = (),
    shape: Dims | bool = False,
    outputs: Sequence[Dims] = (),
    attrs: Mapping[str, str] | None = None,
) -> Any:
    """A NodeDef.

    Args:
        name: node name.
        op: op type string (any string; tfprof does not check it).
        inputs: input strings (``a``, ``a:1``, ``^ctrl``).
        shape: dims of a ``shape`` attr (None: unknown rank, []: scalar); False: none.
        outputs: ``_output_shapes`` entries (None: unknown rank, []: scalar).
        attrs: extra string attrs.
    """
    msg = pb.NodeDef(name=name, op=op)
    msg.input.extend(inputs)
    if shape is not False:
        assert not isinstance(shape, bool)
        _shape(msg.attr["shape"].shape, shape)
    if outputs:
        shapes = msg.attr["_output_shapes"].list.shape
        for dims in outputs:
            _shape(shapes.add(), dims)
    for key, value in (attrs or {}).items():
        msg.attr[key].s = value.encode("utf-8")
    return msg


def graph_def(nodes: Iterable[Any]) -> Any:
    """A GraphDef holding ``nodes`` in order."""
    msg = pb.GraphDef()
    msg.node.extend(nodes)
    return msg


@dataclasses.dataclass(frozen=True)
class Mem:
    """One AllocatorMemoryUsed entry."""

    allocator: str
    total: int = 0
    peak: int = 0
    live: int = 0
    in_use: int = 0
    records: tuple[tuple[int, int], ...] = ()


def ns(
    name: str,
    start: int,
    dur: int,
    mem: Sequence[Mem] = (),
    out_bytes: Sequence[int] | None = None,
    temp: int = 0,
    persist: int = 0,
    memory_stats: bool | None = None,
    all_end: int | None = None,
) -> Any:
    """A NodeExecStats record.

    Args:
        name: node_name (may carry a ``:suffix``).
        start: all_start_micros.
        dur: op_end_rel_micros (all_end_rel_micros defaults to it).
        mem: memory[] entries.
        out_bytes: per output slot, allocated (= requested) bytes; the allocated
            value of slot i is ``b + i`` and requested ``b`` to see the max rule.
        temp, persist: memory_stats sizes (memory_stats set when either is
            non-zero or ``memory_stats`` is True).
        all_end: all_end_rel_micros (unused by tfprof).
    """
    msg = pb.NodeExecStats(
        node_name=name,
        all_start_micros=start,
        op_start_rel_micros=0,
        op_end_rel_micros=dur,
        all_end_rel_micros=dur if all_end is None else all_end,
    )
    for m in mem:
        used = msg.memory.add()
        used.allocator_name = m.allocator
        used.total_bytes = m.total
        used.peak_bytes = m.peak
        used.live_bytes = m.live
        used.allocator_bytes_in_use = m.in_use
        for micros, nbytes in m.records:
            rec = used.allocation_records.add()
            rec.alloc_micros = micros
            rec.alloc_bytes = nbytes
    for slot, nbytes in enumerate(out_bytes or ()):
        out = msg.output.add()
        out.slot = slot
        desc = out.tensor_description
        desc.dtype = 1
        desc.allocation_description.requested_bytes = nbytes
        desc.allocation_description.allocated_bytes = nbytes + slot
        desc.allocation_description.ptr = 4096 * (slot + 1)
    if memory_stats or (memory_stats is None and (temp or persist)):
        msg.memory_stats.temp_memory_size = temp
        msg.memory_stats.persistent_memory_size = persist
    return msg


def run_meta(devices: Sequence[tuple[str, Sequence[Any]]]) -> Any:
    """A RunMetadata with one DeviceStepStats per ``(device, records)`` pair, in order."""
    msg = pb.RunMetadata()
    for device, records in devices:
        dev = msg.step_stats.dev_stats.add()
        dev.device = device
        dev.node_stats.extend(records)
    return msg


def code_entry(
    name: str,
    frames: Sequence[tuple[str, int, str]],
    strings: dict[str, int],
    types: Sequence[str] = (),
    float_ops: int = 0,
) -> Any:
    """An OpLogEntry whose code_def holds ``frames`` = (file, lineno, function), outermost
    first; ``strings`` is the shared string table (text -> id), extended as needed."""
    entry = pb.OpLogEntry(name=name, float_ops=float_ops)
    entry.types.extend(types)

    def sid(text: str) -> int:
        return strings.setdefault(text, len(strings))

    for file, lineno, func in frames:
        t = entry.code_def.traces.add()
        t.file_id = sid(file)
        t.lineno = lineno
        t.function_id = sid(func)
        t.line_id = sid(f"{func}()")
        t.func_start_line = -1
    return entry


def op_log(entries: Iterable[Any], strings: Mapping[str, int] | None = None) -> Any:
    """An OpLogProto of ``entries`` with ``strings`` as its id_to_string table."""
    msg = pb.OpLogProto()
    msg.log_entries.extend(entries)
    for text, sid in (strings or {}).items():
        msg.id_to_string[sid] = text
    return msg


@dataclasses.dataclass(frozen=True, eq=False)
class HandCase:
    """A synthetic profile: serialized GraphDef and OpLogProto plus the steps.

    ``run_metas`` holds ``(step, RunMetadata bytes)`` in add order (a step may
    repeat). Equality is identity so cases can key caches.
    """

    name: str
    graph_def: bytes
    run_metas: list[tuple[int, bytes]]
    op_log: bytes = b""

    @staticmethod
    def make(
        name: str,
        nodes: Iterable[Any],
        steps: Sequence[tuple[int, Any]],
        log: Any = None,
    ) -> HandCase:
        """Build a case from NodeDefs, ``(step, RunMetadata)`` pairs and an op log."""
        return HandCase(
            name=name,
            graph_def=graph_def(nodes).SerializeToString(),
            run_metas=[(step, meta.SerializeToString()) for step, meta in steps],
            op_log=log.SerializeToString() if log is not None else b"",
        )
