"""The column types of a step's execution data (:mod:`tfprof_lite.model.execs`).

:class:`Columns` (named NumPy columns growing by blocks, or rows of arrays
shared by many steps), :data:`COLUMN_TYPES` (the columns of each group of a
step), :class:`MemoryExec`, :class:`StepTotals`, :class:`KernelColumns`,
:func:`segment_sum` and :class:`RunningSums`; :mod:`tfprof_lite.model.execs`
re-exports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.records import OutputMemory
from tfprof_lite.proto.steps import MEM_FIELDS

__all__ = [
    "COLUMN_TYPES",
    "MEM_VALUES",
    "Columns",
    "KernelColumns",
    "MemoryExec",
    "RunningSums",
    "StepTotals",
    "segment_sum",
]

IntArray = npt.NDArray[np.int64]

#: The value columns of a memory record (tfprof's ExecMemory), in ProfileProto order.
MEM_VALUES = MEM_FIELDS


class Columns:
    """Named NumPy columns that grow by blocks; reads concatenate once and cache.

    Made with ``shared`` (arrays of every column) and ``lo``/``hi``, the columns
    are rows ``lo:hi`` of those arrays, sliced on first use: many steps' records
    decoded at once (:mod:`tfprof_lite.model.step_batch`) share one set of
    arrays, and a step nobody reads costs no slices.
    """

    def __init__(
        self,
        dtypes: dict[str, Any],
        shared: dict[str, npt.NDArray[Any]] | None = None,
        lo: int = 0,
        hi: int = 0,
    ) -> None:
        self._dtypes = dtypes
        self._parts: dict[str, list[npt.NDArray[Any]]] | None = None
        self._shared = shared
        self._lo = lo
        self._merged: dict[str, npt.NDArray[Any]] = {}
        self._len = hi - lo if shared is not None else 0

    def _own(self) -> dict[str, list[npt.NDArray[Any]]]:
        """The blocks of every column (the shared rows sliced, when made so)."""
        parts = self._parts
        if parts is None:
            shared, lo, hi = self._shared, self._lo, self._lo + self._len
            if shared is None:
                parts = {name: [] for name in self._dtypes}
            else:
                parts = {name: [shared[name][lo:hi]] for name in self._dtypes}
            self._parts, self._shared = parts, None
        return parts

    def __len__(self) -> int:
        return self._len

    def shared_rows(self) -> tuple[dict[str, npt.NDArray[Any]], int] | None:
        """(the shared arrays, first row) while the columns are still rows of
        arrays many steps share, unsliced; None otherwise."""
        return None if self._shared is None else (self._shared, self._lo)

    def append(self, **cols: Any) -> None:
        """Add one block: every column, all of the same length."""
        size = -1
        parts = self._own()
        for name, dtype in self._dtypes.items():
            arr = np.asarray(cols[name], dtype=dtype)
            if size not in (-1, arr.size):
                raise ValueError(f"column {name!r} has {arr.size} rows, expected {size}")
            size = arr.size
            parts[name].append(arr)
        self._len += max(size, 0)
        self._merged.clear()

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        got = self._merged.get(name)
        if got is None:
            owned = self._own()
            parts = owned[name]
            if len(parts) == 1:
                got = parts[0]
            else:
                got = np.concatenate(parts) if parts else np.zeros(0, self._dtypes[name])
                owned[name] = [got]
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
#: The columns of each of a step's column groups, by group.
COLUMN_TYPES: dict[str, dict[str, Any]] = {
    "pairs": {"node": _I32, "dev": _I32},
    "times": {"node": _I32, "kind": np.int8, "dev": _I32, "start": _I64, "dur": _I64},
    "spans": {"node": _I32, "start": _I64, "end": _I64},
    "mem": {"node": _I32, **{name: _I64 for name in MEM_VALUES}},
    "outs": {"mem": _I64, "slot": _I32, "bytes": _I64, "ptr": _U64},
    "allocs": {"node": _I32, "micros": _I64, "bytes": _I64},
}


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
        #: :attr:`StepExecs.changes` when ``included`` was last checked or added to.
        self.seen = -1
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
