"""MemoryChecker: how much memory the steps peak at, and what holds it.

Reports, from :func:`tfprof_lite.analysis.memory.memory_profile`, summarized by
:func:`tfprof_lite.analysis.memory_summary.summarize` (a bounded number of
lines for any number of steps): per allocator (largest peak first) its highest
peak and the step of it, then the steps with the same finding (the ``top`` ops,
default 3, holding the most memory at the peak) as step ranges with the spread
of their bytes. Steps without memory records are one line. A profile of up to
:data:`DETAIL_STEPS` steps, or the option ``per_step`` (``true``), gives
instead, per step and allocator, the peak and
when it happens, the live ops with their output tensors' shapes and the live
name scopes. Profiles without allocator data (loaded from a ProfileProto) are
approximated and the reports say so. No entry without traced steps; a note
saying so when no step has memory records.
"""

from __future__ import annotations

from tfprof_lite.advisor.base import Checker
from tfprof_lite.analysis.memory import AllocatorMemory, memory_profile
from tfprof_lite.analysis.memory_summary import summarize
from tfprof_lite.base.units import format_memory, format_time
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.model.profile import ProfileModel

__all__ = ["DETAIL_STEPS", "MemoryChecker"]

#: Up to this many steps, each step's findings are given (nothing repeats yet).
DETAIL_STEPS = 2


class MemoryChecker(Checker):
    """Peak memory per step and allocator, and what is live at the peak."""

    name = "MemoryChecker"
    option_names = ("top", "per_step")

    def configure(self, options: dict[str, str]) -> None:
        """Read ``top`` and ``per_step`` (``true``/``false``)."""
        self.top = self.int_option(options, "top", 3)
        flag = options.get("per_step", "false")
        if flag not in ("true", "false"):
            raise InvalidOptionError(
                f"{self.name}: per_step must be 'true' or 'false', got {flag!r}"
            )
        self.per_step = flag == "true"

    def check(self, model: ProfileModel) -> list[str] | None:
        """The reports; None when the profile has no traced steps."""
        if not model.steps:
            return None
        report = memory_profile(model, top=self.top)
        lines: list[str] = []
        if self.per_step or len(report.steps) <= DETAIL_STEPS:
            for step in report.steps:
                for alloc in step.allocators:
                    lines += _allocator_reports(step.step, alloc)
        else:
            lines = summarize(report).lines()
        return lines + [f"note: {text}" for text in report.notes]


def _allocator_reports(step: int, alloc: AllocatorMemory) -> list[str]:
    head = f"step {step}, {alloc.allocator}"
    how = "" if alloc.exact else " (approximate)"
    lines = [
        f"{head}: peak {format_memory(alloc.peak_bytes)} at +{format_time(alloc.peak_micros)}{how}"
    ]
    for op in alloc.by_op:
        shapes = ", ".join(t.label() for t in op.tensors) or "no output tensors recorded"
        lines.append(f"{head}: live op {op.name} ({op.op}) {format_memory(op.bytes)}: {shapes}")
    for scope in alloc.by_scope:
        lines.append(
            f"{head}: live scope {scope.scope} {format_memory(scope.bytes)} "
            f"({scope.ops} op{'' if scope.ops == 1 else 's'})"
        )
    if alloc.before_step_bytes:
        lines.append(f"{head}: held from before the step {format_memory(alloc.before_step_bytes)}")
    return lines
