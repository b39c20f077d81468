"""Summing GPU tracer records into the rows of :mod:`tfprof_lite.analysis.kernels`.

Contract of :class:`Tally`: :meth:`Tally.add_step` takes one step's
:class:`~tfprof_lite.model.execs.KernelColumns` and :meth:`Tally.finish` adds
each row's count, total, minimum, maximum, bytes and GPUs to the row
accumulators (:class:`Acc`, by row key), as if every record chosen by
:func:`~tfprof_lite.analysis.kernel_records.chosen` had been added one by one in
step and record order: rows appear in the accumulators in the order of their
first record.

A trace runs the same few hundred kernels in every step, so what a record is
(its kind, kernel name, launching op, launch configuration) is read once per
distinct (device, name, label) and the records are summed in NumPy columns. A
copy whose direction is only in the device of its other record (TF 2.x) is read
record by record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tfprof_lite.analysis.kernel_launch import LaunchConfig, split_label
from tfprof_lite.analysis.kernel_records import (
    DIRECTION_RE,
    KIND_KERNEL,
    KIND_MEMCPY,
    StepDevices,
    chosen,
    copied_bytes,
    kernel_name,
    launcher,
    step_devices,
)
from tfprof_lite.model.execs import KernelColumns
from tfprof_lite.model.profile import ProfileModel

__all__ = ["Acc", "RowKey", "Tally"]

I64 = npt.NDArray[np.int64]

#: A row: kind, kernel, op, op type, launch configuration.
RowKey = tuple[str, str, str, str, LaunchConfig]
_NO_LAUNCH = LaunchConfig()
#: What a record's kind, name and label say, shared by every record with the same
#: three: its op, op type, launch configuration, bytes copied and kernel name (None
#: for a copy whose direction is only in the device of the copy's other record).
_Said = tuple[str, str, LaunchConfig, int, "str | None"]
_Triple = tuple[str, str, str]  # device, name, label
_Read = tuple[str, str, _Said]  # GPU, kind, what the record says
#: Class 0: a record not counted.
_SKIP = 0
#: A record read one by one (a copy whose direction its own record does not give).
_PER_RECORD = -1


@dataclass
class Acc:
    """Count, total, minimum and maximum (nanoseconds), bytes and GPUs of one row."""

    count: int = 0
    total: int = 0
    low: int = 0
    high: int = 0
    nbytes: int = 0
    devices: set[str] = field(default_factory=set)

    def add(self, dur: int, nbytes: int, device: str) -> None:
        """One record."""
        self.low = dur if not self.count else min(self.low, dur)
        self.high = max(self.high, dur)
        self.count += 1
        self.total += dur
        self.nbytes += nbytes
        self.devices.add(device)


def _said(model: ProfileModel, kind: str, name: str, label: str) -> _Said:
    # TF 2.21 names an unannotated kernel's record after the kernel, whose
    # C++ name may hold ":" (so it is no "name:Type" annotation).
    bare = kind == KIND_KERNEL and bool(label) and split_label(label)[0] == name
    op, op_type = ("", "") if bare else launcher(model, name)
    if not op and "@@" in label:
        # The raw annotation stack after "@@": "outer::inner#key=value#".
        inner = label.split("@@", 1)[1].split("::")[-1].split("#", 1)[0]
        op, op_type = launcher(model, inner)
    launch = split_label(label)[1] if kind == KIND_KERNEL and label else _NO_LAUNCH
    nbytes = copied_bytes(label) if kind == KIND_MEMCPY else 0
    undirected = kind == KIND_MEMCPY and DIRECTION_RE.search(label + name) is None
    kernel = None if undirected else kernel_name(label, name, kind, bool(op))
    return op, op_type, launch, nbytes, kernel


def _copy_directions(cols: KernelColumns) -> dict[tuple[str, int, int], str]:
    """(name, start, duration) -> the ``stream:N<MemcpyH2D>`` device text of each
    copy there: TF 2.x names the direction only in that device."""
    out: dict[tuple[str, int, int], str] = {}
    for dev, name, start, dur in zip(cols.dev, cols.name, cols.start, cols.dur):
        if "<" in dev:
            out[(name, start, dur)] = dev[dev.index("<") :]
    return out


class Tally:
    """Records of the steps added so far, summed per row on :meth:`finish`.

    A record's class (an index into ``_class_slot``/``_class_bytes``) stands for
    its row and the bytes it copied; class 0 is a record not counted.
    """

    def __init__(self, model: ProfileModel, acc: dict[RowKey, Acc]) -> None:
        self.model = model
        self.acc = acc
        self.devices: dict[str, tuple[str, str] | None] = {}
        self.kinds: dict[tuple[str, str, str], str] = {}
        self.said: dict[tuple[str, str, str], _Said] = {}
        self._slots: dict[RowKey, int] = {}
        self._gpus: list[set[str]] = []
        self._classes: dict[tuple[int, int], int] = {}
        self._class_slot = [-1]
        self._class_bytes = [0]
        self._known: dict[StepDevices, dict[_Triple, int]] = {}
        self._reads: dict[tuple[StepDevices, _Triple], _Read] = {}
        self._picked: list[I64] = []
        self._durs: list[list[int]] = []  # each step's ``dur_ns``
        #: The last step read without per-record reads: flags, records, classes, counted.
        self._last: tuple[StepDevices, list[_Triple], I64, bool] | None = None

    def _read(self, triple: _Triple, flags: StepDevices) -> _Read | None:
        """(GPU, kind, what it says) of a record to count; None: not counted."""
        dev, name, label = triple
        choice = chosen(dev, name, label, self.devices, self.kinds, flags)
        if choice is None:
            return None
        gpu, kind = choice
        said = self.said.get((kind, name, label))
        if said is None:
            said = self.said[(kind, name, label)] = _said(self.model, kind, name, label)
        return gpu, kind, said

    def _class(self, read: _Read, kernel: str) -> int:
        """The class of a record of ``read`` with kernel name ``kernel`` (its row
        added to the accumulators when new)."""
        gpu, kind, (op, op_type, launch, nbytes, _) = read
        key = (kind, kernel, op, op_type, launch)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = len(self._gpus)
            self._gpus.append(set())
            self.acc.setdefault(key, Acc())
        self._gpus[slot].add(gpu)
        cls = self._classes.get((slot, nbytes))
        if cls is None:
            cls = self._classes[(slot, nbytes)] = len(self._class_slot)
            self._class_slot.append(slot)
            self._class_bytes.append(nbytes)
        return cls

    def _first(
        self, triple: _Triple, flags: StepDevices, known: dict[_Triple, int], read: _Read | None
    ) -> int:
        """The class of a record first met, ``read`` by :meth:`_read`
        (:data:`_PER_RECORD` for an undirected copy)."""
        if read is None:
            cls = _SKIP
        elif read[2][4] is None:
            self._reads[(flags, triple)] = read
            cls = _PER_RECORD
        else:
            cls = self._class(read, read[2][4])
        known[triple] = cls
        return cls

    def add_step(self, cols: KernelColumns) -> bool:
        """Add one step's records; False when none was a GPU's to count."""
        triples = list(zip(cols.dev, cols.name, cols.label))
        flags = step_devices(set(cols.dev), self.devices)
        if self._last is not None and self._last[0] == flags and self._last[1] == triples:
            # The records of the previous step again (a training loop's steps).
            classes, counted = self._last[2], self._last[3]
        else:
            classes, counted = self._classes_of(cols, triples, flags)
        self._picked.append(classes)
        self._durs.append(cols.dur_ns)
        return counted

    def _classes_of(
        self, cols: KernelColumns, triples: list[_Triple], flags: StepDevices
    ) -> tuple[I64, bool]:
        """Each record's class, and whether any is counted."""
        known = self._known.setdefault(flags, {})
        distinct = dict.fromkeys(triples)
        # The records first met, read in the order of their first records.
        fresh = {t: self._read(t, flags) for t in distinct if t not in known}
        if any(known.get(t) == _PER_RECORD for t in distinct) or any(
            r is not None and r[2][4] is None for r in fresh.values()
        ):
            picked = self._by_record(cols, triples, flags, known, fresh)
            classes = np.asarray(picked, dtype=np.int64).reshape(len(picked))
            self._last = None  # (these classes depend on the records' times too)
            return classes, bool(classes.any())
        for triple, read in fresh.items():
            self._first(triple, flags, known, read)
        picked = [known[t] for t in triples]
        classes = np.asarray(picked, dtype=np.int64).reshape(len(picked))
        self._last = (flags, triples, classes, bool(classes.any()))
        return classes, self._last[3]

    def _by_record(
        self, cols: KernelColumns, triples: list[_Triple], flags: StepDevices,
        known: dict[_Triple, int], fresh: dict[_Triple, _Read | None],
    ) -> list[int]:  # fmt: skip
        """Each record's class, read in record order (a copy's direction from its
        other record)."""
        directions = _copy_directions(cols)
        picked: list[int] = []
        for triple, start, dur in zip(triples, cols.start, cols.dur):
            cls = known.get(triple)
            if cls is None:
                cls = self._first(triple, flags, known, fresh[triple])
            if cls == _PER_RECORD:
                read = self._reads[(flags, triple)]
                _, name, label = triple
                name = name + directions.get((name, start, dur), "")
                cls = self._class(read, kernel_name(label, name, read[1], bool(read[2][0])))
            picked.append(cls)
        return picked

    def finish(self) -> None:
        """Add the sums of every record so far to the accumulators."""
        if not self._picked:
            return
        sums = self._sums() or self._sums_by_record()
        for (key, at), (n, summed, nb, least, most) in zip(self._slots.items(), sums):
            a = self.acc[key]
            a.low = least if not a.count else min(a.low, least)
            a.high = max(a.high, most)
            a.count += n
            a.total += summed
            a.nbytes += nb
            a.devices |= self._gpus[at]
        self._picked, self._durs = [], []

    def _sums(self) -> list[tuple[int, int, int, int, int]] | None:
        """Per row: count, total, bytes, minimum and maximum, in NumPy; None when
        a value or a sum would not fit in int64 (extreme records)."""
        classes = np.concatenate(self._picked)
        try:
            arrays = [np.asarray(d, dtype=np.int64).reshape(len(d)) for d in self._durs]
            dur = np.concatenate(arrays)
            nbytes = np.asarray(self._class_bytes, dtype=np.int64)[classes]
        except OverflowError:
            return None
        limit = (1 << 62) // max(len(dur), 1)
        for values in (dur, nbytes):
            if len(values) and max(int(values.max()), -int(values.min())) > limit:
                return None
        slots = np.asarray(self._class_slot, dtype=np.int64)[classes]
        keep = slots >= 0
        slot, dur, nbytes = slots[keep], dur[keep], nbytes[keep]
        rows = len(self._gpus)
        count = np.bincount(slot, minlength=rows).tolist()
        total = np.zeros(rows, dtype=np.int64)
        np.add.at(total, slot, dur)
        copied = np.zeros(rows, dtype=np.int64)
        np.add.at(copied, slot, nbytes)
        low = np.full(rows, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(low, slot, dur)
        high = np.full(rows, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(high, slot, dur)
        return list(zip(count, total.tolist(), copied.tolist(), low.tolist(), high.tolist()))

    def _sums_by_record(self) -> list[tuple[int, int, int, int, int]]:
        """:meth:`_sums` record by record, in Python integers."""
        rows = len(self._gpus)
        count, total, copied = [0] * rows, [0] * rows, [0] * rows
        low: list[int | None] = [None] * rows
        high: list[int | None] = [None] * rows
        for classes, durs in zip(self._picked, self._durs):
            for cls, dur in zip(classes.tolist(), durs):
                at = self._class_slot[cls]
                if at < 0:
                    continue
                count[at] += 1
                total[at] += dur
                copied[at] += self._class_bytes[cls]
                least, most = low[at], high[at]
                low[at] = dur if least is None else min(least, dur)
                high[at] = dur if most is None else max(most, dur)
        return [
            (n, t, c, lo or 0, hi or 0) for n, t, c, lo, hi in zip(count, total, copied, low, high)
        ]
