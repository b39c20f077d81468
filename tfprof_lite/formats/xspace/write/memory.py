"""The allocator timeline of an exported XSpace: ``MemoryAllocation`` events.

XProf's memory profile reads host events named ``MemoryAllocation`` and
``MemoryDeallocation`` with stats ``allocator_name``, ``bytes_allocated``
(bytes in use after the event), ``peak_bytes_in_use``, ``requested_bytes``,
``allocation_bytes``... The events come from the memory profile of
:func:`tfprof_lite.analysis.memory.memory_profile`: one event per point of
each step's per-allocator timeline (the change since the previous point,
zero-length, at the point's time), so XProf's heap timeline and peak are the
report's (``peak_bytes`` per allocator; the baseline a step starts with is
one allocation at its start).
"""

from __future__ import annotations

from tfprof_lite.analysis.memory import memory_profile
from tfprof_lite.formats.xspace.write.planes import PlaneBuilder, StatValue
from tfprof_lite.model.profile import ProfileModel

__all__ = ["add_memory_events"]


def add_memory_events(plane: PlaneBuilder, line: int, model: ProfileModel) -> int:
    """Add every allocator's timeline to ``line``; returns the number of events."""
    peaks: dict[str, int] = {}
    count = 0
    for step in memory_profile(model, top=0).steps:
        for alloc in step.allocators:
            previous = 0
            for rel, in_use in alloc.timeline:
                delta = in_use - previous
                previous = in_use
                if not delta:
                    continue
                peak = peaks[alloc.allocator] = max(peaks.get(alloc.allocator, 0), in_use)
                stats: dict[str, StatValue] = {
                    "allocator_name": alloc.allocator,
                    "bytes_allocated": in_use,
                    "bytes_reserved": 0,
                    "bytes_available": 0,
                    "peak_bytes_in_use": peak,
                    "requested_bytes": abs(delta),
                    "allocation_bytes": abs(delta),
                    "addr": 0,
                    "step_id": step.step,
                    "region_type": "output",
                    "data_type": "",
                    "shape": "",
                }
                name = "MemoryAllocation" if delta > 0 else "MemoryDeallocation"
                plane.add(line, name, step.start_micros + rel, 0, stats)
                count += 1
    return count
