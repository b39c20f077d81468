"""A large XSpace made from a real one: its lines repeated with shifted times.

``grow(src, out, size_mb)`` writes ``out``: the XSpace ``src`` with every line
that holds events (host threads, GPU streams) written again ``k`` times, copy
``i`` with ``timestamp_ns`` moved ``i`` capture spans later (so the copies
follow one another in time, like a longer run of the same program), until the
file is about ``size_mb`` MB. The planes keep their metadata, stats and every
other field; planes without lines (``/host:metadata`` with the HLO protos,
``Task Environment``) are written once. Line ids and names stay those of the
original (one thread or stream, traced again); ``correlation_id`` stats move by
one more than the largest id per copy, so every copy's device events keep
their own launches (a command buffer's kernels stay one execution).

The messages are the project's own (``tfprof_lite.proto.messages``), the
repeated planes are assembled with its wire encoder (``tfprof_lite.proto.wire``)
and streamed to the file, so a 1 GB file needs little more memory than the
source. The output is a valid XSpace for any reader: repeated fields are
concatenated records, in field order within each message.

Run: ``python benchmarks/make_xspace.py SRC OUT --size-mb 100``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

from tfprof_lite.proto.messages import XLine, XPlane, XSpace
from tfprof_lite.proto.wire import len_field, varint

_PLANES = 1  # XSpace.planes
_LINES = 3  # XPlane.lines
_MB = 1_000_000
_CORRELATION = "correlation_id"
_INTS = ("int64_value", "uint64_value")
#: Gap between two copies of the capture, as a fraction of its span.
_GAP = 0.01


def _span_ns(space: Any) -> int:
    """The time the events of ``space`` cover, in ns (at least 1)."""
    starts, ends = [], []
    for plane in space.planes:
        for line in plane.lines:
            if not line.events:
                continue
            last = max(e.offset_ps + e.duration_ps for e in line.events)
            starts.append(line.timestamp_ns + min(e.offset_ps for e in line.events) // 1000)
            ends.append(line.timestamp_ns + last // 1000)
    if not starts:
        raise SystemExit("the source XSpace holds no events to repeat")
    return max(1, max(ends) - min(starts))


class _Line:
    """One source line: its header, and its events serialized once (or per copy,
    when they carry a correlation id: each copy gets ids of its own)."""

    def __init__(self, line: Any, correlation_key: int | None) -> None:
        self.line = line
        self.timestamp_ns = line.timestamp_ns
        self.head = XLine()
        self.head.CopyFrom(line)
        self.head.ClearField("events")
        self.ids = [
            (stat, stat.WhichOneof("value"), _value(stat))
            for event in line.events
            for stat in event.stats
            if stat.metadata_id == correlation_key and stat.WhichOneof("value") in _INTS
        ]
        self.events = b"" if self.ids else self._events()

    def _events(self) -> bytes:
        only_events = XLine()
        only_events.events.extend(self.line.events)
        return only_events.SerializeToString()

    def record(self, copy: int, shift_ns: int, id_step: int) -> bytes:
        """Copy ``copy`` of the line, ``shift_ns`` later, as an ``XPlane.lines`` record."""
        self.head.timestamp_ns = self.timestamp_ns + shift_ns
        events = self.events
        if self.ids:
            for stat, field, value in self.ids:
                setattr(stat, field, value + copy * id_step)
            events = self._events()
        return len_field(_LINES, self.head.SerializeToString() + events)


def _value(stat: Any) -> int:
    return int(getattr(stat, stat.WhichOneof("value")))


def _correlation_key(plane: Any) -> int | None:
    for key, meta in plane.stat_metadata.items():
        if meta.name == _CORRELATION:
            return int(key)
    return None


def _id_step(space: Any) -> int:
    """One more than the largest correlation id of ``space``."""
    top = 0
    for plane in space.planes:
        key = _correlation_key(plane)
        for line in plane.lines:
            for event in line.events:
                for stat in event.stats:
                    if stat.metadata_id == key and stat.WhichOneof("value") in _INTS:
                        top = max(top, _value(stat))
    return top + 1


def _plane_chunks(plane: Any, copies: int, step_ns: int, id_step: int) -> Iterator[bytes]:
    """``plane`` with ``copies`` of its lines, as ``XSpace.planes`` record pieces."""
    head = XPlane()
    head.CopyFrom(plane)
    head.ClearField("lines")
    head_bytes = head.SerializeToString()
    key = _correlation_key(plane)
    lines = [_Line(line, key) for line in plane.lines]
    size = len(head_bytes)  # a record's headers differ in size with the shift: sum them
    for i in range(copies):
        size += sum(len(line.record(i, i * step_ns, id_step)) for line in lines)
    yield varint((_PLANES << 3) | 2) + varint(size) + head_bytes
    for i in range(copies):
        for line in lines:
            yield line.record(i, i * step_ns, id_step)


def _copies(space: Any, size_bytes: int) -> int:
    lines = sum(plane.ByteSize() for plane in space.planes if len(plane.lines))
    fixed = space.ByteSize() - lines
    return max(1, -(-(size_bytes - fixed) // max(1, lines)))


def write_grown(space: Any, handle: BinaryIO, size_bytes: int) -> int:
    """Write ``space`` grown to about ``size_bytes`` to ``handle``; the copies made."""
    copies = _copies(space, size_bytes)
    step_ns = int(_span_ns(space) * (1 + _GAP))
    id_step = _id_step(space)
    rest = XSpace()
    rest.CopyFrom(space)
    rest.ClearField("planes")
    for plane in space.planes:
        for chunk in _plane_chunks(plane, copies if len(plane.lines) else 1, step_ns, id_step):
            handle.write(chunk)
    handle.write(rest.SerializeToString())
    return copies


def grow(src: str, out: str, size_mb: float) -> int:
    """Write ``out``: XSpace ``src`` grown to about ``size_mb`` MB; the copies made."""
    space = XSpace()
    with open(src, "rb") as handle:
        space.ParseFromString(handle.read())
    with open(out, "wb") as handle:
        return write_grown(space, handle, int(size_mb * _MB))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("src", help="a real *.xplane.pb")
    parser.add_argument("out", help="the file to write")
    parser.add_argument("--size-mb", type=float, default=100.0, help="about how large (MB)")
    args = parser.parse_args(argv)
    if args.size_mb <= 0:
        parser.error("--size-mb must be positive")
    copies = grow(args.src, args.out, args.size_mb)
    print(f"wrote {args.out}: {copies} copies of every line")
    return 0


if __name__ == "__main__":
    sys.exit(main())
