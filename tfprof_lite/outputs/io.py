"""The one place that writes: atomic file writes and stdout.

Files are written to a temporary sibling and renamed into place, so a reader
never sees half a file and a failed write leaves any old file untouched.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading

from tfprof_lite.errors import TfprofLiteError

__all__ = ["create_temp_sibling", "write_atomic", "write_stdout"]

_UMASK_LOCK = threading.Lock()


def _current_umask() -> int:
    """The process umask (reading it means setting it, hence the lock)."""
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def create_temp_sibling(target: str) -> tuple[int, str]:
    """Open a new temporary file next to ``target``; returns ``(fd, path)``.

    The file gets the permissions a plain ``open(target, "w")`` would give
    (``0666`` less the umask) rather than ``mkstemp``'s ``0600``, so the renamed
    result is as readable as any other file the user writes.

    Raises:
        OSError: the directory does not exist or is not writable.
    """
    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=".tfprof_lite-", dir=directory)
    with contextlib.suppress(OSError):  # keeps 0600 where chmod is refused
        os.fchmod(fd, 0o666 & ~_current_umask())
    return fd, tmp


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename.

    Raises:
        TfprofLiteError: the directory does not exist or is not writable.
    """
    target = os.fspath(path)
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
        os.unlink(tmp)
        raise TfprofLiteError(f"cannot write {target}: {err.strerror}") from err


def write_stdout(text: str) -> None:
    """Print ``text`` as is (no newline added) and flush."""
    sys.stdout.write(text)
    sys.stdout.flush()
