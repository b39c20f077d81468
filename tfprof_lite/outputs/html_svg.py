"""Small pieces shared by the HTML report's inline SVG charts.

Contract: :func:`esc` HTML-escapes any text from a profile (quotes too);
:func:`y_grid` draws the five horizontal grid lines of a chart whose y axis runs
from 0 at ``base`` to ``peak`` at ``top``, each labelled by ``label(value)``.
"""

from __future__ import annotations

import html
from collections.abc import Callable

__all__ = ["esc", "y_grid"]


def esc(text: object) -> str:
    """HTML-escapes ``text`` (quotes too)."""
    return html.escape(str(text), quote=True)


def y_grid(
    left: float, right: float, base: float, top: float, peak: int, label: Callable[[int], str]
) -> list[str]:
    """Five grid lines from ``base`` (0) to ``top`` (``peak``), labels left of ``left``."""
    parts = []
    for i in range(5):
        y = base - (base - top) * i / 4
        parts.append(
            f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{esc(label(round(peak * i / 4)))}</text>"
        )
    return parts
