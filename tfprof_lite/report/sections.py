"""The report's overview and flame graph sections.

Contract: :func:`step_times` sums each step's execution time (total, accelerator,
CPU: the *summed op time*) and counts the nodes that ran; :func:`overview_section`
shows the profile's headline numbers, its time per step being the wall-clock
span of :func:`tfprof_lite.analysis.steptime.step_times` as in ``tfprof-lite
overview`` (the median beside the mean, which outlier steps lift; steps cut by
the trace counted apart and left out), its FLOPs
those of the nodes that ran (:func:`run_flops`) beside tfprof's count of every
defined node, counts in SI units (``85.03 M``); :func:`flame_section` embeds
the scope (and code) view as JSON that the page's script draws as a flame graph,
leaving out frames under :data:`FLAME_MIN_SHARE` of the root. On an XSpace
profile (TF2, Keras, JAX), which records no parameters or FLOPs, those cards
read :data:`NOT_RECORDED` instead of 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from tfprof_lite.analysis.profile_kind import has_graph_stats
from tfprof_lite.analysis.step_join import joined_steps
from tfprof_lite.analysis.steptime import outliers
from tfprof_lite.analysis.steptime import step_times as wall_times
from tfprof_lite.base.metrics import EXEC, FLOPS, PARAMS
from tfprof_lite.base.shared import shared
from tfprof_lite.base.units import format_count, format_time
from tfprof_lite.model.devices import is_canonical_device
from tfprof_lite.model.execs import KIND_ACCELERATOR, KIND_CPU
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.report.markup import Section, esc, script_json
from tfprof_lite.views.node import ShowNode
from tfprof_lite.views.result import ViewResult

__all__ = [
    "FLAME_MIN_SHARE",
    "NOT_RECORDED",
    "StepTime",
    "devices",
    "flame_data",
    "flame_section",
    "overview_section",
    "run_flops",
    "step_times",
]

#: The value of a card the profile cannot have (parameters, FLOPs of an XSpace).
NOT_RECORDED = "not recorded"

#: Frames narrower than this share of the root are left out of the flame graph.
FLAME_MIN_SHARE = 0.001


@dataclasses.dataclass(frozen=True)
class StepTime:
    """Summed execution time of one step (microseconds) and the nodes that ran."""

    step: int
    total: int
    accelerator: int
    cpu: int
    nodes: int


def step_times(model: ProfileModel) -> list[StepTime]:
    """Total, accelerator and CPU time of every step, in step order (computed
    once within a :func:`~tfprof_lite.base.shared.sharing` block)."""
    return list(shared("report.step_times", model, lambda: _step_times(model)))


def _step_times(model: ProfileModel) -> list[StepTime]:
    """Every step's sums over its time records at once (:func:`joined_steps`),
    as :func:`step_time_of` gives each (int64 sums wrap alike in any order)."""
    joined = joined_steps(model)
    if joined.numbers and joined.numbers[0] < 0:  # (a negative step is an average)
        return [step_time_of(model, step) for step in joined.numbers]
    n, at, kind, dur = joined.n, joined.t_at, joined.t_kind, joined.t_dur
    acc, cpu = kind == KIND_ACCELERATOR, kind == KIND_CPU
    accelerator = np.zeros(n, dtype=np.int64)
    np.add.at(accelerator, at[acc], dur[acc])
    on_cpu = np.zeros(n, dtype=np.int64)
    np.add.at(on_cpu, at[cpu], dur[cpu])
    width = max(len(model.names), 1)
    ran = np.unique(at[cpu] * width + joined.t_node[cpu], return_index=True)[0]
    nodes = np.bincount(ran // width, minlength=n)
    return [
        StepTime(step, t, a, c, r)
        for step, t, a, c, r in zip(joined.numbers, (accelerator + on_cpu).tolist(),
                                    accelerator.tolist(), on_cpu.tolist(), nodes.tolist(),
                                    strict=True)
    ]  # fmt: skip


def step_time_of(model: ProfileModel, step: int) -> StepTime:
    """One step's total, accelerator and CPU time and the nodes that ran, from
    its per-node statistics."""
    stats = model.stats(step)
    return StepTime(
        step=step,
        total=int(stats.exec_micros.sum()),
        accelerator=int(stats.accelerator_exec_micros.sum()),
        cpu=int(stats.cpu_exec_micros.sum()),
        nodes=int((stats.run_count > 0).sum()),
    )


def devices(model: ProfileModel) -> list[str]:
    """The devices ops ran on: the canonical devices of the nodes and step records,
    not the GPU tracer's streams or pseudo devices such as ``/host:cpu/steps``
    (every recorded device only when none is canonical)."""
    found = {dev for dev in model.canonical_device if dev}
    joined = joined_steps(model)  # (every step's pairs at once)
    used = np.unique(joined.p_dev[joined.p_dev >= 0], return_index=True)[0].tolist()
    found.update(joined.devices[code] for code in used)
    return sorted(d for d in found if is_canonical_device(d)) or sorted(found)


def _flame_tree(node: ShowNode, floor: float) -> dict[str, Any]:
    kids = [_flame_tree(k, floor) for k in node.children if k.total[EXEC] >= floor]
    out: dict[str, Any] = {"n": node.name, "v": node.total[EXEC]}
    if kids:
        out["c"] = [k for k in kids if k["v"] > 0]
    return out


def flame_data(results: Sequence[ViewResult]) -> dict[str, Any]:
    """The flame graph JSON: ``{"views": {view: {"n", "v", "c"}}}`` (time in us)."""
    views: dict[str, Any] = {}
    for result in results:
        if result.empty or result.view == "op":
            continue
        floor = max(1.0, result.root.total[EXEC] * FLAME_MIN_SHARE)
        views[result.view] = _flame_tree(result.root, floor)
    return {"unit": "us", "views": views}


def _card(key: str, value: str) -> str:
    return (
        f'<div class="card"><div class="k">{esc(key)}</div><div class="v">{esc(value)}</div></div>'
    )


def run_flops(model: ProfileModel, step: int) -> int:
    """The FLOPs of the nodes that ran in ``step`` (any negative step: each
    node's average over the steps it ran in); nodes that never ran count 0,
    unlike tfprof's views, which give every defined node its FLOPs."""
    stats = model.stats(step)
    return int(stats.float_ops[stats.run_count > 0].sum())


def overview_section(model: ProfileModel, scope: ViewResult, op: ViewResult) -> Section:
    """Overview numbers: steps, devices, nodes, op types, time per step (median
    beside the mean), params, FLOPs of the nodes that ran and tfprof's FLOPs of
    every defined node."""
    sums = step_times(model)
    walls = wall_times(model)
    avg_ops = sum(s.total for s in sums) // len(sums) if sums else 0
    devs = devices(model)
    slow = outliers(walls)
    mean_note = f" ({len(slow)} outlier step{'s' if len(slow) != 1 else ''} included)"
    cards = [
        _card("Steps", _steps_card(len(sums), [s.cut for s in walls.steps if s.cut])),
        _card("Devices", str(len(devs))),
        _card("Graph nodes", format_count(len(model))),
        _card("Op types", str(len(op.rows))),
        _card("Median time per step (wall)", format_time(int(walls.p50_micros))),
        _card(
            "Mean time per step (wall)" + (mean_note if slow else ""),
            format_time(int(walls.mean_micros)),
        ),
        _card("Max. time per step (wall)", format_time(walls.max_micros)),
        _card("Avg. summed op time per step", format_time(avg_ops)),
        *_graph_cards(model, scope),
        _card("Code traces", "yes" if model.has_trace else "no"),
    ]
    dev_list = "".join(f"<li><code>{esc(d)}</code></li>" for d in devs) or "<li>none</li>"
    body = (
        f'<div class="cards">{"".join(cards)}</div><p class="muted">Devices:</p><ul>{dev_list}</ul>'
    )
    return Section("overview", "Overview", body)


def _graph_cards(model: ProfileModel, scope: ViewResult) -> list[str]:
    """Parameters and FLOPs: counted on a graph profile, not recorded on an XSpace."""
    keys = ("Parameters", "FLOPs per step (nodes that ran)", "FLOPs of every defined node (tfprof)")
    if not has_graph_stats(model):
        return [_card(key, NOT_RECORDED) for key in keys]
    values = (
        scope.root.total[PARAMS],
        run_flops(model, scope.opts.step),
        scope.root.total[FLOPS],
    )
    return [_card(key, format_count(value)) for key, value in zip(keys, values)]


def _steps_card(steps: int, cut: list[str]) -> str:
    """The step count: the whole steps, and the others (cut, or no step found)."""
    if not cut:
        return str(steps)
    if all(why.startswith("not a step") for why in cut):
        return f"{steps - len(cut)} (no steps found)"
    return f"{steps - len(cut)} (+{len(cut)} cut, left out)"


def flame_section(results: Sequence[ViewResult]) -> Section:
    """The flame graph (drawn by the script from the embedded JSON)."""
    data = flame_data(results)
    options = "".join(f'<option value="{esc(v)}">{esc(v)} view</option>' for v in data["views"])
    body = (
        '<div class="tools"><label>View <select id="flame-view">'
        f'{options}</select></label><button type="button" id="flame-reset">Reset zoom</button>'
        '<span class="muted" id="flame-info"></span></div>'
        '<p class="muted">Root on top; each frame is as wide as its total execution time. '
        "Click a frame to zoom in; hover for its time. Frames under "
        f"{FLAME_MIN_SHARE * 100:g}% of the root are left out.</p>"
        '<svg id="flame" role="img" aria-label="flame graph" height="40"></svg>'
        f'<script type="application/json" id="flame-data">{script_json(data)}</script>'
    )
    return Section("flamegraph", "Flame graph", body)
