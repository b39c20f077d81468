"""``tfprof-lite diff A [B] [--steps S1,S2] [--json]``: what changed between profiles.

Contract: ``A`` and ``B`` are saved profiles or directories of them (see
:mod:`tfprof_lite.cli.inputs`). ``--steps S1,S2`` compares step S1 of A with step S2
of B, or of A itself when B is omitted; without it both sides use the per-node
average over their steps. The comparison is :func:`tfprof_lite.analysis.diff.diff_profiles`
(op view and scope view, ``--views`` to choose); it prints text sorted by absolute
time change (``--limit`` rows per view, coloured on a terminal) or, with ``--json``,
the whole diff as JSON. Time-only changes under ``--noise-micros`` (10 us) or
``--noise-percent`` (10 %) are noise: counted, stated, not listed (``0`` and
``0`` list every change). CPU and accelerator time are shown apart. tfprof query
options (``-account_type_regexes``, ``-hide_name_regexes``...) filter both sides
alike.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from tfprof_lite.analysis.diff import (
    DEFAULT_NOISE,
    DIFF_VIEWS,
    Noise,
    Side,
    diff_profiles,
    render_text,
    to_json,
)
from tfprof_lite.base.shown import shown
from tfprof_lite.cli.common import TfprofCommand, query_options, use_color
from tfprof_lite.cli.inputs import InputSpec, load_profiler
from tfprof_lite.errors import UsageError
from tfprof_lite.options.builder import ProfileOptionBuilder
from tfprof_lite.options.options import Options

__all__ = ["DIFF_COMMANDS", "parse_steps", "parse_views"]

_COLORS: dict[str, dict[str, Any]] = {
    "added": {"fg": "green"},
    "faster": {"fg": "green"},
    "removed": {"fg": "red"},
    "slower": {"fg": "red"},
    "title": {"bold": True},
}


def parse_steps(text: str | None) -> tuple[int, int]:
    """``"S1,S2"`` -> (S1, S2); None -> (-1, -1).

    Raises:
        UsageError: not two integers separated by a comma.
    """
    if text is None:
        return -1, -1
    parts = text.split(",")
    try:
        first, second = (int(p) for p in parts)
    except ValueError:
        raise UsageError(f"--steps expects two steps like 0,4, got {text!r}") from None
    return first, second


def parse_views(text: str) -> tuple[str, ...]:
    """``"op,scope"`` -> ("op", "scope"), checked against the views a diff supports."""
    views = tuple(v for v in text.split(",") if v)
    bad = [v for v in views if v not in DIFF_VIEWS]
    if bad or not views:
        raise UsageError(f"--views takes {' and/or '.join(DIFF_VIEWS)}, got {text!r}")
    return views


def _paint(text: str, role: str) -> str:
    return click.style(text, **_COLORS[role]) if role in _COLORS else text


@click.command("diff", cls=TfprofCommand, short_help="Compare two profiles or two steps.")
@click.argument("before", metavar="A")
@click.argument("after", metavar="[B]", required=False)
@click.option("--steps", metavar="S1,S2", help="Compare step S1 (of A) with step S2 (of B or A).")
@click.option("--json", "as_json", is_flag=True, help="Print the whole diff as JSON.")
@click.option(
    "--limit",
    default=25,
    show_default=True,
    type=click.IntRange(min=0),
    help="Most rows per view in text output (0: all).",
)
@click.option(
    "--min-change",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    metavar="MICROS",
    help="Leave out entries whose time changed by less than this.",
)
@click.option(
    "--noise-micros",
    default=DEFAULT_NOISE.micros,
    show_default=True,
    type=click.IntRange(min=0),
    metavar="MICROS",
    help="Time changes smaller than this are noise (not listed as changed).",
)
@click.option(
    "--noise-percent",
    default=DEFAULT_NOISE.percent,
    show_default=True,
    type=click.FloatRange(min=0),
    metavar="PERCENT",
    help="Time changes smaller than this share of the time before are noise.",
)
@click.option("--views", default="op,scope", show_default=True, help="Views to compare: op, scope.")
@click.pass_context
def diff_command(
    ctx: click.Context,
    before: str,
    after: str | None,
    steps: str | None,
    as_json: bool,
    limit: int,
    min_change: int,
    noise_micros: int,
    noise_percent: float,
    views: str,
) -> None:
    """Ops (op view) and scopes (scope view) added, removed and changed in time
    and count between profile A and profile B, or between two steps of A.

    \b
    Examples:
      tfprof-lite diff before/profile_4 after/profile_4
      tfprof-lite diff tfprof_out/profile_4 --steps 1,4 --limit 10
      tfprof-lite diff a/profile_4 b/profile_4 --json > diff.json
      tfprof-lite diff a/profile_4 b/profile_4 --noise-micros 50 --noise-percent 5
    """
    step_a, step_b = parse_steps(steps)
    chosen = parse_views(views)
    if after is None and steps is None:
        raise UsageError("give two profiles, or one profile and --steps S1,S2")
    opts = query_options(ctx, Options.from_dict(ProfileOptionBuilder().build()))
    model_a = load_profiler(InputSpec(profile=before), step_a).model
    model_b = model_a if after is None else load_profiler(InputSpec(profile=after), step_b).model
    result = diff_profiles(
        Side(model_a, shown(before), step_a),  # the names are for display only
        Side(model_b, shown(after or before), step_b),
        chosen,
        opts,
        min_change,
        Noise(noise_micros, noise_percent),
    )
    if as_json:
        sys.stdout.write(json.dumps(to_json(result), indent=1, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_text(result, limit, _paint if use_color() else None))
    sys.stdout.flush()


DIFF_COMMANDS: dict[str, click.Command] = {"diff": diff_command}
