"""Per-step execution data, kept in NumPy column blocks.

One :class:`StepExecs` holds everything tfprof records for one step number, as
column groups (:class:`Columns`) that grow by whole blocks (one per ``add_step``
or loaded step), never by one Python object per node execution:

* ``pairs``: (node, device) for every record kept, device ``-1`` for a node that
  ran on no named device (a loaded profile); the nodes present in the step;
* ``times``: every (start, duration) an op spent on a device, with its kind
  (:data:`KIND_ACCELERATOR` or :data:`KIND_CPU`);
* ``spans``: (node, start, end) of every record with a start, for the node's
  first start and latest end in the step;
* ``mem``: tfprof's ExecMemory per record on the node's canonical device (the
  ``MEM_VALUES`` columns), ``outs`` its outputs (row of ``mem``, slot, bytes,
  address) and ``allocs`` the GPU allocation records (node, micros, bytes).

Device strings are numbered per step (:meth:`StepExecs.device_code`). Dense
per-node sums come from :meth:`StepExecs.totals`. Record-level views (``memory``,
``devices``, ``all_start``...) are built on demand, for the few consumers that
walk records, and cached until the step changes.

Beyond tfprof, each step keeps what the memory profile and the GPU kernel
statistics read: the memory record of every record with memory entries
(``raw_node``/``raw_stats``: a RunMetadata's NodeExecStats serialized, as
TensorFlow wrote it, or an XSpace's record already typed: a
:class:`~tfprof_lite.model.records.MemoryDetail`, or a
:class:`~tfprof_lite.model.memory_records.MemoryRef` into the columns of many
records), expanded on first use into
:class:`AllocatorColumns`, and :class:`KernelColumns` (every GPU tracer record
with its device, raw node name and ``timeline_label``). Both stay empty for
steps loaded from a ProfileProto, which does not carry them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.exec_columns import (
    COLUMN_TYPES,
    MEM_VALUES,
    Columns,
    KernelColumns,
    MemoryExec,
    RunningSums,
    StepTotals,
    segment_sum,
)
from tfprof_lite.model.memory_records import MemoryRef
from tfprof_lite.model.records import AllocationEvent, MemoryDetail, OutputMemory

if TYPE_CHECKING:
    from tfprof_lite.model.allocator_columns import AllocatorColumns
    from tfprof_lite.model.step_spans import StepSpan

__all__ = [
    "COLUMN_TYPES",
    "KIND_ACCELERATOR",
    "KIND_CPU",
    "MEM_VALUES",
    "Columns",
    "KernelColumns",
    "MemoryExec",
    "RunningSums",
    "StepExecs",
    "StepSource",
    "StepTotals",
    "segment_sum",
]

KIND_ACCELERATOR = 1
KIND_CPU = 2

IntArray = npt.NDArray[np.int64]


class StepSource(Protocol):
    """Many steps' parts, made on request (:meth:`StepExecs.deferred`)."""

    def group(self, index: int, name: str) -> Columns:
        """Step ``index``'s column group ``name`` (a key of :data:`COLUMN_TYPES`)."""

    def device_names(self, index: int) -> list[str]:
        """Step ``index``'s device strings, by device code."""

    def raws(self, index: int) -> tuple[list[int], list[object]]:
        """Step ``index``'s kept memory records: (nodes, records: serialized
        NodeExecStats or :class:`MemoryDetail`)."""

    def kernels(self, index: int) -> KernelColumns:
        """Step ``index``'s GPU tracer records."""

    def span_of(self, index: int, name: str) -> tuple[dict[str, Any], int, int]:
        """Where step ``index``'s column group ``name`` lies, unmade: (the
        arrays many steps share, first row, row count)."""

    def device_table(self, index: int) -> list[str]:
        """Step ``index``'s device strings, the table many steps share (not a copy)."""


#: The parts of a deferred step made when first read.
_DEFERRED = frozenset(
    {*COLUMN_TYPES, "device_names", "_device_index", "raw_node", "raw_stats", "kernels"}
)


class StepExecs:
    """Everything recorded for one step number (see the module docstring).

    ``version`` counts this step's changes; the class attribute ``changes``
    counts the changes of every step, so that a caller that saw it unchanged
    but for one step's own changes knows no other step changed (O(1)).
    """

    changes = 0
    #: The step's own span, name and window (an XSpace's step marker or inferred
    #: call: :class:`~tfprof_lite.model.step_spans.StepSpan`); None: none.
    span: StepSpan | None = None

    def __init__(self, **blocks: Columns) -> None:
        """An empty step; ``blocks``: any of the column groups (``pairs``,
        ``times``, ``spans``, ``mem``, ``outs``, ``allocs``) made already (over
        :data:`COLUMN_TYPES`' columns), as the batched ingestion makes them."""
        self.device_names: list[str] = []
        self._device_index: dict[str, int] = {}
        got = blocks.get
        self.pairs = got("pairs") or Columns(COLUMN_TYPES["pairs"])
        self.times = got("times") or Columns(COLUMN_TYPES["times"])
        self.spans = got("spans") or Columns(COLUMN_TYPES["spans"])
        self.mem = got("mem") or Columns(COLUMN_TYPES["mem"])
        self.outs = got("outs") or Columns(COLUMN_TYPES["outs"])
        self.allocs = got("allocs") or Columns(COLUMN_TYPES["allocs"])
        self.raw_node: list[int] = []
        #: Serialized NodeExecStats (a RunMetadata's) or MemoryDetail (an XSpace's).
        self.raw_stats: list[object] = []
        self.kernels = KernelColumns()
        self.version = 0
        self._cache: dict[str, Any] = {}
        self._cache_version = -1

    @classmethod
    def deferred(cls, source: StepSource, index: int, cache: dict[str, Any]) -> StepExecs:
        """A step whose columns, device names, kept NodeExecStats and kernels are
        step ``index`` of ``source`` (:mod:`tfprof_lite.model.step_batch`), each
        made when first read; ``cache``: cached views of it, computed with other
        steps' (``"spans"``: :meth:`node_spans`, ``"present"``:
        :meth:`present_nodes`, ``"wall"``: what :meth:`wall_span` reads of the
        records). The step has changed once."""
        execs = cls.__new__(cls)
        state = execs.__dict__
        state["_source"] = (source, index)
        state["version"] = 1
        state["_cache"] = cache
        state["_cache_version"] = 1
        return execs

    def group_rows(self, name: str) -> tuple[dict[str, Any], int, int] | None:
        """Where the rows of column group ``name`` lie when they are rows of
        arrays many steps share (arrays, first row, row count), without making
        the group; None when the step holds columns of its own."""
        state = self.__dict__
        held = None if name in state else state.get("_source")
        if held is not None:
            found: tuple[dict[str, Any], int, int] = held[0].span_of(held[1], name)
            return found
        cols: Columns = getattr(self, name)
        shared = cols.shared_rows()
        return None if shared is None else (shared[0], shared[1], len(cols))

    def device_table(self) -> list[str]:
        """The step's device strings (by code), without making a deferred
        step's copy: do not change the list."""
        state = self.__dict__
        held = None if "device_names" in state else state.get("_source")
        if held is not None:
            table: list[str] = held[0].device_table(held[1])
            return table
        names: list[str] = self.device_names
        return names

    def _make_part(self, name: str) -> Any:
        """Make a deferred step's part ``name`` (see :meth:`deferred`): the
        attribute hook, kept out of the type checker's sight so that a mistyped
        attribute is still an error there."""
        held = self.__dict__.get("_source")
        if held is None or name not in _DEFERRED:
            raise AttributeError(name)
        source, index = held
        if name in ("device_names", "_device_index"):
            names = source.device_names(index)
            self.device_names = names
            self._device_index = {device: at for at, device in enumerate(names)}
        elif name in ("raw_node", "raw_stats"):
            self.raw_node, self.raw_stats = source.raws(index)
        elif name == "kernels":
            self.kernels = source.kernels(index)
        else:
            setattr(self, name, source.group(index, name))
        return self.__dict__[name]

    if not TYPE_CHECKING:
        __getattr__ = _make_part

    # ------------------------------------------------------------- building
    def device_code(self, device: str) -> int:
        """The step-local number of device string ``device`` (added when new)."""
        code = self._device_index.get(device)
        if code is None:
            code = self._device_index[device] = len(self.device_names)
            self.device_names.append(device)
        return code

    def changed(self) -> None:
        """Mark the step as changed (drops every cached view of it)."""
        self.version += 1
        StepExecs.changes += 1

    def add_raw(self, nodes: Sequence[int], raws: Sequence[object]) -> None:
        """Keep the memory records (serialized NodeExecStats or
        :class:`MemoryDetail`) of records with memory entries for the memory profile."""
        self.raw_node.extend(nodes)
        self.raw_stats.extend(raws)
        self.changed()

    def seed(self, key: str, value: Any) -> None:
        """Give the cached view ``key`` (``"spans"``: :meth:`node_spans`,
        ``"present"``: :meth:`present_nodes`) its value, computed with other
        steps' at once (:mod:`tfprof_lite.model.step_batch`); kept until the
        step changes, as if built here."""
        self._cached(key, lambda: value)

    def _cached(self, key: str, build: Callable[[], Any]) -> Any:
        if self._cache_version != self.version:
            self._cache.clear()
            self._cache_version = self.version
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def allocator_columns(self, expand: Callable[[bytes], MemoryDetail]) -> AllocatorColumns:
        """The step's :class:`AllocatorColumns`, built from the kept memory records
        on first use (a :class:`MemoryDetail` as it is, serialized NodeExecStats
        decoded with ``expand``, the proto layer's decoder), then cached until
        more records arrive."""

        from tfprof_lite.model.allocator_columns import AllocatorColumns  # memory readers only

        def build() -> AllocatorColumns:
            cols = AllocatorColumns()
            for node, raw in zip(self.raw_node, self.raw_stats):
                if isinstance(raw, MemoryDetail):
                    cols.add(node, raw)
                elif isinstance(raw, MemoryRef):
                    cols.add(node, raw.detail())
                elif isinstance(raw, (bytes, bytearray, memoryview)):
                    cols.add(node, expand(bytes(raw)))
                else:
                    raise TypeError(f"not a memory record: {type(raw).__name__}")
            return cols

        result: AllocatorColumns = self._cached("allocators", build)
        return result

    # ------------------------------------------------------ per-node values
    def node_spans(self) -> tuple[IntArray, IntArray, IntArray]:
        """(nodes, first start, latest end): every node with a start in the step,
        ascending; the end is 0 when none is known."""

        def build() -> tuple[IntArray, IntArray, IntArray]:
            nodes = self.spans["node"].astype(np.int64)
            if not nodes.size:
                empty = np.zeros(0, np.int64)
                return empty, empty, empty
            order = np.argsort(nodes, kind="stable")
            sorted_nodes = nodes[order]
            uniq, first = np.unique(sorted_nodes, return_index=True)
            starts = np.minimum.reduceat(self.spans["start"][order], first)
            ends = np.maximum.reduceat(self.spans["end"][order], first)
            return uniq, starts, ends

        result: tuple[IntArray, IntArray, IntArray] = self._cached("spans", build)
        return result

    def wall_span(self) -> tuple[int, int] | None:
        """The step's (first start, last end) over its records and its own
        :attr:`span`, or None when nothing started; the end is the start when
        no end is known (an end that wrapped past int64, say)."""
        own: tuple[int, int] | None = self._cached("wall", self._records_span)
        span = self.span
        if own is None:
            return None if span is None else (span.start, span.end)
        start, end = own
        return (start, end) if span is None else (min(start, span.start), max(end, span.end))

    def _records_span(self) -> tuple[int, int] | None:
        """(first start, last end) over the step's records alone (see :meth:`wall_span`)."""
        _, starts, ends = self.node_spans()
        keep = starts != 0
        if not keep.any():
            return None
        start = int(starts[keep].min())
        kept_ends = ends[ends != 0]
        return start, int(kept_ends.max()) if kept_ends.size else start

    @property
    def all_start(self) -> dict[int, int]:
        """node -> first start in the step (nodes with a non-zero start)."""

        def build() -> dict[int, int]:
            nodes, starts, _ = self.node_spans()
            keep = starts != 0
            return dict(zip(nodes[keep].tolist(), starts[keep].tolist()))

        result: dict[int, int] = self._cached("all_start", build)
        return result

    @property
    def latest_end(self) -> dict[int, int]:
        """node -> latest end in the step (nodes with a non-zero end)."""

        def build() -> dict[int, int]:
            nodes, _, ends = self.node_spans()
            keep = ends != 0
            return dict(zip(nodes[keep].tolist(), ends[keep].tolist()))

        result: dict[int, int] = self._cached("latest_end", build)
        return result

    @property
    def devices(self) -> dict[int, set[str]]:
        """node -> the devices it ran on in the step (every present node, in
        first-seen order)."""

        result: dict[int, set[str]] = self._cached("devices", self.device_sets)
        return result

    def device_sets(self, skip: list[str] | None = None) -> dict[int, set[str]]:
        """:attr:`devices` built afresh (not cached), leaving out the nodes whose
        entry in ``skip`` (indexed by node id) is non-empty."""
        out: dict[int, set[str]] = {}
        names = self.device_names
        for nid, code in zip(self.pairs["node"].tolist(), self.pairs["dev"].tolist()):
            if skip is not None and skip[nid]:
                continue
            devs = out.get(nid)
            if devs is None:
                devs = out[nid] = set()
            if code >= 0:
                devs.add(names[code])
        return out

    def used_devices(self) -> list[str]:
        """Each device string the step's nodes ran on once (those of :attr:`devices`,
        without building its sets)."""
        codes = self.pairs["dev"]
        used = np.unique(codes[codes >= 0], return_index=True)[0].tolist()
        return list(dict.fromkeys(self.device_names[c] for c in used))

    def present_nodes(self) -> IntArray:
        """The nodes present in the step, ascending."""

        def build() -> IntArray:
            nodes = self.pairs["node"]
            if not nodes.size:
                return np.zeros(0, dtype=np.int64)
            return np.flatnonzero(np.bincount(nodes)).astype(np.int64)  # sorted, unique

        result: IntArray = self._cached("present", build)
        return result

    # ------------------------------------------------------ record views
    @property
    def t_node(self) -> list[int]:
        """Node of every time record."""
        return self._list("t_node", lambda: self.times["node"].tolist())

    @property
    def t_kind(self) -> list[int]:
        """Kind of every time record."""
        return self._list("t_kind", lambda: self.times["kind"].tolist())

    @property
    def t_dev(self) -> list[str]:
        """Device string of every time record."""
        names = self.device_names
        return self._list("t_dev", lambda: [names[c] for c in self.times["dev"].tolist()])

    @property
    def t_start(self) -> list[int]:
        """Start of every time record."""
        return self._list("t_start", lambda: self.times["start"].tolist())

    @property
    def t_dur(self) -> list[int]:
        """Duration of every time record."""
        return self._list("t_dur", lambda: self.times["dur"].tolist())

    def _list(self, key: str, build: Callable[[], list[Any]]) -> list[Any]:
        result: list[Any] = self._cached(key, build)
        return result

    @property
    def memory(self) -> list[MemoryExec]:
        """The memory records as objects, in record order."""
        return self._list("memory", self._memory_objects)

    def _memory_objects(self) -> list[MemoryExec]:
        values = [self.mem[name].tolist() for name in MEM_VALUES]
        out = [MemoryExec(nid, *vals) for nid, *vals in zip(self.mem["node"].tolist(), *values)]
        for row, slot, nbytes, ptr in zip(
            self.outs["mem"].tolist(),
            self.outs["slot"].tolist(),
            self.outs["bytes"].tolist(),
            self.outs["ptr"].tolist(),
        ):
            out[row].output_memory[slot] = OutputMemory(slot, nbytes, ptr)
        return out

    @property
    def allocations(self) -> dict[int, list[AllocationEvent]]:
        """node -> its GPU allocation records, in record order."""

        def build() -> dict[int, list[AllocationEvent]]:
            out: dict[int, list[AllocationEvent]] = {}
            for nid, micros, nbytes in zip(
                self.allocs["node"].tolist(),
                self.allocs["micros"].tolist(),
                self.allocs["bytes"].tolist(),
            ):
                out.setdefault(nid, []).append(AllocationEvent(micros, nbytes))
            return out

        result: dict[int, list[AllocationEvent]] = self._cached("allocations", build)
        return result

    def times_by_node(self) -> dict[int, dict[int, dict[str, list[tuple[int, int]]]]]:
        """node -> kind -> device -> (start, duration) pairs, in record order."""
        out: dict[int, dict[int, dict[str, list[tuple[int, int]]]]] = {}
        for nid, kind, dev, start, dur in zip(
            self.t_node, self.t_kind, self.t_dev, self.t_start, self.t_dur
        ):
            per_kind = out.setdefault(nid, {}).setdefault(kind, {})
            per_kind.setdefault(dev, []).append((start, dur))
        return out

    # --------------------------------------------------------------- totals
    def totals(self, n_nodes: int) -> StepTotals:
        """Dense per-node sums over this step's records (cached until the step
        changes; nodes added to the model since only pad it)."""
        cached: StepTotals | None = self._cache.get("totals")
        if cached is None or self._cache_version != self.version:
            cached = self._cached("totals", lambda: self._totals(n_nodes))
        if cached.present.size < n_nodes:
            cached = self._cache["totals"] = cached.padded(n_nodes)
        return cached

    def _totals(self, n: int) -> StepTotals:
        present = np.zeros(n, dtype=bool)
        present[self.present_nodes()] = True
        nodes = self.times["node"]
        kinds = self.times["kind"]
        durs = self.times["dur"]
        cpu = kinds == KIND_CPU
        acc = kinds == KIND_ACCELERATOR
        mem_nodes = self.mem["node"]
        return StepTotals(
            present=present,
            run_count=np.bincount(nodes[cpu], minlength=n).astype(np.int64),
            accelerator_exec_micros=segment_sum(nodes[acc], durs[acc], n),
            cpu_exec_micros=segment_sum(nodes[cpu], durs[cpu], n),
            requested_bytes=segment_sum(mem_nodes, self.mem["requested_bytes"], n),
            peak_bytes=segment_sum(mem_nodes, self.mem["peak_bytes"], n),
            residual_bytes=segment_sum(mem_nodes, self.mem["residual_bytes"], n),
            output_bytes=segment_sum(mem_nodes, self.mem["output_bytes"], n),
        )
