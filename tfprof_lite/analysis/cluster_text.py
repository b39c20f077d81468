"""The plain-text form of :class:`~tfprof_lite.analysis.cluster.ClusterReport`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfprof_lite.base.units import format_time

if TYPE_CHECKING:
    from tfprof_lite.analysis.cluster import ClusterReport

__all__ = ["report_text"]

_PARTS = ("compute", "input", "network", "idle")


def _pct(part: float, wall: float) -> str:
    return f"{100 * part / wall:5.1f}%" if wall else "    -"


def _bytes(n: float) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f}{unit}"
    return f"{int(n)}B"


def _clock(report: ClusterReport) -> list[str]:
    largest = max((abs(v) for v in report.clock_offsets.values()), default=0)
    lines = [
        f"clock: reference {report.clock_reference or '-'}, "
        f"largest correction {format_time(largest)}"
    ]
    for task in report.tasks:
        off = report.clock_offsets.get(task, 0)
        note = report.clock_notes.get(task, "")
        lines.append(f"  {task:<34} {'+' if off >= 0 else '-'}{format_time(abs(off)):>9}  {note}")
    return lines


def _stragglers(report: ClusterReport) -> list[str]:
    lines = [
        "stragglers (busy time: the step minus idle):" if report.stragglers else "stragglers: none"
    ]
    for s in report.stragglers:
        lines.append(
            f"  step {s.step}: {s.task} was busy {format_time(s.busy_micros)}, "
            f"{format_time(int(s.excess_micros))} more than the median of the others "
            f"({format_time(int(s.median_others_micros))}); {s.cause}"
        )
    return lines


def _ps(report: ClusterReport) -> list[str]:
    lines = []
    for ps in report.ps:
        lines.append(
            f"ps {ps.task}: op time {format_time(int(ps.op_micros))}/step, "
            f"sent {_bytes(ps.sent_bytes)}/step, received {_bytes(ps.received_bytes)}/step, "
            f"transfer time {format_time(int(ps.transfer_micros))}/step"
        )
        ranked = sorted(
            ps.variables.items(), key=lambda kv: -(kv[1]["read_bytes"] + kv[1]["pushed_bytes"])
        )
        for var, v in ranked[:10]:
            lines.append(
                f"  {var:<40} read {_bytes(v['read_bytes'])}, pushed {_bytes(v['pushed_bytes'])}, "
                f"{format_time(int(v['micros']))} in transfers (per step)"
            )
    return lines


def report_text(report: ClusterReport) -> str:
    """Tasks, per-task shares, per-step table, stragglers, ps load, clock."""
    basis = "global step" if report.step_basis == "global" else "step number"
    lines = [f"tasks: {len(report.tasks)}, steps: {len(report.steps)} (matched by {basis})"]
    if not report.has_transfers:
        lines.append("no tensor transfers recorded (merge RunMetadata to see network time)")
    lines.append("per task, mean per step:")
    lines.append(
        f"  {'task':<34} {'wall':>10} {'compute':>8} {'input':>7} {'network':>8} {'idle':>7}"
    )
    for task, mean in report.task_totals().items():
        wall = mean["wall"]
        shares = " ".join(f"{_pct(mean[p], wall):>7}" for p in _PARTS)
        lines.append(f"  {task:<34} {format_time(int(wall)):>10} {shares}")
    lines.append("per step:")
    for row in report.per_step:
        lines.append(
            f"  step {row.step:<5} {row.task:<34} wall {format_time(row.wall_micros):>9}"
            f"  compute {format_time(row.compute_micros)}, input {format_time(row.input_micros)}, "
            f"network {format_time(row.network_micros)}, idle {format_time(row.idle_micros)}"
        )
    lines.extend(_stragglers(report))
    lines.extend(_ps(report))
    lines.extend(_clock(report))
    return "\n".join(lines) + "\n"
