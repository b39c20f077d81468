"""Which inputs get a flow, and from where.

An input named in a label is a tensor: ``node`` (output 0) or ``node:k``; a
``/_N`` suffix (a Recv inserted by partitioning) is dropped when the full name is
no tensor. It gets a flow from its producer's end when producer and consumer are
on different lanes or devices. Tensors exist once recorded: a node's ``output``
entries name them, later nodes replacing earlier ones of the same name, as in
TensorFlow. Two ways find the producer, both giving :class:`~.columns.Flows`:

* :func:`table_flows` looks it up in a table of every recorded tensor (kept by the
  timeline over its calls).
* :class:`ProducerIndex` finds it by the node's position and reads its recorded
  outputs only when a flow depends on them: a producer on the consumer's lane
  gets no flow whether or not it recorded the tensor, and reading every node's
  outputs is a noticeable part of a trace. It applies when nothing can shadow a
  tensor name (see :meth:`ProducerIndex.of`).
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections.abc import Container, Sequence
from itertools import accumulate, chain, repeat
from operator import add, attrgetter
from typing import Any, Callable, Optional

from tfprof_lite.outputs.chrome_trace.columns import Device, Flows, Origin

__all__ = ["ProducerIndex", "known_tensor", "record_outputs", "table_flows"]

log = logging.getLogger("tfprof_lite")

_outputs: Callable[[Any], Any] = attrgetter("output")


def known_tensor(name: str, known: Container[str], log_missing: bool) -> str | None:
    """The tensor an input ``name`` is among ``known``: the name, or the name less
    its ``/_N`` suffix; None (logged at debug level if asked) when neither is."""
    if name in known:
        return name
    cut = name.rfind("/_")  # a Recv inserted by partitioning
    if cut > 0:
        name = name[:cut]
        if name in known:
            return name
    if log_missing:
        log.debug("Can't find tensor %s - removed by CSE?", name)
    return None


def record_outputs(devices: Sequence[Device], table: dict[str, Origin]) -> None:
    """Write where each recorded output of ``devices`` is produced into ``table``, in
    TensorFlow's order (so the same node wins when names collide)."""
    for dev in devices:
        pid = dev.device_pid
        counts = map(len, map(_outputs, dev.stats.node_stats))
        for node, end, tid, count in zip(
            dev.names, map(add, dev.starts, dev.durs), dev.lanes, counts
        ):
            origin = (pid, tid, end)
            for index in range(count):
                table[f"{node}:{index}" if index else node] = origin


def table_flows(dev: Device, table: dict[str, Origin], first_id: int) -> Flows:
    """The flows into ``dev``'s nodes from the producers in ``table``."""
    pid = dev.device_pid
    targets: list[int] = []
    names: list[str] = []
    origins: list[Origin] = []
    for index, (text, tid) in enumerate(zip(dev.inputs, dev.lanes)):
        if not text:
            continue
        for input_name in text.split(", "):
            name = known_tensor(input_name, table, log_missing=True)
            if name is None:
                continue
            origin = table[name]
            if origin[0] != pid or origin[1] != tid:
                targets.append(index)
                names.append(name)
                origins.append(origin)
    return Flows(targets, names, origins, first_id)


class ProducerIndex:
    """The nodes of a trace by position (all devices end to end), to find flows
    reading a node's recorded outputs only when a flow depends on them."""

    def __init__(self, devices: Sequence[Device], positions: dict[str, int]) -> None:
        self._devices = devices
        self._positions = positions
        self._firsts = list(accumulate([len(dev.names) for dev in devices[:-1]], initial=0))
        self._pids = list(chain.from_iterable(repeat(d.device_pid, len(d.names)) for d in devices))
        self._lanes = list(chain.from_iterable(dev.lanes for dev in devices))
        self._starts = list(chain.from_iterable(dev.starts for dev in devices))
        self._durs = list(chain.from_iterable(dev.durs for dev in devices))
        self._counts = [-1] * len(positions)  # recorded outputs per node; -1: not read yet
        self._reads_left = len(positions) // 4  # one by one, before one pass over all nodes

    @classmethod
    def of(cls, devices: Sequence[Device]) -> Optional[ProducerIndex]:
        """The index of a first trace on a timeline (no tensor recorded before), or
        None when a name could be shadowed: node names not unique over all devices
        or with a ``:`` (then ``node:k`` is only ever output ``k`` of ``node``)."""
        names = list(chain.from_iterable(dev.names for dev in devices))
        positions = dict(zip(names, range(len(names))))
        if len(positions) != len(names) or ":" in "\n".join(names):
            return None
        return cls(devices, positions)

    def flows(self, dev: Device, first_id: int) -> Flows:
        """The flows into ``dev``'s nodes.

        An input that is a node's name as it is (the common case) is output 0 of
        that node: checked here, other names by :meth:`_tensor`.
        """
        pid = dev.device_pid
        pids, lanes, position_of, produced = (
            self._pids,
            self._lanes,
            self._positions.get,
            self._produced,
        )
        targets: list[int] = []
        names: list[str] = []
        sources: list[int] = []
        for index, (text, tid) in enumerate(zip(dev.inputs, dev.lanes)):
            if not text:
                continue
            for name in text.split(", "):
                position = position_of(name)
                if position is None or "/_" in name:
                    found = self._tensor(name, pid, tid)
                    if found is None:
                        continue
                    name, position = found
                    if pids[position] == pid and lanes[position] == tid:
                        continue
                elif pids[position] == pid and lanes[position] == tid:
                    continue  # no flow, whether or not the output was recorded
                elif not produced(position, 0):
                    continue
                targets.append(index)
                names.append(name)
                sources.append(position)
        return Flows(targets, names, self._origins(sources), first_id)

    def _origins(self, positions: list[int]) -> list[Origin]:
        """(pid, tid, end) of the nodes at ``positions``."""
        ends = map(
            add, map(self._starts.__getitem__, positions), map(self._durs.__getitem__, positions)
        )
        pids = map(self._pids.__getitem__, positions)
        return list(zip(pids, map(self._lanes.__getitem__, positions), ends))

    def _tensor(self, name: str, pid: int, tid: int) -> tuple[str, int] | None:
        """(tensor name, producer position) of an input, or None when it is no
        recorded tensor; no check that the tensor was recorded when its name is
        final (no ``/_``) and its producer on lane ``tid`` of device ``pid``."""
        found = self._resolve(name)
        cut = name.rfind("/_")
        if cut <= 0:  # the name is final
            if found is None:
                return None
            position, output = found
            if self._pids[position] == pid and self._lanes[position] == tid:
                return name, position  # no flow, whether or not the output was recorded
            return (name, position) if self._produced(position, output) else None
        if found is None or not self._produced(*found):  # TensorFlow cuts a "/_N" suffix
            name = name[:cut]
            found = self._resolve(name)
            if found is None or not self._produced(*found):
                return None
        return name, found[0]

    def _resolve(self, name: str) -> tuple[int, int] | None:
        """(position of the producer, output index) that ``name`` would be."""
        position = self._positions.get(name)
        if position is not None:
            return position, 0
        base, colon, digits = name.rpartition(":")
        if colon and digits.isascii() and digits.isdigit() and digits[0] != "0":
            position = self._positions.get(base)
            if position is not None:
                return position, int(digits)
        return None

    def _produced(self, position: int, index: int) -> bool:
        """Whether the node at ``position`` recorded output ``index`` (nodes read one
        by one until a quarter of them are needed, then all in one pass)."""
        count = self._counts[position]
        if count < 0:
            if self._reads_left:
                self._reads_left -= 1
                number = bisect_right(self._firsts, position) - 1
                node = self._devices[number].stats.node_stats[position - self._firsts[number]]
                count = self._counts[position] = len(node.output)
            else:
                self._counts = [
                    len(node.output) for dev in self._devices for node in dev.stats.node_stats
                ]
                count = self._counts[position]
        return index < count
