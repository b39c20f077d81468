"""Overview: the one-page summary of a profile, built from its RunMetadata.

Average step time; for an XSpace, the share of its window its steps cover
(``ProfileModel.event_window``); host and device idle time (share of the step's wall time in
which no op ran on CPU devices, respectively on accelerator streams); the top
op types by self time (CPU plus accelerator time, as tfprof's exec time) with
the nodes that ran of those defined, their FLOPs
and achieved FLOP rates (SI units and GFLOP/s in the text; columns sized to the
longest op name); the run environment (hosts and
devices); and a recommendation drawn from the input-pipeline analysis and the
top ops.

A FLOP rate counts the FLOPs of the nodes that ran and only those: tfprof's
views give every *defined* node its FLOPs, run or not, so on a graph where
grappler merged identical blocks (4,000 MatMuls defined, 10 run) their sum
divided by the time of the 10 that ran would be an impossible rate.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tfprof_lite.analysis.input_pipeline import InputReport, input_pipeline, parts_text
from tfprof_lite.analysis.intervals import union_length
from tfprof_lite.analysis.step_join import joined_steps
from tfprof_lite.analysis.steptime import StepTimeReport, complete, step_times
from tfprof_lite.base.device_names import task_text
from tfprof_lite.base.shared import sharing
from tfprof_lite.base.units import format_count, format_time
from tfprof_lite.model.devices import STEPS_DEVICE, is_canonical_device
from tfprof_lite.model.execs import KIND_ACCELERATOR, KIND_CPU
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.whole_steps import whole_step_stats

if TYPE_CHECKING:
    from tfprof_lite.analysis.cluster import ClusterReport
    from tfprof_lite.model.cluster_merge import ClusterProfile

#: The device of an XSpace's step markers, as the step records name it (lower case).
_STEPS_DEVICE = STEPS_DEVICE.lower()

__all__ = [
    "HOST_DISPATCH",
    "TOP_OPS_TITLE",
    "Overview",
    "TopOp",
    "format_flop_rate",
    "overview",
    "recommend",
]

#: Share of the step in which nothing ran (or only transfers were awaited) from
#: which the recommendation says the program is waiting rather than computing.
WAITING_SHARE = 0.5
#: The title of the top-ops table: the time it ranks is tfprof's exec time.
#: The op type of an XLA program's execution on a host thread (its dispatch).
HOST_DISPATCH = "XlaModule"
TOP_OPS_TITLE = "top ops by self time, CPU + accelerator (per step):"
#: The overview's JSON keys of an XSpace's window, left out for other profiles.
_WINDOW_KEYS = ("window_micros", "step_coverage", "device_events_outside_steps")


@dataclass(frozen=True)
class TopOp:
    """One op type's share of the average step.

    ``self_micros`` is tfprof's exec time: CPU plus accelerator time, so an
    op whose only records are the GPU tracer's kernels (an XLA kernel of an
    XSpace profile, an unannotated kernel of a TF GPU RunMetadata) counts too;
    ``accelerator_micros`` is the accelerator part. ``float_ops`` is the FLOPs
    of the ``nodes_run`` nodes that ran (per step, averaged as ``self_micros``
    is); ``flops_per_sec`` divides it by ``self_micros``; ``nodes`` counts
    every defined node of the type.
    """

    op: str
    self_micros: int
    share: float
    float_ops: int
    flops_per_sec: float
    nodes: int
    nodes_run: int = 0
    accelerator_micros: int = 0


@dataclass
class Overview:
    """The overview page."""

    steps: int = 0
    avg_step_micros: float = 0.0
    host_idle: float = 0.0
    device_idle: float | None = None
    top_ops: list[TopOp] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    recommendation: str = ""
    step_time: StepTimeReport = field(default_factory=StepTimeReport)
    input: InputReport = field(default_factory=InputReport)
    #: Per task of a merged distributed profile: mean shares of its step.
    tasks: dict[str, dict[str, float]] = field(default_factory=dict)
    stragglers: list[str] = field(default_factory=list)
    #: The tasks named in :attr:`stragglers`, most often slowest first.
    straggler_tasks: list[str] = field(default_factory=list)
    #: How the steps were found, for profiles read from XSpace files (else "").
    steps_source: str = ""
    #: Steps left out of :attr:`steps` and the averages, and why (an XSpace's
    #: steps cut by the trace's start or stop; the whole profile of one without).
    cut_steps: dict[int, str] = field(default_factory=dict)
    #: An XSpace's window (``ProfileModel.event_window``): its length, the
    #: share of it its steps cover and its GPU events outside every step (None
    #: for a RunMetadata profile, whose JSON has none of the three).
    window_micros: float | None = None
    step_coverage: float | None = None
    device_events_outside_steps: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (nested reports included)."""
        doc = asdict(self)
        for key in _WINDOW_KEYS:
            if doc[key] is None:
                del doc[key]
        return doc

    def to_text(self) -> str:
        """The overview as plain text."""
        dev_idle = "n/a" if self.device_idle is None else f"{100 * self.device_idle:.1f}%"
        average = format_time(int(self.avg_step_micros)) if self.steps else "n/a"
        lines = [
            f"steps: {self.steps}{self._found()}, average step time: {average}",
            *self._window_lines(),
            f"host idle: {100 * self.host_idle:.1f}%, device idle: {dev_idle}",
            f"hosts: {', '.join(self.hosts) or 'unknown'}",
            f"devices: {', '.join(self.devices) or 'unknown'}",
            f"input: {self.input.verdict} ({100 * self.input.mean_share:.1f}% waiting)"
            + (f"; slowest stage {self.input.slow_stage}" if self.input.slow_stage else ""),
            *([f"step: {parts_text(self.input.parts)}"] if self.input.parts else []),
            TOP_OPS_TITLE,
            *_top_op_lines(self.top_ops),
        ]
        if self.tasks:
            lines.append("tasks (mean step: compute / input / network / idle):")
        for task, mean in self.tasks.items():
            wall = mean["wall"] or 1.0
            shares = " / ".join(
                f"{100 * mean[p] / wall:.1f}%" for p in ("compute", "input", "network", "idle")
            )
            lines.append(f"  {task:<34} {format_time(int(mean['wall'])):>10}  {shares}")
        lines.extend(f"straggler: {s}" for s in self.stragglers)
        lines.append(f"recommendation: {self.recommendation}")
        return "\n".join(lines) + "\n"

    def _window_lines(self) -> list[str]:
        """``steps cover 93.1% of the 81.2ms window`` (an XSpace's only)."""
        if self.window_micros is None or self.step_coverage is None:
            return []
        outside = self.device_events_outside_steps or 0
        events = f"; {outside} GPU event{'s' if outside != 1 else ''} outside them"
        return [
            f"steps cover {100 * self.step_coverage:.1f}% of the "
            f"{format_time(round(self.window_micros))} window" + (events if outside else "")
        ]

    def _found(self) -> str:
        """`` (how the steps were found; the cut steps left out)``."""
        notes = [self.steps_source] if self.steps_source else []
        by_why: dict[str, list[str]] = {}
        for step, why in sorted(self.cut_steps.items()):
            if why.startswith("cut"):  # "cut by the trace's start: ..."
                by_why.setdefault(why.split(":")[0], []).append(str(step))
        for why, steps in by_why.items():
            notes.append(f"step{'s' if len(steps) > 1 else ''} {', '.join(steps)} {why}, left out")
        return f" ({'; '.join(notes)})" if notes else ""


def format_flop_rate(flops_per_sec: float) -> str:
    """A FLOP rate in GFLOP/s: ``141.77 GFLOP/s``, ``0.004 GFLOP/s`` below 1."""
    giga = flops_per_sec / 1e9
    return f"{giga:.2f} GFLOP/s" if giga >= 1 or giga == 0 else f"{giga:.3f} GFLOP/s"


def _top_op_lines(top_ops: list[TopOp]) -> list[str]:
    """The top-ops table: columns sized to the longest op name, the accelerator
    part of the self time (when any op has one), the nodes that ran of those
    defined, FLOPs of the nodes that ran (SI units) and rates in GFLOP/s."""
    if not top_ops:
        return []
    device = any(op.accelerator_micros for op in top_ops)
    rows = [
        (
            op.op,
            format_time(op.self_micros),
            *([format_time(op.accelerator_micros)] if device else []),
            f"{100 * op.share:.2f}%",
            f"{op.nodes_run}/{op.nodes}",
            format_count(op.float_ops, "FLOPs") if op.float_ops else "-",
            format_flop_rate(op.flops_per_sec) if op.float_ops else "-",
        )
        for op in top_ops
    ]
    header = (
        "op type",
        "self time",
        *(["accelerator"] if device else []),
        "share",
        "run/defined",
        "FLOPs (run)",
        "FLOP rate",
    )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = []
    for row in [header, *rows]:
        name, *numbers = row
        cells = [name.ljust(widths[0])] + [c.rjust(w) for c, w in zip(numbers, widths[1:])]
        out.append(("  " + "  ".join(cells)).rstrip())
    return out


def _idle(model: ProfileModel, kind: int) -> float | None:
    """The mean share of the whole steps' wall time in which no record of
    ``kind`` ran (steps with none left out), all steps measured at once where
    exact (:class:`~tfprof_lite.analysis.step_join.JoinedSteps`)."""
    joined = joined_steps(model)
    if not joined.exact():
        return _idle_per_step(model, kind)
    walls, has = joined.walls()
    mine = joined.t_kind == kind
    busy = joined.union(mine).tolist()
    counts = np.bincount(joined.t_at[mine], minlength=joined.n).tolist()
    cut = model.cut_steps if len(model.cut_steps) < len(model.steps) else {}
    idle = [
        max(0.0, 1.0 - union / wall)
        for step, found, wall, union, count
        in zip(joined.numbers, has.tolist(), walls.tolist(), busy, counts, strict=True)
        if found and wall > 0 and count and step not in cut
    ]  # fmt: skip
    return round(sum(idle) / len(idle), 4) if idle else None


def _idle_per_step(model: ProfileModel, kind: int) -> float | None:
    """:func:`_idle` one step at a time (the reference)."""
    idle: list[float] = []
    for step in model.sorted_steps():
        if step in model.cut_steps and len(model.cut_steps) < len(model.steps):
            continue
        execs = model.steps[step]
        span = execs.wall_span()
        if span is None:
            continue
        wall = span[1] - span[0]
        spans = [
            (s, s + d) for k, s, d in zip(execs.t_kind, execs.t_start, execs.t_dur) if k == kind
        ]
        if wall > 0 and spans:
            idle.append(max(0.0, 1.0 - union_length(spans) / wall))
    return round(sum(idle) / len(idle), 4) if idle else None


def _step_markers(model: ProfileModel) -> set[int]:
    """Nodes recorded on the steps pseudo device only (an XSpace's step markers)."""
    joined = joined_steps(model)
    steps = [code for code, dev in enumerate(joined.devices) if dev == _STEPS_DEVICE]
    if not steps:
        return set()
    marked = np.isin(joined.p_dev, steps)
    on_steps = np.unique(joined.p_node[marked], return_index=True)[0]
    elsewhere = np.unique(joined.p_node[(joined.p_dev >= 0) & ~marked], return_index=True)[0]
    return set(on_steps.tolist()) - set(elsewhere.tolist())


def _top_ops(model: ProfileModel, top: int) -> list[TopOp]:
    """Op types by self time (CPU + accelerator, as tfprof's exec_micros); FLOPs
    (and rates) of the nodes that ran only. A node ran when it has a CPU record
    (tfprof's run_count) or accelerator time: GPU tracer records alone (every
    kernel of an XSpace profile) leave run_count at 0.

    Step markers (an XSpace's ``train`` or ``SessionRun`` events, recorded on
    the steps pseudo device only) are not op types; steps cut by the trace's
    start or stop are left out of the averages."""
    stats = whole_step_stats(model)  # cut steps left out
    ran = ((stats.run_count > 0) | (stats.accelerator_exec_micros > 0)).tolist()
    times, flops = stats.exec_micros.tolist(), stats.float_ops.tolist()
    accel = stats.accelerator_exec_micros.tolist()
    markers = _step_markers(model)
    per_op: dict[str, list[int]] = {}
    for nid, op in enumerate(model.ops):
        if nid in markers:
            continue
        acc = per_op.setdefault(op, [0, 0, 0, 0, 0])
        acc[2] += 1
        if ran[nid]:
            acc[0] += times[nid]
            acc[1] += flops[nid]
            acc[3] += 1
            acc[4] += accel[nid]
    total = sum(v[0] for v in per_op.values()) or 1
    ranked = sorted(per_op.items(), key=lambda kv: (-kv[1][0], kv[0]))[:top]
    return [
        TopOp(op, t, round(t / total, 4), f, round(f / (t / 1e6), 1) if t else 0.0, n, r, a)
        for op, (t, f, n, r, a) in ranked
    ]


def _environment(model: ProfileModel) -> tuple[list[str], list[str]]:
    """Hosts and devices ops ran on: the canonical devices, not the GPU tracer's
    streams or pseudo devices such as ``/host:cpu/steps`` (all recorded devices
    only when none is canonical)."""
    joined = joined_steps(model)
    used = np.unique(joined.p_dev[joined.p_dev >= 0], return_index=True)[0].tolist()
    recorded = sorted({joined.devices[code] for code in used})
    devices = [d for d in recorded if is_canonical_device(d)] or recorded
    hosts = sorted({t for d in devices if (t := task_text(d))})
    return hosts, devices


def _waiting(view: Overview) -> str | None:
    """The waiting verdict, when most of the step is spent waiting."""
    if view.tasks:
        worst = max(view.tasks, key=lambda t: view.tasks[t]["idle"] + view.tasks[t]["network"])
        mean = view.tasks[worst]
        wall = mean["wall"] or 1.0
        net, idle = mean["network"] / wall, mean["idle"] / wall
        if net + idle < WAITING_SHARE:
            return None
        on = (
            "tensor transfers (RecvTensor) from other tasks"
            if net >= idle
            else ("other tasks or the client: no op ran and no transfer was in flight")
        )
        slowest = [t for t in view.straggler_tasks if t != worst]
        if slowest:
            on += f"; the slowest task is {slowest[0]}"
        return (
            f"mostly waiting: {worst} waits {100 * (net + idle):.1f}% of its step "
            f"(network {100 * net:.1f}%, idle {100 * idle:.1f}%), on {on}; "
            "see `tfprof-lite cluster` for stragglers and parameter-server load"
        )
    parts = view.input.parts
    if parts:  # an XSpace: only the step's thread waiting with nothing else running is idle
        if parts.get("idle", 0.0) < WAITING_SHARE:
            return None
        return (
            f"mostly waiting: the step's thread waits with nothing running for "
            f"{100 * parts['idle']:.1f}% of the step, not compute-bound"
        )
    busy_dev = view.device_idle is not None and view.device_idle < WAITING_SHARE
    if view.host_idle >= WAITING_SHARE and not busy_dev:
        return (
            f"mostly waiting: no op ran for {100 * view.host_idle:.1f}% of the step "
            "(waiting on the client, the network or other tasks), not compute-bound"
        )
    return None


def recommend(view: Overview) -> str:
    """The one-line recommendation of ``view``: input-bound, waiting, host-bound
    on XLA dispatch, or the op type to look at first."""
    if not view.steps and view.steps_source:  # an XSpace: none found, or every one cut
        return _no_steps(view)
    if not view.steps:
        return "no traced steps: run some steps with FULL_TRACE and add_step them"
    if view.input.input_bound or view.input.mean_share >= 0.2:
        fix = view.input.suggestions[0] if view.input.suggestions else "speed up the input"
        return f"the program is {view.input.verdict}; {fix}"
    waiting = _waiting(view)
    if waiting:
        return waiting
    dispatch = _loop_bound(view) or _dispatch_bound(view)
    if dispatch:
        return dispatch
    # An XLA program's host side is where its kernels were launched from, not
    # the compute: name the first op that is not, when there is one.
    ops = [t for t in view.top_ops if t.op != HOST_DISPATCH] or view.top_ops
    if ops:
        lead = ops[0]
        return (
            f"compute-bound: {lead.op} takes {100 * lead.share:.1f}% of op time; "
            "look at it first (op view, order_by micros)"
        )
    return "no op time recorded"


def _no_steps(view: Overview) -> str:
    """The recommendation for an XSpace without a whole step (none found, or
    each one cut by the trace)."""
    ops = [t for t in view.top_ops if t.op != HOST_DISPATCH] or view.top_ops
    lead = f"; {ops[0].op} takes {100 * ops[0].share:.1f}% of op time" if ops else ""
    cut = view.cut_steps and all(why.startswith("cut") for why in view.cut_steps.values())
    found = "every step was cut by the trace" if cut else "no steps were found"
    return (
        f"{found}, so there is no step time: trace whole steps and mark each with "
        "jax.profiler.StepTraceAnnotation or tf.profiler.experimental.Trace(name, "
        f"step_num=i, _r=1){lead}"
    )


def _loop_bound(view: Overview) -> str | None:
    """The verdict when the loop's own thread between steps (too short per step to
    be making batches: its dispatch and syncs) takes most of each step."""
    share = view.input.parts.get("host", 0.0)
    if not view.input.loop_overhead_micros or share < WAITING_SHARE:
        return None
    return (
        f"host-bound: the loop's own thread between steps takes {100 * share:.1f}% of each "
        f"step ({view.input.loop_overhead_micros:.0f}us per step: calling the compiled step "
        "and waiting for it, too short to be making batches); give each compiled call more "
        "work (several steps per call with jax.lax.scan or fori_loop, larger batches) and "
        "remove host syncs between steps (block_until_ready, .item(), printing every step)"
    )


def _dispatch_bound(view: Overview) -> str | None:
    """The verdict when the host's launching of XLA programs leads the op time
    while the accelerator is mostly idle (an XSpace of a JAX or TF-XLA program)."""
    lead = view.top_ops[0] if view.top_ops else None
    idle = view.device_idle
    if lead is None or lead.op != HOST_DISPATCH or lead.accelerator_micros or idle is None:
        return None
    if idle < WAITING_SHARE:
        return None
    return (
        f"host-bound: the accelerator is idle {100 * idle:.1f}% of the step while the host "
        f"spends {100 * lead.share:.1f}% of op time running XLA programs ({HOST_DISPATCH}: "
        "their dispatch and kernel launches); give each compiled call more work "
        "(more steps per call, larger batches) and look for host syncs between steps "
        "(timeline)"
    )


def _cluster_part(view: Overview, report: ClusterReport) -> None:
    """Per-task shares, stragglers and the workers' idle share for a merged profile
    (tasks of ``ps`` jobs serve the others and have no step of their own)."""
    totals = report.task_totals()
    view.tasks = {t: m for t, m in totals.items() if not t.startswith("/job:ps/")} or totals
    idle = [m["idle"] / m["wall"] for m in view.tasks.values() if m["wall"]]
    view.host_idle = round(sum(idle) / len(idle), 4) if idle else view.host_idle
    walls = [m["wall"] for m in view.tasks.values()]
    if walls:  # one step of a task, not the span of every task's step k
        view.avg_step_micros = round(sum(walls) / len(walls), 1)
    slow: dict[str, list[float]] = {}
    for s in report.stragglers:
        slow.setdefault(s.task, []).append(s.excess_micros)
    for task, excess in sorted(slow.items(), key=lambda kv: -len(kv[1])):
        view.straggler_tasks.append(task)
        view.stragglers.append(
            f"{task} is the slowest in {len(excess)} of {len(report.steps)} steps, "
            f"{format_time(int(sum(excess) / len(excess)))} behind the others on average"
        )


def _view(model: ProfileModel, top: int) -> Overview:
    """The overview's measures of ``model``'s steps (in a sharing block)."""
    times = step_times(model)
    view = Overview(
        steps=len(complete(times)),
        avg_step_micros=round(times.mean_micros, 1),
        host_idle=_idle(model, KIND_CPU) or 0.0,
        device_idle=_idle(model, KIND_ACCELERATOR),
        top_ops=_top_ops(model, top),
        step_time=times,
        input=input_pipeline(model),
        steps_source=model.steps_source,
        cut_steps=dict(model.cut_steps),
    )
    view.hosts, view.devices = _environment(model)
    return view


def overview(model: ProfileModel, top: int = 10, cluster: ClusterProfile | None = None) -> Overview:
    """The overview of ``model``; with ``cluster`` (a merged distributed profile)
    also per task where the step went, the stragglers, and a recommendation that
    looks at each task's waiting time."""
    with sharing():  # the analyses below join the steps' columns once
        view = _view(model, top)
    window = model.event_window
    if window is not None:
        view.window_micros = window.duration_ns / 1000
        view.step_coverage = round(window.coverage(), 6)
        view.device_events_outside_steps = window.outside_steps()
    if cluster is not None:
        from tfprof_lite.analysis.cluster import cluster_report  # a cluster's only

        _cluster_part(view, cluster_report(cluster))
    view.recommendation = recommend(view)
    return view
