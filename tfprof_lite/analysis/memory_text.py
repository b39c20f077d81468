"""The memory profile's text: one step's lines (:func:`step_text`), per allocator
its peak, what it held from before the step, and what is live at the peak by
op and by name scope (:meth:`tfprof_lite.analysis.memory.MemoryReport.to_text`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfprof_lite.base.units import format_memory, format_time

if TYPE_CHECKING:
    from tfprof_lite.analysis.memory import AllocatorMemory, StepMemory

__all__ = ["step_text"]


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def step_text(step: StepMemory) -> list[str]:
    """One step's lines: its heading, then each allocator's."""
    lines = [f"step {step.step} ({step.source}):"]
    if not step.allocators:
        lines.append("  no memory records in this step")
    for alloc in step.allocators:
        lines.extend(_allocator_text(alloc))
    return lines


def _allocator_text(alloc: AllocatorMemory) -> list[str]:
    how = "" if alloc.exact else " (approximate)"
    lines = [
        f"  {alloc.allocator}{how}: peak {format_memory(alloc.peak_bytes)} at "
        f"+{format_time(alloc.peak_micros)}; {_plural(alloc.allocations, 'allocation')}, "
        f"{_plural(alloc.frees, 'free')}, {_plural(len(alloc.timeline), 'timeline point')}"
    ]
    if alloc.max_in_use_bytes:
        lines.append(
            f"    allocator reported up to {format_memory(alloc.max_in_use_bytes)} in use "
            "(including memory allocated before the step)"
        )
    if alloc.before_step_bytes:
        lines.append(f"    held from before the step: {format_memory(alloc.before_step_bytes)}")
    if alloc.by_op:
        lines.append(
            f"    live at the peak: {format_memory(alloc.live_bytes)} in "
            f"{_plural(alloc.live_ops, 'op')}; by op:"
        )
    for op in alloc.by_op:
        tensors = ", ".join(t.label() for t in op.tensors) or "no output tensors recorded"
        lines.append(f"      {format_memory(op.bytes):>9}  {op.name} ({op.op}): {tensors}")
    if alloc.by_scope:
        lines.append("    live at the peak, by name scope:")
    for scope in alloc.by_scope:
        biggest = ", ".join(t.label() for t in scope.tensors)
        lines.append(
            f"      {format_memory(scope.bytes):>9}  {scope.scope} "
            f"({_plural(scope.ops, 'op')})" + (f": {biggest}" if biggest else "")
        )
    return lines
