"""One Chrome trace for many steps: ``write_steps_trace(model, path)``.

Beyond tfprof's one-file-per-step timeline: every traced step of a profile in a
single trace. Devices are processes (a ``Steps`` process on top carries one
slice per step), ops are complete events with their op type and step in
``args``, and steps are laid out one after another in time (each step keeps its
internal timing; a step that would overlap the previous one is shifted after
it). Lanes keep events properly nested (see
:class:`~tfprof_lite.outputs.trace_writer.LaneAssigner`). The file is streamed
(``.gz`` for gzip) and renamed into place when complete.

An XSpace's GPU events outside every step (``ProfileModel.event_window``) follow
the steps, at their own times, on processes named ``<device> (outside steps)``
(with every step only: a trace of some steps shows those steps alone).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model.execs import KIND_ACCELERATOR, KIND_CPU
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.window import EventWindow, outside_lane
from tfprof_lite.outputs.trace_writer import LaneAssigner, TraceWriter

__all__ = ["STEP_GAP_MICROS", "step_events", "write_steps_trace"]

STEP_GAP_MICROS = 10
_KIND_NAME = {KIND_CPU: "cpu", KIND_ACCELERATOR: "accelerator"}


#: The device an XSpace's GPU event outside the steps is drawn on, by kind.
def _step_records(model: ProfileModel, step: int) -> list[tuple[str, int, int, int, int]]:
    """(device, start, dur, node, kind) of one step, sorted for lane assignment."""
    execs = model.steps[step]
    recs = list(zip(execs.t_dev, execs.t_start, execs.t_dur, execs.t_node, execs.t_kind))
    recs.sort(key=lambda r: (r[0], r[1], -r[2]))
    return recs


def _meta(pid: int, name: str, sort_index: int) -> Iterator[dict[str, Any]]:
    yield {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}
    yield {"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": sort_index}}


def step_events(
    model: ProfileModel, steps: Sequence[int] | None = None
) -> Iterator[dict[str, Any]]:
    """Every event of the multi-step trace, lazily, metadata first per process."""
    chosen = list(steps) if steps is not None else model.sorted_steps()
    missing = [s for s in chosen if s not in model.steps]
    if missing:
        have = ", ".join(map(str, model.sorted_steps())) or "none"
        raise InvalidInputError(f"steps {missing} are not in the profile (it has: {have})")
    yield from _meta(0, "Steps", 0)
    pids: dict[str, int] = {}
    cursor: int | None = None
    for step in chosen:
        recs = _step_records(model, step)
        if not recs:
            continue
        first = min(r[1] for r in recs)
        last = max(r[1] + r[2] for r in recs)
        shift = 0 if cursor is None or first >= cursor else cursor - first
        yield {
            "name": f"step {step}",
            "ph": "X",
            "pid": 0,
            "tid": 0,
            "ts": first + shift,
            "dur": last - first,
            "cat": "Step",
            "args": {"step": step},
        }
        yield from _device_events(model, step, recs, shift, pids)
        cursor = last + shift + STEP_GAP_MICROS
    if model.event_window is not None and set(chosen) == set(model.sorted_steps()):
        yield from _outside_events(model.event_window, pids)


def _outside_events(window: EventWindow, pids: dict[str, int]) -> Iterator[dict[str, Any]]:
    """An XSpace's GPU events outside every step, at their own times, one process
    per device after the steps' (``<device> (outside steps)``)."""
    device = window.device
    lanes: dict[str, LaneAssigner] = {}
    rows = sorted(
        (outside_lane(gpu, kind), start // 1000, dur // 1000, at)
        for at, (gpu, kind, start, dur, step) in enumerate(
            zip(device.gpu.tolist(), device.kind.tolist(), device.start_ns.tolist(),
                device.dur_ns.tolist(), device.step.tolist())
        )
        if step < 0
    )  # fmt: skip
    for dev, start, dur, at in rows:
        if dev not in pids:
            pids[dev] = len(pids) + 1
            yield from _meta(pids[dev], dev, pids[dev])
        yield {
            "name": device.name[at],
            "ph": "X",
            "pid": pids[dev],
            "tid": lanes.setdefault(dev, LaneAssigner()).assign(start, dur),
            "ts": start,
            "dur": dur,
            "cat": "Outside steps",
            "args": {"op": device.op[at], "op_type": device.op_type[at], "time": "accelerator"},
        }


def _device_events(
    model: ProfileModel,
    step: int,
    recs: list[tuple[str, int, int, int, int]],
    shift: int,
    pids: dict[str, int],
) -> Iterator[dict[str, Any]]:
    lanes: dict[str, LaneAssigner] = {}
    for dev, start, dur, node, kind in recs:
        if dev not in pids:
            pids[dev] = len(pids) + 1
            yield from _meta(pids[dev], dev, pids[dev])
        lane = lanes.setdefault(dev, LaneAssigner()).assign(start, dur)
        yield {
            "name": model.names[node],
            "ph": "X",
            "pid": pids[dev],
            "tid": lane,
            "ts": start + shift,
            "dur": dur,
            "cat": "Op",
            "args": {"op": model.ops[node], "step": step, "time": _KIND_NAME.get(kind, "")},
        }


def write_steps_trace(
    model: ProfileModel, path: str | os.PathLike[str], steps: Sequence[int] | None = None
) -> int:
    """Stream the multi-step trace to ``path``; returns the number of events written."""
    events = step_events(model, steps)
    with TraceWriter(path) as writer:
        writer.write_all(events)
        return writer.count
