"""Memory over an XSpace's whole window: per allocator its curve and its peak.

Contract of :func:`window_memory` (a pure function of the model): it reads the
window's allocator events (``ProfileModel.event_window.memory``,
:class:`~tfprof_lite.model.window.MemoryEvents`), those before the first
step, between steps and after the last one too, where the per-step memory
profile (:func:`tfprof_lite.analysis.memory.memory_profile`) reads only what
falls inside a step. Per allocator:

* ``timeline``: the bytes in use the allocator reported after each event
  (``bytes_allocated`` plus ``bytes_reserved``: memory allocated before the
  window included), as ``(ns since the window's start, bytes)``; a long series
  is cut to at most :data:`MAX_POINTS` points, each the highest of its run of
  events, so the peak stays in it;
* ``peak_bytes`` and ``peak_ns``: the highest of those and its first time;
  ``peak_step``: the step number the peak's event belongs to (None: outside
  every step); ``steps_peak_bytes``: the highest inside any step (the per-step
  profile's ``max_in_use_bytes``), so the two say whether the window's peak is
  one the steps see;
* ``net_peak_bytes``: the highest running sum of the window's own allocations
  and frees (the memory the window's events explain, lifted by
  ``baseline_bytes`` where frees of older memory drive it below zero);
* ``allocations``, ``frees``, and ``outside``: how many of the events fall
  outside every step.

None for a profile without a window (TF1) or without allocator events.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tfprof_lite.base.units import format_memory, format_time
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.window import EventWindow

__all__ = ["MAX_POINTS", "WindowAllocator", "WindowMemory", "window_memory"]

#: The most points an allocator's window timeline keeps.
MAX_POINTS = 1000


@dataclass
class WindowAllocator:
    """One allocator over the whole window (bytes; times in ns since its start)."""

    allocator: str
    peak_bytes: int
    peak_ns: int
    peak_step: int | None
    steps_peak_bytes: int
    net_peak_bytes: int
    baseline_bytes: int
    allocations: int
    frees: int
    outside: int
    timeline: list[tuple[int, int]] = field(default_factory=list)

    def line(self) -> str:
        """One line: the peak, where it is, the steps' peak, the events."""
        where = "outside the steps" if self.peak_step is None else f"in step {self.peak_step}"
        return (
            f"{self.allocator}: peak {format_memory(self.peak_bytes)} in use at "
            f"+{format_time(self.peak_ns // 1000)} ({where}; the steps' highest "
            f"{format_memory(self.steps_peak_bytes)}); {self.allocations} allocations, "
            f"{self.frees} frees, {self.outside} of them outside the steps"
        )


@dataclass
class WindowMemory:
    """Per allocator, the window's memory (see the module docstring)."""

    window_ns: int
    steps: int
    allocators: list[WindowAllocator] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (timelines as ``[ns, bytes]`` pairs)."""
        doc = asdict(self)
        for alloc, alloc_doc in zip(self.allocators, doc["allocators"]):
            alloc_doc["timeline"] = [list(p) for p in alloc.timeline]
        return doc

    def lines(self) -> list[str]:
        """One line per allocator, each naming the window."""
        head = f"whole window ({format_time(self.window_ns // 1000)}, {self.steps} steps)"
        return [f"{head}, {a.line()}" for a in self.allocators]

    def to_text(self) -> str:
        """The lines, one per allocator."""
        return "\n".join(self.lines()) + "\n"


def _points(times: Any, values: Any) -> list[tuple[int, int]]:
    """``(time, value)`` pairs, cut to :data:`MAX_POINTS` runs' highest values."""
    if len(times) > MAX_POINTS:
        edges = np.linspace(0, len(times), MAX_POINTS + 1).astype(np.int64)[:-1]
        best = np.maximum.reduceat(values, edges)
        at = np.asarray(
            [e + int(np.argmax(values[e:f] == b)) for e, f, b in
             zip(edges.tolist(), [*edges[1:].tolist(), len(times)], best.tolist())],
            dtype=np.int64,
        )  # fmt: skip
        times, values = times[at], values[at]
    return list(zip(times.tolist(), values.tolist()))


def _allocator(window: EventWindow, code: int, name: str) -> WindowAllocator:
    mem = window.memory
    mine = np.flatnonzero(mem.allocator == code)
    in_use, delta, step = mem.in_use[mine], mem.delta[mine], mem.step[mine]
    times = mem.time_ns[mine] - window.start_ns
    top = int(np.argmax(in_use))
    running = np.cumsum(delta)
    base = max(-int(running.min()), 0)
    inside = in_use[step >= 0]
    peak_step = int(step[top])
    return WindowAllocator(
        allocator=name,
        peak_bytes=int(in_use[top]),
        peak_ns=int(times[top]),
        peak_step=window.step_numbers[peak_step] if peak_step >= 0 else None,
        steps_peak_bytes=int(inside.max()) if len(inside) else 0,
        net_peak_bytes=int(running.max()) + base,
        baseline_bytes=base,
        allocations=int((delta > 0).sum()),
        frees=int((delta < 0).sum()),
        outside=int((step < 0).sum()),
        timeline=_points(times, in_use),
    )


def window_memory(model: ProfileModel) -> WindowMemory | None:
    """The window's memory per allocator, highest peak first (see the module
    docstring); None without a window or allocator events."""
    window: EventWindow | None = model.event_window
    if window is None or not len(window.memory):
        return None
    found = [
        _allocator(window, code, name)
        for code, name in enumerate(window.memory.allocators)
        if (window.memory.allocator == code).any()
    ]
    found.sort(key=lambda a: (-a.peak_bytes, a.allocator))
    return WindowMemory(window.duration_ns, len(window.step_numbers), found)
