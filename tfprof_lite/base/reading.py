"""Bounded reads of the files users name.

Every file a user names (saved profiles, GraphDefs, RunMetadata, op logs, HLO
dumps, monitor logs) is read here (:func:`read_input`, :func:`open_input`).
Anything but a regular file (a directory, FIFO, socket, ``/dev/zero``...) is
refused after a ``stat`` and before it is opened for reading, and a FIFO swapped
in afterwards is caught on the open descriptor (opened non-blocking, so a FIFO
without a writer cannot hang the read). A file over the input limit
(:func:`max_input_size`: 2 GiB unless raised) is refused with one line naming
its size, the limit and how to raise it. The bytes are read once into one
``bytes`` object of the file's size (never copied afterwards), so peak memory
is the file plus what parses it. A reader that does not need the bytes as one
object (the native XSpace decoder reads into memory it gives back as it goes)
gets the same checks and messages from :func:`read_input_with`.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import stat
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TypeVar

from tfprof_lite.base.units import format_size, parse_size
from tfprof_lite.errors import InvalidInputError, InvalidOptionError

__all__ = [
    "DEFAULT_MAX_INPUT_SIZE",
    "MAX_INPUT_SIZE_ENV",
    "input_size_limit",
    "max_input_size",
    "open_input",
    "read_input",
    "read_input_with",
    "require_regular_file",
    "require_text",
]

#: The default input limit: protobuf cannot parse a binary message of 2 GiB or
#: more, so no binary profile, GraphDef or RunMetadata above it can be valid.
DEFAULT_MAX_INPUT_SIZE = 2 * 1024**3
#: The environment variable that sets the input limit (e.g. ``8GiB``).
MAX_INPUT_SIZE_ENV = "TFPROF_LITE_MAX_INPUT_SIZE"

T = TypeVar("T")

_LIMIT: ContextVar[int | None] = ContextVar("tfprof_lite_max_input_size", default=None)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def max_input_size(limit: int | str | None = None) -> int:
    """The input limit in bytes: ``limit`` when given, else the one set by
    :func:`input_size_limit` (``--max-input-size``), else ``$TFPROF_LITE_MAX_INPUT_SIZE``,
    else :data:`DEFAULT_MAX_INPUT_SIZE`.

    Raises:
        InvalidOptionError: ``limit`` or the environment variable is not a size.
    """
    if limit is not None:
        return parse_size(limit)
    scoped = _LIMIT.get()
    if scoped is not None:
        return scoped
    env = os.environ.get(MAX_INPUT_SIZE_ENV, "").strip()
    if env:
        try:
            return parse_size(env)
        except InvalidOptionError as err:
            raise InvalidOptionError(f"{MAX_INPUT_SIZE_ENV}={env}: {err}") from None
    return DEFAULT_MAX_INPUT_SIZE


@contextlib.contextmanager
def input_size_limit(limit: int | str) -> Iterator[int]:
    """Within the block, :func:`read_input` refuses files over ``limit`` bytes by default."""
    value = parse_size(limit)
    token = _LIMIT.set(value)
    try:
        yield value
    finally:
        _LIMIT.reset(token)


def _kind_problem(mode: int) -> str | None:
    """What the file of ``mode`` is when it is not a regular file."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def _refuse(path: str, what: str, mode: int) -> None:
    problem = _kind_problem(mode)
    if problem is not None:
        raise InvalidInputError(f"{path}: is {problem}, expected {what} (a regular file)")


def _cannot_read(path: str, err: OSError) -> InvalidInputError:
    reason = err.strerror or type(err).__name__
    return InvalidInputError(f"{path}: cannot read ({reason})")


def _too_big(path: str, what: str, size: int, limit: int) -> InvalidInputError:
    suggest = format_size(1 << (2 * max(size, limit) - 1).bit_length()).replace(" ", "")
    return InvalidInputError(
        f"{path}: {format_size(size)}, over the {format_size(limit)} input limit for "
        f"{what}; raise it with --max-input-size {suggest}, {MAX_INPUT_SIZE_ENV}={suggest} "
        f"or max_input_size='{suggest}'"
    )


def require_regular_file(path: str | os.PathLike[str], what: str = "a file") -> os.stat_result:
    """``stat`` of ``path`` (never opened), refusing anything but a regular file.

    Raises:
        InvalidInputError: missing, inaccessible, or a directory, FIFO, device or socket.
    """
    name = os.fspath(path)
    try:
        info = os.stat(name)
    except OSError as err:
        raise _cannot_read(name, err) from err
    _refuse(name, what, info.st_mode)
    return info


def open_input(path: str | os.PathLike[str], what: str = "a file") -> int:
    """A read-only descriptor of the regular file ``path`` (the caller closes it).

    Raises:
        InvalidInputError: missing, unreadable, or not a regular file (directory,
            FIFO, device, socket); one line naming ``path`` and ``what`` was expected.
    """
    name = os.fspath(path)
    require_regular_file(name, what)  # before any open: opening a FIFO would block
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise _cannot_read(name, err) from err
    try:
        _refuse(name, what, os.fstat(fd).st_mode)  # swapped in since the stat
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_exactly(fd: int, size: int) -> bytes:
    """Up to ``size`` bytes of ``fd``, normally in one read into one buffer
    (shorter if the file shrank, later appends left out)."""
    parts: list[bytes] = []
    left = size
    with io.FileIO(fd, "rb", closefd=False) as raw:
        while left > 0:
            got = raw.read(left)
            if not got:
                break
            parts.append(got)
            left -= len(got)
    if len(parts) == 1:
        return parts[0]
    return b"".join(parts)


def _read_capped(fd: int, name: str, what: str, cap: int, reader: Callable[[int, int], T]) -> T:
    """``reader(fd, size)`` unless ``fd`` is over ``cap`` bytes; errors name ``name``."""
    try:
        size = os.fstat(fd).st_size
    except OSError as err:
        raise _cannot_read(name, err) from err
    if size > cap:
        raise _too_big(name, what, size, cap)
    try:
        return reader(fd, size)
    except OSError as err:
        raise _cannot_read(name, err) from err
    except MemoryError as err:
        raise InvalidInputError(
            f"{name}: not enough memory to read the {what} ({format_size(size)})"
        ) from err


def read_input(
    path: str | os.PathLike[str], what: str = "a file", limit: int | str | None = None
) -> bytes:
    """The bytes of the user file ``path``, read once, at most the input limit.

    Args:
        path: the file.
        what: what the file should be, for messages (``"a saved profile"``).
        limit: the largest size accepted, in bytes or as ``"8GiB"``; None: see
            :func:`max_input_size`.

    Returns:
        The file's bytes (data appended while reading is left out).

    Raises:
        InvalidInputError: missing, unreadable, not a regular file, or over the limit.
        InvalidOptionError: ``limit`` (or the environment variable) is not a size.
    """
    return read_input_with(path, _read_exactly, what, limit)


def read_input_with(
    path: str | os.PathLike[str],
    reader: Callable[[int, int], T],
    what: str = "a file",
    limit: int | str | None = None,
) -> T:
    """``reader(fd, size)`` on the user file ``path``: :func:`read_input`'s checks
    (a regular file, at most the input limit) and its one-line errors, an
    ``OSError`` or ``MemoryError`` of ``reader`` included; ``reader`` reads at
    most ``size`` bytes from the descriptor's start (data appended while reading
    is left out) and never closes it.

    Raises:
        InvalidInputError: missing, unreadable, not a regular file, or over the limit.
        InvalidOptionError: ``limit`` (or the environment variable) is not a size.
    """
    name = os.fspath(path)
    cap = max_input_size(limit)
    fd = open_input(name, what)
    try:
        return _read_capped(fd, name, what, cap, reader)
    finally:
        os.close(fd)


def require_text(
    data: bytes | bytearray, path: str | os.PathLike[str], what: str, sample: int = 1 << 16
) -> None:
    """Refuse ``data`` when its first ``sample`` bytes are not UTF-8 (a binary file
    where text is expected), before any full-size decode is attempted.

    Raises:
        InvalidInputError: naming ``path``, the offset of the first bad byte and ``what``.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    with memoryview(data) as view:
        try:
            decoder.decode(view[:sample], final=len(view) <= sample)
        except UnicodeDecodeError as err:
            raise InvalidInputError(
                f"{os.fspath(path)}: not UTF-8 text (byte {err.start}), expected {what}"
            ) from None
