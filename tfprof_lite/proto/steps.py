"""RunMetadata step statistics as flat columns: the one thing ``add_step`` needs.

:class:`StepColumns` holds, for every ``NodeExecStats`` of a RunMetadata's
``step_stats`` (device by device, in wire order), the handful of fields tfprof
reads, as NumPy columns and two string lists. One row = one NodeExecStats.

Row columns (length ``n``):

* ``dev``: int32, index into ``devices`` (one entry per ``DeviceStepStats``, in
  order; equal device strings may repeat);
* ``name``: ``node_name``; ``label``: ``timeline_label`` (``""`` when unset);
* ``start``: ``all_start_micros``; ``rel``: ``op_end_rel_micros``;
* ``total``/``peak``/``live``: the sums (int64, wrapping around like C++) of
  ``total_bytes``/``peak_bytes``/``live_bytes`` over the row's ``memory``
  entries (``AllocatorMemoryUsed``);
* ``gpu_allocs``: int32, how many of those entries have ``"GPU"`` in their
  ``allocator_name``; ``gpu_in_use``: the largest ``allocator_bytes_in_use``
  among them (0 when none, never below 0);
* ``temp``/``persist``: ``memory_stats.temp_memory_size`` and
  ``memory_stats.persistent_memory_size`` (0 when ``memory_stats`` is absent).

Sparse columns, each tied to a row by a ``*_row`` int32 column, in wire order:

* outputs (``o_*``): one entry per ``NodeOutput`` whose ``tensor_description``
  is present and holds an ``allocation_description`` (presence, not non-zero
  content): ``o_slot`` (int32), ``o_bytes`` = max(``allocated_bytes``,
  ``requested_bytes``) (int64), ``o_ptr`` (uint64);
* allocations (``a_*``): every ``allocation_records`` entry of every memory
  entry whose ``allocator_name`` contains ``"GPU"``: ``a_micros``, ``a_bytes``;
* raw records (``r_*``): for every row with at least one ``memory`` entry, its
  memory record for the memory profile (``raw``): from a RunMetadata the
  serialized NodeExecStats (bytes; any serialization that parses back to the
  same message is fine); from an XSpace's allocator events the model's
  ``MemoryRef`` into its ``MemoryRecords`` columns, read into a ``MemoryDetail``
  on demand (this layer neither makes nor reads it, hence the field's type
  ``object``).

``has_step_stats`` says whether the RunMetadata has a ``step_stats`` field at
all (``HasField``), even an empty one.

Two decoders produce equal columns: the pure-Python one walks a parsed message
(:func:`columns_from_message`); the optional native one reads the bytes
(:func:`decode_step_columns` uses it when built and allowed, else parses and
walks). Malformed bytes always end up in the pure path, so errors are the same.

``has_step_stats`` says whether the RunMetadata holds a ``step_stats`` field at
all (present, even empty), as protobuf's ``HasField`` does.

The environment variable ``TFPROF_LITE_PURE_PYTHON=1`` (read at every call)
keeps the native decoder out; ``docs/native.md`` says when it declines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import numpy.typing as npt

from tfprof_lite._native import PURE_PYTHON_ENV, load, pure_forced
from tfprof_lite.base.arrays import I32, I64, U64, empty_i32, empty_i64, empty_u64

__all__ = [
    "MEM_FIELDS",
    "PURE_PYTHON_ENV",
    "StepColumns",
    "columns_from_message",
    "decode_step_columns",
    "native_available",
    "native_columns",
    "pure_forced",
]


#: ExecMemory's value fields (wire numbers 1-10), in order: the per-step
#: memory columns of the model (``model/execs.py``) and of a saved profile
#: (``proto/profiles.py``).
MEM_FIELDS = (
    "memory_micros",
    "host_temp_bytes",
    "host_persistent_bytes",
    "accelerator_temp_bytes",
    "accelerator_persistent_bytes",
    "requested_bytes",
    "peak_bytes",
    "residual_bytes",
    "output_bytes",
    "allocator_bytes_in_use",
)

_MOD64 = 1 << 64
_HALF64 = 1 << 63


@dataclass
class StepColumns:
    """One RunMetadata's step statistics in columns (see the module docstring)."""

    devices: list[str] = field(default_factory=list)
    dev: I32 = field(default_factory=empty_i32)
    name: list[str] = field(default_factory=list)
    label: list[str] = field(default_factory=list)
    start: I64 = field(default_factory=empty_i64)
    rel: I64 = field(default_factory=empty_i64)
    total: I64 = field(default_factory=empty_i64)
    peak: I64 = field(default_factory=empty_i64)
    live: I64 = field(default_factory=empty_i64)
    gpu_allocs: I32 = field(default_factory=empty_i32)
    gpu_in_use: I64 = field(default_factory=empty_i64)
    temp: I64 = field(default_factory=empty_i64)
    persist: I64 = field(default_factory=empty_i64)
    o_row: I32 = field(default_factory=empty_i32)
    o_slot: I32 = field(default_factory=empty_i32)
    o_bytes: I64 = field(default_factory=empty_i64)
    o_ptr: U64 = field(default_factory=empty_u64)
    a_row: I32 = field(default_factory=empty_i32)
    a_micros: I64 = field(default_factory=empty_i64)
    a_bytes: I64 = field(default_factory=empty_i64)
    r_row: I32 = field(default_factory=empty_i32)
    raw: list[object] = field(default_factory=list)  # bytes or a decoded record
    has_step_stats: bool = False
    #: Rows that add no time (records of memory only, made from XSpace allocator
    #: events); empty when none. No RunMetadata decoder sets it.
    untimed: npt.NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))

    def __len__(self) -> int:
        return len(self.name)


# ----------------------------------------------------------------- pure Python


def _wrap64(value: int) -> int:
    """``value`` wrapped into int64 (two's complement), as a C++ int64 sum would."""
    return ((value + _HALF64) % _MOD64) - _HALF64


def columns_from_message(meta: Any) -> StepColumns:
    """The step columns of a parsed RunMetadata message (ours, upb backend).

    Reads only the fields the columns need; ``raw`` holds ``SerializeToString()``
    of each NodeExecStats that has memory entries.
    """
    devices: list[str] = []
    counts: list[int] = []
    name: list[str] = []
    label: list[str] = []
    start: list[int] = []
    rel: list[int] = []
    temp: list[int] = []
    persist: list[int] = []
    # One entry per row with memory entries (aligned with r_row), scattered at the end.
    m_total: list[int] = []
    m_peak: list[int] = []
    m_live: list[int] = []
    m_gpu: list[int] = []
    m_in_use: list[int] = []
    r_row: list[int] = []
    raw: list[object] = []
    o_row: list[int] = []
    o_slot: list[int] = []
    o_bytes: list[int] = []
    o_ptr: list[int] = []
    a_row: list[int] = []
    a_micros: list[int] = []
    a_bytes: list[int] = []

    name_append, label_append = name.append, label.append
    start_append, rel_append = start.append, rel.append
    temp_append, persist_append = temp.append, persist.append
    m_total_append, m_peak_append, m_live_append = m_total.append, m_peak.append, m_live.append
    m_gpu_append, m_in_use_append = m_gpu.append, m_in_use.append
    r_row_append, raw_append = r_row.append, raw.append
    o_row_append, o_slot_append = o_row.append, o_slot.append
    o_bytes_append, o_ptr_append = o_bytes.append, o_ptr.append
    a_row_append, a_micros_append, a_bytes_append = a_row.append, a_micros.append, a_bytes.append
    wrap = _wrap64
    has_ad = "allocation_description"

    row = 0
    for dev_stats in meta.step_stats.dev_stats:
        devices.append(dev_stats.device)
        first = row
        for ns in dev_stats.node_stats:
            name_append(ns.node_name)
            label_append(ns.timeline_label)
            start_append(ns.all_start_micros)
            rel_append(ns.op_end_rel_micros)
            stats = ns.memory_stats  # an absent one reads as zeros
            temp_append(stats.temp_memory_size)
            persist_append(stats.persistent_memory_size)
            memory = ns.memory
            if memory:
                total = peak = live = gpu = in_use = 0
                for mem in memory:
                    total += mem.total_bytes
                    peak += mem.peak_bytes
                    live += mem.live_bytes
                    if "GPU" in mem.allocator_name:
                        gpu += 1
                        used = mem.allocator_bytes_in_use
                        if used > in_use:
                            in_use = used
                        for rec in mem.allocation_records:
                            a_row_append(row)
                            a_micros_append(rec.alloc_micros)
                            a_bytes_append(rec.alloc_bytes)
                if len(memory) > 1:
                    total, peak, live = wrap(total), wrap(peak), wrap(live)
                m_total_append(total)
                m_peak_append(peak)
                m_live_append(live)
                m_gpu_append(gpu)
                m_in_use_append(in_use)
                r_row_append(row)
                raw_append(ns.SerializeToString())
            for out in ns.output:
                # Presence: an absent tensor_description reads as an empty message,
                # which has no allocation_description, so one HasField tests both.
                desc = out.tensor_description
                if desc.HasField(has_ad):
                    alloc = desc.allocation_description
                    allocated, requested = alloc.allocated_bytes, alloc.requested_bytes
                    o_row_append(row)
                    o_slot_append(out.slot)
                    o_bytes_append(allocated if allocated > requested else requested)
                    o_ptr_append(alloc.ptr)
            row += 1
        counts.append(row - first)

    rows = np.array(r_row, dtype=np.int32)
    return StepColumns(
        devices=devices,
        dev=np.repeat(np.arange(len(devices), dtype=np.int32), counts),
        name=name,
        label=label,
        start=np.array(start, dtype=np.int64),
        rel=np.array(rel, dtype=np.int64),
        total=_scatter(row, rows, m_total, np.int64),
        peak=_scatter(row, rows, m_peak, np.int64),
        live=_scatter(row, rows, m_live, np.int64),
        gpu_allocs=_scatter(row, rows, m_gpu, np.int32),
        gpu_in_use=_scatter(row, rows, m_in_use, np.int64),
        temp=np.array(temp, dtype=np.int64),
        persist=np.array(persist, dtype=np.int64),
        o_row=np.array(o_row, dtype=np.int32),
        o_slot=np.array(o_slot, dtype=np.int32),
        o_bytes=np.array(o_bytes, dtype=np.int64),
        o_ptr=np.array(o_ptr, dtype=np.uint64),
        a_row=np.array(a_row, dtype=np.int32),
        a_micros=np.array(a_micros, dtype=np.int64),
        a_bytes=np.array(a_bytes, dtype=np.int64),
        r_row=rows,
        raw=raw,
        has_step_stats=bool(meta.HasField("step_stats")),
    )


def _scatter(n: int, rows: I32, values: list[int], dtype: Any) -> Any:
    """A length-``n`` column of zeros with ``values`` at ``rows``."""
    if len(values) == n:  # every row has memory entries: rows is 0..n-1
        return np.array(values, dtype=dtype)
    out = np.zeros(n, dtype=dtype)
    if values:
        out[rows] = np.array(values, dtype=dtype)
    return out


# ----------------------------------------------------------------- native


def _native() -> Any:
    """The extension module, or None when it is not built."""
    return load("_stepdecode")


def native_available() -> bool:
    """Whether the native decoder is built and importable.

    This does not look at :data:`PURE_PYTHON_ENV`; the decoders do, at every call.
    """
    return _native() is not None


_pure_forced = pure_forced


def _columns_from_native(parts: tuple[Any, ...]) -> StepColumns:
    """StepColumns from the tuple of the native ``decode`` (layout in its C source)."""
    has_step_stats, devices, name, label, raw = parts[:5]
    dev, start, rel, total, peak, live, gpu_allocs, gpu_in_use, temp, persist = parts[5:15]
    o_row, o_slot, o_bytes, o_ptr, a_row, a_micros, a_bytes, r_row = parts[15:23]
    i32, i64, u64 = np.int32, np.int64, np.uint64
    frombuffer = np.frombuffer
    return StepColumns(
        devices=devices,
        dev=frombuffer(dev, dtype=i32),
        name=name,
        label=label,
        start=frombuffer(start, dtype=i64),
        rel=frombuffer(rel, dtype=i64),
        total=frombuffer(total, dtype=i64),
        peak=frombuffer(peak, dtype=i64),
        live=frombuffer(live, dtype=i64),
        gpu_allocs=frombuffer(gpu_allocs, dtype=i32),
        gpu_in_use=frombuffer(gpu_in_use, dtype=i64),
        temp=frombuffer(temp, dtype=i64),
        persist=frombuffer(persist, dtype=i64),
        o_row=frombuffer(o_row, dtype=i32),
        o_slot=frombuffer(o_slot, dtype=i32),
        o_bytes=frombuffer(o_bytes, dtype=i64),
        o_ptr=frombuffer(o_ptr, dtype=u64),
        a_row=frombuffer(a_row, dtype=i32),
        a_micros=frombuffer(a_micros, dtype=i64),
        a_bytes=frombuffer(a_bytes, dtype=i64),
        r_row=frombuffer(r_row, dtype=i32),
        raw=raw,
        has_step_stats=bool(has_step_stats),
    )


def native_columns(raw: bytes | bytearray | memoryview) -> StepColumns | None:
    """The step columns of serialized RunMetadata ``raw`` by the native decoder.

    None when the decoder is not built, is turned off by :data:`PURE_PYTHON_ENV`,
    or declines the bytes (anything outside the plain subset it reads, including
    every malformed input); the caller then parses ``raw`` itself. The other
    top-level fields (graphs, cost graph, session metadata), which the columns do
    not use, are checked by parsing them with protobuf.
    """
    module = _native()
    if module is None or _pure_forced():
        return None
    data = raw if isinstance(raw, bytes) else bytes(raw)
    parts = module.decode(data)
    if parts is None:
        return None
    others = parts[-1]
    if others and not _others_are_clean(others):
        return None
    return _columns_from_native(parts)


def _others_are_clean(others: bytes) -> bool:
    """Whether the top-level fields the native decoder skipped parse with protobuf
    and hold no field of a wrong wire type.

    A wrong wire type is what makes :func:`tfprof_lite.proto.codec.parse` look for
    another input kind (a RunMetadata that "looks like an OpLogProto" is refused),
    so such bytes are left to the caller's parse, which refuses them the same way.
    """
    from tfprof_lite.proto import kinds
    from tfprof_lite.proto.messages import RunMetadata

    message = RunMetadata()
    try:
        message.ParseFromString(others)
    except Exception:  # left to the caller's own parse, which reports it
        return False
    return not kinds.mismatched(message)


def decode_step_columns(
    raw: bytes | bytearray | memoryview, *, parse: Callable[[bytes], Any] | None = None
) -> StepColumns:
    """The step columns of serialized RunMetadata ``raw``.

    The native decoder reads the bytes when it is built and allowed; otherwise,
    or when it declines, ``raw`` is parsed (by ``parse`` when given, so the caller
    gets its usual errors; else by ``RunMetadata.ParseFromString``) and walked by
    :func:`columns_from_message`.

    Raises:
        Whatever ``parse`` raises; without ``parse``, protobuf's ``DecodeError``
        when ``raw`` is not a valid RunMetadata.
    """
    cols = native_columns(raw)
    if cols is not None:
        return cols
    data = raw if isinstance(raw, bytes) else bytes(raw)
    if parse is not None:
        return columns_from_message(parse(data))
    from tfprof_lite.proto.messages import RunMetadata

    meta = RunMetadata()
    meta.ParseFromString(data)
    return columns_from_message(meta)
