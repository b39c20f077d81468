"""The memory viewer's chart: a program's heap over program order, as SVG.

Contract: :func:`heap_svg` draws a :class:`~tfprof_lite.programs.buffers.ProgramMemory`
as one self-contained SVG document (no script, no external font or style, valid
XML): the bytes in use at each step of program order as a step line over a
shaded area, the bytes that live for the whole program (parameters, outputs,
constants) and the total of the allocations as dashed lines, the peak as a
marked point with its bytes, step and instruction, axes with ticks in binary
units (``20 MiB``) and step numbers, and a title naming the program. Every text
is escaped; a program without heap events is drawn as a flat line.
"""

from __future__ import annotations

import math
from html import escape as _escape

from tfprof_lite.programs.buffers import ProgramMemory


def escape(text: str) -> str:
    """``text`` safe in SVG text and attributes (``html.escape``: xml.sax's
    escape would import urllib, http and email, some 100 ms)."""
    return _escape(text, quote=True)


__all__ = ["heap_svg", "nice_ticks"]

_W, _H = 960, 400
_LEFT, _RIGHT, _TOP, _BOTTOM = 90, 30, 60, 60
_FONT = 'font-family="sans-serif"'
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
_HEAP, _TOTAL, _BASE, _PEAK = "#1a73e8", "#5f6368", "#188038", "#d93025"
_DASH, _DOT = "\u2014", "\u25cf"


def _size(n: int) -> str:
    """Bytes in the largest binary unit that keeps them at 1 or more, three digits."""
    power = 0
    while power < len(_UNITS) - 1 and n >= 1024 ** (power + 1):
        power += 1
    value = n / 1024**power
    digits = 0 if power == 0 or value >= 100 else 1 if value >= 10 else 2
    return f"{value:.{digits}f} {_UNITS[power]}"


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Tick values from 0 to at least ``top``: multiples of 1, 2 or 5 times a power of ten
    (``top`` 0 gives ``[0, 1]``)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    ticks = [0.0]
    while ticks[-1] < top:
        ticks.append(ticks[-1] + step)
    return ticks


def _byte_ticks(top: int) -> tuple[list[float], str, int]:
    """Ticks in bytes, their unit's name and size (``1 << 20`` for MiB)."""
    power = 0
    while power < len(_UNITS) - 1 and top >= 1024 ** (power + 1):
        power += 1
    unit = 1024**power
    return [t * unit for t in nice_ticks(top / unit)], _UNITS[power], unit


def _text(
    x: float, y: float, body: str, anchor: str = "middle", size: int = 12, extra: str = ""
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {_FONT} font-size="{size}"'
        f"{extra}>{escape(body)}</text>"
    )


class _Frame:
    """Maps (step, bytes) to the plot's pixels."""

    def __init__(self, steps: int, top: float) -> None:
        self.steps = max(steps, 1)
        self.top = top
        self.width = _W - _LEFT - _RIGHT
        self.height = _H - _TOP - _BOTTOM

    def x(self, step: float) -> float:
        """The pixel column of ``step``."""
        return _LEFT + self.width * step / self.steps

    def y(self, value: float) -> float:
        """The pixel row of ``value`` bytes."""
        return _TOP + self.height * (1.0 - value / self.top)


def _axes(frame: _Frame, ticks: list[float], unit_name: str, unit: int) -> list[str]:
    parts = []
    for value in ticks:
        y = frame.y(value)
        parts.append(
            f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_W - _RIGHT}" y2="{y:.1f}" stroke="#e0e0e0"/>'
        )
        parts.append(_text(_LEFT - 8, y + 4, f"{value / unit:g} {unit_name}", "end"))
    for step in nice_ticks(frame.steps, 10):
        if step > frame.steps:
            break
        x = frame.x(step)
        bottom = _H - _BOTTOM
        parts.append(
            f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 5}" stroke="#333"/>'
        )
        parts.append(_text(x, bottom + 18, f"{step:g}"))
    parts.append(
        f'<path d="M{_LEFT},{_TOP} V{_H - _BOTTOM} H{_W - _RIGHT}" fill="none" stroke="#333"/>'
    )
    parts.append(_text(_LEFT + frame.width / 2, _H - 18, "program order (heap simulator events)"))
    middle = _TOP + frame.height / 2
    turn = f' transform="rotate(-90 18 {middle:.1f})"'
    parts.append(_text(18, middle, "bytes in use", extra=turn))
    return parts


def _heap_path(frame: _Frame, heap: list[int]) -> list[str]:
    points = [(frame.x(0), frame.y(heap[0]))]
    for step, value in enumerate(heap[1:], start=1):
        points.append((frame.x(step), points[-1][1]))
        points.append((frame.x(step), frame.y(value)))
    points.append((frame.x(frame.steps), points[-1][1]))
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    bottom = frame.y(0)
    area = f"{points[0][0]:.1f},{bottom:.1f} {line} {points[-1][0]:.1f},{bottom:.1f}"
    return [
        f'<polygon points="{area}" fill="{_HEAP}" fill-opacity="0.2" stroke="none"/>',
        f'<polyline points="{line}" fill="none" stroke="{_HEAP}" stroke-width="1.5"/>',
    ]


def _level(frame: _Frame, value: int, colour: str) -> str:
    y = frame.y(value)
    return (
        f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_W - _RIGHT}" y2="{y:.1f}" stroke="{colour}" '
        'stroke-dasharray="6 4"/>'
    )


def _peak(frame: _Frame, memory: ProgramMemory) -> str:
    x, y = frame.x(memory.peak_at), frame.y(memory.peak_bytes)
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4.5" fill="{_PEAK}"/>'


def _legend(memory: ProgramMemory) -> str:
    """One line under the title: what each colour is, with its bytes."""
    peak = f"peak {_size(memory.peak_bytes)} at step {memory.peak_at}"
    if memory.peak_instruction:
        peak += f" ({memory.peak_instruction})"
    items = [
        (_HEAP, _DASH, "bytes in use"),
        (_TOTAL, _DASH, f"total allocated {_size(memory.total_bytes)}"),
        (_BASE, _DASH, f"live for the whole program {_size(memory.base_bytes)}"),
        (_PEAK, _DOT, peak),
    ]
    gaps = [""] + [' dx="18"'] * (len(items) - 1)
    spans = [
        f'<tspan fill="{c}"{gap}>{mark} {escape(label)}</tspan>'
        for gap, (c, mark, label) in zip(gaps, items, strict=True)
    ]
    return (
        f'<text x="{_W / 2:.1f}" y="{_TOP - 14}" text-anchor="middle" {_FONT} font-size="12">'
        + "".join(spans)
        + "</text>"
    )


def heap_svg(memory: ProgramMemory) -> str:
    """The SVG chart of ``memory``'s heap over program order (see the module docstring)."""
    steps = len(memory.heap) - 1
    ticks, unit_name, unit = _byte_ticks(max(memory.total_bytes, memory.peak_bytes, 1))
    frame = _Frame(steps, ticks[-1])
    title = f"{memory.label}: heap over program order (memory space {memory.color})"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{_W}" height="{_H}" fill="white"/>',
        _text(_W / 2, 20, title, size=15, extra=' font-weight="bold"'),
        *_axes(frame, ticks, unit_name, unit),
        _legend(memory),
        *_heap_path(frame, memory.heap),
        _level(frame, memory.total_bytes, _TOTAL),
        _level(frame, memory.base_bytes, _BASE),
        _peak(frame, memory),
        "</svg>",
    ]
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + "\n".join(parts) + "\n"
