"""Rendering HLO module dumps to SVG, PNG (or any Graphviz format).

Contract: :func:`prepare_dot` reads one ``.dot`` dump (through the bounded
reader :func:`tfprof_lite.base.reading.read_input`), drops every link that is not
relative (:func:`tfprof_lite.xla.links.sanitize_graph`), applies the shrinking
steps of :mod:`tfprof_lite.xla.shrink` (strip oversized styles, collapse
fusions, focus on one instruction, cap the node count, add a note saying what
was left out) and returns DOT text; :func:`render` runs Graphviz's ``dot`` program
on it directly (``dot -T<format>``, the DOT text on stdin, stopped after
:data:`DOT_TIMEOUT` seconds; no Python package is needed) once per format and
writes each result atomically (:func:`tfprof_lite.base.writing.write_atomic`)
as ``<out_dir>/module_<id>.<cluster>.<stage>[.focus-<name>].<format>``
(:func:`render_file`: one format into one named file). The format ``"dot"``
writes the prepared DOT text itself and needs no Graphviz. An SVG (or image map)
is checked once more for unsafe links before it is written
(:func:`tfprof_lite.xla.links.check_drawing`).

Errors: a missing ``dot`` program raises
:class:`~tfprof_lite.errors.MissingDependencyError`; an unreadable or
unparsable dump :class:`~tfprof_lite.xla.errors.HloDumpError`; an unknown
``focus`` :class:`~tfprof_lite.xla.errors.InstructionNotFoundError`; bad options
:class:`~tfprof_lite.errors.InvalidOptionError`; ``dot`` failing or running out
of time :class:`~tfprof_lite.xla.errors.RenderError`. Each has a one-line message.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Union

from tfprof_lite.base.reading import read_input, require_text
from tfprof_lite.base.writing import write_atomic
from tfprof_lite.errors import (
    InvalidInputError,
    InvalidOptionError,
    MissingDependencyError,
    TfprofLiteError,
)
from tfprof_lite.xla import links, shrink
from tfprof_lite.xla.dot import DotGraph, parse_dot, write_dot
from tfprof_lite.xla.dumps import HloModuleDump, parse_dump_name
from tfprof_lite.xla.errors import HloDumpError, RenderError

__all__ = [
    "DEFAULT_MAX_NODES",
    "DOT_TIMEOUT",
    "GRAPHVIZ_FORMATS",
    "DumpLike",
    "list_instructions",
    "output_stem",
    "prepare_dot",
    "render",
    "render_file",
]

#: Default node cap of :func:`render` and :func:`prepare_dot`.
DEFAULT_MAX_NODES = 500

#: Seconds one run of ``dot`` may take before it is stopped (:class:`RenderError`).
DOT_TIMEOUT = 120.0

_FORMAT_NAMES = (
    "bmp canon cmap cmapx cmapx_np dot dot_json eps fig gd gd2 gif gv imap imap_np ismap jpe "
    "jpeg jpg json json0 pdf pic plain plain-ext png pov ps ps2 svg svgz tif tiff tk vml vmlz "
    "vrml wbmp webp xdot xdot1.2 xdot1.4 xdot_json"
)
#: The output formats (``dot -T``) Graphviz's ``dot`` program knows.
GRAPHVIZ_FORMATS = frozenset(_FORMAT_NAMES.split())

#: A dump record or the path of a dump file.
DumpLike = Union[HloModuleDump, str, os.PathLike[str]]

_INSTALL_DOT = "install Graphviz (Debian/Ubuntu: apt-get install graphviz)"
_LINKED_FORMATS = ("svg", "cmapx", "imap")


def _dot_file(dump: DumpLike) -> tuple[Path, HloModuleDump | None]:
    """The ``.dot`` file to read for ``dump`` and its parsed name (if any)."""
    if isinstance(dump, HloModuleDump):
        record = dump if dump.fmt == "dot" else dump.sibling("dot")
        if record is None:
            raise HloDumpError(
                f"{dump.path.name}: no .dot dump of this module; run with "
                'XLA_FLAGS="--xla_dump_to=DIR --xla_dump_hlo_as_dot"'
            )
        return record.path, record
    path = Path(dump)
    if path.suffix != ".dot":
        raise HloDumpError(f"{path}: not a .dot dump (use --xla_dump_hlo_as_dot)")
    return path, parse_dump_name(path)


def _read(path: Path) -> str:
    """The text of a ``.dot`` dump, read through the bounded input reader."""
    try:
        data = read_input(path, "an HLO .dot dump")
    except InvalidInputError as err:
        raise HloDumpError(str(err).replace(": cannot read (", ": cannot read the dump (")) from err
    try:
        require_text(data, path, "an HLO .dot dump")
    except InvalidInputError as err:
        raise HloDumpError(str(err)) from None
    return data.decode("utf-8", errors="replace")


def _check_options(max_nodes: int | None, radius: int) -> None:
    if max_nodes is not None and max_nodes < 1:
        raise InvalidOptionError(f"max_nodes must be at least 1 (or None), not {max_nodes}")
    if radius < 0:
        raise InvalidOptionError(f"radius must be 0 or more, not {radius}")


def list_instructions(dump: DumpLike) -> list[str]:
    """The instruction and fusion names of a ``.dot`` dump (what ``focus`` accepts)."""
    path, _record = _dot_file(dump)
    graph = parse_dot(_read(path))
    return sorted(shrink.instruction_index(graph))


def prepare_dot(
    dump: DumpLike,
    *,
    max_nodes: int | None = DEFAULT_MAX_NODES,
    focus: str | None = None,
    radius: int = 2,
    collapse_fusions: bool = True,
    strip_styles: bool = True,
) -> str:
    """The DOT text :func:`render` draws for ``dump`` (see the module docstring).

    Args:
        dump: a :class:`HloModuleDump` (another format of a module finds its
            ``.dot`` sibling) or the path of a ``.dot`` dump.
        max_nodes: keep at most this many nodes (plus one note); None: no cap.
        focus: keep only the neighbourhood of this instruction or fusion.
        radius: the neighbourhood's size in edges (either direction).
        collapse_fusions: draw each fusion as one node.
        strip_styles: drop the stylesheet and long tooltips, shorten long labels.
    """
    _check_options(max_nodes, radius)
    path, _record = _dot_file(dump)
    text = _read(path)
    try:
        graph = parse_dot(text)
    except HloDumpError as err:
        raise HloDumpError(f"{path.name}: {err}") from None
    del text
    links.sanitize_graph(graph)
    index = shrink.instruction_index(graph)
    if strip_styles:
        shrink.strip_styles(graph)
    alias = shrink.collapse_fusions(graph) if collapse_fusions else {}
    seeds = shrink.resolve(graph, index, alias, focus) if focus is not None else None
    notes = _cut(graph, seeds, focus or "", radius, max_nodes)
    if notes:
        shrink.add_note(graph, notes)
    shrink.drop_dangling_compound(graph)
    return write_dot(graph)


def _cut(
    graph: DotGraph, seeds: list[str] | None, focus: str, radius: int, max_nodes: int | None
) -> list[str]:
    """Apply the focus and the node cap; returns the lines of the note to add."""
    total, notes = len(graph.nodes), []
    if seeds is not None:
        shrink.focus(graph, seeds, radius)
        shrink.highlight(graph, seeds)
        notes.append(f"within {radius} edges of {focus}: {len(graph.nodes)} of {total} nodes")
    if max_nodes is not None:
        dropped = shrink.cap_nodes(graph, max_nodes, seeds)
        if dropped:
            notes.append(f"max_nodes={max_nodes}: {dropped} of {total} nodes not shown")
    return notes


def _check_formats(formats: Sequence[str]) -> str | None:
    """The path of Graphviz's ``dot`` program (None when only ``dot`` text is asked for)."""
    if isinstance(formats, str):
        formats = (formats,)
    if not formats:
        raise InvalidOptionError("formats is empty; use e.g. ('svg', 'png')")
    if all(f == "dot" for f in formats):
        return None
    unknown = sorted(f for f in formats if f != "dot" and f not in GRAPHVIZ_FORMATS)
    if unknown:
        raise InvalidOptionError(f"unknown Graphviz output format(s): {', '.join(unknown)}")
    program = shutil.which("dot")
    if program is None:
        raise MissingDependencyError(f"Graphviz's dot program is not on PATH; {_INSTALL_DOT}")
    return program


def _run_dot(program: str, source: str, fmt: str, name: str) -> bytes:
    """``dot -T<fmt>`` on ``source`` (stdin), its output (stdout), within
    :data:`DOT_TIMEOUT` seconds."""
    try:
        proc = subprocess.run(
            [program, f"-T{fmt}"],
            input=source.encode("utf-8"),
            capture_output=True,
            timeout=DOT_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        raise RenderError(
            f"dot did not finish within {DOT_TIMEOUT:g}s on {name} ({fmt}); "
            "draw fewer nodes (max_nodes, focus)"
        ) from err
    except OSError as err:
        raise MissingDependencyError(
            f"cannot run Graphviz's dot ({err.strerror or err}); {_INSTALL_DOT}"
        ) from err
    if proc.returncode != 0:
        stderr = proc.stderr.decode("utf-8", "replace")
        first = next((ln.strip() for ln in stderr.splitlines() if ln.strip()), "no message")
        raise RenderError(f"dot failed on {name} ({fmt}): {first}")
    return proc.stdout


def output_stem(dump: DumpLike, focus: str | None = None) -> str:
    """The file name (without extension) :func:`render` writes for ``dump``."""
    path, record = _dot_file(dump)
    if record is not None:
        stem = f"module_{record.module_id:04d}.{record.cluster}.{record.stage_label}"
    else:
        stem = path.stem
    if focus is not None:
        stem += ".focus-" + re.sub(r"[^A-Za-z0-9_.-]", "_", focus)
    return stem


def render(
    dump: DumpLike,
    out_dir: str | os.PathLike[str],
    formats: Sequence[str] = ("svg", "png"),
    *,
    max_nodes: int | None = DEFAULT_MAX_NODES,
    focus: str | None = None,
    radius: int = 2,
    collapse_fusions: bool = True,
    strip_styles: bool = True,
) -> list[Path]:
    """Draw one HLO module dump with Graphviz; returns the written files in
    ``formats`` order. Options as in :func:`prepare_dot`; ``out_dir`` is
    created when missing."""
    formats = (formats,) if isinstance(formats, str) else tuple(formats)
    program = _check_formats(formats)
    source = prepare_dot(
        dump,
        max_nodes=max_nodes,
        focus=focus,
        radius=radius,
        collapse_fusions=collapse_fusions,
        strip_styles=strip_styles,
    )
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise TfprofLiteError(f"cannot create {out}: {err.strerror}") from err
    stem = output_stem(dump, focus)
    written: list[Path] = []
    for fmt in formats:
        target = out / f"{stem}.{fmt}"
        write_atomic(target, _drawing(program, source, fmt, stem))
        written.append(target)
    return written


def _drawing(program: str | None, source: str, fmt: str, name: str) -> bytes:
    """The bytes of one format: the DOT text itself, or ``dot``'s output (checked
    for unsafe links when it is SVG or an image map)."""
    if fmt == "dot" or program is None:
        return source.encode("utf-8")
    data = _run_dot(program, source, fmt, name)
    if fmt.startswith(_LINKED_FORMATS):
        links.check_drawing(gzip.decompress(data) if fmt == "svgz" else data, f"{name}.{fmt}")
    return data


def render_file(
    dump: DumpLike,
    target: str | os.PathLike[str],
    fmt: str = "svg",
    *,
    max_nodes: int | None = DEFAULT_MAX_NODES,
    focus: str | None = None,
    radius: int = 2,
    collapse_fusions: bool = True,
    strip_styles: bool = True,
) -> Path:
    """Draw one HLO module dump in one format into the file ``target`` (written
    atomically; its directory must exist). Options as in :func:`prepare_dot`."""
    program = _check_formats((fmt,))
    source = prepare_dot(
        dump,
        max_nodes=max_nodes,
        focus=focus,
        radius=radius,
        collapse_fusions=collapse_fusions,
        strip_styles=strip_styles,
    )
    path = Path(target)
    write_atomic(path, _drawing(program, source, fmt, output_stem(dump, focus)))
    return path
