"""Paths as they are shown: file names that are not UTF-8, printable anywhere.

On Linux a file name is bytes; Python hands a name that is not UTF-8 over as
text with each undecodable byte as a lone surrogate (``surrogateescape``:
byte ``0xff`` is ``'\\udcff'``). Such a string opens the file, but writing it
to a UTF-8 stream or file fails. :func:`shown` gives the text to print
instead: each such byte as ``\\xff``. It is for display only; the path used to
open a file stays as it was given.
"""

from __future__ import annotations

import os
import re

__all__ = ["shown"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def shown(text: str | os.PathLike[str]) -> str:
    """``text`` with each undecodable byte of a file name written as ``\\xNN``.

    Text without surrogates comes back unchanged; other lone surrogates (not
    from a file name) are written as ``\\udNNN``.
    """
    text = os.fspath(text)
    if _SURROGATE.search(text) is None:
        return text
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")
