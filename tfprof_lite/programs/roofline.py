"""The roofline of a profile's XLA programs: points per program and per top op.

Contract:

* :func:`roofline` turns an :class:`~tfprof_lite.programs.op_profile.OpProfile`
  into :class:`Roofline`: one :class:`Point` per program that ran (its FLOPs and
  bytes over all its runs, over its ops' self time) and one per op among the
  ``top`` by self time, each with its arithmetic intensity (FLOPs/byte),
  achieved FLOP/s and what bounds it (the op's own unit; a program's: the
  device's headline rate). Ops and programs without bytes or time give no
  point.
* :meth:`Roofline.to_dict` is ``{"device": {...}, "points": [{"program", "name",
  "kind", "intensity", "flop_rate", "bound_by", ...}]}``.
* :func:`roofline_svg` draws it as a self-contained SVG (log-log axes, the
  memory slope and the compute roofs of the device's units, programs as squares
  and ops as circles, labelled), :func:`roofline_html` wraps that in a page.
  Without known peaks the points are drawn without roofs.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

from tfprof_lite.programs.op_profile import OpProfile, program_label
from tfprof_lite.programs.op_profile_text import format_rate
from tfprof_lite.programs.peaks import Peaks

__all__ = ["Point", "Roofline", "roofline", "roofline_html", "roofline_svg"]


@dataclass(frozen=True)
class Point:
    """One point: a program (``kind="program"``) or an op."""

    program: str
    name: str
    kind: str
    intensity: float
    flop_rate: float
    bound_by: str
    self_micros: float

    def to_dict(self) -> dict[str, Any]:
        """The JSON point."""
        return {
            "program": self.program, "name": self.name, "kind": self.kind,
            "intensity": self.intensity, "flop_rate": self.flop_rate,
            "bound_by": self.bound_by, "self_time_micros": self.self_micros,
        }  # fmt: skip


@dataclass
class Roofline:
    """The device's peaks and the points."""

    peaks: Peaks
    points: list[Point] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """``{"device": {...}, "points": [...]}``."""
        return {
            "device": {
                "name": self.peaks.name,
                "peak_flops_per_sec": self.peaks.headline_flops,
                "peak_bytes_per_sec": self.peaks.bytes_per_sec or None,
                "peak_flops_per_unit": dict(self.peaks.flops),
            },
            "points": [p.to_dict() for p in self.points],
        }

    def to_text(self) -> str:
        """A table of the points."""
        lines = [
            f"Roofline on {self.peaks.name}: {len(self.points)} points",
            f"{'kind':<8} {'name':<40} {'FLOP/B':>8} {'FLOP/s':>11} {'bound':>8}  program",
        ]
        for p in self.points:
            lines.append(
                f"{p.kind:<8} {p.name[:40]:<40} {p.intensity:>8.2f}"
                f" {format_rate(p.flop_rate, 'F'):>11} {p.bound_by:>8}  {p.program}"
            )
        return "\n".join(lines) + "\n"


def _bound(peaks: Peaks, intensity: float) -> str:
    flops = peaks.headline_flops
    if not flops or not peaks.bytes_per_sec:
        return "unknown"
    return "compute" if intensity >= flops / peaks.bytes_per_sec else "memory"


def roofline(profile: OpProfile, top: int = 20) -> Roofline:
    """The roofline points of ``profile`` (see the module docstring)."""
    out = Roofline(profile.peaks)
    for program in profile.programs:
        ops = [
            o
            for o in profile.ops
            if (o.program, o.program_id) == (program.program, program.program_id)
        ]
        flops = sum(o.flops for o in ops)
        moved = sum(o.bytes_accessed for o in ops)
        seconds = sum(o.self_ps for o in ops) * 1e-12
        if moved > 0 and seconds > 0 and flops > 0:
            label = program_label(program.program, program.program_id)
            intensity = flops / moved
            out.points.append(
                Point(label, label, "program", intensity, flops / seconds,
                      _bound(profile.peaks, intensity), seconds * 1e6)
            )  # fmt: skip
    for op in profile.ops[:top]:
        if op.intensity and op.flop_rate > 0:
            out.points.append(
                Point(program_label(op.program, op.program_id), op.name, "op", op.intensity,
                      op.flop_rate, op.bound_by, op.self_ps / 1e6)
            )  # fmt: skip
    return out


_W, _H, _L, _R, _T, _B = 760, 460, 70, 150, 30, 50
#: How many ops (besides the programs) get a label; the others have tooltips.
_LABELLED = 5


def _range(values: list[float], pad: float = 1.0) -> tuple[float, float]:
    low = min(values) if values else 1.0
    high = max(values) if values else 10.0
    return math.floor(math.log10(low)) - pad + 1, math.ceil(math.log10(high)) + pad - 1 + 1


def roofline_svg(chart: Roofline) -> str:
    """The roofline as an SVG document (see the module docstring)."""
    peaks = chart.peaks
    xs = [p.intensity for p in chart.points] or [1.0]
    ys = [p.flop_rate for p in chart.points] or [1e9]
    roofs = peaks.listed()[:4]
    if peaks.bytes_per_sec:
        xs += [v / peaks.bytes_per_sec for _, v in roofs]
    ys += [v for _, v in roofs]
    x0, x1 = _range(xs)
    y0, y1 = _range(ys)

    def px(x: float) -> float:
        return _L + (math.log10(x) - x0) / (x1 - x0) * (_W - _L - _R)

    def py(y: float) -> float:
        return _H - _B - (math.log10(y) - y0) / (y1 - y0) * (_H - _T - _B)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}" font-family="sans-serif" font-size="11">',
        f"<title>Roofline: {html.escape(peaks.name)}</title>",
        f'<defs><clipPath id="roofline-plot"><rect x="{_L}" y="{_T}" width="{_W - _L - _R}" '
        f'height="{_H - _T - _B}"/></clipPath></defs>',
        f'<rect x="{_L}" y="{_T}" width="{_W - _L - _R}" height="{_H - _T - _B}" '
        'fill="#fff" stroke="#999"/>',
    ]
    out += _grid(x0, x1, y0, y1, px, py)
    programs = sum(p.kind == "program" for p in chart.points)
    out += _roofs(peaks, roofs, 10.0**x0, 10.0**x1, px, py)
    for i, p in enumerate(chart.points):
        x, y = px(p.intensity), py(p.flop_rate)
        colour = "#c0392b" if p.bound_by == "memory" else "#2471a3"
        title = html.escape(
            f"{p.name}: {p.intensity:.2f} FLOP/B, {format_rate(p.flop_rate, 'FLOP')}, {p.bound_by}"
        )
        if p.kind == "program":
            out.append(f'<rect x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" '
                       f'fill="{colour}"><title>{title}</title></rect>')  # fmt: skip
        else:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{colour}" '
                       f'fill-opacity="0.7"><title>{title}</title></circle>')  # fmt: skip
        if p.kind == "program" or i < _LABELLED + programs:
            out.append(f'<text x="{x + 6:.1f}" y="{y - 4 - 11 * (i % 2):.1f}">'
                       f"{html.escape(p.name[:28])}</text>")  # fmt: skip
    out.append(f'<text x="{(_W - _R + _L) / 2}" y="{_H - 12}" text-anchor="middle">'
               "arithmetic intensity (FLOPs/byte)</text>")  # fmt: skip
    out.append(f'<text x="16" y="{(_H - _B + _T) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {(_H - _B + _T) / 2})">FLOP/s</text>')  # fmt: skip
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _grid(x0: float, x1: float, y0: float, y1: float, px: Any, py: Any) -> list[str]:
    out = []
    for e in range(int(x0), int(x1) + 1):
        x = px(10.0**e)
        out.append(f'<line x1="{x:.1f}" y1="{_T}" x2="{x:.1f}" y2="{_H - _B}" stroke="#eee"/>')
        out.append(f'<text x="{x:.1f}" y="{_H - _B + 16}" text-anchor="middle">1e{e}</text>')
    for e in range(int(y0), int(y1) + 1):
        y = py(10.0**e)
        out.append(f'<line x1="{_L}" y1="{y:.1f}" x2="{_W - _R}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{_L - 6}" y="{y + 4:.1f}" text-anchor="end">'
                   f"{_power(10.0**e)}</text>")  # fmt: skip
    return out


def _roofs(
    peaks: Peaks, roofs: list[tuple[str, float]], xmin: float, xmax: float, px: Any, py: Any
) -> list[str]:
    if not peaks.bytes_per_sec:
        return []
    out = []
    ys: list[float] = []
    for unit, flops in roofs:
        ridge = flops / peaks.bytes_per_sec
        start = max(xmin, flops / 1e30)
        points = [(start, start * peaks.bytes_per_sec), (ridge, flops), (xmax, flops)]
        path = " ".join(f"{px(max(x, xmin)):.1f},{py(max(y, 1e-30)):.1f}" for x, y in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="#555" stroke-width="1.5" '
                   'clip-path="url(#roofline-plot)"/>')  # fmt: skip
        y = py(flops) + 4
        while any(abs(y - other) < 12 for other in ys):
            y += 12
        ys.append(y)
        out.append(f'<text x="{_W - _R + 4}" y="{y:.1f}">{unit} {_power(flops)}FLOP/s</text>')
    return out


def _power(value: float) -> str:
    """``value`` with an SI prefix and at most three digits: ``1.07P``, ``100T``."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.3g}{prefix}"
    return f"{value:.3g}"


def roofline_html(chart: Roofline) -> str:
    """The roofline SVG in a self-contained HTML page, with the points' table."""
    rows = "".join(
        f"<tr><td>{html.escape(p.kind)}</td><td>{html.escape(p.name)}</td>"
        f"<td>{p.intensity:.2f}</td><td>{html.escape(format_rate(p.flop_rate, 'FLOP'))}</td>"
        f"<td>{html.escape(p.bound_by)}</td><td>{html.escape(p.program)}</td></tr>"
        for p in chart.points
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Roofline</title></head><body>"
        f"<h1>Roofline: {html.escape(chart.peaks.name)}</h1>{roofline_svg(chart)}"
        "<table><tr><th>kind</th><th>name</th><th>FLOP/B</th><th>FLOP/s</th><th>bound</th>"
        f"<th>program</th></tr>{rows}</table></body></html>\n"
    )
