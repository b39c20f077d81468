"""Atomic writes and the one place that prints reports.

Files are written to a temporary sibling ``.tfprof_lite-<pid>-<random>`` and
renamed into place (:func:`write_atomic`, :func:`create_temp_sibling`), so a
reader never sees half a file and a failed write leaves any old file untouched.
The temporary file is removed on every failure (``OSError``, ``KeyboardInterrupt``,
any exception); a writer killed outright (``SIGKILL``) cannot clean up, so each
new temporary file first removes the stale ones of its directory whose writer
process is gone (see :func:`remove_stale_temps`). An existing directory is
refused as a destination up front.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import threading
import time

from tfprof_lite.base.shown import shown
from tfprof_lite.errors import TfprofLiteError

__all__ = [
    "STALE_TEMP_AGE",
    "TEMP_PREFIX",
    "check_output_path",
    "create_temp_sibling",
    "discard_temp",
    "remove_stale_temps",
    "write_atomic",
    "write_stdout",
]

#: Every temporary file this module creates starts with this.
TEMP_PREFIX = ".tfprof_lite-"
#: Seconds a dead writer's temporary file must be left untouched before removal.
STALE_TEMP_AGE = 60.0

_UMASK_LOCK = threading.Lock()
_STALE_RE = re.compile(re.escape(TEMP_PREFIX) + r"(?:[a-z]+-)?(\d+)-")


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
    import tempfile  # a writer's only (it loads random, shutil): stdout needs none

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
    """Print ``text`` as is (no newline added) and flush; a file name in it that is
    not UTF-8 is written with ``\\xNN`` escapes (:func:`~tfprof_lite.base.shown.shown`)."""
    sys.stdout.write(shown(text))
    sys.stdout.flush()
