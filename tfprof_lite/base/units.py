"""Units and number formats: tfprof's report formats (decimal K/M thresholds,
``%.2f``), the unambiguous counts of our own outputs (``85.03 M``, never
tfprof's ``85.03m``, which reads as milli) and the byte sizes of option values
(``8GiB``), and lists of step numbers written short (``0-49, 52``)."""

from __future__ import annotations

import re

from tfprof_lite.errors import InvalidOptionError

__all__ = [
    "format_count",
    "format_memory",
    "format_number",
    "format_shape",
    "format_size",
    "format_time",
    "parse_size",
    "step_ranges",
]

_SIZE_RE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgtp]?)(i?)(b?)\s*", re.IGNORECASE)
_UNITS = "kmgtp"


def format_number(n: int) -> str:
    """Counts: ``999``, ``1.00k``, ``2.50m``, ``3.00b``."""
    if n < 1000:
        return str(n)
    if n < 1000000:
        return f"{n / 1000.0:.2f}k"
    if n < 1000000000:
        return f"{n / 1000000.0:.2f}m"
    return f"{n / 1000000000.0:.2f}b"


#: SI prefixes of :func:`format_count`, largest first.
_SI_PREFIXES = ((10**15, "P"), (10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "k"))


def format_count(n: int, unit: str = "") -> str:
    """A count with an SI prefix, for our own outputs (the report, CLI tables):
    ``999``, ``1.00 k``, ``85.03 M``, ``2.13 G``; with ``unit`` the prefix joins
    it: ``85.03 MFLOPs``, ``999 FLOPs``. tfprof's own text keeps
    :func:`format_number` (``85.03m``), which reads as milli elsewhere."""
    size = abs(n)
    for i, (scale, prefix) in enumerate(_SI_PREFIXES):
        if size >= scale:
            if i and round(size / scale, 2) >= 1000:  # 999,999 is 1.00 M, not 1000.00 k
                scale, prefix = _SI_PREFIXES[i - 1]
            return f"{n / scale:.2f} {prefix}{unit}"
    return f"{n} {unit}" if unit else str(n)


def format_time(micros: int) -> str:
    """Durations in microseconds: ``999us``, ``1.00ms``, ``2.50sec``."""
    if micros < 1000:
        return f"{micros}us"
    if micros < 1000000:
        return f"{micros / 1000.0:.2f}ms"
    return f"{micros / 1000000.0:.2f}sec"


def format_memory(num_bytes: int) -> str:
    """Bytes: ``999B``, ``1.00KB``, ``2.50MB`` (no GB, decimal units)."""
    if num_bytes < 1000:
        return f"{num_bytes}B"
    if num_bytes < 1000000:
        return f"{num_bytes / 1000.0:.2f}KB"
    return f"{num_bytes / 1000000.0:.2f}MB"


def format_shape(dims: list[int]) -> str:
    """Dims joined with ``x`` (``784x256``); empty for no shape."""
    return "x".join(str(d) for d in dims)


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


def step_ranges(numbers: list[int]) -> str:
    """Step numbers written short: runs of three or more consecutive steps as a
    range (``0-49``), others one by one (``0-3, 7, 9, 10``)."""
    parts: list[str] = []
    ordered = sorted(set(numbers))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{ordered[i]}-{ordered[j]}")
        else:
            parts.extend(str(n) for n in ordered[i : j + 1])
        i = j + 1
    return ", ".join(parts)
