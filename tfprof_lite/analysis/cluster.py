"""Where the time of each task of a distributed run went, step by step.

Works on a merged :class:`~tfprof_lite.model.cluster_merge.ClusterProfile`
(times already on one clock). Per task and step, the task's wall time (first
start to last end of its records, transfers into it included) is split into
parts that add up to it:

* ``input``: an input op ran (:data:`~tfprof_lite.analysis.input_pipeline.INPUT_OP_RE`);
* ``compute``: another op ran, and no input op;
* ``network``: a tensor was on its way in (``RecvTensor``) and no op ran;
* ``idle``: nothing at all.

The straggler of a step is the task of a job with at least two tasks
(parameter-server jobs excluded) that was busy longest (its wall time minus its
idle time: in a synchronous step every task's span ends together and the fast
ones sit idle), with how much longer than the median of the others, when that
is at least :data:`STRAGGLER_SHARE` of the median and
:data:`STRAGGLER_MICROS` (smaller gaps are noise).

Parameter-server load: per ``ps`` task its op time and the bytes and time of
the tensors it sent and received per step; per variable the bytes read from it
and pushed to it (a transfer belongs to a variable when the node sent is a read
of it, or the node received feeds an update of it).
"""

from __future__ import annotations

import re
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tfprof_lite.analysis.input_pipeline import INPUT_OP_RE
from tfprof_lite.analysis.straggler import STRAGGLER_MICROS, STRAGGLER_SHARE
from tfprof_lite.model.cluster import task_of
from tfprof_lite.model.cluster_merge import ClusterProfile

__all__ = [
    "STRAGGLER_MICROS",
    "STRAGGLER_SHARE",
    "ClusterReport",
    "PsLoad",
    "Straggler",
    "TaskStep",
    "cluster_report",
    "op_type",
]

_LABEL_RE = re.compile(r"^(?:\[[^\]]*\] )?(?P<name>\S+) = (?P<op>[\w.>-]+)\((?P<args>[^)]*)\)")
_READS = frozenset({"ReadVariableOp", "Identity", "VariableV2", "VarHandleOp"})
_RECEIVED_RE = re.compile(r"^(?P<node>.+)_S\d+$")
Interval = tuple[int, int]


@dataclass(frozen=True)
class TaskStep:
    """Where one task's time went in one step (microseconds)."""

    step: int
    task: str
    wall_micros: int
    compute_micros: int
    input_micros: int
    network_micros: int
    idle_micros: int
    recv_bytes: int


@dataclass(frozen=True)
class Straggler:
    """The slowest task of a job in one step (busy time: its step minus idle)."""

    step: int
    job: str
    task: str
    busy_micros: int
    median_others_micros: float
    excess_micros: float
    cause: str


@dataclass
class PsLoad:
    """One parameter-server task: op time and traffic (per step on average)."""

    task: str
    op_micros: float = 0.0
    sent_bytes: float = 0.0
    received_bytes: float = 0.0
    transfer_micros: float = 0.0
    variables: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass
class ClusterReport:
    """The cluster analysis: per task and step, stragglers, ps load, clock."""

    tasks: list[str] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    step_basis: str = "local"
    per_step: list[TaskStep] = field(default_factory=list)
    stragglers: list[Straggler] = field(default_factory=list)
    ps: list[PsLoad] = field(default_factory=list)
    clock_reference: str = ""
    clock_offsets: dict[str, int] = field(default_factory=dict)
    clock_notes: dict[str, str] = field(default_factory=dict)
    has_transfers: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    def task_totals(self) -> dict[str, dict[str, float]]:
        """Per task the mean of each part over its steps."""
        out: dict[str, dict[str, float]] = {}
        for task in self.tasks:
            rows = [r for r in self.per_step if r.task == task]
            if not rows:
                continue
            out[task] = {
                part: sum(getattr(r, f"{part}_micros") for r in rows) / len(rows)
                for part in ("wall", "compute", "input", "network", "idle")
            }
        return out

    def to_text(self) -> str:
        """The report as plain text."""
        from tfprof_lite.analysis.cluster_text import report_text

        return report_text(self)


def op_type(cluster: ClusterProfile, nid: int) -> str:
    """The op type of merged node ``nid``: the graph's; for a node known only from
    RunMetadata (its op is its plain name) the type its records' labels give."""
    op = cluster.model.ops[nid]
    got = cluster.op_types.get(op)
    if got is not None and cluster.model.names[nid].endswith(op):
        return got
    return op


def _subtract(spans: list[Interval], cover: list[Interval]) -> list[Interval]:
    """``spans`` (merged, sorted) minus ``cover`` (merged, sorted)."""
    out: list[Interval] = []
    j = 0
    for start, end in spans:
        cur = start
        while j < len(cover) and cover[j][1] <= cur:
            j += 1
        k = j
        while k < len(cover) and cover[k][0] < end:
            if cover[k][0] > cur:
                out.append((cur, cover[k][0]))
            cur = max(cur, cover[k][1])
            k += 1
        if cur < end:
            out.append((cur, end))
    return out


def _merge(spans: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def _length(spans: list[Interval]) -> int:
    return sum(e - s for s, e in spans)


OpSpans = dict[int, tuple[list[Interval], list[Interval]]]


def _op_spans(cluster: ClusterProfile, step: int, is_input: list[bool]) -> OpSpans:
    """Task index -> (input op intervals, other op intervals) of one step."""
    execs = cluster.model.steps[step]
    index = cluster.task_index()
    dev_task = np.asarray(
        [index.get(task_of(d) or "", -1) for d in execs.device_names] + [-1], dtype=np.int64
    )
    times = execs.times
    task_col = dev_task[times["dev"].astype(np.int64)] if len(times) else np.zeros(0, np.int64)
    starts, durs, nodes = times["start"].tolist(), times["dur"].tolist(), times["node"].tolist()
    ops: OpSpans = {}
    for t, s, d, n in zip(task_col.tolist(), starts, durs, nodes):
        pair = ops.setdefault(t, ([], []))
        pair[0 if is_input[n] else 1].append((s, s + d))
    return ops


def _net_spans(
    cluster: ClusterProfile, step: int
) -> tuple[dict[int, list[Interval]], dict[int, int]]:
    """Task index -> intervals of transfers into it, and their bytes."""
    net: dict[int, list[Interval]] = {}
    recv_bytes: dict[int, int] = {}
    rows = cluster.transfers.get(step)
    if rows is not None:
        for dst, s, e, b in zip(rows.dst, rows.start, rows.end, rows.nbytes):
            net.setdefault(dst, []).append((s, e))
            recv_bytes[dst] = recv_bytes.get(dst, 0) + b
    return net, recv_bytes


def _step_rows(cluster: ClusterProfile, step: int, is_input: list[bool]) -> list[TaskStep]:
    """Every task's :class:`TaskStep` of one step; tasks that ran a client first,
    so that the others are measured within the clients' steps."""
    ops = _op_spans(cluster, step, is_input)
    net, recv_bytes = _net_spans(cluster, step)
    index = cluster.task_index()
    clients = {index[t] for t in cluster.own_tasks if t in index}
    out: list[TaskStep] = []
    windows: list[Interval] = []
    for t in sorted(set(ops) | set(net), key=lambda t: (t not in clients, t)):
        inputs, compute = (_merge(x) for x in ops.get(t, ([], [])))
        network = _merge(net.get(t, []))
        every = _merge(inputs + compute + network)
        if t < 0 or not every:
            continue
        span = (min(s for s, _ in every), max(e for _, e in every))
        if t in clients or not windows:
            windows.append(span)
            wall = span[1] - span[0]
        else:  # a task without a client session: the clients' steps and its own work
            window = _merge([*windows, *every])
            inputs, compute, network = (_within(x, window) for x in (inputs, compute, network))
            wall = _length(window)
        comp = _length(_subtract(compute, inputs))
        inp = _length(inputs)
        netw = _length(_subtract(network, _merge(inputs + compute)))
        idle = max(0, wall - comp - inp - netw)
        out.append(
            TaskStep(step, cluster.tasks[t], wall, comp, inp, netw, idle, recv_bytes.get(t, 0))
        )
    out.sort(key=lambda r: r.task)
    return out


def _within(spans: list[Interval], window: list[Interval]) -> list[Interval]:
    """The parts of ``spans`` inside ``window`` (both merged and sorted)."""
    return _subtract(spans, _subtract(spans, window))


def _busy(row: TaskStep) -> int:
    """The time the task was not idle in the step."""
    return row.wall_micros - row.idle_micros


def _cause(row: TaskStep) -> str:
    parts = {
        "input": row.input_micros,
        "compute": row.compute_micros,
        "network": row.network_micros,
    }
    top = max(parts, key=lambda k: parts[k])
    return f"{top} {100 * parts[top] / max(row.wall_micros, 1):.0f}% of its step"


def _stragglers(rows: list[TaskStep]) -> list[Straggler]:
    """Per step and job, the task busy for longest, when it lags the others'
    median clearly. Busy time (the step minus idle time) and not the span: in a
    synchronous step every task's span ends together, the fast ones idle."""
    out = []
    by_step_job: dict[tuple[int, str], list[TaskStep]] = {}
    for row in rows:
        job = row.task.split("/")[1][4:]
        if job != "ps":
            by_step_job.setdefault((row.step, job), []).append(row)
    for (step, job), group in sorted(by_step_job.items()):
        if len(group) < 2:
            continue
        slow = max(group, key=lambda r: (_busy(r), r.task))
        median = statistics.median(_busy(r) for r in group if r is not slow)
        excess = _busy(slow) - median
        if excess < max(STRAGGLER_MICROS, STRAGGLER_SHARE * median):
            continue
        out.append(Straggler(step, job, slow.task, _busy(slow), median, excess, _cause(slow)))
    return out


def _variable_map(cluster: ClusterProfile, task: str) -> dict[str, str]:
    """Node on ``task`` -> the variable it reads or updates, from the labels."""
    out: dict[str, str] = {}
    for (t, name), label in cluster.labels.items():
        if t != task or (match := _LABEL_RE.match(label)) is None:
            continue
        args = [a.strip() for a in match["args"].split(",") if a.strip()]
        if match["op"] in _READS and args:
            out[name] = args[0]
        elif match["op"].startswith(("ResourceApply", "Apply", "Assign")) and args:
            for arg in args[1:]:
                if got := _RECEIVED_RE.match(arg):
                    out.setdefault(got["node"], args[0])
    return out


def _ps_load(cluster: ClusterProfile, rows: list[TaskStep], nsteps: int) -> list[PsLoad]:
    """Per ps task its op time and traffic, summed then divided by the steps."""
    loads = []
    per = max(nsteps, 1)
    for ti, task in enumerate(cluster.tasks):
        if not task.startswith("/job:ps/"):
            continue
        op_micros = sum(r.compute_micros + r.input_micros for r in rows if r.task == task)
        names = _variable_map(cluster, task)
        sums: dict[str, list[int]] = {}  # variable -> [read, pushed, micros]
        for tr in cluster.transfers.values():
            for s, d, node, b, st, en in zip(tr.src, tr.dst, tr.node, tr.nbytes, tr.start, tr.end):
                if ti in (s, d):
                    entry = sums.setdefault(names.get(node, node), [0, 0, 0])
                    entry[0 if s == ti else 1] += b
                    entry[2] += en - st
        load = PsLoad(task, op_micros=op_micros / per)
        for var, (read, pushed, micros) in sums.items():
            load.variables[var] = {
                "read_bytes": read / per,
                "pushed_bytes": pushed / per,
                "micros": micros / per,
            }
        load.sent_bytes = sum(v[0] for v in sums.values()) / per
        load.received_bytes = sum(v[1] for v in sums.values()) / per
        load.transfer_micros = sum(v[2] for v in sums.values()) / per
        loads.append(load)
    return loads


def cluster_report(cluster: ClusterProfile) -> ClusterReport:
    """The cluster analysis of a merged profile."""
    model = cluster.model
    is_input = [bool(INPUT_OP_RE.fullmatch(op_type(cluster, n))) for n in range(len(model))]
    report = ClusterReport(tasks=list(cluster.tasks), step_basis=cluster.step_basis)
    for step in model.sorted_steps():
        rows = _step_rows(cluster, step, is_input)
        if rows:
            report.steps.append(step)
            report.per_step.extend(rows)
    report.stragglers = _stragglers(report.per_step)
    report.ps = _ps_load(cluster, report.per_step, len(report.steps))
    report.clock_reference = cluster.clock.reference
    report.clock_offsets = dict(cluster.clock.offsets)
    report.clock_notes = dict(cluster.clock.notes)
    report.has_transfers = any(len(t) for t in cluster.transfers.values())
    return report
