"""Profiles of several tasks of a distributed run: what each task brought.

A distributed TF1 job (``tf.compat.v1.train.Server``) leaves one profile per
client session: one per worker with between-graph replication, one for the
whole job with in-graph replication. Either way a profile holds records of
several tasks (a worker's RunMetadata also holds the ops the parameter servers
ran for its step). This module holds the pieces the merge works from:

* :func:`task_of` reads the task (``/job:J/replica:R/task:T``) off a device
  string; :func:`qualify` makes a node name that keeps its task
  (``job:worker/replica:0/task:1/MatMul``);
* :class:`TaskInput` is one loaded profile with its own task, host and the
  training step each of its steps belongs to;
* :class:`Transfers` are the tensor transfers between tasks that TensorFlow
  logs as ``RecvTensor`` records on the receiving device, with the bytes, the
  producing node and the sending task read off their ``timeline_label``
  (``[0.2MB] [4.5Gb/s] edge_10_MatMul/ReadVariableOp from /job:ps/... to
  /job:worker/...``); :func:`transfers_from_columns` reads them from one
  RunMetadata's step columns.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tfprof_lite.base.device_names import SHORT_TASK, TASK
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto.steps import StepColumns

__all__ = [
    "UNKNOWN_TASK",
    "TaskInput",
    "Transfers",
    "normalize_task",
    "parse_bytes",
    "qualify",
    "split_qualified",
    "task_prefix",
    "task_of",
    "task_sort_key",
    "transfers_from_columns",
]

_RECV_RE = re.compile(
    r"^\[(?P<size>[^\]]*)\](?: \[[^\]]*\])? (?P<tensor>\S+) from (?P<src>\S+) to (?P<dst>\S+)"
)
_EDGE_RE = re.compile(r"^edge_\d+_(?P<node>.+?)(?::\d+)?(?:;\d+:\d+)?$")
_SIZE_RE = re.compile(r"^([0-9.]+)\s*([KMGT]?)B$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}

#: The task given to records whose device names no task and whose input has none.
UNKNOWN_TASK = "/job:unknown/replica:0/task:0"


@functools.lru_cache(maxsize=8192)
def task_of(device: str) -> str | None:
    """The task part of ``device`` (``/job:J/replica:R/task:T``, job lower-cased),
    or None when the device names no task."""
    match = TASK.match(device)
    if match is None:
        return None
    return f"/job:{match.group(1).lower()}/replica:{match.group(2)}/task:{match.group(3)}"


def normalize_task(text: str) -> str | None:
    """``/job:J/replica:R/task:T`` from that or from ``/job:J/task:T`` (replica 0);
    None when ``text`` is neither."""
    short = SHORT_TASK.match(text.strip())
    if short is not None:
        return f"/job:{short.group(1).lower()}/replica:0/task:{short.group(2)}"
    return task_of(text.strip())


def task_sort_key(task: str) -> tuple[str, int, int]:
    """Order of tasks: job name, replica, task number."""
    match = TASK.match(task)
    if match is None:
        return (task, 0, 0)
    return (match.group(1), int(match.group(2)), int(match.group(3)))


_QUALIFIED_RE = re.compile(r"^job_([^/]+)/replica_(\d+)/task_(\d+)/(.*)$", re.DOTALL)


def task_prefix(task: str) -> str:
    """The name prefix of ``task``'s nodes: ``/job:worker/replica:0/task:1`` ->
    ``job_worker/replica_0/task_1/`` (no ``:``, which tfprof reads as the end of
    a node name, so the scope view nests every task's nodes under its job)."""
    match = TASK.match(task)
    if match is None:
        return f"{task.strip('/').replace(':', '_')}/"
    return f"job_{match.group(1).lower()}/replica_{match.group(2)}/task_{match.group(3)}/"


def qualify(task: str, name: str) -> str:
    """The merged name of node ``name`` of ``task`` (``job_worker/replica_0/task_1/MatMul``)."""
    return task_prefix(task) + name


def split_qualified(name: str) -> tuple[str | None, str]:
    """(task, plain name) of a merged node name; (None, name) when it has no task."""
    match = _QUALIFIED_RE.match(name)
    if match is None:
        return None, name
    return f"/job:{match.group(1)}/replica:{match.group(2)}/task:{match.group(3)}", match.group(4)


def parse_bytes(text: str) -> int:
    """Bytes from a RecvTensor label's size (``4B``, ``0.2MB``); 0 when unreadable."""
    match = _SIZE_RE.match(text.strip())
    if match is None:
        return 0
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2).upper()])


@dataclass
class Transfers:
    """Tensor transfers between tasks in one step, in columns (one row each).

    ``src``/``dst`` index the merged profile's task list; ``node`` is the
    producing node's plain name (``MatMul/ReadVariableOp``), ``source`` the
    input the row came from. Times are on the receiver's clock (shifted once
    the clock is aligned).
    """

    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    device: list[str] = field(default_factory=list)
    node: list[str] = field(default_factory=list)
    tensor: list[str] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    end: list[int] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)
    source: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.src)

    def extend(self, other: Transfers) -> None:
        """Append every row of ``other``."""
        for name in self.__dataclass_fields__:
            getattr(self, name).extend(getattr(other, name))


def transfers_from_columns(cols: StepColumns, tasks: dict[str, int], source: int) -> Transfers:
    """The ``RecvTensor`` rows of one RunMetadata's columns as :class:`Transfers`.

    Args:
        cols: the decoded step columns.
        tasks: task string -> index; tasks met for the first time are added.
        source: the number of the input the columns came from.
    """
    out = Transfers()
    starts = cols.start.tolist()
    rels = cols.rel.tolist()
    devs = cols.dev.tolist()
    for row, name in enumerate(cols.name):
        if name != "RecvTensor":
            continue
        match = _RECV_RE.match(cols.label[row])
        if match is None:
            continue
        src = task_of(match["src"])
        dst = task_of(match["dst"]) or task_of(cols.devices[devs[row]])
        if src is None or dst is None or src == dst:
            continue
        edge = _EDGE_RE.match(match["tensor"])
        out.src.append(tasks.setdefault(src, len(tasks)))
        out.dst.append(tasks.setdefault(dst, len(tasks)))
        out.device.append(match["dst"])
        out.node.append(edge["node"] if edge else match["tensor"])
        out.tensor.append(match["tensor"])
        out.start.append(starts[row])
        out.end.append(starts[row] + max(rels[row], 0))
        out.nbytes.append(parse_bytes(match["size"]))
        out.source.append(source)
    return out


@dataclass
class TaskInput:
    """One profile to merge: a loaded model and what is known about its task.

    Either ``model`` (a loaded profile, copied into the merge) or raw step
    columns (``columns`` in memory, or ``reader`` that decodes a step's files on
    demand, for ``steps``): those go straight into the merged model through
    :meth:`~tfprof_lite.model.profile.ProfileModel.add_step`, so no per-task
    model is built and the files are read once to scan and once to merge.

    Attributes:
        model: the profile as loaded (one task's view of the run), or None.
        label: where it came from (a path), for messages.
        task: the task that ran the client session (``/job:worker/replica:0/task:1``),
            or None to infer it from the records.
        host: the host name the task ran on, when known (tasks of one host share
            a clock).
        step_keys: source step -> training step (the global step) for the steps
            whose global step was recorded.
        global_numbers: see the attribute.
        columns: source step -> the raw step columns of its RunMetadata, when the
            input was RunMetadata (they carry the transfers and labels a saved
            profile drops).
    """

    model: ProfileModel | None = None
    label: str = ""
    task: str | None = None
    host: str | None = None
    step_keys: dict[int, int] = field(default_factory=dict)
    columns: dict[int, list[StepColumns]] = field(default_factory=dict)
    #: Decodes the step columns of one source step (its RunMetadata files).
    reader: Callable[[int], list[StepColumns]] | None = None
    #: The source steps ``reader`` can read.
    steps: list[int] = field(default_factory=list)
    #: The step numbers are global steps (a ``ProfilerHook`` capture): matched
    #: by step number, the steps are numbered 0, 1, ... in order instead.
    global_numbers: bool = False

    def source_steps(self) -> list[int]:
        """Every step this input holds, ascending."""
        found = set(self.steps) | set(self.columns)
        if self.model is not None:
            found.update(self.model.steps)
        return sorted(found)

    def step_columns(self, step: int) -> list[StepColumns]:
        """The raw columns of ``step`` (in memory, else read), or ``[]``."""
        if step in self.columns:
            return self.columns[step]
        if self.reader is not None and step in self.steps:
            return self.reader(step)
        return []

    def record_tasks(self) -> dict[str, int]:
        """Task -> number of time records on its devices, over every step (of the
        model; for raw columns the merge counts rows while scanning)."""
        counts: dict[str, int] = {}
        if self.model is None:
            return counts
        for execs in self.model.steps.values():
            codes: npt.NDArray[np.int64] = np.asarray(execs.times["dev"], dtype=np.int64)
            per_code: list[int] = (
                np.bincount(codes, minlength=len(execs.device_names)).tolist() if codes.size else []
            )
            for dev, count in zip(execs.device_names, per_code):
                task = task_of(dev)
                if task is not None:
                    counts[task] = counts.get(task, 0) + int(count)
        return counts

    def own_task(self, counts: dict[str, int] | None = None) -> str | None:
        """The task given, else the busiest task outside ``ps`` jobs, else the
        busiest (``counts``: rows per task, default :meth:`record_tasks`)."""
        if self.task:
            return self.task
        counts = self.record_tasks() if counts is None else counts
        if not counts:
            return None
        workers = {t: c for t, c in counts.items() if not t.startswith("/job:ps/")}
        pool = workers or counts
        return max(sorted(pool), key=lambda t: pool[t])
