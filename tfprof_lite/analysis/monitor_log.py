"""Reading ``monitor.jsonl``: runs, their summaries, and following a live file.

The file is written by :class:`tfprof_lite.session.monitor.Monitor` (appended,
one JSON object per line, flushed per line). No TensorFlow.

Contract:

* Records carry ``"event"``: ``"start"`` (a run begins: ``run``, ``level``,
  ``every``, ``sample_every``, ``pid``, ``time``), ``"window"`` (a
  :class:`~tfprof_lite.analysis.monitoring.WindowRecord`) and ``"end"`` (the run
  ended: ``steps``, ``summary``). Several runs may share one file (each
  ``ProfileContext``/``Monitor`` block appends its own).
* :func:`read_runs` groups the records of a file by run id in file order. A line
  that is not a JSON object (e.g. the half-written last line of a live run) is
  skipped and counted in :attr:`MonitorLog.skipped`; records of an unknown
  ``event`` are ignored.
* :func:`follow` yields records as they are appended (polling), starting at the
  beginning or at the end of the file, waiting for the file to appear (and for
  ``path`` itself: a directory the run has not created yet is waited for, then
  its ``monitor.jsonl``) and re-reading it from the start if it shrinks; it stops
  when ``stop()`` returns true (checked at every poll) or after ``idle_timeout``
  seconds without data, and calls ``on_idle()`` at every poll that found none.

Files are read through :func:`tfprof_lite.base.reading.read_input` /
:func:`~tfprof_lite.base.reading.open_input` (regular files only, at most the input
limit; bytes that are not UTF-8 are replaced, so such lines are skipped). Raises
:class:`~tfprof_lite.errors.InvalidInputError` for a file that cannot be read.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tfprof_lite.analysis.monitoring import MonitorSummary, WindowRecord, summarize
from tfprof_lite.base.reading import max_input_size, open_input, read_input

__all__ = ["MONITOR_FILE", "MonitorLog", "MonitorRun", "follow", "monitor_path", "read_runs"]

#: The file name the monitor writes in its profile directory.
MONITOR_FILE = "monitor.jsonl"
_FOLLOW_CHUNK = 1 << 20


def monitor_path(path: str | os.PathLike[str]) -> str:
    """``path`` itself, or ``path/monitor.jsonl`` when ``path`` is a directory."""
    text = os.fspath(path)
    return os.path.join(text, MONITOR_FILE) if os.path.isdir(text) else text


@dataclass
class MonitorRun:
    """The records of one monitored run."""

    run: str
    start: dict[str, Any] = field(default_factory=dict)
    windows: list[WindowRecord] = field(default_factory=list)
    end: dict[str, Any] | None = None

    @property
    def level(self) -> int:
        """The run's monitoring level (1 if its start record is missing)."""
        return int(self.start.get("level", 1))

    @property
    def finished(self) -> bool:
        """True when the run's ``end`` record was written."""
        return self.end is not None

    def summary(self) -> MonitorSummary:
        """The run's summary, folded from its window records."""
        return summarize(self.windows, self.run)


@dataclass
class MonitorLog:
    """Every run of a ``monitor.jsonl`` file, in file order."""

    path: str
    runs: list[MonitorRun] = field(default_factory=list)
    skipped: int = 0


def parse_record(line: str) -> dict[str, Any] | None:
    """One JSON line as a dict; None when it is not a JSON object."""
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _add(log: MonitorLog, doc: dict[str, Any]) -> None:
    run_id = str(doc.get("run", ""))
    run = next((r for r in reversed(log.runs) if r.run == run_id), None)
    if run is None:
        run = MonitorRun(run_id)
        log.runs.append(run)
    event = doc.get("event")
    if event == "start":
        run.start = doc
    elif event == "window":
        try:
            run.windows.append(WindowRecord.from_dict(doc))
        except (KeyError, TypeError):
            log.skipped += 1
    elif event == "end":
        run.end = doc


def _records(data: bytes) -> Iterator[dict[str, Any] | None]:
    """Each non-blank line of ``data`` as a record, or None when it is not a JSON
    object; one line is copied at a time, and only lines starting with ``{`` are
    decoded (bytes that are not UTF-8 replaced)."""
    start, end = 0, len(data)
    while start < end:
        stop = data.find(b"\n", start)
        stop = end if stop < 0 else stop
        line = data[start:stop].strip()
        start = stop + 1
        if line:
            yield parse_record(line.decode("utf-8", "replace")) if line[:1] == b"{" else None


def read_runs(path: str | os.PathLike[str]) -> MonitorLog:
    """Every run recorded in ``path`` (a ``monitor.jsonl`` file or its directory).

    Raises:
        InvalidInputError: the file does not exist or cannot be read.
    """
    target = monitor_path(path)
    data = read_input(target, "a monitor log")
    log = MonitorLog(target)
    for doc in _records(data):
        if doc is None:
            log.skipped += 1
            continue
        _add(log, doc)
    return log


def _complete_lines(handle: Any, pending: str) -> tuple[list[str], str]:
    """Whole lines newly readable from ``handle`` (at most :data:`_FOLLOW_CHUNK`
    characters per call) and the unfinished rest; a partial line longer than the
    input limit is dropped."""
    data = pending + handle.read(_FOLLOW_CHUNK)
    if not data:
        return [], ""
    lines = data.split("\n")
    rest = lines[-1] if len(lines[-1]) <= max_input_size() else ""
    return [line for line in lines[:-1] if line.strip()], rest


def _open_follow(target: str, from_start: bool) -> Any:
    """The monitor log opened for following; a non-regular file is an error."""
    fd = open_input(target, "a monitor log")
    handle = open(fd, encoding="utf-8", errors="replace")  # noqa: SIM115 - kept while following
    if not from_start:
        handle.seek(0, os.SEEK_END)
    return handle


def follow(
    path: str | os.PathLike[str],
    *,
    from_start: bool = True,
    poll: float = 0.2,
    stop: Callable[[], bool] = lambda: False,
    idle_timeout: float | None = None,
    on_idle: Callable[[], None] = lambda: None,
) -> Iterator[dict[str, Any]]:
    """Yield the records appended to ``path`` as they come (see the module docstring)."""
    target = monitor_path(path)
    handle: Any = None
    pending = ""
    last_data = time.monotonic()
    try:
        while not stop():
            if handle is None:
                # Resolved again until opened: a directory that does not exist yet
                # may be created by the run, and the log appears in it later.
                target = monitor_path(path)
                if os.path.exists(target) and not os.path.isdir(target):
                    handle = _open_follow(target, from_start)
            lines: list[str] = []
            if handle is not None:
                if os.path.getsize(target) < handle.tell():  # truncated / replaced
                    handle.seek(0)
                    pending = ""
                lines, pending = _complete_lines(handle, pending)
            for line in lines:
                doc = parse_record(line)
                if doc is not None:
                    yield doc
            if lines:
                last_data = time.monotonic()
            elif idle_timeout is not None and time.monotonic() - last_data > idle_timeout:
                return
            else:
                on_idle()
                time.sleep(poll)
    finally:
        if handle is not None:
            handle.close()
