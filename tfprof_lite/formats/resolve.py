"""What a path holds: the one table of input formats every loader reads.

:func:`identify` names the format of a file or directory by walking
:data:`FILE_FORMATS` or :data:`DIR_FORMATS` in order; the first whose test
holds wins. ``Profiler.load``, ``cluster.merge`` and the command line all ask
it, so a path means the same everywhere; each then reads the formats it takes
and refuses the others with the one line :func:`refusal` gives.

Files:

* ``chrome-trace``: Chrome trace JSON (JAX's ``<host>.trace.json.gz``, a
  ``tfprof-lite timeline`` output): a trace for a viewer, never a profile; the
  error names the ``*.xplane.pb`` to pass instead;
* ``xspace``: a profiler XSpace (``*.xplane.pb``, or one by content);
* ``tf-message``: anything else: a ProfileProto or a RunMetadata, binary or
  text, told apart by content when it is read (:func:`tfprof_lite.proto.kinds.identify`).

Directories:

* ``xspace-run``: a run folder (``plugins/profile/<run>/``), a TensorBoard
  logdir, or its ``plugins``/``plugins/profile`` folder;
* ``captures``: task-tagged RunMetadata captures (``task.<tag>.json`` sidecars);
* ``run-metadata-files``: ``run_meta_<step>`` files;
* ``saved-profiles``: ``profile_<step>`` files (the newest is read);
* ``xspace-logdirs``: none of these, but logdirs a few levels below (Keras'
  ``LOGDIR/train``).

A new input format is a row here and a loader in its own package under
``tfprof_lite/formats/`` (``docs/ARCHITECTURE.md``, "A new input format").
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from tfprof_lite.base.shown import shown
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.chrome_trace import is_chrome_trace
from tfprof_lite.formats.xspace.read import runs

__all__ = [
    "DIR_FORMATS",
    "FILE_FORMATS",
    "PROFILE_FILE",
    "RUN_META_FILE",
    "SIDECAR",
    "XSPACE_FORMATS",
    "XSPACE_SUFFIX",
    "Format",
    "identify",
    "nothing_here",
    "refusal",
    "saved_profiles",
]

#: A saved profile in a directory, ``profile_<step>``.
PROFILE_FILE = re.compile(r"profile_(\d+)")
#: A RunMetadata file in a directory, ``run_meta_<step>`` (any suffix).
RUN_META_FILE = re.compile(r"run_meta_(\d+)(?:\.\w+)?")
#: A task sidecar of a task-tagged capture, ``task.<tag>.json``.
SIDECAR = re.compile(r"task\.(?P<tag>[A-Za-z0-9_.-]+)\.json")
_HEAD = 1 << 16


@dataclass(frozen=True)
class Format:
    """One input format: its name, what it is in words, and its test on a path."""

    name: str
    words: str
    claims: Callable[[str], bool]


def _head(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(_HEAD)
    except OSError:
        return b""


def _entries(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _files_matching(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    def claims(path: str) -> bool:
        return any(
            pattern.fullmatch(e) and os.path.isfile(os.path.join(path, e)) for e in _entries(path)
        )

    return claims


def saved_profiles(path: str) -> dict[int, str]:
    """``{step: path}`` of the ``profile_<step>`` files in directory ``path``."""
    out: dict[int, str] = {}
    for entry in _entries(path):
        match = PROFILE_FILE.fullmatch(entry)
        if match and os.path.isfile(os.path.join(path, entry)):
            out[int(match[1])] = os.path.join(path, entry)
    return out


FILE_FORMATS: tuple[Format, ...] = (
    Format("chrome-trace", "a Chrome trace (JSON)",
           lambda p: is_chrome_trace(os.path.basename(p), _head(p))),
    Format("xspace", "a profiler XSpace (*.xplane.pb)", runs.is_xspace_file),
    Format("tf-message", "a ProfileProto or RunMetadata", lambda p: True),
)  # fmt: skip

DIR_FORMATS: tuple[Format, ...] = (
    Format("xspace-run", "a profiler run folder or TensorBoard logdir", runs.is_xspace_dir),
    Format("captures", "task-tagged RunMetadata captures (task.<tag>.json)",
           _files_matching(SIDECAR)),
    Format("run-metadata-files", "a directory of run_meta_<step> files",
           _files_matching(RUN_META_FILE)),
    Format("saved-profiles", "a directory of profile_<step> files", _files_matching(PROFILE_FILE)),
    Format("xspace-logdirs", "a folder with TensorBoard logdirs below it",
           lambda p: bool(runs.find_runs(p))),
)  # fmt: skip

#: The file name ending of an XSpace.
XSPACE_SUFFIX = runs.SUFFIX
#: The formats read as an XSpace.
XSPACE_FORMATS = frozenset({"xspace", "xspace-run", "xspace-logdirs"})


def identify(path: str) -> Format:
    """The format of ``path``: the first row of :data:`FILE_FORMATS` (a file) or
    :data:`DIR_FORMATS` (a directory) whose test holds.

    Raises:
        InvalidInputError: ``path`` does not exist, or is a directory that holds
            none of the formats (naming what it could have held).
    """
    if os.path.isdir(path):
        for fmt in DIR_FORMATS:
            if fmt.claims(path):
                return fmt
        raise nothing_here(path)
    if not os.path.exists(path):
        raise InvalidInputError(f"{shown(path)}: no such file or directory")
    if not os.path.isfile(path):  # a FIFO or device is not opened here; the reader refuses it
        return FILE_FORMATS[-1]
    return next(fmt for fmt in FILE_FORMATS if fmt.claims(path))


def nothing_here(path: str) -> InvalidInputError:
    """The one-line error for directory ``path`` holding no profile of any format."""
    return InvalidInputError(
        f"{shown(path)}: no profile_<step> files in this directory, nor profiler "
        "XSpaces (*.xplane.pb, a run folder plugins/profile/<run>/, or a TensorBoard "
        f"logdir with one up to {runs.MAX_DEPTH} levels down)"
    )


def refusal(path: str, fmt: Format, reader: str, instead: str) -> InvalidInputError:
    """The one-line error of a loader (``reader``) given a format it does not
    take: what ``path`` holds and what to do instead (``instead``)."""
    return InvalidInputError(f"{shown(path)}: {fmt.words}, which {reader} does not read; {instead}")
