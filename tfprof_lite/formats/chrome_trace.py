"""Chrome trace JSON given as a profile: told apart, and answered with what to pass.

JAX's ``jax.profiler.start_trace`` writes ``<host>.trace.json.gz`` beside
``<host>.xplane.pb``, and ``tfprof-lite timeline`` and other tools write
Chrome traces (``.json``, ``.json.gz``). They hold a trace for a viewer, not a
profile. :func:`chrome_trace_error` recognises one by its name
(``.json``, ``.json.gz``) and its content (gzip's magic and JSON, or JSON
with ``traceEvents`` or events' ``ph``) and returns the one-line error that
says what it is and what to pass instead: the ``*.xplane.pb`` in the same
folder when there is one, else the run folder or the logdir.
"""

from __future__ import annotations

import os
import zlib

from tfprof_lite.base.shown import shown
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.xspace.read.runs import host_files

__all__ = ["NAMES", "chrome_trace_error", "is_chrome_trace"]

#: The file name endings of Chrome traces (``.trace.json.gz`` included).
NAMES = (".json", ".json.gz")
_HEAD = 1 << 16
_GZIP_MAGIC = b"\x1f\x8b"
_MARKERS = (b'"traceEvents"', b'"ph"')
_STEMS = (".trace.json.gz", ".trace.json", ".json.gz", ".json")


def _json_head(head: bytes | bytearray | memoryview) -> tuple[bool, bytes]:
    """``(gzipped, the start of the text)`` of a file starting with ``head``."""
    data = bytes(head[:_HEAD])
    if not data.startswith(_GZIP_MAGIC):
        return False, data
    try:
        return True, zlib.decompressobj(wbits=31).decompress(data, _HEAD)
    except zlib.error:
        return True, b""


def is_chrome_trace(name: str, head: bytes | bytearray | memoryview) -> bool:
    """Whether a file named ``name`` that starts with ``head`` is Chrome trace JSON.

    It is when its text (gunzipped) starts with ``{`` or ``[`` and it is
    gzipped, named ``*.json``/``*.json.gz``, or holds ``"traceEvents"`` or
    ``"ph"`` in its first 64 KiB.
    """
    gzipped, text = _json_head(head)
    if text.lstrip()[:1] not in (b"{", b"["):
        return False
    return gzipped or name.lower().endswith(NAMES) or any(m in text for m in _MARKERS)


def _stem(name: str) -> str:
    lower = name.lower()
    cut = next((len(s) for s in _STEMS if lower.endswith(s)), 0)
    return name[: len(name) - cut] if cut else name


def _instead(path: str) -> str:
    """What to pass instead of the trace ``path``."""
    folder = os.path.dirname(path) or "."
    hosts = host_files(folder)
    stem = shown(_stem(os.path.basename(path)))
    if stem in hosts or len(hosts) == 1:
        xplane = hosts.get(stem) or next(iter(hosts.values()))
        return f"pass the XSpace beside it instead: {shown(xplane)}"
    if hosts:
        return f"pass its run folder instead: {shown(folder)} ({len(hosts)} hosts' *.xplane.pb)"
    return (
        "pass the profiler's XSpace instead: a *.xplane.pb file, its run folder "
        "(plugins/profile/<run>/) or the TensorBoard logdir"
    )


def chrome_trace_error(
    path: str, head: bytes | bytearray | memoryview | None = None
) -> InvalidInputError | None:
    """The error to raise when file ``path`` is Chrome trace JSON, else None.

    Args:
        path: the file as named.
        head: its first bytes when already read (else up to 64 KiB are read).
    """
    if head is None:
        if not os.path.isfile(path):  # a FIFO or device is not opened here
            return None
        try:
            with open(path, "rb") as handle:
                head = handle.read(_HEAD)
        except OSError:
            return None
    if not is_chrome_trace(path, head):
        return None
    return InvalidInputError(
        f"{shown(path)}: a Chrome trace (JSON) for trace viewers, not a profile; " + _instead(path)
    )
