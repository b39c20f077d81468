"""A memory profile of many steps summarized: per allocator the peak step and the
steps with the same finding, as step ranges.

Contract of :func:`summarize` (one pass over the report's steps, so linear in
the number of steps):

* Per allocator (in order of its highest peak, largest first): the steps it has
  records in, the step with its highest peak (the first of equal ones) and its
  :class:`AllocatorMemory` there.
* A *finding* is what holds the memory at an allocator's peak: the names and op
  types of its largest live ops (``by_op``, the first ``top``, default 3), whether the
  peak is exact, and whether memory from before the step is part of it. Steps
  with the same finding form one :class:`FindingGroup`, with the lowest and
  highest peak and, per live op, the lowest and highest bytes. Groups come most
  steps first; :data:`MAX_GROUPS` are listed per allocator, the others are
  counted in one line.
* Steps are written by :func:`step_list` (ranges from
  :func:`tfprof_lite.base.units.step_ranges`, cut after :data:`MAX_RANGES`
  parts), so no line grows with the number of steps either.
* :meth:`MemorySummary.lines` gives the text; steps without memory records are
  one line, whatever their number.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tfprof_lite.analysis.memory import AllocatorMemory, MemoryReport
from tfprof_lite.base.units import format_memory, format_time, step_ranges

__all__ = [
    "MAX_GROUPS",
    "MAX_RANGES",
    "AllocatorSummary",
    "FindingGroup",
    "MemorySummary",
    "parse_steps",
    "step_list",
    "summarize",
]

#: Finding groups listed per allocator (the others are counted in one line).
MAX_GROUPS = 8
#: Ranges or single steps written per list before it is cut.
MAX_RANGES = 12

_Key = tuple[bool, bool, tuple[tuple[str, str], ...]]


def step_list(numbers: list[int]) -> str:
    """``numbers`` as ranges (``22-29, 31``), cut after :data:`MAX_RANGES` parts."""
    parts = step_ranges(numbers).split(", ")
    if len(parts) <= MAX_RANGES:
        return ", ".join(parts)
    return ", ".join(parts[:MAX_RANGES]) + f", ... ({len(set(numbers))} steps in all)"


def _span(low: int, high: int) -> str:
    if low == high:
        return format_memory(low)
    return f"{format_memory(low)} to {format_memory(high)}"


@dataclass
class FindingGroup:
    """Steps of one allocator with the same finding, and the spread of its bytes."""

    steps: list[int]
    exact: bool
    before_step: bool
    ops: list[tuple[str, str]]
    peak_low: int
    peak_high: int
    op_low: list[int]
    op_high: list[int]

    def add(self, step: int, alloc: AllocatorMemory) -> None:
        """One more step with this finding."""
        self.steps.append(step)
        self.peak_low = min(self.peak_low, alloc.peak_bytes)
        self.peak_high = max(self.peak_high, alloc.peak_bytes)
        for i, op in enumerate(alloc.by_op):
            self.op_low[i] = min(self.op_low[i], op.bytes)
            self.op_high[i] = max(self.op_high[i], op.bytes)

    def text(self) -> str:
        """``steps A-B: peak X to Y; live at the peak: op (type) X to Y, ...``."""
        which = "step" if len(self.steps) == 1 else "steps"
        how = "" if self.exact else " (approximate)"
        live = ", ".join(
            f"{name} ({op}) {_span(lo, hi)}"
            for (name, op), lo, hi in zip(self.ops, self.op_low, self.op_high)
        )
        out = f"{which} {step_list(self.steps)}: peak {_span(self.peak_low, self.peak_high)}{how}"
        out += f"; live at the peak: {live}" if live else "; no op holds memory at the peak"
        return out + ("; part of it held from before the step" if self.before_step else "")


def _group(step: int, alloc: AllocatorMemory) -> FindingGroup:
    sizes = [op.bytes for op in alloc.by_op]
    group = FindingGroup(
        [], alloc.exact, alloc.before_step_bytes > 0, [(op.name, op.op) for op in alloc.by_op],
        alloc.peak_bytes, alloc.peak_bytes, list(sizes), list(sizes),
    )  # fmt: skip
    group.add(step, alloc)
    return group


@dataclass
class AllocatorSummary:
    """One allocator over every step: where it peaks and its finding groups."""

    allocator: str
    steps: list[int] = field(default_factory=list)
    peak_step: int = -1
    peak: AllocatorMemory | None = None
    groups: dict[_Key, FindingGroup] = field(default_factory=dict)

    def add(self, step: int, alloc: AllocatorMemory) -> None:
        """The allocator's profile in one more step."""
        self.steps.append(step)
        if self.peak is None or alloc.peak_bytes > self.peak.peak_bytes:
            self.peak_step, self.peak = step, alloc
        key = (alloc.exact, alloc.before_step_bytes > 0, tuple((o.name, o.op) for o in alloc.by_op))
        group = self.groups.get(key)
        if group is None:
            self.groups[key] = _group(step, alloc)
        else:
            group.add(step, alloc)

    def lines(self) -> list[str]:
        """The allocator's headline, then one line per finding group."""
        peak = self.peak
        assert peak is not None  # an allocator is summarized once it has a step
        out = [
            f"{self.allocator}: highest peak {format_memory(peak.peak_bytes)} at step "
            f"{self.peak_step} (+{format_time(peak.peak_micros)}); records in "
            f"{len(self.steps)} step{'' if len(self.steps) == 1 else 's'} ({step_list(self.steps)})"
        ]
        groups = sorted(self.groups.values(), key=lambda g: (-len(g.steps), g.steps[0]))
        out += [f"{self.allocator}: {g.text()}" for g in groups[:MAX_GROUPS]]
        rest = [s for g in groups[MAX_GROUPS:] for s in g.steps]
        if rest:
            out.append(
                f"{self.allocator}: {len(groups) - MAX_GROUPS} other findings in steps "
                f"{step_list(rest)} (--per-step or --steps RANGE for each)"
            )
        return out


@dataclass
class MemorySummary:
    """The summary of a :class:`MemoryReport` (see the module docstring)."""

    steps: int
    allocators: list[AllocatorSummary]
    without: list[int]
    notes: list[str]

    def lines(self) -> list[str]:
        """Per allocator its headline and finding groups; the steps without records."""
        out = [line for alloc in self.allocators for line in alloc.lines()]
        if self.without:
            count = len(self.without)
            if count == self.steps:
                out.append(f"no memory records in any of the {count} traced steps")
            else:
                steps = "1 step" if count == 1 else f"{count} steps"
                out.append(f"no memory records in {steps}: {step_list(self.without)}")
        return out

    def peak_step(self) -> int | None:
        """The step with the highest peak of any allocator, or None."""
        best = max(self.allocators, key=lambda a: a.peak.peak_bytes if a.peak else -1, default=None)
        return None if best is None else best.peak_step


def summarize(report: MemoryReport, top: int = 3) -> MemorySummary:
    """Summarize ``report`` (one pass over its steps); a finding is made of the
    ``top`` largest live ops of a peak."""
    by_name: dict[str, AllocatorSummary] = {}
    without: list[int] = []
    for step in report.steps:
        if not step.allocators:
            without.append(step.step)
        for alloc in step.allocators:
            summary = by_name.get(alloc.allocator)
            if summary is None:
                summary = by_name[alloc.allocator] = AllocatorSummary(alloc.allocator)
            summary.add(step.step, replace(alloc, by_op=alloc.by_op[:top]))
    allocs = sorted(
        by_name.values(), key=lambda a: (-(a.peak.peak_bytes if a.peak else 0), a.allocator)
    )
    return MemorySummary(len(report.steps), allocs, without, list(report.notes))


def parse_steps(text: str) -> list[tuple[int, int]]:
    """The ``(first, last)`` step ranges of ``3``, ``3-7`` or a comma-separated
    list of them (a range is never expanded, however wide).

    Raises:
        ValueError: a part that is not a number or a ``low-high`` range.
    """
    ranges: list[tuple[int, int]] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        low, sep, high = part.partition("-")
        if not low.strip().isdigit() or (sep and not high.strip().isdigit()):
            raise ValueError(f"not a step or a range of steps: {part!r}")
        first, last = int(low), int(high) if sep else int(low)
        if last < first:
            raise ValueError(f"empty range of steps: {part!r}")
        ranges.append((first, last))
    if not ranges:
        raise ValueError("no steps given")
    return ranges
