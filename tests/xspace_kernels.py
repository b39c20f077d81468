"""A real XSpace's GPU activity as TensorFlow 2.21's FULL_TRACE RunMetadata has it.

Reads ``*.xplane.pb`` files with TensorFlow's own ``xplane_pb2`` (tests only)
and applies the rules of TensorFlow's ``ConvertGpuXSpaceToStepStats``: kernels
on ``/device:GPU:<plane id>/stream:<line id>`` and again on ``stream:all``,
labelled ``"<kernel> <kernel_details>"``; copies on ``stream:<id><MemcpyXXX>``
and ``memcpy``, labelled ``"<MemcpyXXX> <memcpy_details>"``; anything else on
``stream:``; ``cuStreamSynchronize`` host events on ``sync``. ``node_name`` is
the ``tf_op`` stat, else the event name; times are microseconds, truncated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tfprof_lite.proto import messages as pb

__all__ = ["DeviceEvent", "data_root", "device_events", "jax_file", "run_meta_of", "JAX_CASES"]

#: The JAX captures made on an H100.
JAX_CASES = ("jax_h100_mlp", "jax_h100_transformer_bf16")
_REPO = Path(__file__).resolve().parents[1]


def data_root() -> Path:
    """``shared/data/xspace`` (``TFPROF_LITE_SHARED_DATA`` names ``shared/data``);
    skips the test where the captures are not on the machine."""
    configured = os.environ.get("TFPROF_LITE_SHARED_DATA")
    bases = [Path(configured)] if configured else []
    bases += [_REPO / "shared" / "data", _REPO.parent / "shared" / "data"]
    bases += [_REPO.parent.parent / "shared" / "data"]
    for base in bases:
        if (base / "xspace" / JAX_CASES[0]).is_dir():
            return base / "xspace"
    pytest.skip("the JAX XSpace captures (shared/data/xspace) are not on this machine")
    raise AssertionError


def jax_file(case: str) -> Path:
    """The ``*.xplane.pb`` of one JAX capture."""
    (found,) = sorted((data_root() / case).glob("plugins/profile/*/*.xplane.pb"))
    return found


@dataclass(frozen=True)
class DeviceEvent:
    """One GPU plane event: its plane and line ids, name, times (ns) and stats."""

    gpu: int
    stream: int
    name: str
    start_ns: int
    dur_ns: int
    stats: dict[str, Any]


def _stats(plane: Any, stats: Any) -> dict[str, Any]:
    out = {}
    for st in stats:
        kind = st.WhichOneof("value")
        value = getattr(st, kind) if kind else None
        if kind == "ref_value":
            value = plane.stat_metadata[value].name
        out[plane.stat_metadata[st.metadata_id].name] = value
    return out


def _space(path: Path) -> Any:
    xplane_pb2 = pytest.importorskip("tensorflow.tsl.profiler.protobuf.xplane_pb2")
    return xplane_pb2.XSpace.FromString(path.read_bytes())


def _start_ns(space: Any) -> int:
    for plane in space.planes:
        if plane.name == "Task Environment":
            stats = _stats(plane, plane.stats)
            return int(stats.get("profile_start_time", 0))
    return 0


def device_events(path: Path) -> list[DeviceEvent]:
    """Every event of every ``/device:GPU:<n>`` plane, times absolute (ns)."""
    space = _space(path)
    base = _start_ns(space)
    out = []
    for plane in space.planes:
        if not plane.name.startswith("/device:GPU:"):
            continue
        for line in plane.lines:
            for ev in line.events:
                out.append(
                    DeviceEvent(
                        plane.id,
                        line.id,
                        plane.event_metadata[ev.metadata_id].name,
                        base + line.timestamp_ns + ev.offset_ps // 1000,
                        ev.duration_ps // 1000,
                        _stats(plane, ev.stats),
                    )
                )
    return out


def _record(ev: DeviceEvent, label: str) -> Any:
    return pb.NodeExecStats(
        node_name=str(ev.stats.get("tf_op") or ev.name),
        all_start_micros=ev.start_ns // 1000,
        op_end_rel_micros=ev.dur_ns // 1000,
        all_end_rel_micros=ev.dur_ns // 1000,
        timeline_label=label,
    )


def run_meta_of(events: list[DeviceEvent]) -> Any:
    """One RunMetadata holding ``events`` the way TF 2.21's FULL_TRACE lays them out."""
    meta = pb.RunMetadata()
    devices: dict[str, Any] = {}

    def add(device: str, record: Any) -> None:
        if device not in devices:
            devices[device] = meta.step_stats.dev_stats.add(device=device)
        devices[device].node_stats.append(record)

    for ev in events:
        gpu = f"/device:GPU:{ev.gpu}"
        if "kernel_details" in ev.stats:
            record = _record(ev, f"{ev.name} {ev.stats['kernel_details']}")
            add(f"{gpu}/stream:{ev.stream}", record)
            add(f"{gpu}/stream:all", record)
        elif "memcpy_details" in ev.stats:
            record = _record(ev, f"{ev.name} {ev.stats['memcpy_details']}")
            add(f"{gpu}/stream:{ev.stream}<{ev.name}>", record)
            add(f"{gpu}/memcpy", record)
        else:
            add(f"{gpu}/stream:", _record(ev, str(ev.stats.get("tf_op") or ev.name)))
    return meta
