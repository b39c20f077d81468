"""Message files named on the command line: read once, binary or text format.

:func:`parse_file` reads a file as one message kind, binary (``SerializeToString``)
or protobuf text format (a ``.pbtxt``-like suffix, :data:`TEXT_SUFFIXES`, or a
file that does not parse as binary but does as text). Every failure is one
:class:`~tfprof_lite.errors.InvalidInputError` line that starts with the file
name: missing, unreadable, empty, not UTF-8 text, corrupt or truncated, a
Chrome trace (JSON; :mod:`tfprof_lite.formats.chrome_trace` names what to pass
instead), or another message kind (naming the kind it looks like and where it
goes on the command line).
"""

from __future__ import annotations

import codecs
import re
from typing import Any

from tfprof_lite.base.reading import read_input
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.chrome_trace import chrome_trace_error

__all__ = ["TEXT_SUFFIXES", "blank", "is_text_path", "parse_file", "read_file"]

#: File suffixes read as protobuf text format.
TEXT_SUFFIXES = (".pbtxt", ".pbtext", ".prototxt", ".textproto", ".txtpb", ".txt")
_NON_BLANK = re.compile(rb"\S")
_UTF8_CHUNK = 1 << 20
_TRACE_HEAD = 1 << 16


def read_file(path: str, what: str = "a file") -> bytes:
    """The bytes of ``path`` (:func:`~tfprof_lite.base.reading.read_input`): a missing,
    unreadable, non-regular or oversized file is one clear error."""
    return read_input(path, what)


def blank(data: bytes | bytearray) -> bool:
    """True when ``data`` is empty or only whitespace (without copying it)."""
    return _NON_BLANK.search(data) is None


# Where each message kind belongs on the command line (the kinds are told apart by
# tfprof_lite.proto.kinds, shared with the Python API).
_CLI_HINTS = {
    "ProfileProto": "a saved profile; pass it as PROFILE",
    "GraphDef": "a GraphDef; pass it with --graph",
    "RunMetadata": "a RunMetadata; pass it with --run-meta",
    "OpLogProto": "an OpLogProto; pass it with --op-log",
    "XSpace": "a profiler XSpace (*.xplane.pb); pass it as PROFILE",
}


def _plausible(name: str, message: Any) -> bool:
    from tfprof_lite.proto import kinds

    return kinds.plausible(name, message)


def _looks_like(data: bytes | bytearray, expected: str, text: bool = False) -> str | None:
    """The hint for the other message kind ``data`` plausibly is, if any
    (``text``: read ``data`` as text format)."""
    from tfprof_lite.proto import kinds

    kind = kinds.identify(data, exclude=expected, text=text)
    return _CLI_HINTS[kind] if kind else None


def _a(name: str) -> str:
    """``name`` with its indefinite article (``an OpLogProto``, ``a GraphDef``)."""
    return f"an {name}" if name[0] in "AEIOUX" else f"a {name}"


def is_text_path(path: str) -> bool:
    """Whether ``path`` names a text-format file (by its suffix)."""
    return path.lower().endswith(TEXT_SUFFIXES)


def _check_utf8(data: bytes | bytearray) -> None:
    """Raises UnicodeDecodeError unless ``data`` is UTF-8, a chunk at a time, so a
    large binary file fails at its first bad byte without a full-size decode."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    with memoryview(data) as view:
        for start in range(0, len(view), _UTF8_CHUNK):
            decoder.decode(view[start : start + _UTF8_CHUNK])
    decoder.decode(b"", final=True)


def _parse_text(cls: Any, data: bytes | bytearray, path: str) -> Any:
    from google.protobuf import text_format

    name = cls.DESCRIPTOR.name
    try:
        _check_utf8(data)
        text = data.decode("utf-8")
        return text_format.Parse(text, cls())
    except UnicodeDecodeError as err:
        raise InvalidInputError(f"{path}: not a text-format {name} (not UTF-8 text)") from err
    except text_format.ParseError as err:
        detail = " ".join(str(err).split())
        raise InvalidInputError(f"{path}: not a valid text-format {name} ({detail})") from err


def _parse_binary_or_text(cls: Any, data: bytes | bytearray, path: str) -> Any:
    from tfprof_lite.proto.codec import parse

    try:
        return parse(cls, data, path)
    except InvalidInputError as err:
        try:
            return _parse_text(cls, data, path)
        except InvalidInputError:
            pass
        hint = _looks_like(data, cls.DESCRIPTOR.name)
        if hint:
            raise InvalidInputError(
                f"{path}: not {_a(cls.DESCRIPTOR.name)} (it looks like {hint})"
            ) from err
        raise InvalidInputError(
            f"{err}; the file is corrupt or truncated, or not {_a(cls.DESCRIPTOR.name)}"
        ) from err


def parse_file(cls: Any, path: str, data: bytes | bytearray | None = None) -> Any:
    """Reads ``path`` as a ``cls`` message (binary or text format) holding real data.

    Args:
        cls: the message class.
        path: the file, named in errors.
        data: the file's bytes when already read (else ``path`` is read).

    Raises:
        InvalidInputError: missing/unreadable/non-regular/oversized/empty file, bytes
            that do not parse, or a message that is empty or plainly of another type.
    """
    name = cls.DESCRIPTOR.name
    if data is None:
        data = read_file(path, _a(name))
    if blank(data):
        raise InvalidInputError(f"{path}: the file is empty, expected {_a(name)}")
    trace = chrome_trace_error(path, memoryview(data)[:_TRACE_HEAD])
    if trace is not None:
        raise trace
    if is_text_path(path):
        try:
            message = _parse_text(cls, data, path)
        except InvalidInputError as err:
            hint = _looks_like(data, name, text=True)
            if hint is None:
                raise
            raise InvalidInputError(f"{path}: not {_a(name)} (it looks like {hint})") from err
    else:
        message = _parse_binary_or_text(cls, data, path)
    if not _plausible(name, message):
        hint = _looks_like(data, name)
        what = f"it looks like {hint}" if hint else f"it holds no {name} data"
        raise InvalidInputError(f"{path}: not {_a(name)} ({what})")
    return message
