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

from collections.abc import Hashable
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.base.arrays import first_seen
from tfprof_lite.base.lanes import first_free, scan_free
from tfprof_lite.model.devices import DEVICE_CANONICAL, classify_device
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.report.markup import Section, script_json
from tfprof_lite.report.trace_assets import TRACE_JS
from tfprof_lite.report.trace_events import KINDS, STEP_GAP_MICROS, laid_out

__all__ = ["STEP_GAP_MICROS", "front_code", "pack_rows", "trace_data", "trace_section"]

I64 = npt.NDArray[np.int64]


def pack_rows(starts: list[int], durs: list[int]) -> tuple[list[int], int]:
    """Rows for events given in start order (longer first on ties): each event
    goes to the first row whose last event has ended
    (:func:`~tfprof_lite.base.lanes.first_free`). Returns (rows, row count)."""
    return first_free(starts, durs)


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


def _lane_order(dev: str, first_kind: int) -> tuple[int, str]:
    """Canonical devices first, then lanes of op time, then tracer lanes (by the
    lane's first record)."""
    if classify_device(dev.lower()) == DEVICE_CANONICAL:
        return 0, dev
    return (1 if first_kind <= 1 else 2), dev


def _lane_kind(codes: I64) -> str:
    high = int(codes.max())
    return KINDS[high if high <= 1 else int(codes.min())]


#: Most rows a lane's events are packed into by scanning the rows.
_SCAN_ROWS = 8
_INT62 = 1 << 62


def _rows(starts: I64, durs: I64) -> tuple[list[int], int]:
    """:func:`pack_rows` of one lane (events in start order, longer first): one row
    when no event starts before every earlier one has ended; else the rows are
    scanned when the most events running at once (an estimate that zero-length
    events may lower) is small, as :func:`pack_rows` would place them."""
    if len(starts) and max(int(starts.max()), int(durs.max())) > _INT62:  # ends past int64
        return pack_rows(starts.tolist(), durs.tolist())
    ends = starts + durs
    if len(starts) < 2 or bool((np.maximum.accumulate(ends)[:-1] <= starts[1:]).all()):
        return [0] * len(starts), 1
    running = np.arange(1, len(starts) + 1) - np.searchsorted(np.sort(ends), starts, "right")
    if int(running.max()) <= _SCAN_ROWS:
        return scan_free(starts.tolist(), durs.tolist())
    return pack_rows(starts.tolist(), durs.tolist())


def _first_seen(codes: I64) -> tuple[I64, I64]:
    """Each code's rank by first appearance, and the codes in that order."""
    seen, _, rank = first_seen(codes)
    return rank, seen


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
    recs = laid_out(model)
    t0 = recs.steps[0][1] if recs.steps else 0
    if len(recs.start):  # (events outside the steps may come before the first)
        t0 = min(t0, int(recs.start.min())) if recs.steps else int(recs.start.min())
    present, first = np.unique(recs.lane, return_index=True)
    ordered = sorted(
        zip(present.tolist(), recs.kind[first].tolist()),
        key=lambda lane: _lane_order(recs.devices[lane[0]], lane[1]),
    )
    rank = np.zeros(len(recs.devices) + 1, dtype=np.int64)
    rank[[lane for lane, _ in ordered]] = np.arange(len(ordered), dtype=np.int64)
    order = np.lexsort((~recs.dur, recs.start, rank[recs.lane]))  # (~: longer first, no overflow)
    starts = recs.start[order] - t0
    durs = np.maximum(recs.dur[order], 0)
    kinds = recs.kind[order]
    counts = np.bincount(rank[recs.lane], minlength=len(ordered)).tolist()
    lanes: list[dict[str, Any]] = []
    cols: dict[str, list[int]] = {"row": [], "start": [], "dur": durs.tolist()}
    low = 0
    for (lane, _), count in zip(ordered, counts):
        high = low + count
        rows, n_rows = _rows(starts[low:high], durs[low:high])
        kind = _lane_kind(kinds[low:high])
        lanes.append({"dev": recs.devices[lane], "kind": kind, "rows": n_rows})
        cols["row"] += rows
        cols["start"] += np.diff(starts[low:high], prepend=0).tolist()
        low = high
    refs, seen = _first_seen(recs.node[order])
    keys: list[Hashable] = [c if c >= 0 else recs.tracer_keys[-1 - c] for c in seen.tolist()]
    return {
        "unit": "us",
        "lanes": lanes,
        "laneCount": counts,
        "row": cols["row"],
        "start": cols["start"],
        "dur": cols["dur"],
        "node": np.diff(refs, prepend=0).tolist(),
        "steps": [[s, a - t0, b - t0] for s, a, b in recs.steps],
        **_nodes(model, keys),
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
