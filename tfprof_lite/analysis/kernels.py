"""GPU kernel statistics per kernel, launch configuration and launching op.

Reads the GPU tracer's records as a RunMetadata carries them (kept per step in
:class:`~tfprof_lite.model.execs.KernelColumns`):

* kernels on ``/device:GPU:N/stream:all`` (a copy of each also sits on
  ``/stream:N``, which is used only when a GPU has no ``stream:all``);
* copies on ``/device:GPU:N/memcpy`` (copies also sit on
  ``/stream:N<MemcpyH2D>`` or, in TF 1.x, on ``/stream:N``; used only without
  a ``memcpy`` device);
* ``cuStreamSynchronize`` calls on ``/sync`` and other activity on ``/stream:``.

Names follow TensorFlow's GPU tracer: ``node_name`` is the launching op's
annotation (``name:Type``) or, without one, the kernel name; ``timeline_label``
is ``<kernel> regs:R static_shared:S dynamic_shared:D grid:X,Y,Z block:X,Y,Z
occ_pct:P`` for kernels (TF 2.21, the XSpace's ``kernel_details``; older TF 2.x:
``<kernel> regs:R shm:S grid:X,Y,Z block:X,Y,Z@@<annotation>``),
``MemcpyH2D kind_src:… size:N …`` (TF 2.21), ``<name> bytes:N`` (older TF 2.x)
or ``MEMCPYHtoD N bytes (...)`` (TF 1.x) for copies, and empty for TF 1.x
kernels (the kernel is then "not recorded").

Kernel rows are keyed by kernel name, launch configuration
(:class:`~tfprof_lite.analysis.kernel_launch.LaunchConfig`) and launching op,
like XProf's GPU Kernel Stats, and say whether the op is tensor-core eligible
and whether the kernel uses tensor cores.

Reading a record (its kind, kernel name, launching op, GPU) and choosing the
records to count is :mod:`tfprof_lite.analysis.kernel_records`; summing them
into rows is :mod:`tfprof_lite.analysis.kernel_tally`.

A profile loaded from a ProfileProto keeps accelerator times per op but no
kernel names: the report then lists one row per op and says so. A CPU-only
profile gives an empty report with a note, not an error.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from tfprof_lite.analysis.kernel_launch import (
    LAUNCH_HEAD,
    TC_LEGEND,
    LaunchConfig,
    launch_text,
    tensor_core_eligible,
    uses_tensor_core,
)
from tfprof_lite.analysis.kernel_records import (
    KIND_KERNEL,
    KIND_MEMCPY,
    KIND_OTHER,
    KIND_SYNC,
    NOT_RECORDED,
    kernel_name,
    window_records,
)
from tfprof_lite.analysis.kernel_tally import Acc, RowKey, Tally
from tfprof_lite.base.units import format_memory, format_time
from tfprof_lite.model.execs import KIND_ACCELERATOR
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.window import EventWindow

__all__ = [
    "KERNEL_NAME_WIDTH",
    "KIND_KERNEL",
    "KIND_MEMCPY",
    "KIND_OTHER",
    "KIND_SYNC",
    "KernelReport",
    "KernelStat",
    "NOT_KEPT",
    "NOT_RECORDED",
    "kernel_name",
    "kernel_stats",
    "short_kernel_name",
]

#: Kernel name of the rows built from a ProfileProto's accelerator times.
NOT_KEPT = "(kernel names not kept in a ProfileProto)"
#: Width :meth:`KernelReport.to_text` shortens kernel names to by default.
KERNEL_NAME_WIDTH = 80


@dataclass(frozen=True)
class KernelStat:
    """One kernel (or copy) with one launch configuration, launched by one op,
    over the chosen steps.

    ``op`` is empty when nothing annotated the launch; ``bytes`` is the total
    copied by a memcpy row (0 for kernels). The launch fields
    (``registers_per_thread`` to ``occupancy_pct``) are None where the record
    does not give them (copies, older labels); ``grid`` and ``block`` are
    ``"x,y,z"``.
    """

    kernel: str
    op: str
    op_type: str
    kind: str
    count: int
    total_micros: float
    avg_micros: float
    min_micros: float
    max_micros: float
    bytes: int
    devices: list[str]
    registers_per_thread: int | None = None
    static_shared_bytes: int | None = None
    dynamic_shared_bytes: int | None = None
    grid: str | None = None
    block: str | None = None
    occupancy_pct: float | None = None
    tensor_core_eligible: bool = False
    uses_tensor_core: bool = False

    @property
    def launch(self) -> LaunchConfig:
        """The row's launch configuration."""
        return LaunchConfig(
            self.registers_per_thread,
            self.static_shared_bytes,
            self.dynamic_shared_bytes,
            self.grid,
            self.block,
            self.occupancy_pct,
        )


@dataclass
class KernelReport:
    """Kernel rows (most total time first), their source and notes."""

    kernels: list[KernelStat] = field(default_factory=list)
    steps: int = 0
    source: str = "none"
    notes: list[str] = field(default_factory=list)
    #: An XSpace's rows count its whole window: its length and the GPU events
    #: outside every step (None: the rows count the steps' records only).
    window_micros: float | None = None
    outside_steps: int | None = None

    @property
    def total_micros(self) -> float:
        """Time of every row (kernels and copies), summed."""
        return _micros(round(sum(k.total_micros * 1000 for k in self.kernels)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        doc = asdict(self)
        for key in ("window_micros", "outside_steps"):
            if doc[key] is None:  # (a RunMetadata's rows: the steps are all there is)
                del doc[key]
        doc["total_micros"] = self.total_micros
        return doc

    def to_text(self, full_names: bool = False) -> str:
        """A table of the kernels, or why there is none.

        Kernel names are shortened by :func:`short_kernel_name` unless
        ``full_names``; each note is printed once, after the table. Rows built
        from a ProfileProto (no kernel name) show only their op.
        """
        if not self.kernels:
            return "\n".join(["no GPU kernel records", *self.notes]) + "\n"
        launch = any(k.launch.known for k in self.kernels)
        lines = [
            f"GPU kernels over {self._extent()} "
            f"({self.source}), total {format_time(round(self.total_micros))}",
            f"{'count':>7} {'total':>10} {'avg':>10} {'min':>9} {'max':>9}  kind    "
            + (LAUNCH_HEAD if launch else "")
            + ("op" if all(k.kernel == NOT_KEPT for k in self.kernels) else "kernel <- op"),
        ]
        lines += [_row_text(k, full_names, launch) for k in self.kernels]
        lines += [f"note: {text}" for text in dict.fromkeys(self.notes)]
        if launch:
            lines += [f"note: {text}" for text in TC_LEGEND]
        if not full_names and any(short_kernel_name(k.kernel) != k.kernel for k in self.kernels):
            lines.append("note: long kernel names are shortened; --full-names prints them whole")
        return "\n".join(lines) + "\n"

    def _extent(self) -> str:
        """What the rows count: the steps, or an XSpace's whole window."""
        steps = f"{self.steps} step{'s' if self.steps != 1 else ''}"
        if self.window_micros is None:
            return steps
        outside = self.outside_steps or 0
        return (
            f"the whole {format_time(round(self.window_micros))} window ({steps}; "
            f"{outside} GPU event{'s' if outside != 1 else ''} outside them)"
        )


def short_kernel_name(name: str, width: int = KERNEL_NAME_WIDTH) -> str:
    """``name`` made readable: template arguments (``<...>``) and parameter lists
    (``(...)``) are written ``<…>``/``(…)``, and a name still longer than
    ``width`` keeps its head and tail around ``…``. Short names are unchanged."""
    if len(name) <= width:
        return name
    out: list[str] = []
    depth = 0
    for char in name:
        if char in "<(":
            if depth == 0:
                out.append(char + "…")
            depth += 1
        elif char in ">)" and depth > 0:
            depth -= 1
            if depth == 0:
                out.append(char)
        elif depth == 0:
            out.append(char)
    text = "".join(out).strip() if depth == 0 else name
    if len(text) <= width:
        return text
    head = (width - 1) * 2 // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def _launch_text(k: KernelStat) -> str:
    if k.kind != KIND_KERNEL:
        return " " * len(LAUNCH_HEAD)
    return launch_text(k.launch, k.uses_tensor_core, k.tensor_core_eligible)


def _time(micros: float) -> str:
    return format_time(round(micros))


def _row_text(k: KernelStat, full_names: bool = False, launch: bool = False) -> str:
    op = f"{k.op} ({k.op_type})" if k.op_type else k.op
    where = f" <- {op}" if op else " <- (no op annotation)"
    copied = f" [{format_memory(k.bytes)}]" if k.bytes else ""
    kernel = k.kernel if full_names else short_kernel_name(k.kernel)
    # A ProfileProto keeps no kernel names: the note after the table says so once.
    what = f"{op}" if k.kernel == NOT_KEPT else f"{kernel}{copied}{where}"
    return (
        f"{k.count:>7} {_time(k.total_micros):>10} {_time(k.avg_micros):>10} "
        f"{_time(k.min_micros):>9} {_time(k.max_micros):>9}  {k.kind:<7} "
        + (_launch_text(k) if launch else "")
        + what
    )


# --------------------------------------------------------------------------- aggregation


_Key = RowKey
_NO_LAUNCH = LaunchConfig()


def _add_profile_step(model: ProfileModel, step: int, acc: dict[_Key, Acc]) -> bool:
    execs = model.steps[step]
    found = False
    for nid, kind, dev, dur in zip(execs.t_node, execs.t_kind, execs.t_dev, execs.t_dur):
        if kind == KIND_ACCELERATOR:
            key = (KIND_KERNEL, NOT_KEPT, model.names[nid], model.ops[nid], _NO_LAUNCH)
            acc.setdefault(key, Acc()).add(dur * 1000, 0, dev)
            found = True
    return found


def _micros(ns: int) -> float:
    """Nanoseconds as microseconds: an int when whole (RunMetadata), else 3 decimals."""
    return ns // 1000 if ns % 1000 == 0 else round(ns / 1000, 3)


def _row(key: _Key, a: Acc) -> KernelStat:
    kind, kernel, op, op_type, launch = key
    uses = kind == KIND_KERNEL and kernel != NOT_KEPT and uses_tensor_core(kernel)
    return KernelStat(
        kernel=kernel,
        op=op,
        op_type=op_type,
        kind=kind,
        count=a.count,
        total_micros=_micros(a.total),
        avg_micros=(a.total // a.count) / 1000,  # whole nanoseconds, as XProf
        min_micros=_micros(a.low),
        max_micros=_micros(a.high),
        bytes=a.nbytes,
        devices=sorted(a.devices),
        registers_per_thread=launch.registers_per_thread,
        static_shared_bytes=launch.static_shared_bytes,
        dynamic_shared_bytes=launch.dynamic_shared_bytes,
        grid=launch.grid,
        block=launch.block,
        occupancy_pct=launch.occupancy_pct,
        tensor_core_eligible=kind == KIND_KERNEL and tensor_core_eligible(op, op_type, uses),
        uses_tensor_core=uses,
    )


def _rows(acc: dict[_Key, Acc]) -> list[KernelStat]:
    # (a row's launch configuration is its key's: sorted on that one)
    rows = [(_row(key, a), key[4].sort_key()) for key, a in acc.items()]
    rows.sort(key=lambda r: (-r[0].total_micros, r[0].kind, r[0].kernel, r[0].op, r[1]))
    return [row for row, _ in rows]


def kernel_stats(
    model: ProfileModel, step: int | None = None, top: int | None = None
) -> KernelReport:
    """GPU kernel statistics over every traced step (or ``step`` only).

    An XSpace's rows (``step`` None) count every GPU event of its window
    (``model.event_window``), those outside any step too, as XProf's kernel
    stats do; a RunMetadata profile's count its steps' records.

    Args:
        model: the profile.
        step: one step number, or None for every step.
        top: keep the ``top`` rows with the most time (None: all).
    """
    window = model.event_window
    if step is None and window is not None and len(window.device):
        return _window_stats(model, window, top)
    steps = model.sorted_steps() if step is None else [s for s in model.sorted_steps() if s == step]
    if window is not None and not len(window.device):
        steps = []  # an XSpace without GPU events: no step holds a kernel or its time
    acc: dict[_Key, Acc] = {}
    report = KernelReport()
    from_tracer = from_profile = 0
    tally = Tally(model, acc)
    for number in steps:
        cols = model.steps[number].kernels
        if len(cols) and tally.add_step(cols):
            from_tracer += 1
        elif _add_profile_step(model, number, acc):
            from_profile += 1
    tally.finish()
    report.steps = from_tracer + from_profile
    report.kernels = _rows(acc)[:top] if top is not None else _rows(acc)
    report.source, report.notes = _source(from_tracer, from_profile)
    return report


def _window_stats(model: ProfileModel, window: EventWindow, top: int | None) -> KernelReport:
    """Every GPU event of an XSpace's window, inside a step or not."""
    acc: dict[_Key, Acc] = {}
    tally = Tally(model, acc)
    counted = tally.add_step(window_records(window))
    tally.finish()
    rows = _rows(acc)
    report = KernelReport(
        kernels=rows[:top] if top is not None else rows,
        steps=len(model.sorted_steps()),
        window_micros=_micros(window.duration_ns),
        outside_steps=window.outside_steps(),
    )
    report.source, report.notes = _source(int(counted), 0)
    return report


def _source(from_tracer: int, from_profile: int) -> tuple[str, list[str]]:
    if from_tracer and not from_profile:
        return "GPU tracer records", []
    if from_profile:
        note = (
            "kernel names are not kept in a ProfileProto: one row per op from its "
            "accelerator (stream:all) time"
        )
        both = "GPU tracer records and accelerator times"
        return (both if from_tracer else "accelerator times"), [note]
    return "none", [
        "the profile has no GPU stream or memcpy devices (a CPU-only run, or steps "
        "traced without the GPU tracer)"
    ]
