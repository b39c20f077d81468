"""A second reader of XSpace files for the tests: TensorFlow's own ``xplane_pb2``.

The XProf facts tests cross-check XProf's outputs against what the file holds,
read with ``tensorflow.tsl.profiler.protobuf.xplane_pb2`` (TF 2.21's wheel).
TensorFlow is imported on first use only; without it the callers are skipped.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Union

import pytest

#: A host event name that XProf counts as a TensorFlow op: ``<op name>:<op type>``.
TF_OP_NAME = re.compile(r"^([^\s:]+):([A-Za-z_]\w*)$")


@dataclasses.dataclass(frozen=True)
class Event:
    """One event with its plane, line, name, absolute-in-line times (ps) and resolved stats."""

    plane: str
    line: str
    name: str
    offset_ps: int
    duration_ps: int
    stats: dict[str, Any]


@functools.lru_cache(maxsize=8)
def read_space(path: Union[str, Path]) -> Any:
    """The XSpace at ``path`` parsed by TensorFlow's ``xplane_pb2``."""
    pytest.importorskip("tensorflow")
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    space.ParseFromString(Path(path).read_bytes())
    return space


def _stat_value(stat: Any, names: dict[int, str]) -> Any:
    kind = stat.WhichOneof("value")
    if kind == "ref_value":
        return names.get(stat.ref_value, "")
    return getattr(stat, kind) if kind else None


def events(path: Union[str, Path], plane_prefix: str = "") -> Iterator[Event]:
    """Every event of the planes whose name starts with ``plane_prefix``.

    Stats of the event metadata come first, the event's own stats override them.
    """
    for plane in read_space(path).planes:
        if not plane.name.startswith(plane_prefix):
            continue
        names = {key: meta.name for key, meta in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                meta = plane.event_metadata[event.metadata_id]
                stats = {names.get(s.metadata_id, ""): _stat_value(s, names) for s in meta.stats}
                stats.update(
                    {names.get(s.metadata_id, ""): _stat_value(s, names) for s in event.stats}
                )
                yield Event(
                    plane.name,
                    line.name,
                    meta.name,
                    line.timestamp_ns * 1000 + event.offset_ps,
                    event.duration_ps,
                    stats,
                )


def kernel_groups(
    path: Union[str, Path],
) -> dict[tuple[str, str, str, int, int], tuple[int, float]]:
    """GPU kernels grouped like XProf's kernel stats.

    Key: (kernel name, grid, block, registers, static + dynamic shared bytes);
    value: (count, total µs). A kernel is a GPU event with ``kernel_details``.
    """
    groups: dict[tuple[str, str, str, int, int], list[float]] = collections.defaultdict(
        lambda: [0, 0.0]
    )
    for event in events(path, "/device:GPU"):
        details = event.stats.get("kernel_details")
        if not details:
            continue
        fields = dict(item.split(":", 1) for item in str(details).split())
        shared = int(fields["static_shared"]) + int(fields["dynamic_shared"])
        key = (event.name, fields["grid"], fields["block"], int(fields["regs"]), shared)
        groups[key][0] += 1
        groups[key][1] += event.duration_ps / 1e6
    return {key: (int(v[0]), float(v[1])) for key, v in groups.items()}


def tf_op_events(path: Union[str, Path]) -> dict[tuple[str, str], tuple[int, float]]:
    """Host events named ``<op name>:<op type>``: (name, type) -> (count, total µs)."""
    ops: dict[tuple[str, str], list[float]] = collections.defaultdict(lambda: [0, 0.0])
    for event in events(path, "/host:CPU"):
        match = TF_OP_NAME.match(event.name)
        if match:
            ops[(match.group(1), match.group(2))][0] += 1
            ops[(match.group(1), match.group(2))][1] += event.duration_ps / 1e6
    return {key: (int(v[0]), float(v[1])) for key, v in ops.items()}


def step_markers(path: Union[str, Path], name: str = "train") -> dict[int, Event]:
    """Host events named ``name`` with an ``_r`` stat, by their ``step_num``."""
    return {
        int(event.stats["step_num"]): event
        for event in events(path, "/host:CPU")
        if event.name == name and "_r" in event.stats
    }


def memory_peaks(path: Union[str, Path]) -> dict[str, tuple[int, int]]:
    """Per allocator: (largest ``bytes_allocated``, largest ``peak_bytes_in_use``)
    over its ``MemoryAllocation`` / ``MemoryDeallocation`` events."""
    peaks: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for event in events(path, "/host:CPU"):
        if event.name not in ("MemoryAllocation", "MemoryDeallocation"):
            continue
        allocator = str(event.stats.get("allocator_name", ""))
        peaks[allocator][0] = max(peaks[allocator][0], int(event.stats.get("bytes_allocated", 0)))
        peaks[allocator][1] = max(peaks[allocator][1], int(event.stats.get("peak_bytes_in_use", 0)))
    return {key: (v[0], v[1]) for key, v in peaks.items()}


def profile_window(path: Union[str, Path]) -> tuple[int, int]:
    """``profile_start_time`` and ``profile_stop_time`` (ns since the epoch) of the
    ``Task Environment`` plane; line times are relative to the start."""
    for plane in read_space(path).planes:
        if plane.name == "Task Environment":
            names = {key: meta.name for key, meta in plane.stat_metadata.items()}
            stats = {names.get(s.metadata_id, ""): _stat_value(s, names) for s in plane.stats}
            return int(stats["profile_start_time"]), int(stats["profile_stop_time"])
    raise AssertionError(f"{path}: no Task Environment plane")
