"""Small pieces shared by the HTML report's sections.

Contract: :func:`esc` HTML-escapes any text from a profile (quotes too);
:func:`script_json` writes JSON that is safe inside ``<script
type="application/json">``; :func:`y_grid` draws the five horizontal grid lines
of a chart whose y axis runs from 0 at ``base`` to ``peak`` at ``top``, each
labelled by ``label(value)``; a :class:`Section` is one part of the page.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any

__all__ = ["Section", "data_table", "esc", "script_json", "y_grid"]


@dataclasses.dataclass(frozen=True)
class Section:
    """One part of the page: anchor id, heading and HTML body."""

    anchor: str
    title: str
    body: str


def script_json(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">`` (no ``</``, ``<!--``)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for char, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, code)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def data_table(head: str, rows: str, scroll: bool = False) -> str:
    """A ``data`` table: ``head`` the header cells' markup, ``rows`` the body's
    rows; ``scroll`` wraps it in a horizontally scrolling box."""
    table = f'<table class="data"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
    return f'<div class="scroll">{table}</div>' if scroll else table


def esc(text: object) -> str:
    """HTML-escapes ``text`` (quotes too), as ``html.escape(str(text), quote=True)``
    (written out: a report escapes tens of thousands of cells, most of which
    hold none of the five characters)."""
    out = str(text)
    if "&" in out or "<" in out or ">" in out or '"' in out or "'" in out:
        out = (
            out.replace("&", "&amp;")
            .replace("<", "&lt;")
            .replace(">", "&gt;")
            .replace('"', "&quot;")
            .replace("'", "&#x27;")
        )
    return out


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
