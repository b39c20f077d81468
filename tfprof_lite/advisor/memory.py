"""MemoryChecker: how much memory each step peaks at, and what holds it.

Reports, from :func:`tfprof_lite.analysis.memory.memory_profile`, per step and
allocator (largest peak first): the peak bytes and when it happens, then the
``top`` ops (default 3) holding the most memory at the peak with their output
tensors' shapes, and the ``top`` name scopes. Profiles without allocator data
(loaded from a ProfileProto) are approximated and the reports say so. No entry
without traced steps; one report saying so when no step has memory records.
"""

from __future__ import annotations

from tfprof_lite.advisor.base import Checker
from tfprof_lite.analysis.memory import AllocatorMemory, memory_profile
from tfprof_lite.base.units import format_memory, format_time
from tfprof_lite.model.profile import ProfileModel

__all__ = ["MemoryChecker"]


class MemoryChecker(Checker):
    """Peak memory per step and allocator, and what is live at the peak."""

    name = "MemoryChecker"
    option_names = ("top",)

    def configure(self, options: dict[str, str]) -> None:
        """Read ``top``."""
        self.top = self.int_option(options, "top", 3)

    def check(self, model: ProfileModel) -> list[str] | None:
        """The reports; None when the profile has no traced steps."""
        if not model.steps:
            return None
        report = memory_profile(model, top=self.top)
        lines: list[str] = []
        for step in report.steps:
            for alloc in step.allocators:
                lines += _allocator_reports(step.step, alloc)
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
