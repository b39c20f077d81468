"""``tfprof-lite hlo DIR [--module NAME]``: list XLA's HLO dumps, draw one module.

Contract:

* ``DIR`` is an ``--xla_dump_to`` directory (:func:`tfprof_lite.xla.find_dumps`)
  or one ``.dot`` dump file. Without ``--module`` the command lists the modules
  found (id, cluster, stages, formats, module name), one line each.
* ``--module NAME`` picks one: ``module_0001``, ``0001`` or ``1`` (the id), the
  full HLO module name, or the cluster (``cluster_1``) when only one module
  compiles it. ``--stage after`` (default when dumped) or ``before`` picks the
  stage. An unknown or ambiguous name is an error listing the choices (exit 1).
* The module is drawn by :func:`tfprof_lite.xla.render` (``--format svg``,
  ``png``, or ``dot`` for the prepared DOT text without Graphviz) with its
  shrinking options: ``--max-nodes N`` / ``--all-nodes``, ``--focus NAME``
  ``--radius R``, ``--expand-fusions``, ``--keep-styles``. The file goes to
  ``-o PATH`` (a directory: the default name inside it; default: the current
  directory, named ``module_<id>.<cluster>.<stage>.<format>``), written
  atomically. ``--list-instructions`` prints the names ``--focus`` accepts.
* Links in the dump other than relative links and ``#`` anchors are dropped
  before drawing (:mod:`tfprof_lite.xla.links`), so neither the SVG nor the
  ``--format dot`` text can carry ``javascript:`` or absolute URLs.
* ``svg`` and ``png`` run Graphviz's ``dot`` program (no Python package is
  needed); without it the error is one line saying what to install (exit 1),
  and ``--format dot`` still works. No TensorFlow is needed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from tfprof_lite.base.reading import require_regular_file
from tfprof_lite.base.shown import shown
from tfprof_lite.base.writing import write_stdout
from tfprof_lite.cli.common import TfprofCommand, style
from tfprof_lite.cli.progress import Spinner
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.xla import (
    DEFAULT_MAX_NODES,
    FORMATS,
    STAGE_AFTER,
    STAGE_BEFORE,
    STAGE_PASS,
    HloDumpError,
    HloModuleDump,
    find_dumps,
    list_instructions,
    output_stem,
    parse_dump_name,
    render_file,
)

__all__ = ["HLO_COMMANDS", "format_modules", "hlo_command", "pick_module"]

_STAGES = {"after": STAGE_AFTER, "before": STAGE_BEFORE}
_DUMP_HINT = 'run the program with XLA_FLAGS="--xla_dump_to={dir} --xla_dump_hlo_as_dot"'


def _modules(dumps: Sequence[HloModuleDump]) -> dict[int, list[HloModuleDump]]:
    """The dumps grouped by module id, in id order."""
    grouped: dict[int, list[HloModuleDump]] = {}
    for dump in dumps:
        grouped.setdefault(dump.module_id, []).append(dump)
    return dict(sorted(grouped.items()))


def _stages(files: Sequence[HloModuleDump]) -> str:
    named = list(dict.fromkeys(f.stage_label for f in files if f.stage != STAGE_PASS))
    passes = len({f.pass_label for f in files if f.stage == STAGE_PASS})
    if passes:
        named.append(f"{passes} pass snapshot{'s' if passes > 1 else ''}")
    return ", ".join(named)


def format_modules(dumps: Sequence[HloModuleDump]) -> str:
    """A table of the modules in ``dumps``: id, cluster, stages, formats, name."""
    rows = [("module", "cluster", "stages", "formats", "name")]
    for module_id, files in _modules(dumps).items():
        formats = ", ".join(f for f in FORMATS if any(d.fmt == f for d in files))
        rows.append(
            (
                f"module_{module_id:04d}",
                files[0].cluster,
                _stages(files),
                formats,
                files[0].module_name,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4] for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _names(module_id: int, files: Sequence[HloModuleDump]) -> set[str]:
    first = files[0]
    return {f"module_{module_id:04d}", f"{module_id:04d}", str(module_id), first.module_name}


def _choices(grouped: dict[int, list[HloModuleDump]], limit: int = 8) -> str:
    shown = [f"module_{i:04d} ({files[0].cluster})" for i, files in grouped.items()]
    more = f", ... ({len(shown) - limit} more)" if len(shown) > limit else ""
    return ", ".join(shown[:limit]) + more


def pick_module(dumps: Sequence[HloModuleDump], name: str, where: str) -> list[HloModuleDump]:
    """The dump files of the module ``name`` designates (see the module docstring).

    Raises:
        InvalidOptionError: no module, or several modules of one cluster, match.
    """
    grouped = _modules(dumps)
    exact = [i for i, files in grouped.items() if name in _names(i, files)]
    by_cluster = [i for i, files in grouped.items() if files[0].cluster == name]
    found = exact or by_cluster
    if not found:
        raise InvalidOptionError(f"{where}: no HLO module {name!r} (modules: {_choices(grouped)})")
    if len(found) > 1:
        ids = ", ".join(f"module_{i:04d}" for i in found)
        raise InvalidOptionError(
            f"{where}: {name} was compiled as several modules ({ids}); "
            f"pick one with --module module_{found[-1]:04d}"
        )
    return grouped[found[0]]


def _pick_stage(files: Sequence[HloModuleDump], stage: str | None, where: str) -> HloModuleDump:
    """The file of ``stage`` (default: after optimizations when dumped), ``.dot`` first."""
    wanted = [_STAGES[stage]] if stage else [STAGE_AFTER, STAGE_BEFORE]
    for name in wanted:
        at_stage = sorted((f for f in files if f.stage == name), key=lambda f: f.fmt != "dot")
        if at_stage:
            return at_stage[0]
    label = f"module_{files[0].module_id:04d}"
    have = _stages(files) or "none"
    raise HloDumpError(f"{where}: {label} has no {stage or 'before/after'} dump (stages: {have})")


def _select(target: str, module: str | None, stage: str | None) -> HloModuleDump | Path | None:
    """The dump to draw, or None after listing the modules of ``target``."""
    if os.path.isfile(target):
        return parse_dump_name(target) or Path(target)
    if os.path.exists(target) and not os.path.isdir(target):
        require_regular_file(target, "an HLO dump directory or .dot file")
    dumps = find_dumps(target)
    if not dumps:
        raise HloDumpError(
            f"{target}: no HLO module dumps in this directory; {_DUMP_HINT.format(dir=target)}"
        )
    if module is None:
        write_stdout(format_modules(dumps))
        return None
    return _pick_stage(pick_module(dumps, module, target), stage, target)


def _target(dump: HloModuleDump | Path, output: str | None, fmt: str, focus: str | None) -> Path:
    """Where the drawing goes: ``-o`` (a file, or a directory for the default name)."""
    default = f"{output_stem(dump, focus)}.{fmt}"
    if output is None:
        return Path(default)
    path = Path(output)
    return path / default if path.is_dir() else path


@dataclass(frozen=True)
class _Shrink:
    """The :func:`~tfprof_lite.xla.render` options the command passes through."""

    max_nodes: int | None
    focus: str | None
    radius: int
    collapse_fusions: bool
    strip_styles: bool


def _draw(dump: HloModuleDump | Path, target: Path, fmt: str, shrink: _Shrink) -> None:
    """Renders straight into ``target`` (atomically, through a temporary sibling)."""
    render_file(
        dump,
        target,
        fmt,
        max_nodes=shrink.max_nodes,
        focus=shrink.focus,
        radius=shrink.radius,
        collapse_fusions=shrink.collapse_fusions,
        strip_styles=shrink.strip_styles,
    )


def _describe(dump: HloModuleDump | Path) -> str:
    """``module_0001 cluster_1, cpu_after_optimizations`` (or the file's name)."""
    if isinstance(dump, HloModuleDump):
        return f"module_{dump.module_id:04d} {dump.cluster}, {dump.stage_label}"
    return dump.name


@click.command(
    "hlo",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="List XLA HLO dumps; draw one module with Graphviz.",
)
@click.argument("target", metavar="DIR", type=click.Path())
@click.option("--module", "-m", metavar="NAME", help="Module to draw (id, name or cluster).")
@click.option("--stage", type=click.Choice(tuple(_STAGES)), help="Default: after if dumped.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("svg", "png", "dot")),
    default="svg",
    show_default=True,
    help="Drawing format; dot writes the prepared DOT text (no Graphviz needed).",
)
@click.option("-o", "--output", metavar="PATH", help="File (or directory) to write.")
@click.option(
    "--max-nodes",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_NODES,
    show_default=True,
    help="Draw at most this many nodes (those nearest the root).",
)
@click.option("--all-nodes", is_flag=True, help="No node cap.")
@click.option("--focus", metavar="NAME", help="Only the neighbourhood of this instruction.")
@click.option(
    "--radius",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="With --focus: the neighbourhood's size in edges.",
)
@click.option(
    "--collapse-fusions/--expand-fusions",
    default=True,
    show_default=True,
    help="Draw each fusion as one node.",
)
@click.option("--keep-styles", is_flag=True, help="Keep XLA's stylesheet and long tooltips.")
@click.option(
    "--list-instructions",
    "list_instructions_only",
    is_flag=True,
    help="Print the names --focus accepts, draw nothing.",
)
def hlo_command(
    target: str,
    module: str | None,
    stage: str | None,
    fmt: str,
    output: str | None,
    max_nodes: int,
    all_nodes: bool,
    focus: str | None,
    radius: int,
    collapse_fusions: bool,
    keep_styles: bool,
    list_instructions_only: bool,
) -> None:
    """Lists the HLO modules XLA dumped into DIR (XLA_FLAGS="--xla_dump_to=DIR
    --xla_dump_hlo_as_dot"), or draws the one named with --module.

    \b
    Examples:
      tfprof-lite hlo tfprof_out/xla_dump
      tfprof-lite hlo tfprof_out/xla_dump --module cluster_1 -o cluster_1.svg
      tfprof-lite hlo tfprof_out/xla_dump -m module_0001 --focus MatMul.6 --format png
    """
    dump = _select(target, module, stage)
    if dump is None:
        return
    if list_instructions_only:
        write_stdout("".join(f"{name}\n" for name in list_instructions(dump)))
        return
    path = _target(dump, output, fmt, focus)
    with Spinner(f"drawing {path}"):
        shrink = _Shrink(
            None if all_nodes else max_nodes, focus, radius, collapse_fusions, not keep_styles
        )
        _draw(dump, path, fmt, shrink)
    click.echo(f"Wrote {style(shown(path), sys.stdout, bold=True)} ({_describe(dump)})")


HLO_COMMANDS: dict[str, click.Command] = {"hlo": hlo_command}
