"""Where a ``Monitor`` writes: printed lines and the ``monitor.jsonl`` log.

Contract: a line goes to ``logger.info`` if a logger is given, else to the
stream (default ``sys.stderr`` at write time) as one ``write`` of the whole line
plus ``flush``. A record goes, as one JSON line written with a single
``os.write`` (``O_APPEND``: never torn), to the log file (created ``0666`` less
the umask; none without a path). Failures (a closed stream, an unwritable
directory) are logged once per kind on the ``tfprof_lite`` logger, never raised.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from typing import Any, TextIO

__all__ = ["MonitorOutput", "OnceWarner"]

log = logging.getLogger("tfprof_lite")


class OnceWarner:
    """Logs one warning per kind of failure."""

    def __init__(self) -> None:
        self._warned: set[str] = set()

    def warn(self, key: str, message: str) -> None:
        """Log ``message`` unless a warning of kind ``key`` was logged before."""
        if key not in self._warned:
            self._warned.add(key)
            log.warning("tfprof_lite: %s", message)


class MonitorOutput:
    """The printed lines and the JSON-lines log of one monitor.

    Args:
        path: the log file, or None for printed lines only.
        stream: where lines go (None: ``sys.stderr`` at write time).
        logger: if given, lines go to ``logger.info`` instead.
        warner: reports failures.
    """

    def __init__(
        self,
        path: str | None,
        stream: TextIO | None,
        logger: logging.Logger | None,
        warner: OnceWarner,
    ) -> None:
        self.path = path
        self._stream = stream
        self._logger = logger
        self._warner = warner
        self._fd: int | None = None

    def open(self) -> None:
        """Open the log for appending (creating its directory)."""
        path = self.path
        if path is None:
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        except OSError as err:
            self._warner.warn("open", f"cannot write {path}: {err.strerror}; printing lines only")

    def close(self) -> None:
        """Close the log (if open)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def line(self, line: str) -> None:
        """One whole line to the logger or the stream (one write + flush)."""
        try:
            if self._logger is not None:
                self._logger.info("%s", line)
                return
            stream = self._stream if self._stream is not None else sys.stderr
            stream.write(line + "\n")
            stream.flush()
        except Exception as err:  # a closed stream must not stop training
            self._warner.warn("line", f"cannot write a monitoring line: {err}")

    def record(self, doc: dict[str, Any]) -> None:
        """One JSON line, written with one ``os.write`` (O_APPEND: never torn)."""
        if self._fd is None:
            return
        data = (json.dumps(doc, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            while data:
                data = data[os.write(self._fd, data) :]
        except OSError as err:
            self._warner.warn("write", f"cannot append to {self.path}: {err.strerror}")
