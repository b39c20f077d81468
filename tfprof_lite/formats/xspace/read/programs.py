"""The :class:`~tfprof_lite.model.xla_programs.XlaPrograms` of an XSpace: its
``/host:metadata`` plane's programs and the times of their instructions over
the whole window (what the types' module describes).

:func:`xla_programs` builds them from a file's event table when the file is
opened; :func:`load_programs` reads a file for them alone (no model), for the
program tools.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import numpy.typing as npt

from tfprof_lite.formats.xspace.read.events import EventTable, gpu_ordinal
from tfprof_lite.formats.xspace.read.xla import hlo_names, hlo_protos, xla_events
from tfprof_lite.formats.xspace.wire.columns import XSpaceColumns
from tfprof_lite.model.xla_kinds import HloOp
from tfprof_lite.model.xla_programs import DeviceCaps, OpTimes, XlaPrograms
from tfprof_lite.model.xla_records import ProgramRecord

__all__ = ["PROGRAM_STATS", "load_programs", "xla_programs"]

I64 = npt.NDArray[np.int64]

#: The event stats :func:`load_programs` decodes (the others are skipped).
PROGRAM_STATS = frozenset(
    {"hlo_op", "hlo_module", "program_id", "run_id", "correlation_id", "kernel_details",
     "memcpy_details", "tf_op", "eager_op", "_r", "step_num"}
)  # fmt: skip

_CAPS = {
    "clock_rate": "clock_khz",
    "core_count": "cores",
    "memory_bandwidth": "memory_bandwidth",
    "memory_size": "memory_size",
    "compute_cap_major": "cc_major",
    "compute_cap_minor": "cc_minor",
    "peak_teraflops_per_second": "peak_tflops",
    "peak_hbm_bw_gigabytes_per_second": "peak_hbm_gbps",
}


def xla_programs(table: EventTable) -> XlaPrograms | None:
    """The programs of ``table``'s file and their instructions' times, or None
    when the file holds no HLO program."""
    protos = hlo_protos(table)
    if not protos:
        return None
    names = hlo_names(table)
    programs = [ProgramRecord(p, name, data) for (p, data), name in zip(protos, names, strict=True)]
    row_of: dict[int | None, int] = {}
    by_module: dict[str, int] = {}
    for row, record in enumerate(programs):
        row_of[record.program_id] = row
        by_module.setdefault(record.module, row)
    ops, run_ids = _aggregate(table, row_of, by_module)
    runs = _runs(ops, run_ids, len(programs))
    cols = table.cols
    extent = int(table.end.max() - table.start.min()) if len(table) else 0
    devices = [_caps(cols, p) for p, name in enumerate(cols.plane_name) if gpu_ordinal(name) >= 0]
    return XlaPrograms(programs, ops, runs, devices, extent)


def _program_of_ops(
    ops: list[HloOp], row_of: dict[int | None, int], by_module: dict[str, int]
) -> I64:
    """The program row of each op (-1: a program the file does not hold)."""
    found = []
    for op in ops:
        row = row_of.get(op.program_id)
        found.append(by_module.get(op.module, -1) if row is None else row)
    return np.asarray(found, dtype=np.int64)


def _aggregate(
    table: EventTable, row_of: dict[int | None, int], by_module: dict[str, int]
) -> tuple[OpTimes, dict[int, set[int]]]:
    """One row per (instruction, device) of the XLA events that map to one, in
    columns: each event's time, self time and launch (see the module docstring)."""
    found = xla_events(table)
    program_of = _program_of_ops(found.ops, row_of, by_module)
    hit = found.at >= 0
    hit[hit] = program_of[found.at[hit]] >= 0
    events, at = found.events[hit], found.at[hit]
    if not len(events):
        return OpTimes(), {}
    cols = table.cols
    lines = cols.event_line[events].astype(np.int64)
    ordinal = np.asarray([gpu_ordinal(n) for n in cols.plane_name], dtype=np.int64)
    device = ordinal[cols.line_plane[lines]]
    start, end = table.start[events], table.end[events]
    # a launch (GPU) is one occurrence; a host op event is one by itself
    launch = np.where(
        (device >= 0) & table.has_int["correlation_id"][events],
        table.ints.at("correlation_id", events),
        -1 - events,
    )
    # (1-D np.unique with return_index: the axis form imports numpy.ma, ~20 ms)
    span = int(device.max()) + 2
    codes, _, key = np.unique(at * span + device + 1, return_index=True, return_inverse=True)
    key = key.reshape(-1)
    time = np.zeros(len(codes), dtype=np.int64)
    np.add.at(time, key, end - start)
    own = _self_times(start, end, lines, device < 0)
    selves = np.zeros(len(codes), dtype=np.int64)
    np.add.at(selves, key, own)
    order = np.lexsort((launch, key))
    k, run = key[order], launch[order]
    new = np.ones(len(k), dtype=bool)
    new[1:] = (k[1:] != k[:-1]) | (run[1:] != run[:-1])
    occurrences = np.bincount(k[new], minlength=len(codes)).astype(np.int64)
    keys = np.stack([codes // span, codes % span - 1])
    op_rows = keys[0].tolist()
    ops = OpTimes(
        program=program_of[keys[0]],
        name=[found.ops[a].name for a in op_rows],
        device=keys[1].astype(np.int64),
        occurrences=occurrences,
        time_ps=time,
        self_ps=selves,
        hlo=[found.ops[a] for a in op_rows],
    )
    return ops, _run_ids(table, events, program_of[at])


def _run_ids(table: EventTable, events: I64, program: I64) -> dict[int, set[int]]:
    """Per program, the distinct ``run_id`` of its events (TF's XLA launches say
    -1: no id)."""
    has = table.has_int["run_id"][events]
    runs = table.ints.at("run_id", events)
    keep = has & (runs != -1)
    out: dict[int, set[int]] = {}
    for p, r in zip(program[keep].tolist(), runs[keep].tolist(), strict=True):
        out.setdefault(p, set()).add(r)
    return out


def _self_times(start: I64, end: I64, lines: I64, nested: npt.NDArray[np.bool_]) -> I64:
    """Each event's time less that of the events nested directly inside it on
    its line; only ``nested`` events (host op events, where a ``while`` holds
    its body's ops) are looked at: GPU events do not nest."""
    own = end - start
    rows = np.flatnonzero(nested)
    if not len(rows):
        return own
    order = rows[np.lexsort((-end[rows], start[rows], lines[rows]))].tolist()
    starts, ends, at_line = start.tolist(), end.tolist(), lines.tolist()
    stack: list[int] = []
    line = None
    for i in order:
        if at_line[i] != line:
            stack, line = [], at_line[i]
        while stack and ends[stack[-1]] <= starts[i]:
            stack.pop()
        if stack and ends[i] <= ends[stack[-1]]:
            own[stack[-1]] -= ends[i] - starts[i]
        stack.append(i)
    return own


def _runs(ops: OpTimes, run_ids: dict[int, set[int]], count: int) -> I64:
    out = np.zeros(count, dtype=np.int64)
    counts: dict[int, Counter[int]] = {}
    for program, occurrences in zip(ops.program.tolist(), ops.occurrences.tolist(), strict=True):
        counts.setdefault(program, Counter())[occurrences] += 1
    for program, seen in counts.items():
        ids = run_ids.get(program)
        out[program] = len(ids) if ids else seen.most_common(1)[0][0]
    return out


def _caps(cols: XSpaceColumns, plane: int) -> DeviceCaps:
    stats = cols.plane_stat_dict(plane)
    values: dict[str, object] = {}
    for stat, name in _CAPS.items():
        value = stats.get(stat)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values[name] = value
    name = cols.plane_name[plane]
    return DeviceCaps(
        plane=name,
        ordinal=gpu_ordinal(name),
        model=str(stats.get("gpu_device_name", "") or ""),
        vendor=str(stats.get("device_vendor", "") or ""),
        **values,  # type: ignore[arg-type]
    )


def load_programs(path: str, limit: int | str | None = None) -> tuple[XlaPrograms | None, int]:
    """The XLA programs of the XSpace file ``path`` and its step count, without
    converting its steps into a model: what the program tools need, in a
    fraction of :func:`~tfprof_lite.formats.xspace.read.load.load_model`'s time. The
    same :class:`XlaPrograms` as ``load_model(path).xla_programs``; the steps
    are :func:`~tfprof_lite.formats.xspace.read.steps.find_steps`'s.

    Raises:
        InvalidInputError: not a readable XSpace (read through the bounded reader).
    """
    from tfprof_lite.formats.xspace.read.events import event_table
    from tfprof_lite.formats.xspace.read.steps import find_steps
    from tfprof_lite.formats.xspace.wire.decode import decode_xspace_file

    cols = decode_xspace_file(path, "an XSpace (*.xplane.pb)", PROGRAM_STATS, limit)
    table = event_table(cols)
    return xla_programs(table), len(find_steps(table).events)
