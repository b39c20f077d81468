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
statistics read: the serialized NodeExecStats of every record with memory
entries (``raw_node``/``raw_stats``), expanded on first use into
:class:`AllocatorColumns`, and :class:`KernelColumns` (every GPU tracer record
with its device, raw node name and ``timeline_label``). Both stay empty for
steps loaded from a ProfileProto, which does not carry them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.records import AllocationEvent, MemoryDetail, OutputMemory
from tfprof_lite.proto.steps import MEM_FIELDS

if TYPE_CHECKING:
    from tfprof_lite.model.allocator_columns import AllocatorColumns

__all__ = [
    "KIND_ACCELERATOR",
    "KIND_CPU",
    "MEM_VALUES",
    "Columns",
    "KernelColumns",
    "MemoryExec",
    "RunningSums",
    "StepExecs",
    "StepTotals",
]

KIND_ACCELERATOR = 1
KIND_CPU = 2

IntArray = npt.NDArray[np.int64]

#: The value columns of a memory record (tfprof's ExecMemory), in ProfileProto order.
MEM_VALUES = MEM_FIELDS


class Columns:
    """Named NumPy columns that grow by blocks; reads concatenate once and cache."""

    def __init__(self, dtypes: dict[str, Any]) -> None:
        self._dtypes = dtypes
        self._parts: dict[str, list[npt.NDArray[Any]]] = {name: [] for name in dtypes}
        self._merged: dict[str, npt.NDArray[Any]] = {}
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def append(self, **cols: Any) -> None:
        """Add one block: every column, all of the same length."""
        size = -1
        for name, dtype in self._dtypes.items():
            arr = np.asarray(cols[name], dtype=dtype)
            if size not in (-1, arr.size):
                raise ValueError(f"column {name!r} has {arr.size} rows, expected {size}")
            size = arr.size
            self._parts[name].append(arr)
        self._len += max(size, 0)
        self._merged.clear()

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        got = self._merged.get(name)
        if got is None:
            parts = self._parts[name]
            if len(parts) == 1:
                got = parts[0]
            else:
                got = np.concatenate(parts) if parts else np.zeros(0, self._dtypes[name])
                self._parts[name] = [got]
            self._merged[name] = got
        return got


@dataclass
class MemoryExec:
    """One memory record (tfprof's ExecMemory) of a node in a step."""

    node: int
    memory_micros: int
    host_temp_bytes: int = 0
    host_persistent_bytes: int = 0
    accelerator_temp_bytes: int = 0
    accelerator_persistent_bytes: int = 0
    requested_bytes: int = 0
    peak_bytes: int = 0
    residual_bytes: int = 0
    output_bytes: int = 0
    allocator_bytes_in_use: int = 0
    output_memory: dict[int, OutputMemory] = field(default_factory=dict)


@dataclass
class StepTotals:
    """Dense per-node sums for one step (arrays indexed by node id)."""

    present: npt.NDArray[np.bool_]
    run_count: IntArray
    accelerator_exec_micros: IntArray
    cpu_exec_micros: IntArray
    requested_bytes: IntArray
    peak_bytes: IntArray
    residual_bytes: IntArray
    output_bytes: IntArray

    def padded(self, n: int) -> StepTotals:
        """The same sums over ``n`` nodes (nodes added since have none)."""
        extra = n - self.present.size
        if extra <= 0:
            return self
        values = {
            name: np.concatenate([getattr(self, name), np.zeros(extra, getattr(self, name).dtype)])
            for name in self.__dataclass_fields__
        }
        return StepTotals(**values)


@dataclass
class KernelColumns:
    """GPU tracer records of one step (kernels, copies, syncs), in columns.

    ``name`` is the record's raw ``node_name`` (``op:Type`` annotation, or the
    kernel name when nothing annotated the launch), ``label`` its
    ``timeline_label``; records whose names are no graph node are kept too.
    ``start`` and ``dur`` are microseconds; ``dur_ns`` is the duration in
    nanoseconds, exact where the source has it (an XSpace) and ``dur * 1000``
    where it has only microseconds (RunMetadata).
    """

    dev: list[str] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    label: list[str] = field(default_factory=list)
    start: list[int] = field(default_factory=list)
    dur: list[int] = field(default_factory=list)
    dur_ns: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.dev)

    def extend(
        self,
        dev: list[str],
        name: list[str],
        label: list[str],
        start: list[int],
        dur: list[int],
        dur_ns: list[int] | None = None,
    ) -> None:
        """Append tracer records given as parallel lists (``dur_ns``: None when
        only microseconds are known)."""
        self.dev += dev
        self.name += name
        self.label += label
        self.start += start
        self.dur += dur
        self.dur_ns += [d * 1000 for d in dur] if dur_ns is None else dur_ns


_I32, _I64, _U64 = np.int32, np.int64, np.uint64


class StepExecs:
    """Everything recorded for one step number (see the module docstring)."""

    def __init__(self) -> None:
        self.device_names: list[str] = []
        self._device_index: dict[str, int] = {}
        self.pairs = Columns({"node": _I32, "dev": _I32})
        self.times = Columns(
            {"node": _I32, "kind": np.int8, "dev": _I32, "start": _I64, "dur": _I64}
        )
        self.spans = Columns({"node": _I32, "start": _I64, "end": _I64})
        self.mem = Columns({"node": _I32, **{name: _I64 for name in MEM_VALUES}})
        self.outs = Columns({"mem": _I64, "slot": _I32, "bytes": _I64, "ptr": _U64})
        self.allocs = Columns({"node": _I32, "micros": _I64, "bytes": _I64})
        self.raw_node: list[int] = []
        self.raw_stats: list[bytes] = []
        self.kernels = KernelColumns()
        self.version = 0
        self._cache: dict[str, Any] = {}
        self._cache_version = -1

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

    def add_raw(self, nodes: Sequence[int], raws: Sequence[bytes]) -> None:
        """Keep serialized NodeExecStats with memory entries for the memory profile."""
        self.raw_node.extend(nodes)
        self.raw_stats.extend(raws)
        self.changed()

    def _cached(self, key: str, build: Callable[[], Any]) -> Any:
        if self._cache_version != self.version:
            self._cache.clear()
            self._cache_version = self.version
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def allocator_columns(self, expand: Callable[[bytes], MemoryDetail]) -> AllocatorColumns:
        """The step's :class:`AllocatorColumns`, built from the kept NodeExecStats
        with ``expand`` (the proto layer's decoder) on first use, then cached
        until more records arrive."""

        from tfprof_lite.model.allocator_columns import AllocatorColumns  # memory readers only

        def build() -> AllocatorColumns:
            cols = AllocatorColumns()
            for node, raw in zip(self.raw_node, self.raw_stats):
                cols.add(node, expand(raw))
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
        """The step's (first start, last end) over its nodes, or None when nothing
        started; the end is the start when no end is known (an end that wrapped
        past int64, say)."""
        nodes, starts, ends = self.node_spans()
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


def segment_sum(idx: npt.NDArray[Any], vals: npt.NDArray[Any], n: int) -> IntArray:
    """Integer sums of ``vals`` grouped by ``idx`` into ``n`` bins (int64, wrapping).

    When the absolute values add up to less than 2**53, every partial sum is an
    exact float64 and ``bincount`` gives the same sums as integer adds.
    """
    out = np.zeros(n, dtype=np.int64)
    if idx.size:
        ints = vals.astype(np.int64, copy=False)
        exact = float(np.abs(ints, dtype=np.float64).sum()) < 2.0**53
        if exact and int(idx.min()) >= 0 and int(idx.max()) < n:
            summed: IntArray = np.bincount(idx, weights=ints, minlength=n).astype(np.int64)
            return summed
        np.add.at(out, idx, ints)
    return out


class RunningSums:
    """Per-node sums of the metrics ``names`` and step counts over the steps in
    ``included`` (the all-steps totals of :class:`~tfprof_lite.model.profile.ProfileModel`)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.included: dict[int, int] = {}
        self.count = np.zeros(0, dtype=np.int64)
        self.sums = {name: np.zeros(0, dtype=np.int64) for name in names}

    def pad(self, n: int) -> None:
        """Zeros for nodes ``count.size .. n - 1``."""
        extra = n - self.count.size
        if extra > 0:
            fill = np.zeros(extra, dtype=np.int64)
            self.count = np.concatenate([self.count, fill])
            self.sums = {name: np.concatenate([v, fill]) for name, v in self.sums.items()}

    def add(self, totals: StepTotals) -> None:
        """One step's totals added in place."""
        self.count += totals.present  # in place: pad() made these arrays ours
        for name, v in self.sums.items():
            v += getattr(totals, name)
