"""The report's per-task section for a merged distributed profile.

Contract: :func:`cluster_section` returns the "Tasks" section of a
:class:`~tfprof_lite.model.cluster_merge.ClusterProfile` (see ``docs/cluster.md``):
per task its mean step and a bar of its compute, input, network and idle
shares; the stragglers; the parameter-server load per task and variable; the
clock correction of every task. All profile text is escaped; nothing is loaded.
"""

from __future__ import annotations

from tfprof_lite.analysis.cluster import ClusterReport, cluster_report
from tfprof_lite.base.units import format_time
from tfprof_lite.model.cluster_merge import ClusterProfile
from tfprof_lite.report.markup import Section, data_table, esc

__all__ = ["cluster_section"]

_PARTS = (("compute", "#4c78a8"), ("input", "#f58518"), ("network", "#e45756"), ("idle", "#bab0ac"))


def _bar(mean: dict[str, float]) -> str:
    wall = mean["wall"] or 1.0
    cells = "".join(
        f'<span title="{part} {100 * mean[part] / wall:.1f}%" style="display:inline-block;'
        f'height:12px;width:{100 * mean[part] / wall:.2f}%;background:{color}"></span>'
        for part, color in _PARTS
    )
    return f'<div style="width:240px;background:#eee;line-height:0">{cells}</div>'


def _task_rows(report: ClusterReport) -> str:
    rows = []
    for task, mean in report.task_totals().items():
        wall = mean["wall"] or 1.0
        shares = "".join(f"<td>{100 * mean[p] / wall:.1f}%</td>" for p, _ in _PARTS)
        rows.append(
            f'<tr><td class="name">{esc(task)}</td><td>{esc(format_time(int(mean["wall"])))}'
            f"</td>{shares}<td>{_bar(mean)}</td></tr>"
        )
    head = "".join(f"<th>{p}</th>" for p, _ in _PARTS)
    return data_table(f"<th>task</th><th>mean step</th>{head}<th></th>", "".join(rows))


def _stragglers(report: ClusterReport) -> str:
    if not report.stragglers:
        return '<p class="muted">No straggler: no task lagged the others of its job.</p>'
    items = "".join(
        f"<li>step {s.step}: <b>{esc(s.task)}</b> busy {esc(format_time(s.busy_micros))}, "
        f"{esc(format_time(int(s.excess_micros)))} more than the median of the others; "
        f"{esc(s.cause)}</li>"
        for s in report.stragglers
    )
    return f"<h3>Stragglers</h3><ul>{items}</ul>"


def _ps(report: ClusterReport) -> str:
    rows = []
    for ps in report.ps:
        for var, v in sorted(ps.variables.items(), key=lambda kv: -kv[1]["read_bytes"]):
            rows.append(
                f'<tr><td class="name">{esc(ps.task)}</td><td class="name">{esc(var)}</td>'
                f"<td>{int(v['read_bytes'])}</td><td>{int(v['pushed_bytes'])}</td>"
                f"<td>{esc(format_time(int(v['micros'])))}</td></tr>"
            )
    if not rows:
        return ""
    head = (
        "<th>ps</th><th>variable</th><th>bytes read</th><th>bytes pushed</th><th>transfer time</th>"
    )
    return "<h3>Parameter servers (per step)</h3>" + data_table(head, "".join(rows))


def _clock(report: ClusterReport) -> str:
    items = "".join(
        f"<li>{esc(task)}: {esc('+' if off >= 0 else '-')}{esc(format_time(abs(off)))} "
        f'<span class="muted">({esc(report.clock_notes.get(task, ""))})</span></li>'
        for task, off in sorted(report.clock_offsets.items())
    )
    return f"<h3>Clock (reference {esc(report.clock_reference)})</h3><ul>{items}</ul>"


def cluster_section(cluster: ClusterProfile) -> Section:
    """The "Tasks" section of a merged profile (see the module docstring)."""
    report = cluster_report(cluster)
    basis = "global step" if report.step_basis == "global" else "step number"
    intro = (
        f'<p class="muted">{len(report.tasks)} tasks, {len(report.steps)} steps matched by '
        f"{basis}. Each task's step (first to last record) split into compute, input, "
        "network (a tensor in flight, no op running) and idle.</p>"
    )
    body = intro + _task_rows(report) + _stragglers(report) + _ps(report) + _clock(report)
    return Section("tasks", "Tasks", body)
