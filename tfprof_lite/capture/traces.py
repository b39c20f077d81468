"""The Python call stacks of a live graph's ops, as tfprof's op log carries them.

Contract:

* :class:`TraceEncoder` turns an op's ``traceback`` into the ``code_def`` field
  of its ``OpLogEntry`` (wire bytes), with TensorFlow's string table: ``"none"``
  is 0, then file names, function names and source lines get ids in order of
  first use, frames outermost first (``tfprof_logger``'s numbering when the ops
  are encoded in graph order). Equal stacks are encoded once.
* :class:`PendingTraces` holds ops whose stacks are not resolved yet. TensorFlow
  resolves an op's call stack (code objects to file, line and function, then the
  source line text) the first time it is read, which costs more than everything
  else the profiler does with the op; the stacks only matter to the code view and
  to a written profile, so they are resolved when one of those asks, or when the
  next op log that adds ops is built (so the string ids stay in graph order). ``any()``
  resolves only as far as the first op with a non-empty stack.
"""

from __future__ import annotations

from array import array
from typing import Any

from tfprof_lite.proto.wire import int_field, len_field, varint

__all__ = ["PendingTraces", "TraceEncoder"]

_Frame = tuple[str, int, str, str]


class TraceEncoder:
    """``code_def`` fields of ops and the string table they use.

    Call stacks are encoded once per distinct ``StackTrace`` (equal traces share
    code objects and instruction offsets, hence frames) and frames once per
    distinct frame. ``packed`` maps each ``code_def`` field to its frames as
    :class:`~tfprof_lite.proto.graphs.OpLogColumns` keeps them.
    """

    def __init__(self) -> None:
        #: String -> id, in order of first use.
        self.strings: dict[str, int] = {"none": 0}
        #: A framed ``code_def`` field -> its frames, five int64 each.
        self.packed: dict[bytes, bytes] = {}
        self._stacks = _Stacks()
        self._frames: dict[_Frame, bytes] = {}
        self._packed_frames: dict[bytes, bytes] = {}

    def string_id(self, text: str) -> int:
        """The id of ``text``, given the next one when it is new."""
        sid = self.strings.get(text)
        if sid is None:
            sid = len(self.strings)
            self.strings[text] = sid
        return sid

    def _frame(self, frame: _Frame) -> bytes:
        """One ``CodeDef.traces`` element, framed (field 1)."""
        data = self._frames.get(frame)
        if data is None:
            filename, lineno, funcname, line = frame
            ids = [
                self.string_id(filename) if filename else 0,
                lineno if lineno else -1,
                self.string_id(funcname) if funcname else 0,
                self.string_id(line) if line else 0,
                -1,
            ]
            body = int_field(2, ids[1]) + int_field(5, -1) + int_field(6, ids[0])
            body += int_field(7, ids[2]) + int_field(8, ids[3])
            data = len_field(1, body)
            self._frames[frame] = data
            self._packed_frames[data] = array("q", ids).tobytes()
        return data

    def code_def(self, op: Any, op_type: str) -> bytes:
        """The op's ``code_def`` field (empty when it has no traceback, like the ops
        of an imported GraphDef, or the traceback has no frame)."""
        stack = op.traceback
        if not stack:
            return b""
        key = (len(stack), op_type)
        data = self._stacks.get(key, stack)
        if data is None:
            frames = [self._frame(tuple(f)) for f in stack]
            body = b"".join(frames)
            data = b"\x22" + varint(len(body)) + body if body else b""
            if data:
                self.packed[data] = b"".join([self._packed_frames[f] for f in frames])
            self._stacks.put(key, stack, data)
        return data


class PendingTraces:
    """Ops of one op log whose call stacks are resolved on demand, in graph order."""

    def __init__(self, encoder: TraceEncoder, ops: list[Any]) -> None:
        self._encoder = encoder
        self._ops = ops
        self._next = 0
        self._codes: dict[str, bytes] = {}

    def _resolve(self, stop_at_first: bool) -> None:
        ops, code_def, codes = self._ops, self._encoder.code_def, self._codes
        while self._next < len(ops):
            op = ops[self._next]
            self._next += 1
            code = code_def(op, op.type)
            if code:
                codes[op.name] = code
                if stop_at_first:
                    return

    def any(self) -> bool:
        """Whether an op has a non-empty call stack (its op log would hold a trace)."""
        if not self._codes:
            self._resolve(stop_at_first=True)
        return bool(self._codes)

    def take(self) -> dict[str, bytes]:
        """Op name -> ``code_def`` field of every op with a call stack, in graph
        order; empty when they were taken before."""
        self._resolve(stop_at_first=False)
        codes, self._codes = self._codes, {}
        self._ops = []
        return codes


class _Stacks:
    """Encoded ``code_def`` fields by call stack.

    Hashing a ``StackTrace`` costs several equality tests, so stacks are kept in
    buckets by (depth, op type) and compared with ``==`` (equal stacks have the
    same code objects and instruction offsets, hence frames); a bucket holding
    more than a few stacks becomes a hash table.
    """

    _LINEAR = 8

    def __init__(self) -> None:
        self._buckets: dict[tuple[int, str], list[tuple[Any, bytes]] | dict[Any, bytes]] = {}

    def get(self, key: tuple[int, str], stack: Any) -> bytes | None:
        bucket = self._buckets.get(key)
        if bucket is None:
            return None
        if isinstance(bucket, dict):
            return bucket.get(stack)
        for known, data in bucket:
            if known == stack:
                return data
        return None

    def put(self, key: tuple[int, str], stack: Any, data: bytes) -> None:
        bucket = self._buckets.setdefault(key, [])
        if isinstance(bucket, dict):
            bucket[stack] = data
            return
        bucket.append((stack, data))
        if len(bucket) > self._LINEAR:
            self._buckets[key] = dict(bucket)
