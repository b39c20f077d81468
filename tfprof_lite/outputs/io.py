"""The one place that touches files: bounded reads of user files, atomic writes, stdout.

Reading (:func:`read_input`, :func:`open_input`): every file a user names (saved
profiles, GraphDefs, RunMetadata, op logs, HLO dumps, monitor logs) is read here.
Anything but a regular file (a directory, FIFO, socket, ``/dev/zero``...) is
refused after a ``stat`` and before it is opened for reading, and a FIFO swapped
in afterwards is caught on the open descriptor (opened non-blocking, so a FIFO
without a writer cannot hang the read). A file over the input limit
(:func:`max_input_size`: 2 GiB unless raised) is refused with one line naming
its size, the limit and how to raise it. The bytes are read once into a
preallocated ``bytearray``, so peak memory is the file plus what parses it.

Writing (:func:`write_atomic`, :func:`create_temp_sibling`): files are written to
a temporary sibling ``.tfprof_lite-<pid>-<random>`` and renamed into place, so a
reader never sees half a file and a failed write leaves any old file untouched.
The temporary file is removed on every failure (``OSError``, ``KeyboardInterrupt``,
any exception); a writer killed outright (``SIGKILL``) cannot clean up, so each
new temporary file first removes the stale ones of its directory whose writer
process is gone (see :func:`remove_stale_temps`). An existing directory is
refused as a destination up front.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import re
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar

from tfprof_lite.errors import InvalidInputError, InvalidOptionError, TfprofLiteError

__all__ = [
    "DEFAULT_MAX_INPUT_SIZE",
    "MAX_INPUT_SIZE_ENV",
    "STALE_TEMP_AGE",
    "TEMP_PREFIX",
    "check_output_path",
    "create_temp_sibling",
    "discard_temp",
    "format_size",
    "input_size_limit",
    "max_input_size",
    "open_input",
    "parse_size",
    "read_input",
    "remove_stale_temps",
    "require_regular_file",
    "require_text",
    "write_atomic",
    "write_stdout",
]

#: The default input limit: protobuf cannot parse a binary message of 2 GiB or
#: more, so no binary profile, GraphDef or RunMetadata above it can be valid.
DEFAULT_MAX_INPUT_SIZE = 2 * 1024**3
#: The environment variable that sets the input limit (e.g. ``8GiB``).
MAX_INPUT_SIZE_ENV = "TFPROF_LITE_MAX_INPUT_SIZE"
#: Every temporary file this module creates starts with this.
TEMP_PREFIX = ".tfprof_lite-"
#: Seconds a dead writer's temporary file must be left untouched before removal.
STALE_TEMP_AGE = 60.0

_UMASK_LOCK = threading.Lock()
_LIMIT: ContextVar[int | None] = ContextVar("tfprof_lite_max_input_size", default=None)
_SIZE_RE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgtp]?)(i?)(b?)\s*", re.IGNORECASE)
_UNITS = "kmgtp"
_STALE_RE = re.compile(re.escape(TEMP_PREFIX) + r"(?:[a-z]+-)?(\d+)-")
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


# ------------------------------------------------------------------ sizes
def parse_size(text: str | int) -> int:
    """A byte count from ``8GiB``, ``512MB``, ``100k``, ``1.5G`` or ``1234``.

    ``K``/``M``/``G``/``T``/``P`` are powers of 1024 with or without ``i`` and ``B``
    (``8G`` = ``8GiB``).

    Raises:
        InvalidOptionError: not a size, or not above zero.
    """
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE_RE.fullmatch(text)
        if match is None or (match[3] and not match[2]):
            raise InvalidOptionError(f"{text!r} is not a size; write e.g. 8GiB, 512MB or 1000000")
        power = _UNITS.index(match[2].lower()) + 1 if match[2] else 0
        value = int(float(match[1]) * 1024**power)
    if value <= 0:
        raise InvalidOptionError(f"{text!r}: the input size limit must be above zero")
    return value


def format_size(size: int) -> str:
    """``size`` bytes in the largest binary unit that keeps it at 1 or more (``2 GiB``)."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            text = f"{value:.1f}".rstrip("0").rstrip(".") if unit != "B" else str(size)
            return f"{text} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


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


# ------------------------------------------------------------------ reading
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


def _read_exactly(fd: int, size: int) -> bytearray:
    """Up to ``size`` bytes of ``fd`` in one preallocated buffer (shorter if the file shrank)."""
    buf = bytearray(size)
    view = memoryview(buf)
    done = 0
    with io.FileIO(fd, "rb", closefd=False) as raw:
        while done < size:
            got = raw.readinto(view[done:])
            if not got:
                break
            done += got
    view.release()
    if done < size:
        del buf[done:]
    return buf


def _read_capped(fd: int, name: str, what: str, cap: int) -> bytearray:
    """The whole of ``fd`` unless it is over ``cap`` bytes; errors name ``name``."""
    try:
        size = os.fstat(fd).st_size
    except OSError as err:
        raise _cannot_read(name, err) from err
    if size > cap:
        raise _too_big(name, what, size, cap)
    try:
        return _read_exactly(fd, size)
    except OSError as err:
        raise _cannot_read(name, err) from err
    except MemoryError as err:
        raise InvalidInputError(
            f"{name}: not enough memory to read the {what} ({format_size(size)})"
        ) from err


def read_input(
    path: str | os.PathLike[str], what: str = "a file", limit: int | str | None = None
) -> bytearray:
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
    name = os.fspath(path)
    cap = max_input_size(limit)
    fd = open_input(name, what)
    try:
        return _read_capped(fd, name, what, cap)
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


# ------------------------------------------------------------------ writing
def _current_umask() -> int:
    """The process umask (reading it means setting it, hence the lock)."""
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return True  # not ours to judge
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _is_stale(entry: os.DirEntry[str], now: float) -> bool:
    match = _STALE_RE.match(entry.name)
    if match is None or int(match[1]) == os.getpid():
        return False
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode) or now - info.st_mtime < STALE_TEMP_AGE:
        return False
    return not _pid_alive(int(match[1]))


def remove_stale_temps(directory: str | os.PathLike[str]) -> list[str]:
    """Remove the temporary files of writers that died in ``directory``.

    Only regular files named ``.tfprof_lite-<pid>-...`` whose process ``pid`` no
    longer exists and that were not modified for :data:`STALE_TEMP_AGE` seconds
    are removed; errors are ignored. Returns the names removed.
    """
    removed: list[str] = []
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if _is_stale(entry, now):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed.append(entry.name)
    return removed


def check_output_path(target: str | os.PathLike[str]) -> str:
    """``target`` as a string; an existing directory is refused as a destination.

    Raises:
        TfprofLiteError: ``target`` is an existing directory.
    """
    name = os.fspath(target)
    if os.path.isdir(name):
        raise TfprofLiteError(f"cannot write {name}: it is a directory; give a file name")
    return name


def create_temp_sibling(target: str, tag: str = "") -> tuple[int, str]:
    """Open a new temporary file next to ``target``; returns ``(fd, path)``.

    The name is ``.tfprof_lite-[<tag>-]<pid>-<random>``; stale ones left by dead
    writers in the same directory are removed first (:func:`remove_stale_temps`).
    The file gets the permissions a plain ``open(target, "w")`` would give
    (``0666`` less the umask) rather than ``mkstemp``'s ``0600``, so the renamed
    result is as readable as any other file the user writes.

    Raises:
        OSError: the directory does not exist or is not writable.
    """
    directory = os.path.dirname(os.path.abspath(target))
    remove_stale_temps(directory)
    prefix = f"{TEMP_PREFIX}{tag + '-' if tag else ''}{os.getpid()}-"
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=directory)
    with contextlib.suppress(OSError):  # keeps 0600 where chmod is refused
        os.fchmod(fd, 0o666 & ~_current_umask())
    return fd, tmp


def discard_temp(tmp: str) -> None:
    """Remove the temporary file ``tmp`` if it is still there."""
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def write_atomic(path: str | os.PathLike[str], data: str | bytes | bytearray) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename.

    The temporary file is removed whatever interrupts the write.

    Raises:
        TfprofLiteError: ``path`` is a directory, or its directory does not exist
            or is not writable (the message names ``path``).
    """
    target = check_output_path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        fd, tmp = create_temp_sibling(target)
    except OSError as err:
        raise TfprofLiteError(
            f"cannot write {target}: {err.strerror}; create the directory or pick another path"
        ) from err
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, target)
    except OSError as err:
        discard_temp(tmp)
        raise TfprofLiteError(f"cannot write {target}: {err.strerror or err}") from err
    except BaseException:
        discard_temp(tmp)
        raise


def write_stdout(text: str) -> None:
    """Print ``text`` as is (no newline added) and flush."""
    sys.stdout.write(text)
    sys.stdout.flush()
