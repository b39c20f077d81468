"""The report's trace viewer: every traced step's op records on one timeline.

Contract of :func:`trace_data` (the JSON the page's script draws on a canvas):

* ``lanes``: one per device string that holds time records (canonical
  devices first, then accelerator streams), then one per GPU tracer device
  without op time (``stream:N``, ``memcpy``, ``sync``: kernels and copies under
  their kernel names, for steps added from RunMetadata), each ``{"dev",
  "kind", "rows"}`` (kind ``cpu``, ``accelerator``, ``kernel``, ``memcpy`` or
  ``sync``); a lane has as many rows as it needs so that events within a row
  never overlap (greedy packing in start order, longer events first);
* events are stored as parallel integer columns (never one object per event):
  ``laneCount`` (events per lane, events grouped by lane), ``row``, ``start``
  (microseconds since the profile's first record, delta-coded against the
  previous event of the lane), ``dur`` and ``node`` (an index into the node
  table, delta-coded against the previous event);
* steps are laid out one after another as :mod:`tfprof_lite.outputs.steps_trace`
  does (a step that would overlap the previous one is shifted after it);
  ``steps`` lists ``[step, start, end]`` on that shifted axis;
* the node table holds only the nodes that appear, in first-appearance order:
  names front-coded (``namePre``: characters shared with the previous name,
  ``nameSuf``: the rest), ``nodeOp`` (index into ``ops``), ``inputs`` (indices
  into the node table; an input that never ran is ``-1 - k``, its name being
  ``extIn[k]``) and ``shapes`` (output shapes, ``"slot:AxB"`` joined by ``;``,
  empty when unknown); tracer records are entries named after their kernel,
  listed in ``kernels`` as ``[entry, launching op or ""]``;
* the output depends only on the model (no timestamps).
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from typing import Any

import numpy as np

from tfprof_lite.analysis.kernels import KIND_KERNEL, KIND_MEMCPY, KIND_SYNC, kernel_name
from tfprof_lite.model.devices import DEVICE_CANONICAL, classify_device
from tfprof_lite.model.execs import KIND_ACCELERATOR
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.report.markup import Section, script_json
from tfprof_lite.report.trace_assets import TRACE_JS

__all__ = ["STEP_GAP_MICROS", "front_code", "pack_rows", "trace_data", "trace_section"]

#: Gap between a step and the next when the next had to be shifted.
STEP_GAP_MICROS = 10

_Record = tuple[int, int, Hashable, int]  # start, dur, node key, kind code
#: Record kinds: tfprof's CPU and accelerator time, then GPU tracer records.
_KINDS = ("cpu", "accelerator", KIND_KERNEL, KIND_MEMCPY, KIND_SYNC)


def pack_rows(starts: list[int], durs: list[int]) -> tuple[list[int], int]:
    """Rows for events given in start order (longer first on ties): each event
    goes to the first row whose last event has ended. Returns (rows, row count).

    In start order a row that has ended stays free until it is given an event,
    so the free rows are kept in a heap (lowest first) and the busy ones in a
    heap by end: each event costs a logarithm of the rows, not a scan of them.
    """
    if any(b < a for a, b in zip(starts, starts[1:])):
        return _pack_scanning(starts, durs)
    free: list[int] = []
    busy: list[tuple[int, int]] = []  # (end, row)
    rows: list[int] = []
    count = 0
    for start, dur in zip(starts, durs):
        while busy and busy[0][0] <= start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            row = heapq.heappop(free)
        else:
            row = count
            count += 1
        rows.append(row)
        heapq.heappush(busy, (start + dur, row))
    return rows, count


def _pack_scanning(starts: list[int], durs: list[int]) -> tuple[list[int], int]:
    """:func:`pack_rows` for events out of start order: a scan of every row."""
    ends: list[int] = []
    rows: list[int] = []
    for start, dur in zip(starts, durs):
        for row, end in enumerate(ends):
            if end <= start:
                ends[row] = start + dur
                rows.append(row)
                break
        else:
            rows.append(len(ends))
            ends.append(start + dur)
    return rows, len(ends)


def front_code(names: list[str]) -> tuple[list[int], list[str]]:
    """Each name as (characters shared with the previous name, the rest)."""
    pre: list[int] = []
    suf: list[str] = []
    prev = ""
    for name in names:
        limit = min(len(prev), len(name), 999)
        shared = 0
        while shared < limit and prev[shared] == name[shared]:
            shared += 1
        pre.append(shared)
        suf.append(name[shared:])
        prev = name
    return pre, suf


def _tracer_kind(dev: str, label: str) -> int:
    """The kind code of a GPU tracer record on device ``dev``."""
    tail = dev.rsplit("/", 1)[-1]
    if tail == "memcpy" or "<" in tail or label.lower().startswith("memcpy"):
        return _KINDS.index(KIND_MEMCPY)
    return _KINDS.index(KIND_SYNC if tail == "sync" else KIND_KERNEL)


#: (device, node name, label) of a tracer record -> its node key and kind code.
_Said = dict[tuple[str, str, str], tuple[tuple[str, str, str], int]]


def _tracer_records(
    model: ProfileModel, step: int, taken: set[str], said: _Said
) -> dict[str, list[_Record]]:
    """device -> records of the GPU tracer's devices that hold no op time
    (``stream:N``, ``memcpy``, ``sync``), keyed by (kernel name, raw node name)."""
    cols = model.steps[step].kernels
    out: dict[str, list[_Record]] = {}
    for dev, name, label, start, dur in zip(cols.dev, cols.name, cols.label, cols.start, cols.dur):
        if dev in taken or start <= 0:
            continue
        known = said.get((dev, name, label))
        if known is None:
            code = _tracer_kind(dev, label)
            known = said[(dev, name, label)] = (
                ("kernel", kernel_name(label, name, _KINDS[code]), name),
                code,
            )
        key, code = known
        out.setdefault(dev, []).append((start, max(dur, 1), key, code))
    return out


def _step_records(model: ProfileModel, step: int, said: _Said) -> dict[str, list[_Record]]:
    """device -> (start, dur, node key, kind code) of one step (``said``: the tracer
    records read so far; thousands share a few hundred devices, names and labels)."""
    execs = model.steps[step]
    out: dict[str, list[_Record]] = {}
    names = execs.device_names
    times = execs.times
    for nid, kind, dev, start, dur in zip(
        times["node"].tolist(),
        times["kind"].tolist(),
        times["dev"].tolist(),
        times["start"].tolist(),
        times["dur"].tolist(),
    ):
        out.setdefault(names[dev], []).append((start, dur, nid, int(kind == KIND_ACCELERATOR)))
    out.update(_tracer_records(model, step, set(out), said))
    return out


def _laid_out(model: ProfileModel) -> tuple[dict[str, list[_Record]], list[list[int]]]:
    """Every step's records per device on one axis, and ``[step, start, end]``."""
    lanes: dict[str, list[_Record]] = {}
    steps: list[list[int]] = []
    cursor: int | None = None
    said: _Said = {}
    for step in model.sorted_steps():
        recs = _step_records(model, step, said)
        if not recs:
            continue
        first = min(r[0] for rs in recs.values() for r in rs)
        last = max(r[0] + r[1] for rs in recs.values() for r in rs)
        shift = 0 if cursor is None or first >= cursor else cursor - first
        for dev, rs in recs.items():
            lanes.setdefault(dev, []).extend((s + shift, d, n, a) for s, d, n, a in rs)
        steps.append([step, first + shift, last + shift])
        cursor = last + shift + STEP_GAP_MICROS
    return lanes, steps


def _lane_order(item: tuple[str, list[_Record]]) -> tuple[int, str]:
    dev, recs = item
    if classify_device(dev.lower()) == DEVICE_CANONICAL:
        return 0, dev
    return (1 if recs[0][3] <= 1 else 2), dev


def _lane_kind(recs: list[_Record]) -> str:
    codes = {r[3] for r in recs}
    return _KINDS[max(codes) if max(codes) <= 1 else min(codes)]


def _kernel_entry(model: ProfileModel, key: tuple[str, str, str]) -> tuple[str, str, str]:
    """(kernel name, launching op or "", its op type or the record's kind)."""
    _, kernel, raw = key
    op, sep, rest = raw.partition(":")
    nid = model.index.get(op)
    if nid is not None and model.ops[nid] != op:
        return kernel, op, model.ops[nid]
    return kernel, (op if sep else ""), (rest.split("#", 1)[0] if sep else "")


def _input_refs(
    model: ProfileModel, nid: int, index: dict[Hashable, int], ext: dict[str, int]
) -> list[int]:
    """Node-table positions of a node's inputs; ``-1 - k`` for ``ext``'s k-th name
    (an input that never ran), added to ``ext`` when new."""
    refs = []
    for _, name in sorted(model.inputs[nid].items()):
        base = name.lstrip("^").split(":")[0]
        src = model.index.get(base)
        if src is not None and src in index:
            refs.append(index[src])
        else:
            refs.append(-1 - ext.setdefault(base, len(ext)))
    return refs


def _shapes(model: ProfileModel, nid: int) -> str:
    """A node's output shapes as ``slot:AxB`` joined by ``;`` (empty when unknown)."""
    return ";".join(
        f"{slot}:{'x'.join(map(str, dims)) or 'scalar'}"
        for slot, dims in sorted(model.output_shapes[nid].items())
    )


def _nodes(model: ProfileModel, order: list[Hashable]) -> dict[str, Any]:
    """The node table (see the module docstring) for the node keys in ``order``:
    node ids, or (``"kernel"``, kernel name, raw node name) for tracer records."""
    index = {key: i for i, key in enumerate(order)}
    ops: dict[str, int] = {}
    ext: dict[str, int] = {}
    names: list[str] = []
    node_op: list[int] = []
    inputs: list[list[int]] = []
    shapes: list[str] = []
    launchers: list[list[Any]] = []
    for i, key in enumerate(order):
        if isinstance(key, tuple):
            kernel, op, op_type = _kernel_entry(model, key)
            names.append(kernel)
            node_op.append(ops.setdefault(op_type or "(kernel)", len(ops)))
            inputs.append([])
            shapes.append("")
            launchers.append([i, op])
            continue
        assert isinstance(key, int)
        names.append(model.names[key])
        node_op.append(ops.setdefault(model.ops[key], len(ops)))
        inputs.append(_input_refs(model, key, index, ext))
        shapes.append(_shapes(model, key))
    pre, suf = front_code(names)
    return {
        "namePre": pre,
        "nameSuf": suf,
        "ops": list(ops),
        "nodeOp": node_op,
        "inputs": inputs,
        "extIn": list(ext),
        "shapes": shapes,
        "kernels": launchers,
    }


def trace_data(model: ProfileModel) -> dict[str, Any]:
    """The trace viewer's JSON (see the module docstring)."""
    lanes_by_dev, steps = _laid_out(model)
    t0 = steps[0][1] if steps else 0
    lanes: list[dict[str, Any]] = []
    counts: list[int] = []
    cols: dict[str, list[int]] = {"row": [], "start": [], "dur": [], "node": []}
    seen: dict[Hashable, int] = {}
    prev_node = 0
    for dev, unsorted in sorted(lanes_by_dev.items(), key=_lane_order):
        recs = sorted(unsorted, key=lambda r: (r[0], -r[1]))
        starts = [r[0] - t0 for r in recs]
        durs = [max(r[1], 0) for r in recs]
        rows, n_rows = pack_rows(starts, durs)
        lanes.append({"dev": dev, "kind": _lane_kind(recs), "rows": n_rows})
        counts.append(len(recs))
        cols["row"] += rows
        cols["start"] += np.diff(np.asarray(starts, dtype=np.int64), prepend=0).tolist()
        cols["dur"] += durs
        for rec in recs:
            ref = seen.setdefault(rec[2], len(seen))
            cols["node"].append(ref - prev_node)
            prev_node = ref
    return {
        "unit": "us",
        "lanes": lanes,
        "laneCount": counts,
        **cols,
        "steps": [[s, a - t0, b - t0] for s, a, b in steps],
        **_nodes(model, list(seen)),
    }


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def trace_section(model: ProfileModel) -> Section:
    """The trace viewer: a canvas, its controls and details panel, and the data."""
    if not model.steps:
        note = "No steps were recorded, so there is no timeline."
        return Section("trace", "Trace viewer", f'<p class="muted">{note}</p>')
    data = trace_data(model)
    events = sum(data["laneCount"])
    body = (
        '<div class="tools"><button type="button" id="trace-reset">Show everything</button>'
        f'<span class="muted">{_count(events, "record")}, {_count(len(data["steps"]), "step")}, '
        f"{_count(len(data['lanes']), 'device lane')}. Wheel or W/S: zoom; drag, A/D or arrows: "
        "pan; 0: everything; click a step slice to zoom to it, an event for its details."
        "</span></div>"
        '<div class="trace-wrap"><canvas id="trace-canvas" tabindex="0" role="img" '
        'aria-label="timeline of every traced step"></canvas></div>'
        '<div class="details" id="trace-details" aria-live="polite">'
        "Click an event to see its details.</div>"
        f'<script type="application/json" id="trace-data">{script_json(data)}</script>'
        f"<script>{TRACE_JS}</script>"
    )
    return Section("trace", "Trace viewer", body)
