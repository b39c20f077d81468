"""The report composer: queries the views and lays out the page.

Contract of :func:`render_html`: see :mod:`tfprof_lite.report`. The report's
queries use :func:`report_options` (every statistic selected, unlimited depth,
ordered by time, no output of their own).
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from tfprof_lite.analysis.profile_kind import profile_kind
from tfprof_lite.base.metrics import METRICS
from tfprof_lite.base.shared import sharing
from tfprof_lite.base.version import __version__
from tfprof_lite.model.execs import KIND_ACCELERATOR
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.options.builder import ProfileOptionBuilder
from tfprof_lite.options.options import Options
from tfprof_lite.options.user_code import UserCode
from tfprof_lite.report.assets import CSS, JS
from tfprof_lite.report.kernels import kernel_section
from tfprof_lite.report.markup import Section, esc
from tfprof_lite.report.programs import program_sections
from tfprof_lite.report.sections import flame_section, overview_section
from tfprof_lite.report.slots import slot_section
from tfprof_lite.report.steps import steps_section
from tfprof_lite.report.tables import glossary_section, op_table_section, tree_table_section
from tfprof_lite.report.trace import trace_section
from tfprof_lite.report.trace_assets import TRACE_CSS
from tfprof_lite.views.query import run_view
from tfprof_lite.views.result import ViewResult

if TYPE_CHECKING:
    from tfprof_lite.model.cluster_merge import ClusterProfile

__all__ = ["code_view", "has_accelerator_time", "render_html", "report_options"]

#: Every statistic the report shows.
_ALL_SELECT = [m.select for m in METRICS if m.select]


def report_options(overrides: Options | None = None) -> Options:
    """The options the report's queries use: ``overrides`` (or every node accounted,
    all steps averaged) with the depth, selection, order and output the report needs."""
    base = overrides or Options.from_dict(ProfileOptionBuilder().build())
    return base.updated(
        {"max_depth": 1_000_000, "select": _ALL_SELECT, "order_by": "micros", "output": "none"}
    )


def _query(model: ProfileModel, view: str, opts: Options) -> ViewResult:
    return run_view(model, view, opts)


def code_view(model: ProfileModel, opts: Options, all_frames: bool = False) -> ViewResult | None:
    """The code-view data of the report (its flame graph and its Code table), or
    None when the profile has no code traces. The one place the report gets it:
    user code (library frames folded into the user's own) unless ``all_frames``
    or ``opts`` already chose the frames."""
    if not model.has_trace:
        return None
    if not all_frames and opts.user_code is None:
        opts = replace(opts, user_code=UserCode())
    return _query(model, "code", opts)


def has_accelerator_time(model: ProfileModel) -> bool:
    """True when any step records accelerator time (a GPU/TPU stream)."""
    return any(
        bool((execs.times["kind"] == KIND_ACCELERATOR).any()) for execs in model.steps.values()
    )


def _page(title: str, subtitle: str, sections: Sequence[Section]) -> str:
    nav = "".join(f'<a href="#{s.anchor}">{esc(s.title)}</a>' for s in sections)
    body = "".join(
        f'<section id="{s.anchor}"><h2>{esc(s.title)}</h2>{s.body}</section>' for s in sections
    )
    csp = (
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}{TRACE_CSS}</style></head><body>"
        f'<header><h1>{esc(title)}</h1><p class="muted">{esc(subtitle)}</p>'
        f"<nav>{nav}</nav></header>"
        f"<main>{body}</main><footer>Made by tfprof-lite {esc(__version__)}; "
        "works offline, loads nothing.</footer>"
        f"<script>{JS}</script></body></html>\n"
    )


def _subtitle(model: ProfileModel, opts: Options, source: str) -> str:
    steps = model.sorted_steps()
    if opts.step >= 0:
        which = f"step {opts.step}"
    else:
        which = f"per-node average over {len(steps)} step{'s' if len(steps) != 1 else ''}"
    return f"{source + ': ' if source else ''}tables show {which}"


def render_html(
    model: ProfileModel,
    opts: Options | None = None,
    *,
    title: str = "tfprof-lite report",
    source: str = "",
    max_rows: int = 2000,
    all_frames: bool = False,
    cluster: ClusterProfile | None = None,
) -> str:
    """The whole report as one HTML document (see the module docstring).

    Args:
        model: the profile.
        opts: query options (filters, ``step``); the report sets depth, selection,
            order and output itself. None: every node accounted, steps averaged.
        title: the page title.
        source: where the profile came from (shown under the title).
        max_rows: the most rows per table.
        all_frames: the code view (flame graph, table) with every frame as tfprof
            shows it; by default, unless ``opts.user_code`` says how, library
            frames are folded into the user's own (``UserCode()``).
        cluster: the merged distributed profile ``model`` belongs to, if any: adds
            the per-task section (:mod:`tfprof_lite.report.cluster`).
    """
    collecting = gc.isenabled()
    # Rendering makes many objects and keeps most of them until it returns: a
    # collection meanwhile would mostly walk them and the model (about 5% of it).
    gc.disable()
    try:
        # The sections and the advisor ask for some of the same analyses and
        # views (memory profile, step times, input pipeline): computed once.
        with sharing():
            return _render(model, opts, title, source, max_rows, all_frames, cluster)
    finally:
        if collecting:
            gc.enable()


def _render(
    model: ProfileModel,
    opts: Options | None,
    title: str,
    source: str,
    max_rows: int,
    all_frames: bool,
    cluster: ClusterProfile | None,
) -> str:
    query = report_options(opts)
    if cluster is not None:  # the cluster analysis is imported for a cluster only
        from tfprof_lite.report.cluster import cluster_section
    scope = _query(model, "scope", query)
    op = _query(model, "op", query)
    code = code_view(model, query, all_frames)
    acc = has_accelerator_time(model)
    kind = profile_kind(model)
    xspace = kind != "tf1"
    kernels = kernel_section(model, max_rows)
    sections = [
        overview_section(model, scope, op),
        steps_section(model),
        trace_section(model),
        *([cluster_section(cluster)] if cluster is not None else []),
        flame_section([r for r in (scope, code) if r is not None]),
        op_table_section(op, max_rows, acc, xspace),
        tree_table_section(scope, max_rows, acc, xspace),
        tree_table_section(code, max_rows, acc, xspace, kind),
        *([kernels] if kernels is not None else []),
        *program_sections(model, max_rows),
        slot_section("memory", model),
        slot_section("advisor", model),
        glossary_section(),
    ]
    return _page(title, _subtitle(model, query, source), sections)
