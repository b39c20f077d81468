"""The heap of a program's temporaries over program order, from XLA's heap trace.

Contract:

* XLA's buffer assignment records, per memory space, the heap simulator's
  trace: events in program order, each about one logical buffer: ``ALLOC``
  (kind 0), ``FREE`` (1) and ``SHARE_WITH`` (2: the buffer takes the memory of
  another, canonical one, in place). :func:`pick_trace` chooses the trace of
  one memory space (colour): the one with the most events about buffers of
  that colour (XLA writes one per colour when it simulates the whole module;
  the trace's own ``buffer_allocation_index`` is not reliable, so it is not
  used). None when no trace has such events.
* :func:`simulate` replays a trace: an ``ALLOC`` adds the buffer's size; a
  ``SHARE_WITH`` counts one more user of the canonical buffer's memory (adding
  its size again only when that memory had been freed); a ``FREE`` drops one
  user, and frees the canonical buffer's size with its last one. The result
  (:class:`HeapRun`) has one point before the first event and one after each
  event (``heap[i + 1]``: the bytes live after event ``i``), the instruction of
  each event, the peak (the first point where the heap is highest) and the
  canonical buffers live there, in the order they were allocated. A ``FREE`` of
  a buffer that is not live, and an event about a buffer the assignment does not
  list, change nothing (they still count as a point).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ALLOC", "FREE", "SHARE_WITH", "HeapRun", "pick_trace", "simulate"]

#: Heap simulator event kinds (``HeapSimulatorTrace.Event.Kind``).
ALLOC, FREE, SHARE_WITH = 0, 1, 2


@dataclass
class HeapRun:
    """A replayed heap trace (see the module docstring); bytes of the trace's
    buffers only, without the buffers that live for the whole program."""

    heap: list[int] = field(default_factory=lambda: [0])
    instructions: list[str] = field(default_factory=lambda: [""])
    peak: int = 0
    peak_at: int = 0
    live_at_peak: list[int] = field(default_factory=list)
    seen: set[int] = field(default_factory=set)


def pick_trace(assignment: Any, color_of: dict[int, int], color: int) -> Any | None:
    """The heap simulator trace of memory space ``color`` in ``assignment`` (a
    ``BufferAssignmentProto``), or None; ``color_of``: logical buffer id -> colour."""
    best, best_count = None, 0
    for trace in assignment.heap_simulator_traces:
        count = sum(1 for e in trace.events if color_of.get(int(e.buffer_id)) == color)
        if count > best_count:
            best, best_count = trace, count
    return best


class _Replay:
    """The state of a replay: users and sizes of the live canonical buffers."""

    def __init__(self, sizes: dict[int, int]) -> None:
        self.sizes = sizes
        self.canonical: dict[int, int] = {}
        self.users: dict[int, int] = {}
        self.live: dict[int, int] = {}  # canonical id -> size, in allocation order
        self.bytes = 0

    def root(self, buffer: int) -> int:
        """The canonical buffer whose memory ``buffer`` uses (itself if none)."""
        while buffer in self.canonical:
            buffer = self.canonical[buffer]
        return buffer

    def take(self, buffer: int) -> None:
        """One more user of canonical ``buffer``, allocated if it is not live."""
        self.users[buffer] = self.users.get(buffer, 0) + 1
        if buffer not in self.live:
            self.live[buffer] = self.sizes[buffer]
            self.bytes += self.sizes[buffer]

    def apply(self, kind: int, buffer: int, shared: int) -> None:
        """Replay one event (``shared``: the canonical id of a ``SHARE_WITH``)."""
        if kind == ALLOC:
            self.take(self.root(buffer))
        elif kind == SHARE_WITH and shared in self.sizes and shared != buffer:
            self.canonical[buffer] = shared
            self.take(self.root(shared))
        elif kind == FREE:
            root = self.root(buffer)
            if self.users.get(root, 0) <= 0:
                return
            self.users[root] -= 1
            if self.users[root] == 0:
                self.bytes -= self.live.pop(root)


def simulate(trace: Any | None, sizes: dict[int, int]) -> HeapRun:
    """Replay ``trace`` (a ``HeapSimulatorTrace``, or None for no trace) with the
    logical buffers' ``sizes`` (id -> bytes)."""
    run = HeapRun()
    if trace is None:
        return run
    replay = _Replay(sizes)
    for event in trace.events:
        buffer = int(event.buffer_id)
        if buffer in sizes:
            run.seen.add(buffer)
            replay.apply(int(event.kind), buffer, int(event.share_with_canonical_id))
        run.heap.append(replay.bytes)
        run.instructions.append(str(event.instruction_name))
        if replay.bytes > run.peak:
            run.peak, run.peak_at = replay.bytes, len(run.heap) - 1
            run.live_at_peak = list(replay.live)
    return run
