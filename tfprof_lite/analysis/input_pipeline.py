"""Input pipeline: how much of each step waits on input, and what to do about it.

Input ops are the ones that hand data to the model: iterator reads
(``IteratorGetNext*``), queue dequeues (``QueueDequeue*``), and host-to-device
copies when the profile has them as ops. Per step, ``input_micros`` is the time
during which any input op ran (overlaps counted once) and ``input_share`` is
that over the step's wall time. Verdicts: ``input-bound`` when the mean share is
at least :data:`INPUT_BOUND_SHARE`, ``partly input-bound`` at
:data:`PARTLY_BOUND_SHARE`, else ``not input-bound``. Suggestions come from the
``tf.data`` ops present in the graph (no prefetch, sequential map, no cache).

An XSpace (TF2, Keras, JAX) is read from its trace instead
(:mod:`tfprof_lite.analysis.input_stages`): each step's ``input`` part (the
iterator's work for the step, on any thread, and batch transfers), plus its
``host`` part when the loop's own thread makes the batches (no tf.data, no
input op); ``parts`` holds every part's mean share, ``stages`` tf.data's
iterator stages, ``slow_stage`` the one with the most self time and ``fix``
the fix that fits it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.analysis.input_stages import host_makes_batches, stage_fix, stages_of
from tfprof_lite.analysis.intervals import union_length
from tfprof_lite.analysis.step_join import joined_steps
from tfprof_lite.base.shared import shared
from tfprof_lite.base.units import format_time
from tfprof_lite.model.profile import ProfileModel

__all__ = [
    "INPUT_BOUND_SHARE",
    "INPUT_OP_RE",
    "PARTLY_BOUND_SHARE",
    "InputReport",
    "InputStep",
    "input_pipeline",
]

INPUT_OP_RE = re.compile(
    r"(IteratorGetNext.*|QueueDequeue.*|.*DequeueMany.*|.*DequeueUpTo.*|.*MemcpyHtoD.*)"
)
INPUT_BOUND_SHARE = 0.5
#: Below this mean host part per step (µs), the loop's own thread between steps
#: is dispatch and syncs (calling the compiled step, waiting for it), too short
#: to be making batches: not counted as input (``InputReport.loop_overhead_micros``).
LOOP_OVERHEAD_MICROS = 200
PARTLY_BOUND_SHARE = 0.2


@dataclass(frozen=True)
class InputStep:
    """Input waiting in one step."""

    step: int
    wall_micros: int
    input_micros: int
    input_share: float


@dataclass
class InputReport:
    """Per-step input waiting, the verdict, the top waiting ops and fixes."""

    steps: list[InputStep] = field(default_factory=list)
    mean_share: float = 0.0
    verdict: str = "no traced steps"
    top_ops: list[tuple[str, str, int]] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)
    #: An XSpace's: mean share of each part of the step (xspace_input.PARTS).
    parts: dict[str, float] = field(default_factory=dict)
    #: tf.data's stages (name, µs and self µs per step), slowest first.
    stages: list[dict[str, Any]] = field(default_factory=list)
    slow_stage: str = ""
    fix: str = ""
    #: True when the loop's own thread makes the batches (counted as input).
    host_batches: bool = False
    #: The mean host part per step (µs) when it is too short to be batch making
    #: (:data:`LOOP_OVERHEAD_MICROS`): the loop's dispatch and syncs; else 0.
    loop_overhead_micros: float = 0.0

    @property
    def input_bound(self) -> bool:
        """True when the mean input share reaches :data:`INPUT_BOUND_SHARE`."""
        return self.mean_share >= INPUT_BOUND_SHARE

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        doc = asdict(self)
        if not self.loop_overhead_micros:  # (only where it says something)
            del doc["loop_overhead_micros"]
        doc["input_bound"] = self.input_bound
        doc["top_ops"] = [{"name": n, "op": o, "micros": m} for n, o, m in self.top_ops]
        return doc

    def to_text(self) -> str:
        """Verdict, per-step shares, top waiting ops and suggestions."""
        lines = [f"{self.verdict}: {100 * self.mean_share:.1f}% of step time waits on input"]
        if self.parts:
            lines.append("step parts: " + parts_text(self.parts))
        for s in self.steps:
            lines.append(
                f"  step {s.step}: {format_time(s.input_micros)} of "
                f"{format_time(s.wall_micros)} ({100 * s.input_share:.1f}%)"
            )
        if self.top_ops:
            lines.append("top input ops (mean per step):")
            lines += [f"  {n} ({o}): {format_time(m)}" for n, o, m in self.top_ops]
        if self.stages:
            lines.append("tf.data stages (per step: time, self time):")
            lines += [
                f"  {st['name']}: {format_time(st['micros'])}, {format_time(st['self_micros'])}"
                for st in self.stages
            ]
        lines += [f"suggestion: {text}" for text in self.suggestions]
        return "\n".join(lines) + "\n"


_PART_WORDS = {
    "input": "input",
    "host": "host (Python, batch making)",
    "device": "device compute",
    "launch": "kernel launch",
    "copies": "copies",
    "idle": "idle",
}


def parts_text(parts: dict[str, float]) -> str:
    """``input 88.1%, host (Python, batch making) 7.0%, ...`` (zero parts left out)."""
    shown = [f"{_PART_WORDS[k]} {100 * v:.1f}%" for k, v in parts.items() if v >= 0.0005]
    return ", ".join(shown) or "none"


def _input_nodes(model: ProfileModel) -> list[bool]:
    """Per node, whether its op type is an input op (each op type matched once)."""
    known: dict[str, bool] = {}
    out = []
    for op in model.ops:
        flag = known.get(op)
        if flag is None:
            flag = known[op] = INPUT_OP_RE.fullmatch(op) is not None
        out.append(flag)
    return out


def _step(
    model: ProfileModel, step: int, per_op: dict[int, int], is_input: npt.NDArray[np.bool_]
) -> InputStep | None:
    execs = model.steps[step]
    span = execs.wall_span()
    if span is None:
        return None
    wall = span[1] - span[0]
    spans = []
    times = execs.times
    hit = np.flatnonzero(is_input[times["node"]]) if len(times) else np.zeros(0, np.int64)
    if len(hit):  # the input ops' records, in record order
        nodes, starts = times["node"][hit].tolist(), times["start"][hit].tolist()
        for nid, start, dur in zip(nodes, starts, times["dur"][hit].tolist()):
            spans.append((start, start + dur))
            per_op[nid] = per_op.get(nid, 0) + dur
    waited = union_length(spans)
    share = waited / wall if wall > 0 else 0.0
    return InputStep(step, wall, waited, round(share, 4))


def _suggestions(model: ProfileModel, report: InputReport) -> list[str]:
    ops = set(model.ops)
    out: list[str] = []
    if not any(op.startswith("PrefetchDataset") for op in ops):
        out.append("add .prefetch(tf.data.AUTOTUNE) at the end of the tf.data pipeline")
    if any(op.startswith("MapDataset") for op in ops):
        out.append("use .map(fn, num_parallel_calls=tf.data.AUTOTUNE) to run map in parallel")
    if not any(op.startswith("CacheDataset") for op in ops):
        out.append("if the input fits in memory or on local disk, add .cache() after loading")
    if any(op.startswith("QueueDequeue") for op in ops):
        out.append("replace queue runners by a tf.data pipeline with prefetching")
    return out if report.mean_share >= PARTLY_BOUND_SHARE else []


def _steps(model: ProfileModel) -> tuple[list[InputStep], dict[int, int]]:
    """Every traced step's timing (none for an XSpace with trace parts, whose
    steps come from them) and each input op's summed time, all steps measured
    at once where exact (:class:`~tfprof_lite.analysis.step_join.JoinedSteps`;
    shared within a :func:`~tfprof_lite.base.shared.sharing` block: read-only)."""
    is_input = np.asarray(_input_nodes(model), dtype=bool)
    joined = joined_steps(model)
    if not joined.exact():
        return _steps_one_by_one(model, is_input)
    walls, has = joined.walls()
    hit = is_input[joined.t_node] if len(is_input) else np.zeros(len(joined.t_node), bool)
    rows = np.flatnonzero(hit & has[joined.t_at])  # the input ops' records, in record order
    nodes, first, where = np.unique(joined.t_node[rows], return_index=True, return_inverse=True)
    sums = np.zeros(len(nodes), dtype=np.int64)
    np.add.at(sums, where.reshape(-1), joined.t_dur[rows])
    order = np.argsort(first, kind="stable")  # each op in the order first met
    per_op = dict(zip(nodes[order].tolist(), sums[order].tolist(), strict=True))
    trace = getattr(model, "trace_input", None)
    if trace is not None and trace.steps:
        return [], per_op
    waited = joined.union(hit).tolist()
    steps = [
        InputStep(step, wall, wait, round(wait / wall if wall > 0 else 0.0, 4))
        for step, found, wall, wait
        in zip(joined.numbers, has.tolist(), walls.tolist(), waited, strict=True)
        if found
    ]  # fmt: skip
    return steps, per_op


def _steps_one_by_one(
    model: ProfileModel, is_input: npt.NDArray[np.bool_]
) -> tuple[list[InputStep], dict[int, int]]:
    """:func:`_steps` one step at a time (the reference)."""
    steps: list[InputStep] = []
    per_op: dict[int, int] = {}
    for step in model.sorted_steps():
        timing = _step(model, step, per_op, is_input)
        if timing is not None:
            steps.append(timing)
    return steps, per_op


def _trace_steps(model: ProfileModel, report: InputReport) -> list[InputStep]:
    """An XSpace's steps from its trace parts; fills ``parts``, ``stages``,
    ``slow_stage`` and ``fix`` of ``report``."""
    trace = model.trace_input
    assert trace is not None  # (the caller reads the trace parts only when there are some)
    report.host_batches = model.xla_programs is not None and host_makes_batches(
        trace, any(_input_nodes(model))
    )
    ordered = sorted(trace.steps)
    rows = [trace.steps[n] for n in ordered]
    walls = [sum(parts.values()) for parts in rows]
    whole = {n for n in ordered if n not in model.cut_steps} or set(ordered)
    if report.host_batches:
        _loop_overhead(report, [r.get("host", 0) for n, r in zip(ordered, rows) if n in whole])
    host = report.host_batches
    steps = []
    for number, parts, wall in zip(ordered, rows, walls, strict=True):
        waited = parts["input"] + (parts["host"] if host else 0)
        steps.append(InputStep(number, wall, waited, round(waited / wall, 4) if wall else 0.0))
    keys = list(trace.steps[next(iter(trace.steps))])
    sums = _part_sums(keys, ordered, rows, walls, whole)
    if sums is None:
        sums = _part_sums_per_step(keys, ordered, rows, walls, whole)
    report.parts = {k: round(v, 4) for k, v in sums.items()}
    stages = stages_of(trace)
    report.stages = [{"name": s.name, "micros": s.micros, "self_micros": s.self_micros}
                     for s in stages]  # fmt: skip
    if stages and stages[0].self_micros > 0:
        report.slow_stage = stages[0].name
        report.fix = stage_fix(stages[0], stages)
    elif report.host_batches:
        report.fix = (
            "the loop's own thread makes each batch (Python/NumPy) while the device waits: "
            "make batches ahead on a background thread or with tf.data/grain and "
            "prefetch them to the device, and move the NumPy work into the compiled step"
        )
    return steps


def _loop_overhead(report: InputReport, host_micros: list[int]) -> None:
    """When the whole steps' mean host part is under :data:`LOOP_OVERHEAD_MICROS`,
    it is the loop's dispatch and syncs, not batch making: not input."""
    mean = sum(host_micros) / len(host_micros) if host_micros else 0.0
    if mean < LOOP_OVERHEAD_MICROS:
        report.host_batches = False
        report.loop_overhead_micros = round(mean, 1)


def _part_sums(
    keys: list[str], ordered: list[int], rows: list[dict[str, int]], walls: list[int],
    whole: set[int],
) -> dict[str, float] | None:  # fmt: skip
    """Each part's mean share over the ``whole`` steps, all steps at once: the
    shares added in step order (a running sum), as :func:`_part_sums_per_step`
    adds them; None where that cannot be exact (steps with other parts, values
    past 2**53)."""
    names = set(keys)
    if any(parts.keys() != names for parts in rows):
        return None
    values = np.asarray([[parts[k] for k in keys] for parts in rows]).reshape(len(rows), len(keys))
    wall = np.asarray(walls).reshape(len(rows))
    if not (_exact_floats(values) and _exact_floats(wall)):
        return None
    counted = np.asarray([n in whole for n in ordered], dtype=bool) & (wall != 0)
    safe = np.where(counted, wall, 1)
    shares = np.where(counted[:, None], values / safe[:, None] / len(whole), 0.0)
    totals = np.cumsum(shares, axis=0)[-1] if len(rows) else np.zeros(len(keys))
    return {k: 0.0 + float(v) for k, v in zip(keys, totals.tolist(), strict=True)}


def _exact_floats(values: npt.NDArray[Any]) -> bool:
    """Whether ``values`` turn into float64 as Python's int / int division does."""
    if values.dtype.kind == "f":
        return True
    return values.dtype.kind in "iu" and (not values.size or int(np.abs(values).max()) < 2**53)


def _part_sums_per_step(
    keys: list[str], ordered: list[int], rows: list[dict[str, int]], walls: list[int],
    whole: set[int],
) -> dict[str, float]:  # fmt: skip
    """:func:`_part_sums` one step at a time (the reference)."""
    sums = dict.fromkeys(keys, 0.0)
    for number, parts, wall in zip(ordered, rows, walls, strict=True):
        for k, v in parts.items():
            sums[k] += v / wall / len(whole) if wall and number in whole else 0.0
    return sums


def input_pipeline(model: ProfileModel, top: int = 5) -> InputReport:
    """The input-pipeline analysis of every traced step."""
    report = InputReport()
    steps, per_op = shared("input_pipeline", model, lambda: _steps(model))
    trace = getattr(model, "trace_input", None)
    if trace is not None and trace.steps:
        steps = _trace_steps(model, report)
    return _finish(model, report, steps, per_op, top)


def _finish(
    model: ProfileModel, report: InputReport, steps: list[InputStep], per_op: dict[int, int],
    top: int,
) -> InputReport:  # fmt: skip
    """The verdict, top ops and suggestions of ``report`` over ``steps``."""
    report.steps = list(steps)
    if not report.steps:
        return report
    # An XSpace's steps cut by the trace are not averaged (unless no step is whole).
    cut = model.cut_steps
    whole = [s for s in report.steps if s.step not in cut] or report.steps
    report.mean_share = round(sum(s.input_share for s in whole) / len(whole), 4)
    if report.mean_share >= INPUT_BOUND_SHARE:
        report.verdict = "input-bound"
    elif report.mean_share >= PARTLY_BOUND_SHARE:
        report.verdict = "partly input-bound"
    else:
        report.verdict = "not input-bound"
    ranked = sorted(per_op.items(), key=lambda kv: (-kv[1], model.names[kv[0]]))[:top]
    n = len(report.steps)
    report.top_ops = [(model.names[nid], model.ops[nid], total // n) for nid, total in ranked]
    report.suggestions = _suggestions(model, report)
    if report.fix or report.stages or report.parts:
        bound = report.fix and report.mean_share >= PARTLY_BOUND_SHARE
        report.suggestions = [report.fix] if bound else []
    return report
