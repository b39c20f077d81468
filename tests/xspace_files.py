"""Where the real XSpace files live for the tests, and hand-made XSpaces."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Any

from tests.xspace_data import JAX_CASES, data_dir, jax_file
from tfprof_lite.proto import messages as pb

__all__ = ["data_dir", "jax_cases", "jax_file", "stat", "two_run_logdir"]


def jax_cases() -> list[str]:
    """The names of the JAX capture folders."""
    return list(JAX_CASES)


def two_run_logdir(root: Path) -> Path:
    """``root`` made a logdir with two runs: ``2020_old`` (the transformer, hosts
    a and b) and ``2099_new`` (the MLP, host vm)."""
    old = root / "plugins" / "profile" / "2020_old"
    old.mkdir(parents=True)
    for host in ("a", "b"):
        shutil.copy(jax_file("jax_h100_transformer_bf16"), old / f"{host}.xplane.pb")
    new = root / "plugins" / "profile" / "2099_new"
    new.mkdir()
    shutil.copy(jax_file(JAX_CASES[0]), new / "vm.xplane.pb")
    return root


def stat(plane: Any, names: dict[str, int], name: str, **value: Any) -> Any:
    """A new XStat of ``plane`` named ``name`` (its metadata added on first use)."""
    if name not in names:
        names[name] = len(names) + 1
        plane.stat_metadata[names[name]].id = names[name]
        plane.stat_metadata[names[name]].name = name
    out = pb.XStat(metadata_id=names[name])
    for key, val in value.items():
        setattr(out, key, val)
    return out


def hand_space(relative: bool = True) -> Any:
    """A small XSpace: a host plane with a step marker and an op, a GPU plane with
    one kernel (ref, compressed and double stats) and a Task Environment plane
    when ``relative``."""
    space = pb.XSpace(hostnames=["box"])
    start = 1_700_000_000_000_000_000
    base = 1_000 if relative else start + 1_000
    host = space.planes.add(id=0, name="/host:CPU")
    names: dict[str, int] = {}
    host.event_metadata[2].name = "train"
    host.event_metadata[1].name = "dense/MatMul:MatMul"
    host.event_metadata[1].display_name = "MatMul"
    line = host.lines.add(id=7, name="python", timestamp_ns=base)
    marker = line.events.add(metadata_id=2, offset_ps=0, duration_ps=9_000_000)
    marker.stats.append(stat(host, names, "_r", int64_value=1))
    marker.stats.append(stat(host, names, "step_num", int64_value=3))
    op = line.events.add(metadata_id=1, offset_ps=1_000_000, duration_ps=2_000_000)
    op.stats.append(stat(host, names, "big", uint64_value=(1 << 64) - 5))
    line.events.add(metadata_id=99, num_occurrences=4, duration_ps=5)
    host.lines.add(id=8, name="empty", timestamp_ns=base)
    gpu = space.planes.add(id=0, name="/device:GPU:0")
    gnames: dict[str, int] = {}
    gpu.event_metadata[5].name = "fusion_1"
    kline = gpu.lines.add(id=14, name="Stream #14(Compute)", timestamp_ns=base + 2)
    kernel = kline.events.add(metadata_id=5, offset_ps=1_500, duration_ps=3_000_000)
    details = stat(gpu, gnames, "regs:32 static_shared:0 dynamic_shared:0 grid:1,1,1 block:32,1,1")
    kernel.stats.append(stat(gpu, gnames, "kernel_details", ref_value=details.metadata_id))
    kernel.stats.append(stat(gpu, gnames, "occ", double_value=0.5))
    kernel.stats.append(stat(gpu, gnames, "note", compressed_str_value=gzip.compress(b"long text")))
    kernel.stats.append(stat(gpu, gnames, "blob", bytes_value=b"\x00\x01"))
    kernel.stats.append(pb.XStat(metadata_id=777, int64_value=-2))
    gpu.stats.append(stat(gpu, gnames, "core_count", int64_value=132))
    space.planes.add(id=0, name="/host:metadata")
    if relative:
        env = space.planes.add(id=0, name="Task Environment")
        env.stats.append(stat(env, {}, "profile_start_time", uint64_value=start))
    return space


class SpaceBuilder:
    """Builds XSpaces event by event (times in ns from a Task Environment start)."""

    START = 1_700_000_000_000_000_000

    def __init__(self) -> None:
        self.space = pb.XSpace(hostnames=["box"])
        self.host = self.space.planes.add(id=0, name="/host:CPU")
        self.names: dict[Any, dict[str, int]] = {}
        self.metas: dict[Any, dict[tuple[str, str], int]] = {}
        env = self.space.planes.add(id=0, name="Task Environment")
        env.stats.append(stat(env, {}, "profile_start_time", uint64_value=self.START))
        self.gpu: Any = None

    def line(self, plane: Any, line_id: int, name: str) -> Any:
        """The line ``line_id`` of ``plane`` (added on first use)."""
        for line in plane.lines:
            if line.id == line_id:
                return line
        return plane.lines.add(id=line_id, name=name, timestamp_ns=0)

    def gpu_plane(self) -> Any:
        """The ``/device:GPU:0`` plane (added on first use)."""
        if self.gpu is None:
            self.gpu = self.space.planes.add(id=0, name="/device:GPU:0")
        return self.gpu

    def event(
        self, plane: Any, line: Any, name: str, start_ns: int, dur_ns: int,
        display: str = "", **stats: Any,
    ) -> Any:  # fmt: skip
        """Add event ``name`` at ``start_ns`` for ``dur_ns`` with ``stats`` (by value type)."""
        metas = self.metas.setdefault(id(plane), {})
        key = (name, display)
        if key not in metas:
            metas[key] = len(metas) + 1
            plane.event_metadata[metas[key]].id = metas[key]
            plane.event_metadata[metas[key]].name = name
            plane.event_metadata[metas[key]].display_name = display
        event = line.events.add(
            metadata_id=metas[key], offset_ps=start_ns * 1000, duration_ps=dur_ns * 1000
        )
        names = self.names.setdefault(id(plane), {})
        for key_name, value in stats.items():
            if isinstance(value, str):
                event.stats.append(stat(plane, names, key_name, str_value=value))
            else:
                event.stats.append(stat(plane, names, key_name, int64_value=value))
        return event

    def bytes(self) -> bytes:
        """The serialized XSpace."""
        return bytes(self.space.SerializeToString())
