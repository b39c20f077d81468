"""A streaming Chrome-trace writer and lane assignment that keeps X events nested.

:class:`TraceWriter` writes ``{"traceEvents": [...]}`` one event at a time to a
temporary file (gzip-compressed when the path ends in ``.gz``) and renames it
into place on :meth:`TraceWriter.close`, so memory stays flat however many events
are written and no half-written trace is ever visible; whatever ends the write
early (an exception, ``KeyboardInterrupt``, a failed rename) removes the
temporary file, and errors name the destination. Every string is escaped
by :func:`json.dumps` with ASCII output, and ``<``, ``>`` and ``&`` are escaped too,
so names with quotes, backslashes, control characters or ``</script>`` survive
``json.loads`` and can be embedded in HTML.

:class:`LaneAssigner` puts complete (``ph: X``) events into lanes (``tid``) so that
events within a lane are either disjoint or properly nested, which Perfetto and
chrome://tracing require; an event that would partly overlap another moves to an
extra lane.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
from collections.abc import Iterable
from types import TracebackType
from typing import IO, Any

from tfprof_lite.base.writing import check_output_path, create_temp_sibling, discard_temp
from tfprof_lite.errors import TfprofLiteError

__all__ = ["LaneAssigner", "TraceWriter", "dumps_event"]

_ENCODER = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"))  # stateless, reused
_HTML_SAFE = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"))


def dumps_event(event: dict[str, Any]) -> str:
    """One event as compact, ASCII-only, HTML-safe JSON."""
    text: str = _ENCODER.encode(event)
    for char, escaped in _HTML_SAFE:  # str.replace where needed: far cheaper than translate
        if char in text:
            text = text.replace(char, escaped)
    return text


class TraceWriter:
    """Write a Chrome trace event by event; use as a context manager.

    Args:
        path: destination (not a directory); ``.gz`` selects gzip compression.

    Raises:
        TfprofLiteError: ``path`` is a directory, or cannot be written (naming it).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = check_output_path(path)
        try:
            fd, self._tmp = create_temp_sibling(self.path)
        except OSError as err:
            raise self._error(err) from err
        raw: IO[bytes] = os.fdopen(fd, "wb")
        self._raw = raw
        self._out: IO[bytes] = raw
        self.count = 0
        try:
            if self.path.endswith(".gz"):
                self._out = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0)  # type: ignore[assignment]
            self._out.write(b'{"traceEvents":[')
        except BaseException as err:
            self.abort()
            if isinstance(err, OSError):
                raise self._error(err) from err
            raise

    def _error(self, err: OSError) -> TfprofLiteError:
        """One line naming the destination (never the temporary file)."""
        return TfprofLiteError(f"cannot write {self.path}: {err.strerror or err}")

    def write(self, event: dict[str, Any]) -> None:
        """Append one event."""
        prefix = b"\n" if self.count == 0 else b",\n"
        self._out.write(prefix + dumps_event(event).encode("ascii"))
        self.count += 1

    def write_all(self, events: Iterable[dict[str, Any]]) -> None:
        """Append every event of ``events`` (consumed lazily)."""
        for event in events:
            self.write(event)

    def close(self) -> None:
        """Finish the JSON document and move the file into place.

        Raises:
            TfprofLiteError: the file could not be finished or renamed; the
                temporary file is removed and the message names the destination.
        """
        try:
            self._out.write(b'\n],"displayTimeUnit":"ns"}\n')
            if self._out is not self._raw:
                self._out.close()
            self._raw.close()
            os.replace(self._tmp, self.path)
        except BaseException as err:
            self.abort()
            if isinstance(err, OSError):
                raise self._error(err) from err
            raise

    def abort(self) -> None:
        """Drop the partial file (safe to call more than once)."""
        for stream in (self._out, self._raw):
            with contextlib.suppress(OSError, ValueError):
                stream.close()
        discard_temp(self._tmp)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


class LaneAssigner:
    """Lanes where X events are disjoint or nested; feed events sorted by start."""

    def __init__(self) -> None:
        self._lanes: list[list[tuple[int, int]]] = []

    def assign(self, start: int, dur: int) -> int:
        """The lane for an event ``[start, start + dur)``; call in start order,
        longer events first among equal starts."""
        end = start + max(dur, 0)
        for lane, stack in enumerate(self._lanes):
            while stack and stack[-1][1] <= start:
                stack.pop()
            if not stack or end <= stack[-1][1]:
                stack.append((start, end))
                return lane
        self._lanes.append([(start, end)])
        return len(self._lanes) - 1

    @property
    def lanes(self) -> int:
        """How many lanes are in use."""
        return len(self._lanes)
