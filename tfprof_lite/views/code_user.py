"""The code view's user-code mode: call stacks cut down to the user's own frames.

Contract (``Options.user_code`` set, see :mod:`tfprof_lite.options.user_code`):

* :meth:`UserTraces.trace` keeps the user frames of a trace, outermost first.
  Library frames below a user frame (what it called) vanish, so a graph node
  hangs under the innermost user frame of its stack and that frame's self time
  includes the library code it called; library frames above the outermost user
  frame (interpreter, test runner, framework entry points) are dropped. A trace
  without any user frame becomes the one frame :data:`LIBRARY_FRAME`, shown as
  :data:`LIBRARY_NAME` at the top of the tree, so folding moves time and never
  loses it.
* :meth:`UserTraces.name` is the frame's tfprof name (``basename:lineno:function``)
  followed by `` [source text]`` when the line can be read: from the trace's own
  line text, else from the file on disk (regular files up to
  :data:`MAX_SOURCE_BYTES`, decoded as UTF-8 with replacement). A file that is
  missing, unreadable or too short adds nothing; nothing here raises.
"""

from __future__ import annotations

from tfprof_lite.base.reading import read_input
from tfprof_lite.errors import TfprofLiteError
from tfprof_lite.model.records import CodeFrame
from tfprof_lite.options.user_code import UserCode

__all__ = [
    "LIBRARY_FRAME",
    "LIBRARY_NAME",
    "MAX_SOURCE_BYTES",
    "MAX_SOURCE_CHARS",
    "SourceLines",
    "UserTraces",
]

#: The one frame of a trace without user frames.
LIBRARY_FRAME = CodeFrame("<library>", 0, "<library code>")
#: Its name in the tree.
LIBRARY_NAME = "(library code)"
#: Source files larger than this are not read.
MAX_SOURCE_BYTES = 4 * 1024 * 1024
#: Source text longer than this is cut (with ``...``).
MAX_SOURCE_CHARS = 80


class SourceLines:
    """Lines of source files, each file read at most once; never raises."""

    def __init__(self) -> None:
        self._files: dict[str, list[str] | None] = {}

    def _lines(self, path: str) -> list[str] | None:
        if path in self._files:
            return self._files[path]
        lines: list[str] | None = None
        if path and not path.startswith("<"):
            try:
                data = read_input(path, "a source file", MAX_SOURCE_BYTES)
                lines = bytes(data).decode("utf-8", "replace").splitlines()
            except (TfprofLiteError, OSError, ValueError):
                lines = None
        self._files[path] = lines
        return lines

    def line(self, path: str, lineno: int) -> str:
        """Line ``lineno`` (1-based) of ``path``, stripped; ``""`` if unreadable."""
        lines = self._lines(path)
        if lines is None or not 0 < lineno <= len(lines):
            return ""
        return lines[lineno - 1].strip()


def _cut(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > MAX_SOURCE_CHARS:
        return text[: MAX_SOURCE_CHARS - 3] + "..."
    return text


class UserTraces:
    """Cuts traces down to user frames and names frames with their source text."""

    def __init__(self, rules: UserCode, strings: dict[int, str]) -> None:
        self.rules = rules
        self.strings = strings
        self.sources = SourceLines()
        self._user: dict[tuple[str, str], bool] = {}
        self._traces: dict[int, tuple[list[CodeFrame], list[CodeFrame]]] = {}

    def _file(self, frame: CodeFrame) -> str:
        return frame.file or self.strings.get(frame.file_id, "")

    def _function(self, frame: CodeFrame) -> str:
        return frame.function or self.strings.get(frame.function_id, "")

    def is_user(self, frame: CodeFrame) -> bool:
        """Whether ``frame`` is user code (cached per file and function)."""
        key = (self._file(frame), self._function(frame))
        hit = self._user.get(key)
        if hit is None:
            hit = self._user[key] = self.rules.is_user(*key)
        return hit

    def trace(self, trace: list[CodeFrame]) -> list[CodeFrame]:
        """The user frames of ``trace`` (or ``[LIBRARY_FRAME]``); same list per trace."""
        hit = self._traces.get(id(trace))
        if hit is not None and hit[0] is trace:
            return hit[1]
        kept = [frame for frame in trace if self.is_user(frame)] or [LIBRARY_FRAME]
        self._traces[id(trace)] = (trace, kept)
        return kept

    def name(self, frame: CodeFrame, base: str) -> str:
        """``base`` (the frame's tfprof name) with `` [source]`` when readable."""
        if frame is LIBRARY_FRAME:
            return LIBRARY_NAME
        text = frame.line or (self.strings.get(frame.line_id, "") if frame.line_id else "")
        if not text:
            text = self.sources.line(self._file(frame), frame.lineno)
        return f"{base} [{_cut(text)}]" if text.strip() else base
