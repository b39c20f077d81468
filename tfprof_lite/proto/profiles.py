"""Saved profiles (ProfileProto) as node tuples and per-step columns.

:class:`ProfileColumns` is what loading a ``profile_<step>`` file needs, in the
order the model takes it: nodes sorted by their ``id`` (a node's position is its
model id) and, per step, NumPy columns of its executions. Two decoders produce
equal columns: the pure-Python one walks a parsed message
(:func:`columns_from_profile`), the optional native one reads the bytes
(:func:`native_profile_columns`, module ``tfprof_lite._native._profiledecode``).
``TFPROF_LITE_PURE_PYTHON=1`` keeps the native one out; it declines (returns
None) on anything outside the plain subset it reads, and the caller then parses
the bytes with protobuf, so errors are the same on both paths.

A node tuple (:data:`NodeRow`) holds: name, op, inputs (position -> producer
name, positions ascending; ``""`` for an unknown producer), src_output
(producer name -> output index), output_shapes (index -> dims, ascending),
shape (dims, None when empty), op_types (set), canonical_device, host_device,
float_ops, trace (bytes: five native-order int64 per frame, ``file_id``,
``lineno``, ``function_id``, ``line_id``, ``func_start_line``; None when the
node has no ``trace`` field), attrs (name -> AttrValue bytes), has_execs.

A step's executions (:class:`StepBlock`) follow these rules, node by node in id
order: the node's ``devices`` get step-local codes in their order and add one
(node, device) pair per distinct code, ascending (``-1`` when it has none); a
non-zero start or end adds a span; ``accelerator_execs`` then ``cpu_execs``, each
by device string, add (start, duration) times (missing values read 0); every
``memory_execs`` entry adds a memory row and its ``output_memory`` by slot;
every ``allocations`` entry adds an allocation row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite._native import load
from tfprof_lite.proto.steps import MEM_FIELDS, pure_forced

__all__ = [
    "BLOCK_COLUMNS",
    "NodeRow",
    "ProfileColumns",
    "StepBlock",
    "columns_from_profile",
    "native_profile_columns",
]

#: A node's fields, in the order of the module docstring.
NodeRow = tuple[Any, ...]


#: Every column of a :class:`StepBlock` with its dtype, in the native tuple's order.
BLOCK_COLUMNS: tuple[tuple[str, Any], ...] = (
    ("pair_node", np.int32),
    ("pair_dev", np.int32),
    ("span_node", np.int32),
    ("span_start", np.int64),
    ("span_end", np.int64),
    ("t_node", np.int32),
    ("t_kind", np.int8),
    ("t_dev", np.int32),
    ("t_start", np.int64),
    ("t_dur", np.int64),
    ("m_node", np.int32),
    *((f"m_{name}", np.int64) for name in MEM_FIELDS),
    ("o_row", np.int64),
    ("o_slot", np.int32),
    ("o_bytes", np.int64),
    ("o_ptr", np.uint64),
    ("a_node", np.int32),
    ("a_micros", np.int64),
    ("a_bytes", np.int64),
)

_KIND_ACCELERATOR = 1
_KIND_CPU = 2


@dataclass
class StepBlock:
    """One step's executions: device strings (step-local codes) and columns."""

    step: int
    devices: list[str]
    cols: dict[str, npt.NDArray[Any]]


@dataclass
class ProfileColumns:
    """A saved profile, decoded (see the module docstring)."""

    has_trace: bool = False
    steps: list[int] = field(default_factory=list)
    id_to_string: dict[int, str] = field(default_factory=dict)
    nodes: list[NodeRow] = field(default_factory=list)
    blocks: list[StepBlock] = field(default_factory=list)


# ----------------------------------------------------------------- pure Python

_FRAME = np.dtype(np.int64)


class _Block:
    """Column lists of one step while the pure decoder walks the nodes."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.devices: list[str] = []
        self.codes: dict[str, int] = {}
        self.cols: dict[str, list[int]] = {name: [] for name, _ in BLOCK_COLUMNS}
        self.mem_rows = 0

    def code(self, dev: str) -> int:
        got = self.codes.get(dev)
        if got is None:
            got = self.codes[dev] = len(self.devices)
            self.devices.append(dev)
        return got

    def add(self, nid: int, exe: Any) -> None:
        cols = self.cols
        codes = sorted({self.code(dev) for dev in exe.devices}) or [-1]
        cols["pair_node"] += [nid] * len(codes)
        cols["pair_dev"] += codes
        if exe.all_start_micros or exe.latest_end_micros:
            cols["span_node"].append(nid)
            cols["span_start"].append(exe.all_start_micros)
            cols["span_end"].append(exe.latest_end_micros)
        for kind, times in ((_KIND_ACCELERATOR, exe.accelerator_execs), (_KIND_CPU, exe.cpu_execs)):
            for dev in sorted(times):
                code = self.code(dev)
                for pair in times[dev].times:
                    vals = list(pair.int64_values[:2]) + [0, 0]
                    for name, value in zip(
                        ("t_node", "t_kind", "t_dev", "t_start", "t_dur"),
                        (nid, kind, code, vals[0], vals[1]),
                    ):
                        cols[name].append(value)
        for mem in exe.memory_execs:
            cols["m_node"].append(nid)
            for name in MEM_FIELDS:
                cols[f"m_{name}"].append(getattr(mem, name))
            for slot, out in sorted(mem.output_memory.items()):
                cols["o_row"].append(self.mem_rows)
                cols["o_slot"].append(slot)
                cols["o_bytes"].append(out.bytes)
                cols["o_ptr"].append(out.ptr)
            self.mem_rows += 1
        for rec in exe.allocations:
            cols["a_node"].append(nid)
            cols["a_micros"].append(rec.alloc_micros)
            cols["a_bytes"].append(rec.alloc_bytes)

    def done(self) -> StepBlock:
        cols = {name: np.asarray(self.cols[name], dtype=dtype) for name, dtype in BLOCK_COLUMNS}
        return StepBlock(self.step, self.devices, cols)


def _trace(node: Any) -> bytes | None:
    if not node.HasField("trace"):
        return None
    frames = [
        (t.file_id, t.lineno, t.function_id, t.line_id, t.func_start_line)
        for t in node.trace.traces
    ]
    return np.asarray(frames, dtype=_FRAME).reshape(-1).tobytes()


def _node_row(node: Any, by_id: dict[int, str]) -> NodeRow:
    inputs: dict[int, str] = {}
    src_output: dict[str, int] = {}
    index = node.src_output_index
    for pos, producer in sorted(node.inputs.items()):
        src = by_id.get(producer, "")
        inputs[pos] = src
        src_output[src] = index.get(producer, 0)
    shapes = {idx: list(t.int64_values) for idx, t in sorted(node.output_shapes.items())}
    return (
        node.name,
        node.op,
        inputs,
        src_output,
        shapes,
        list(node.shape) if len(node.shape) else None,
        set(node.op_types),
        node.canonical_device,
        node.host_device,
        node.float_ops,
        _trace(node),
        {key: value.SerializeToString() for key, value in node.attrs.items()},
        bool(len(node.execs)),
    )


def columns_from_profile(profile: Any) -> ProfileColumns:
    """The columns of a parsed ProfileProto message (ours, upb backend)."""
    ordered = sorted(profile.nodes.values(), key=lambda n: n.id)
    by_id = {node.id: node.name for node in ordered}
    blocks: dict[int, _Block] = {}
    rows = []
    for nid, node in enumerate(ordered):
        rows.append(_node_row(node, by_id))
        for step in sorted(node.execs):
            block = blocks.get(step)
            if block is None:
                block = blocks[step] = _Block(step)
            block.add(nid, node.execs[step])
    return ProfileColumns(
        has_trace=profile.has_trace,
        steps=list(profile.steps),
        id_to_string=dict(profile.id_to_string),
        nodes=rows,
        blocks=[block.done() for block in blocks.values()],
    )


# ----------------------------------------------------------------- native


def _native() -> Any:
    """The extension module, or None when it is not built."""
    return load("_profiledecode")


def native_profile_available() -> bool:
    """Whether the native profile decoder is built and importable."""
    return _native() is not None


def _attrs_parse(values: Iterable[bytes]) -> bool:
    """Whether every AttrValue in ``values`` parses (the native decoder does not
    look into them; a whole-message parse would)."""
    from tfprof_lite.proto.messages import AttrValue

    check = AttrValue()
    try:
        for value in set(values):
            check.ParseFromString(value)
    except Exception:  # left to the caller's own parse, which reports it
        return False
    return True


def native_profile_columns(raw: bytes) -> ProfileColumns | None:
    """The columns of serialized ProfileProto ``raw`` by the native decoder.

    None when the decoder is not built, is turned off, or declines the bytes
    (anything outside the plain subset it reads, including every malformed
    input, and attribute values protobuf would reject); the caller then parses
    ``raw`` itself.
    """
    module = _native()
    if module is None or pure_forced():
        return None
    parts = module.decode(raw)
    if parts is None:
        return None
    has_trace, steps, id_to_string, nodes, blocks, attr_values = parts
    if not _attrs_parse(attr_values):
        return None
    out = []
    for block in blocks:
        cols = {
            name: np.frombuffer(buf, dtype=dtype)
            for (name, dtype), buf in zip(BLOCK_COLUMNS, block[2:])
        }
        out.append(StepBlock(block[0], block[1], cols))
    return ProfileColumns(bool(has_trace), steps, id_to_string, nodes, out)
