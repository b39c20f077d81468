"""Input pipeline: how much of each step waits on input, and what to do about it.

Input ops are the ones that hand data to the model: iterator reads
(``IteratorGetNext*``), queue dequeues (``QueueDequeue*``), and host-to-device
copies when the profile has them as ops. Per step, ``input_micros`` is the time
during which any input op ran (overlaps counted once) and ``input_share`` is
that over the step's wall time. Verdicts: ``input-bound`` when the mean share is
at least :data:`INPUT_BOUND_SHARE`, ``partly input-bound`` at
:data:`PARTLY_BOUND_SHARE`, else ``not input-bound``. Suggestions come from the
``tf.data`` ops present in the graph (no prefetch, sequential map, no cache).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from tfprof_lite.analysis.intervals import union_length
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

    @property
    def input_bound(self) -> bool:
        """True when the mean input share reaches :data:`INPUT_BOUND_SHARE`."""
        return self.mean_share >= INPUT_BOUND_SHARE

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        doc = asdict(self)
        doc["input_bound"] = self.input_bound
        doc["top_ops"] = [{"name": n, "op": o, "micros": m} for n, o, m in self.top_ops]
        return doc

    def to_text(self) -> str:
        """Verdict, per-step shares, top waiting ops and suggestions."""
        lines = [f"{self.verdict}: {100 * self.mean_share:.1f}% of step time waits on input"]
        for s in self.steps:
            lines.append(
                f"  step {s.step}: {format_time(s.input_micros)} of "
                f"{format_time(s.wall_micros)} ({100 * s.input_share:.1f}%)"
            )
        if self.top_ops:
            lines.append("top input ops (mean per step):")
            lines += [f"  {n} ({o}): {format_time(m)}" for n, o, m in self.top_ops]
        lines += [f"suggestion: {text}" for text in self.suggestions]
        return "\n".join(lines) + "\n"


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
    model: ProfileModel, step: int, per_op: dict[int, int], is_input: list[bool]
) -> InputStep | None:
    execs = model.steps[step]
    span = execs.wall_span()
    if span is None:
        return None
    wall = span[1] - span[0]
    spans = []
    for nid, start, dur in zip(execs.t_node, execs.t_start, execs.t_dur):
        if is_input[nid]:
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
    """Every traced step's timing and each input op's summed time (shared
    within a :func:`~tfprof_lite.base.shared.sharing` block: read-only)."""
    steps: list[InputStep] = []
    per_op: dict[int, int] = {}
    is_input = _input_nodes(model)
    for step in model.sorted_steps():
        timing = _step(model, step, per_op, is_input)
        if timing is not None:
            steps.append(timing)
    return steps, per_op


def input_pipeline(model: ProfileModel, top: int = 5) -> InputReport:
    """The input-pipeline analysis of every traced step."""
    report = InputReport()
    steps, per_op = shared("input_pipeline", model, lambda: _steps(model))
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
    return report
