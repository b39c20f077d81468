"""Keeping links in HLO drawings harmless: relative links and ``#`` anchors only.

An HLO ``.dot`` dump is input like any other file, and Graphviz copies the link
attributes it finds into the SVG it draws (``URL=...`` becomes ``<a
xlink:href=...>``), so a hostile dump could make a drawing that runs script when
clicked. Contract:

* :func:`is_safe_link` accepts only a ``#`` anchor or a relative link: no scheme
  (``javascript:``, ``data:``, ``vbscript:``, ``http:``... in any case), no leading
  ``/`` (so no ``//host``), no backslash (Graphviz's ``\\N``-style escapes and
  browsers' ``\\`` = ``/``), judged after HTML entities are decoded and whitespace
  and control characters are removed, as a browser would.
* :func:`sanitize_graph` drops, everywhere in a parsed graph (graph, subgraph,
  node and edge attributes and ``node``/``edge`` defaults), every link attribute
  (``URL``, ``href``, ``headURL``, ``tailURL``, ``labelURL``, ``edgeURL``,
  ``headhref``, ``tailhref``, ``labelhref``, ``edgehref``, ``image``) that is not
  safe, every ``target`` (and ``head``/``tail``/``label``/``edgetarget``) that is
  not a plain frame name, and ``imagepath``/``shapefile``/``fontpath``; inside
  HTML-like labels it drops unsafe ``HREF``/``TARGET`` attributes and ``<IMG>``
  tags with an unsafe ``SRC``. A ``stylesheet`` is kept only when it is a
  relative link or a ``data:text/css,`` stylesheet (XLA's own), the latter
  without its ``@import`` rules and only if no ``url(``, ``expression(``, script
  or CSS escape is left in it.
* :func:`check_drawing` is the last check on the drawn SVG (or image map): every
  ``href``/``xlink:href`` must be safe (the ``<?xml-stylesheet?>`` may only hold
  a cleaned ``data:text/css,`` stylesheet); otherwise
  :class:`~tfprof_lite.xla.errors.RenderError` and nothing is written.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Iterator
from urllib.parse import unquote

from tfprof_lite.xla.dot import DotGraph, attr_text, html, quoted
from tfprof_lite.xla.errors import RenderError

__all__ = [
    "LINK_ATTRIBUTES",
    "TARGET_ATTRIBUTES",
    "check_drawing",
    "clean_stylesheet",
    "is_safe_link",
    "sanitize_attrs",
    "sanitize_graph",
]

#: Graphviz attributes that hold a link (compared case-insensitively).
LINK_ATTRIBUTES = frozenset(
    name.lower()
    for name in (
        "URL",
        "href",
        "headURL",
        "tailURL",
        "labelURL",
        "edgeURL",
        "headhref",
        "tailhref",
        "labelhref",
        "edgehref",
        "image",
    )
)
#: Graphviz attributes that name the frame a link opens in.
TARGET_ATTRIBUTES = frozenset({"target", "headtarget", "tailtarget", "labeltarget", "edgetarget"})
_DROPPED = frozenset({"imagepath", "shapefile", "fontpath"})
_STYLESHEET = "stylesheet"

_INVISIBLE = re.compile(
    "[\x00-\x20\x7f-\xa0\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u206f\u3000\ufeff]"
)
_SCHEME_END = re.compile(r"[:/?#]")
_FRAME_NAME = re.compile(r"_?[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_CSS_DATA = re.compile(r"\s*data:text/css,", re.I)
_CSS_IMPORT = re.compile(r"@import[^;]*;?", re.I)
_CSS_BAD = ("@import", "url(", "expression(", "javascript:", "vbscript:", "-moz-binding", "\\")
_TAG = re.compile(r"<\s*(/?)\s*([A-Za-z][A-Za-z0-9]*)([^<>]*?)(/?)\s*>")
_TAG_ATTR = re.compile(r"""(\s+)([A-Za-z_:][-A-Za-z0-9_:.]*)\s*=\s*("[^"]*"|'[^']*')""")
_SVG_HREF = re.compile(r"""\s(?:xlink:)?href\s*=\s*("[^"]*"|'[^']*')""", re.I)
_SVG_STYLESHEET = re.compile(r"<\?xml-stylesheet\b(.*?)\?>", re.S | re.I)


def _decoded(text: str) -> str:
    """``text`` as a browser reads a link: entities decoded (repeatedly, to be
    safe), whitespace and control characters dropped."""
    for _ in range(5):
        unescaped = html_lib.unescape(text)
        if unescaped == text:
            break
        text = unescaped
    return _INVISIBLE.sub("", text)


def is_safe_link(text: str) -> bool:
    """True for a ``#`` anchor or a relative link (see the module docstring)."""
    link = _decoded(text)
    if not link:
        return False
    if link.startswith("#"):
        return True
    if "\\" in link or link.startswith("/"):
        return False
    first = _SCHEME_END.search(link)
    return first is None or first.group() != ":"


def clean_stylesheet(text: str) -> str | None:
    """``text`` made safe as a stylesheet link, or None when it cannot be."""
    if is_safe_link(text):
        return text
    match = _CSS_DATA.match(text)
    if match is None:
        return None
    css = _CSS_IMPORT.sub("", text[match.end() :])
    plain = _decoded(unquote(_decoded(css))).lower()
    if any(bad in plain for bad in _CSS_BAD):
        return None
    return text[: match.end()] + css


def _same_kind(raw: str, text: str) -> str:
    """A raw token for ``text`` of the kind ``raw`` was (HTML string or quoted)."""
    return html(text) if raw.startswith("<") else quoted(text)


def _clean_tag(match: re.Match[str]) -> str:
    """One tag of an HTML-like label with its unsafe link attributes removed."""
    closing, name, attrs, empty = match.group(1, 2, 3, 4)
    unsafe_image = False

    def attr(found: re.Match[str]) -> str:
        nonlocal unsafe_image
        key, value = found[2].lower(), found[3][1:-1]
        if key in ("href", "url", "src") and not is_safe_link(value):
            unsafe_image = unsafe_image or (key == "src" and name.lower() == "img")
            return ""
        if key == "target" and not _FRAME_NAME.fullmatch(_decoded(value)):
            return ""
        return found[0]

    kept = _TAG_ATTR.sub(attr, attrs)
    if unsafe_image:
        return ""
    return match[0] if kept == attrs else f"<{closing}{name}{kept}{empty}>"


def _clean_markup(raw: str) -> str:
    """An HTML-like label (raw ``<...>`` token) without unsafe links."""
    if not raw.startswith("<"):
        return raw
    return "<" + _TAG.sub(_clean_tag, raw[1:-1]) + ">"


def _clean_value(key: str, raw: str) -> str | None:
    """The raw value to keep for attribute ``key``, or None to drop it."""
    name = key.lower()
    if name in _DROPPED:
        return None
    if name in LINK_ATTRIBUTES:
        return raw if is_safe_link(attr_text(raw)) else None
    if name in TARGET_ATTRIBUTES:
        return raw if _FRAME_NAME.fullmatch(_decoded(attr_text(raw))) else None
    if name == _STYLESHEET:
        text = attr_text(raw)
        cleaned = clean_stylesheet(text)
        if cleaned is None or cleaned == text:
            return None if cleaned is None else raw
        return _same_kind(raw, cleaned)
    return _clean_markup(raw)


def sanitize_attrs(attrs: dict[str, str]) -> int:
    """Clean one attribute dict in place; returns how many values were dropped or changed."""
    changed = 0
    for key, raw in list(attrs.items()):
        cleaned = _clean_value(key, raw)
        if cleaned is None:
            del attrs[key]
        elif cleaned != raw:
            attrs[key] = cleaned
        changed += cleaned != raw
    return changed


def _attr_dicts(graph: DotGraph) -> Iterator[dict[str, str]]:
    for sub in graph.subgraphs.values():
        yield sub.attrs
        for _kind, attrs in sub.defaults:
            yield attrs
    yield from graph.nodes.values()
    for edge in graph.edges:
        yield edge.attrs


def sanitize_graph(graph: DotGraph) -> int:
    """Make every link of ``graph`` safe in place (see the module docstring);
    returns how many attribute values were dropped or changed."""
    return sum(sanitize_attrs(attrs) for attrs in _attr_dicts(graph))


def check_drawing(data: bytes, name: str) -> None:
    """Refuse a drawn SVG (or image map) holding a link that is not safe.

    Raises:
        RenderError: a ``href``/``xlink:href`` that is not a relative link or anchor,
            or a stylesheet that is not a cleaned ``data:text/css,`` one.
    """
    text = data.decode("utf-8", errors="replace")
    for match in _SVG_STYLESHEET.finditer(text):
        for href in _SVG_HREF.finditer(" " + match[1]):
            value = html_lib.unescape(href[1][1:-1])
            if clean_stylesheet(value) != value:
                raise RenderError(f"{name}: the drawing has an unsafe stylesheet; not written")
    body = _SVG_STYLESHEET.sub("", text)
    for href in _SVG_HREF.finditer(body):
        if not is_safe_link(href[1][1:-1]):
            shown = _decoded(href[1][1:-1])[:40]
            raise RenderError(
                f"{name}: the drawing links to {shown!r}, not a relative link; not written"
            )
