"""One RunMetadata's step columns into the model, the way tfprof's ``AddStep`` reads them.

:func:`ingest_step` applies tfprof's rules to a whole
:class:`~tfprof_lite.proto.steps.StepColumns` at once:

* a record's name up to ``:`` names its node; unknown names become pseudo nodes
  (op = name) in first-seen order, except ``RecvTensor``, ``_SOURCE`` and
  ``MEMCPY`` records, which are dropped;
* a node's canonical device is the first canonical device it is recorded on;
  records of the node on other canonical devices are ignored;
* records with a positive start add a time (accelerator devices: accelerator
  time, canonical devices: CPU time and a run; others only move start and end)
  with a zero duration counted as 1; records marked ``untimed`` (memory-only
  records of an XSpace) only move start and end;
* records on the node's canonical device add a memory record (tfprof's
  ExecMemory) when they have a positive start.

Only the name lookup walks rows in Python; everything else is NumPy.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.devices import (
    DEVICE_ACCELERATOR,
    DEVICE_CANONICAL,
    classify_device,
    host_device_of,
    is_tracer_device,
)
from tfprof_lite.model.execs import KIND_ACCELERATOR, KIND_CPU, StepExecs, segment_sum
from tfprof_lite.proto.steps import StepColumns

if TYPE_CHECKING:
    from tfprof_lite.model.profile import ProfileModel

__all__ = ["ingest_step"]

log = logging.getLogger("tfprof_lite")

_SKIPPED_NAMES = frozenset({"RecvTensor", "_SOURCE"})

IntArray = npt.NDArray[np.int64]


class MemoryRows(NamedTuple):
    """What :func:`_add_memory` added: memory records for ``rows``, and which
    outputs (``o_row``), allocations (``a_row``) and raw records (``r_row``)."""

    rows: IntArray
    outs: npt.NDArray[np.bool_]
    allocs: npt.NDArray[np.bool_]
    raws: npt.NDArray[np.bool_]


def ingest_step(model: ProfileModel, execs: StepExecs, cols: StepColumns) -> None:
    """Add ``cols`` (one RunMetadata's records) to ``execs``, the model's step."""
    lowered = [d.lower() for d in cols.devices]
    _check_streams(model, lowered)
    _keep_kernels(execs, cols, lowered)
    if not len(cols):
        return
    nid = _node_ids(model, cols)
    dev_cls = np.asarray([classify_device(d) for d in lowered], dtype=np.int64)
    # The device strings of the rows, numbered in this step's table.
    codes = np.asarray([execs.device_code(d) for d in lowered], dtype=np.int64)
    row_code = codes[cols.dev]
    row_cls = dev_cls[cols.dev]
    valid = nid >= 0
    canon = valid & (row_cls == DEVICE_CANONICAL)
    node_code = _bind_canonical(model, execs, nid, canon, row_code)
    keep = valid & ~(canon & (row_code != node_code[np.maximum(nid, 0)]))
    rows = np.flatnonzero(keep)
    kept = nid[rows]
    for node in _distinct(kept):
        model.has_execs[node] = True
    execs.pairs.append(node=kept, dev=row_code[rows])
    _add_times(execs, cols, rows, kept, row_code[rows], row_cls[rows])
    mem_rows = rows[row_code[rows] == node_code[kept]]
    _add_memory(model, execs, cols, mem_rows, nid, lowered)
    execs.changed()


def _check_streams(model: ProfileModel, lowered: list[str]) -> None:
    gpu = [d for d in lowered if "gpu" in d]
    if gpu and not any("stream:all" in d for d in gpu):
        model.miss_accelerator_stream = True


def _keep_kernels(execs: StepExecs, cols: StepColumns, lowered: list[str]) -> None:
    """Every record of a GPU tracer device, in the step's kernel columns."""
    tracers = [i for i, d in enumerate(lowered) if is_tracer_device(d)]
    if not tracers:
        return
    rows = np.flatnonzero(np.isin(cols.dev, tracers))
    picked = rows.tolist()
    names, labels = cols.name, cols.label
    execs.kernels.extend(
        [lowered[d] for d in cols.dev[rows].tolist()],
        [names[r] for r in picked],
        [labels[r] for r in picked],
        cols.start[rows].tolist(),
        cols.rel[rows].tolist(),
    )


def _node_ids(model: ProfileModel, cols: StepColumns) -> IntArray:
    """The node id of every row (-1: dropped), adding pseudo nodes as tfprof does."""
    index = model.index
    keys = [n if ":" not in n else n.split(":", 1)[0] for n in cols.name]
    found = [index.get(k, -1) for k in keys]
    covered = model.covered
    covered.update(found)
    covered.discard(-1)
    if -1 in found:
        for row, key in enumerate(keys):
            if found[row] != -1:
                continue
            got = index.get(key)
            if got is not None:  # a pseudo node made by an earlier row
                covered.add(got)
                found[row] = got
            elif key not in _SKIPPED_NAMES and "MEMCPY" not in key:
                found[row] = model.new_pseudo_node(key)
    return np.asarray(found, dtype=np.int64)


def _bind_canonical(
    model: ProfileModel, execs: StepExecs, nid: IntArray, canon: Any, row_code: IntArray
) -> IntArray:
    """Bind unbound nodes to the first canonical device they are recorded on; returns
    every node's canonical device as a code of this step (-1: none of its devices)."""
    return bind_canonical(model, nid, canon, row_code, execs.device_names)


def bind_canonical(
    model: ProfileModel, nid: IntArray, canon: Any, row_code: IntArray, names: list[str]
) -> IntArray:
    """Bind each node not yet on a canonical device to the first canonical device
    (``canon`` rows) it is recorded on, as tfprof's ``AddStep`` does; returns every
    node's canonical device as an index into ``names`` (-1: none of them).
    ``row_code[i]`` is record ``i``'s device in ``names``."""
    canon_rows = np.flatnonzero(canon)
    nodes, first = np.unique(nid[canon_rows], return_index=True)
    for node, row in zip(nodes.tolist(), canon_rows[first].tolist()):
        if not model.canonical_device[node]:
            dev = names[int(row_code[row])]
            model.canonical_device[node] = dev
            model.host_device[node] = host_device_of(dev)
            model.op_types[node].add(dev)
    node_code = np.full(len(model.names), -1, dtype=np.int64)
    index = {name: code for code, name in enumerate(names)}
    for node in _distinct(nid[nid >= 0]):
        node_code[node] = index.get(model.canonical_device[node], -1)
    return node_code


def _distinct(values: npt.NDArray[np.int64]) -> list[int]:
    """The distinct values, ascending (``np.unique`` without a ``return_*`` flag
    imports ``numpy.ma``, some 20 ms, on its first call)."""
    return list(np.unique(values, return_index=True)[0].tolist())


def _add_times(
    execs: StepExecs,
    cols: StepColumns,
    rows: IntArray,
    kept: IntArray,
    codes: IntArray,
    classes: IntArray,
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Spans and times of ``rows`` (nodes ``kept``, device codes ``codes``,
    device classes ``classes``); which rows started, and which of those are timed."""
    start = cols.start[rows]
    started = start > 0
    untimed = cols.untimed[rows][started] if cols.untimed.size else None
    rel = cols.rel[rows][started]
    dur = np.where(rel == 0, 1, rel)
    start = start[started]
    nodes = kept[started]
    end = start + dur  # int64 wrap-around, as in tfprof
    execs.spans.append(node=nodes, start=start, end=np.maximum(end, 0))
    kind = np.where(
        classes[started] == DEVICE_ACCELERATOR,
        KIND_ACCELERATOR,
        np.where(classes[started] == DEVICE_CANONICAL, KIND_CPU, 0),
    )
    timed = kind != 0
    if untimed is not None:
        timed &= ~untimed
    execs.times.append(
        node=nodes[timed],
        kind=kind[timed],
        dev=codes[started][timed],
        start=start[timed],
        dur=dur[timed],
    )
    return started, timed


def _add_memory(
    model: ProfileModel,
    execs: StepExecs,
    cols: StepColumns,
    rows: IntArray,
    nid: IntArray,
    lowered: list[str],
) -> MemoryRows | None:
    """tfprof's ExecMemory for the records on their node's canonical device;
    which records it added them for (None: none)."""
    start = cols.start[rows]
    for row in rows[start <= 0].tolist():  # tfprof keeps memory only with a positive start
        log.warning("%s has no start time, skipping", model.names[int(nid[row])])
    rows = rows[start > 0]
    for count in cols.gpu_allocs[rows][cols.gpu_allocs[rows] > 1].tolist():
        log.warning("found %d gpu allocator for 1 node", count)
    if not rows.size:
        return None
    base = len(execs.mem)
    nodes = nid[rows]
    pos = np.full(len(cols), -1, dtype=np.int64)
    pos[rows] = np.arange(rows.size)
    out_sel = pos[cols.o_row] >= 0 if cols.o_row.size else np.zeros(0, bool)
    out_pos = pos[cols.o_row[out_sel]] if cols.o_row.size else np.zeros(0, np.int64)
    out_bytes = cols.o_bytes[out_sel] if cols.o_row.size else np.zeros(0, np.int64)
    host = np.asarray(["cpu" in lowered[d] for d in range(len(lowered))], dtype=bool)
    on_host = host[cols.dev[rows]] if host.size else np.zeros(rows.size, bool)
    temp, persist = cols.temp[rows], cols.persist[rows]
    zero = np.zeros(rows.size, np.int64)
    execs.mem.append(
        node=nodes,
        memory_micros=cols.start[rows] + cols.rel[rows],
        host_temp_bytes=np.where(on_host, temp, zero),
        host_persistent_bytes=np.where(on_host, persist, zero),
        accelerator_temp_bytes=np.where(on_host, zero, temp),
        accelerator_persistent_bytes=np.where(on_host, zero, persist),
        requested_bytes=cols.total[rows] + persist + temp,
        peak_bytes=cols.peak[rows] + persist + temp,
        residual_bytes=cols.live[rows] + persist,
        output_bytes=segment_sum(out_pos, out_bytes, rows.size),
        allocator_bytes_in_use=cols.gpu_in_use[rows],
    )
    execs.outs.append(
        mem=out_pos + base,
        slot=cols.o_slot[out_sel] if cols.o_row.size else np.zeros(0, np.int32),
        bytes=out_bytes,
        ptr=cols.o_ptr[out_sel] if cols.o_row.size else np.zeros(0, np.uint64),
    )
    a_sel = pos[cols.a_row] >= 0 if cols.a_row.size else np.zeros(0, bool)
    if cols.a_row.size:
        execs.allocs.append(
            node=nid[cols.a_row[a_sel]], micros=cols.a_micros[a_sel], bytes=cols.a_bytes[a_sel]
        )
    r_sel = pos[cols.r_row] >= 0 if cols.r_row.size else np.zeros(0, bool)
    if cols.r_row.size:
        r_rows = cols.r_row.tolist()
        r_ok = r_sel.tolist()
        execs.add_raw(
            [int(nid[r]) for r, ok in zip(r_rows, r_ok) if ok],
            [raw for raw, ok in zip(cols.raw, r_ok) if ok],
        )
    return MemoryRows(rows, out_sel, a_sel, r_sel)
