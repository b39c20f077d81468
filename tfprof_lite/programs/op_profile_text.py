"""The op profile as a tree and as text: grouped by program, category or scope.

Contract:

* :func:`op_tree` groups an :class:`~tfprof_lite.programs.op_profile.OpProfile`'s
  ops into :class:`OpNode` trees: ``program`` (program -> category -> op, as
  XProf's op profile), ``category`` (category -> op, all programs together) or
  ``scope`` (the framework scope's path, ``jit(train_step)/jvp(MLP)/mlp/dense0``,
  one level per component, the op as leaf). A node sums its ops' times, FLOPs
  and bytes; its rates and intensity follow from those sums. Children are
  sorted by self time, most first.
* :func:`profile_text` lays out the device line, the tree (nodes under
  ``min_share`` of the total self time folded into one ``(N more)`` line per
  parent, at most ``top`` ops per group) and the headroom table: the ops with
  the most time to gain at their roofline bound, what each would save per step
  (over the profile's steps; per program run when it has none).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tfprof_lite.base.units import format_count
from tfprof_lite.programs.op_profile import OpProfile, OpRow, program_label

__all__ = ["GROUPINGS", "OpNode", "format_rate", "op_tree", "profile_text"]

#: What the tree can be grouped by.
GROUPINGS = ("program", "category", "scope")


@dataclass
class OpNode:
    """A group of ops (or one op: ``op`` set), with its children."""

    name: str
    children: list[OpNode] = field(default_factory=list)
    ops: list[OpRow] = field(default_factory=list)
    op: OpRow | None = None

    @property
    def self_ps(self) -> int:
        """Self time of its ops, summed."""
        return sum(o.self_ps for o in self.ops)

    @property
    def flops(self) -> float:
        """FLOPs of its ops, summed."""
        return sum(o.flops for o in self.ops)

    @property
    def bytes_accessed(self) -> float:
        """Bytes accessed by its ops, summed."""
        return sum(o.bytes_accessed for o in self.ops)

    def add(self, path: list[str], op: OpRow) -> None:
        """Add ``op`` under the children named by ``path`` (made as needed)."""
        self.ops.append(op)
        if not path:
            return
        head = path[0]
        child = next((c for c in self.children if c.name == head and c.op is None), None)
        if child is None or len(path) == 1:
            child = OpNode(head, op=op if len(path) == 1 else None)
            self.children.append(child)
        child.add(path[1:], op)

    def sort(self) -> None:
        """Children by self time, most first, at every level."""
        self.children.sort(key=lambda c: (-c.self_ps, c.name))
        for child in self.children:
            child.sort()


def _path(op: OpRow, by: str) -> list[str]:
    if by == "category":
        return [op.category, op.name]
    if by == "scope":
        parts = [p for p in op.scope.split("/") if p] or [op.name]
        return [*parts, op.name] if parts[-1] != op.name else parts
    return [program_label(op.program, op.program_id), op.category, op.name]


def op_tree(profile: OpProfile, by: str = "program") -> OpNode:
    """The ops of ``profile`` as a tree grouped ``by`` one of :data:`GROUPINGS`."""
    root = OpNode("all")
    for op in profile.ops:
        root.add(_path(op, by), op)
    root.sort()
    return root


def format_rate(value: float | None, unit: str) -> str:
    """``value`` per second with an SI prefix (``"-"`` when unknown or 0)."""
    if not value:
        return "-"
    return format_count(round(value), unit + "/s").replace(" ", "")


def _time(ps: float) -> str:
    us = ps / 1e6
    if us >= 1e6:
        return f"{us / 1e6:.2f}s"
    if us >= 1e3:
        return f"{us / 1e3:.2f}ms"
    return f"{us:.1f}us"


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole > 0 else "-"


_HEAD = (
    f"{'':<44} {'occ':>6} {'self':>9} {'%self':>6} {'FLOPs':>9} {'bytes':>9}"
    f" {'FLOP/s':>10} {'B/s':>10} {'FLOP/B':>7} {'bound':>8} {'%peak':>6}"
)


def _line(label: str, node: OpNode, total: float) -> str:
    op = node.op
    seconds = node.self_ps * 1e-12
    rate = node.flops / seconds if seconds else 0.0
    bandwidth = node.bytes_accessed / seconds if seconds else 0.0
    intensity = f"{node.flops / node.bytes_accessed:.1f}" if node.bytes_accessed else "-"
    bound = op.bound_by if op else ""
    peak = op.peak_fraction if op else None
    occ = str(op.occurrences) if op else ""
    text = (
        f"{label[:44]:<44} {occ:>6} {_time(node.self_ps):>9} {_share(node.self_ps, total):>6}"
        f" {format_count(round(node.flops)).replace(' ', ''):>9}"
        f" {format_count(round(node.bytes_accessed)).replace(' ', ''):>9}"
        f" {format_rate(rate, 'F'):>10} {format_rate(bandwidth, 'B'):>10} {intensity:>7}"
        f" {bound:>8} {'-' if peak is None else f'{100 * peak:.1f}%':>6}"
    )
    return text + (f"  {op.scope}" if op and op.scope else "")


def _walk(node: OpNode, depth: int, total: float, top: int, min_share: float) -> list[str]:
    lines: list[str] = []
    shown = 0
    hidden: list[OpNode] = []
    for child in node.children:
        small = total > 0 and child.self_ps < min_share * total
        if (child.op is not None and shown >= top) or small:
            hidden.append(child)
            continue
        shown += child.op is not None
        lines.append(_line("  " * depth + child.name, child, total))
        lines.extend(_walk(child, depth + 1, total, top, min_share))
    if hidden:
        rest = sum(c.self_ps for c in hidden)
        lines.append(f"{'  ' * depth}({len(hidden)} more, {_time(rest)} self)")
    return lines


def _device_line(profile: OpProfile) -> str:
    peaks = profile.peaks
    if not peaks.flops and not peaks.bytes_per_sec:
        return (
            f"Device: {peaks.name}: peaks unknown (bound and %peak not shown; "
            "give --peak-flops and --peak-bandwidth)"
        )
    rates = ", ".join(f"{format_rate(v, 'FLOP')} {k}" for k, v in peaks.listed()[:4])
    return (
        f"Device: {peaks.name}: peaks {rates or 'FLOP/s unknown'}; "
        f"{format_rate(peaks.bytes_per_sec, 'B')} memory ({peaks.source})"
    )


def _headroom(profile: OpProfile, top: int) -> list[str]:
    rows = profile.by_headroom()[:top]
    if not rows:
        return []
    per = profile.steps or 0
    unit = f"step ({per} steps)" if per else "program run"
    each = "per step" if per else "per run"
    lines = [
        "",
        f"Headroom: what each op would save at its roofline bound, per {unit}",
        f"{'op':<36} {'self':>9} {'at bound':>9} {'saves':>9} {each:>9} {'bound':>8}  scope",
    ]
    runs = {(p.program, p.program_id): p.runs for p in profile.programs}
    for op in rows:
        saves = op.headroom_ps or 0
        count = per or runs.get((op.program, op.program_id), 0) or 1
        lines.append(
            f"{op.name[:36]:<36} {_time(op.self_ps):>9} {_time(op.roofline_ps or 0):>9}"
            f" {_time(saves):>9} {_time(saves / count):>9} {op.bound_by:>8}  {op.scope}"
        )
    return lines


def profile_text(profile: OpProfile, by: str = "program", top: int = 20,
                 min_share: float = 0.001) -> str:  # fmt: skip
    """The op profile as text (see the module docstring)."""
    total = float(profile.total_ps)
    steps = f"{profile.steps} steps, " if profile.steps else ""
    head = [
        f"Op profile of {len(profile.programs)} XLA programs: {steps}"
        f"{_time(total)} of XLA op self time",
        _device_line(profile),
        "",
    ]
    head += [f"  note: {e}" for e in profile.errors]
    if not profile.ops:
        return "\n".join([*head, "No XLA op ran in this profile."]) + "\n"
    programs = [
        f"{program_label(p.program, p.program_id)}: {p.runs} runs, "
        f"{format_count(round(p.flops_per_run), 'FLOPs')} and "
        f"{format_count(round(p.bytes_accessed_per_run), 'B')} per run, {_time(p.time_ps)}"
        for p in profile.programs
        if p.time_ps
    ]
    tree = op_tree(profile, by)
    body = [f"By {by}:", _HEAD, *_walk(tree, 0, total, top, min_share)]
    return "\n".join([*head, *programs, "", *body, *_headroom(profile, top)]) + "\n"
