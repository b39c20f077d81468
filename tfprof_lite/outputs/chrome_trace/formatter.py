"""The trace being built: metadata, then events, written as TensorFlow writes them."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Union

from tfprof_lite.outputs.chrome_trace.columns import DeviceOps, Event
from tfprof_lite.outputs.chrome_trace.encoder import EMPTY_TRACE, LINE2, pretty

__all__ = ["ChromeTraceFormatter", "collection_paused"]


@contextmanager
def collection_paused() -> Iterator[None]:
    """Cyclic garbage collection off inside (as it was before, after).

    Building a trace creates many objects and frees none that form cycles, so a
    collection in between finds nothing to free; in a process holding a large
    graph, the passes it triggers over the older objects cost a noticeable part
    of a step's trace (about a sixth with ``show_memory``).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class ChromeTraceFormatter:
    """Collects Chrome trace events: metadata first, then events."""

    def __init__(self, show_memory: bool = False) -> None:
        self._show_memory = show_memory
        self._metadata: list[Event] = []
        self._events: list[Union[Event, DeviceOps]] = []

    @staticmethod
    def _event(ph: str, category: str, name: str, pid: int, tid: int, ts: int) -> Event:
        return {"ph": ph, "cat": category, "name": name, "pid": pid, "tid": tid, "ts": ts}

    def emit_pid(self, name: str, pid: int) -> None:
        """Name a process (metadata event)."""
        self._metadata.append(
            {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": name}}
        )

    def emit_tid(self, name: str, pid: int, tid: int) -> None:
        """Name a thread (metadata event)."""
        event = {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}
        self._metadata.append(event)

    def emit_region(
        self, ts: int, duration: int, pid: int, tid: int, category: str, name: str, args: Event
    ) -> None:
        """A complete (``X``) event of ``duration`` microseconds."""
        event = self._event("X", category, name, pid, tid, ts)
        event["dur"] = duration
        event["args"] = args
        self._events.append(event)

    def _object_event(
        self, ph: str, category: str, name: str, ts: int, pid: int, tid: int, object_id: int
    ) -> Event:
        event = self._event(ph, category, name, pid, tid, ts)
        event["id"] = object_id
        self._events.append(event)
        return event

    def emit_obj_create(
        self, category: str, name: str, ts: int, pid: int, tid: int, object_id: int
    ) -> None:
        """An object creation (``N``) event."""
        self._object_event("N", category, name, ts, pid, tid, object_id)

    def emit_obj_delete(
        self, category: str, name: str, ts: int, pid: int, tid: int, object_id: int
    ) -> None:
        """An object deletion (``D``) event."""
        self._object_event("D", category, name, ts, pid, tid, object_id)

    def emit_obj_snapshot(
        self,
        category: str,
        name: str,
        ts: int,
        pid: int,
        tid: int,
        object_id: int,
        snapshot: Event,
    ) -> None:
        """An object snapshot (``O``) event carrying ``snapshot``."""
        event = self._object_event("O", category, name, ts, pid, tid, object_id)
        event["args"] = {"snapshot": snapshot}

    def emit_flow_start(self, name: str, ts: int, pid: int, tid: int, flow_id: int) -> None:
        """The start (``s``) of a flow arrow."""
        self._object_event("s", "DataFlow", name, ts, pid, tid, flow_id)

    def emit_flow_end(self, name: str, ts: int, pid: int, tid: int, flow_id: int) -> None:
        """The end (``t``) of a flow arrow."""
        self._object_event("t", "DataFlow", name, ts, pid, tid, flow_id)

    def emit_counter(
        self, category: str, name: str, pid: int, ts: int, counter: str, value: int
    ) -> None:
        """One counter (``C``) value."""
        self.emit_counters(category, name, pid, ts, {counter: value})

    def emit_counters(
        self, category: str, name: str, pid: int, ts: int, counters: dict[str, Any]
    ) -> None:
        """Several counter values in one ``C`` event."""
        event = self._event("C", category, name, pid, 0, ts)
        event["args"] = dict(counters)
        self._events.append(event)

    def _emit_device_ops(self, ops: DeviceOps) -> None:
        """A device's op events and the flows into them (a ``Timeline``'s)."""
        self._events.append(ops)

    def format_to_string(self, pretty: bool = False) -> str:
        """The trace as JSON (``pretty``: indented by 4, as TensorFlow writes it)."""
        with collection_paused():
            return self._pretty() if pretty else self._compact()

    def _compact(self) -> str:
        """The trace as compact JSON."""
        events = [
            event
            for item in self._events
            for event in ((item,) if isinstance(item, dict) else item.events())
        ]
        return json.dumps({"traceEvents": self._metadata + events}, separators=(",", ":"))

    def _pretty(self) -> str:
        """The trace as indented JSON."""
        if not self._metadata and not self._events:
            return EMPTY_TRACE
        parts = [pretty(event, LINE2) for event in self._metadata]
        ops: dict[str, str] = {}
        for item in self._events:
            if isinstance(item, dict):
                parts.append(pretty(item, LINE2))
            else:
                item.pretty(parts, ops)
        parts[0] = '{\n    "traceEvents": [' + LINE2 + parts[0]
        parts[-1] += "\n    ]\n}"
        return ("," + LINE2).join(parts)
