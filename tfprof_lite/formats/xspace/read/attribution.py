"""Which op each event of an XSpace belongs to (:class:`Attribution`).

Host events are TF ops (an event ``<name>:<type>``), XLA ops on a CPU's host
threads, or the executions of XLA programs; a device event belongs to the op
that launched it: its ``tf_op`` stat, else its HLO instruction's framework
scope, else ``<hlo_module>/<hlo_op>``, else through ``correlation_id`` the TF
op around the host launch, else its own name. The step conversion
(:mod:`tfprof_lite.formats.xspace.read.conversion`) and the window
(:mod:`tfprof_lite.formats.xspace.read.window`) read the same answers.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from tfprof_lite.formats.xspace.read.events import (
    EventTable,
    distinct_codes,
)
from tfprof_lite.formats.xspace.read.steps import (
    outermost,
    program_runs,
)
from tfprof_lite.formats.xspace.read.xla import host_xla_ops, xla_events

__all__ = ["LARGE_EVENTS", "Attribution", "tf_op_of"]

I64 = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_TF_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*")
_TF_TYPE = re.compile(r"[A-Z_][a-zA-Z0-9_]*")
# XLA's own kernels are named after their HLO instruction (fusions, wrapped
# single ops); library kernels (cuBLAS, cuDNN, CUTLASS) are not.
_HLO_KERNEL = re.compile(r"(?:[a-z0-9_]*fusion[a-z0-9_.\-]*|wrapped_[a-z0-9_.\-]+)")
_TRAILING_NUMBER = re.compile(r"[._]\d+$")
# An eager iterator read (``next(iter(dataset))`` outside a tf.function) has no
# "<name>:<type>" event, only the eager runtime's "EagerLocalExecute: <type>".
_EAGER_INPUT = re.compile(r"EagerLocalExecute: (IteratorGetNext[A-Za-z0-9_]*)")
#: Events from which a released conversion gives freed memory back between
#: phases (smaller files free too little for it to matter).
LARGE_EVENTS = 1 << 18


def tf_op_of(name: str, display_name: str, strict: bool) -> tuple[str, str] | None:
    """(op name, op type) when event ``name`` is a TF op (``<name>:<type>``)."""
    op, sep, kind = name.rpartition(":")
    if not sep or not op:
        return None
    if strict and display_name != kind:
        return None
    if _TF_NAME.fullmatch(op) and _TF_TYPE.fullmatch(kind):
        return op, kind
    return None


def _host_op_of(name: str, display_name: str, strict: bool) -> tuple[str, str] | None:
    """(op name, op type) of a host event that is a TF op: a graph op, or an
    eager iterator read (named after its type, as eager ops have no node name)."""
    eager = _EAGER_INPUT.fullmatch(name)
    if eager is not None:
        return eager.group(1), eager.group(1)
    return tf_op_of(name, display_name, strict)


def _hlo_op_type(op: str) -> str:
    """An HLO instruction's name without its numbering (``loop_add_fusion_3`` ->
    ``loop_add_fusion``), the op type until the HLO program says better."""
    return _TRAILING_NUMBER.sub("", op) or op


class Attribution:
    """Which op each event belongs to.

    Host events: ``tf_ops`` (event -> (op name, op type)), ``host_xla`` (the
    host events of XLA ops on a CPU -> (node name, op type, module)),
    ``programs`` (the outermost execution of an XLA program whose ops are not
    host events -> its module) and ``node_types``.
    Device events, in columns over ``device`` (the GPU events, by row):
    ``launch`` (the host launch event, -1: none) and ``node`` (an index into
    ``nodes``: (node name, op type or ``None`` when the node keeps the type it
    has)). ``xla`` holds their HLO instructions;
    :meth:`nodes_at` and :meth:`op_of` answer for any events.
    """

    def __init__(self, table: EventTable) -> None:
        cols = table.cols
        self.table = table
        host = table.host_events()
        metas = cols.event_meta[host].astype(np.int64)
        # JAX runs no TF ops (its runtime's "<name>:<what>" events are not ops).
        no_tf = cols.key_of("jax_version") >= 0
        self.tf_ops: dict[int, tuple[str, str]] = {} if no_tf else _tf_ops(table, host, metas)
        # JAX: each execution of an XLA program on a host thread is the host side
        # of its kernels (dispatch, launch), a node of op type XlaModule.
        self.xla = xla_events(table)
        # XLA's CPU runtime: each op of a program is a host event of its own
        self.host_xla = host_xla_ops(table, self.xla)
        self.programs: dict[int, str] = _programs(table, host) if no_tf else {}
        if self.host_xla:  # a program's ops say where its time went: not one node
            run = {module for _, _, module in self.host_xla.values()}
            self.programs = {e: m for e, m in self.programs.items() if m not in run}
        self.node_types: dict[str, str] = {name: kind for name, kind in self.tf_ops.values()}
        for name, kind, _ in self.host_xla.values():
            self.node_types.setdefault(name, kind)
        for module in self.programs.values():
            self.node_types.setdefault(module, "XlaModule")
        self._corr, self._launcher = _launch_index(table, host)
        self._lines: dict[int, tuple[list[int], list[int]]] | None = None
        self.nodes: list[tuple[str, str | None]] = []
        self._node_index: dict[tuple[str, str | None], int] = {}
        self.device = table.device_events()
        self.launch = self.launches_of(self.device)
        self.node = self._nodes_of(self.device, self.launch)

    def launches_of(self, events: I64) -> I64:
        """The host launch event of each device event (by ``correlation_id``), or -1."""
        table = self.table
        corr = table.ints.at("correlation_id", events)
        keys = self._corr
        if not len(keys):
            return np.full(len(events), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(keys, corr), len(keys) - 1)
        hit = table.has_int["correlation_id"][events] & (keys[at] == corr)
        return np.where(hit, self._launcher[at], -1).astype(np.int64)

    def _device_at(self, events: I64) -> tuple[I64, BoolArray]:
        """The position in ``device`` of each of ``events``, and whether it is one."""
        device = self.device
        if not len(device):
            return np.zeros(len(events), dtype=np.int64), np.zeros(len(events), dtype=bool)
        at = np.minimum(np.searchsorted(device, events), len(device) - 1)
        return at, device[at] == events

    def nodes_at(self, events: I64, launches: I64) -> I64:
        """The node (index into ``nodes``) each device event of ``events``
        (launched by ``launches``) adds its time to; gives the nodes their types
        in ``node_types`` as :meth:`op_of` does, in event order."""
        at, known = self._device_at(events)
        if len(self.device):
            known &= self.launch[at] == launches
            node = np.where(known, self.node[at], -1)
        else:
            node = np.full(len(events), -1, dtype=np.int64)
        other = np.flatnonzero(~known)
        if len(other):
            node[other] = self._nodes_of(events[other], launches[other])
        self.type_nodes(node)
        return node

    def op_of(self, event: int, launch: int) -> str:
        """The node name device event ``event`` (launched by ``launch``) adds its
        time to."""
        one = np.asarray([event], dtype=np.int64)
        node = int(self.nodes_at(one, np.asarray([launch], dtype=np.int64))[0])
        return self.nodes[node][0]

    def type_nodes(self, node: I64) -> None:
        """Give the nodes of ``node`` (ids into ``nodes``, in event order) their op
        types in ``node_types`` (a node's first event's type; a type it has stays)."""
        self._type_into(self.node_types, node)

    def typed(self, node: I64) -> dict[str, str]:
        """``node_types`` as :meth:`type_nodes` of ``node`` would leave it, in a
        new dict (``node_types`` stays as it is)."""
        types = dict(self.node_types)
        self._type_into(types, node)
        return types

    def _type_into(self, types: dict[str, str], node: I64) -> None:
        if not len(node):
            return
        ids, first = np.unique(node, return_index=True)
        for at in ids[np.argsort(first)].tolist():
            name, kind = self.nodes[at]
            if kind is not None:
                types.setdefault(name, kind)

    def _node(self, name: str, kind: str | None) -> int:
        key = (name, kind)
        found = self._node_index.get(key)
        if found is None:
            found = self._node_index[key] = len(self.nodes)
            self.nodes.append(key)
        return found

    def _nodes_of(self, events: I64, launches: I64) -> I64:
        """The node of each device event: its ``tf_op`` stat, else its HLO
        instruction's scope, else ``<hlo_module>/<hlo_op>``, else the TF op
        around its launch, else its own name (see the module docstring)."""
        table = self.table
        strings = table.cols.strings
        codes = table.codes
        node = self._by_code(codes["tf_op"][events].astype(np.int64), self._tf_op_node)
        xla = self.xla
        if len(xla.events):
            pos = np.minimum(np.searchsorted(xla.events, events), len(xla.events) - 1)
            op = np.where(xla.events[pos] == events, xla.at[pos], -1)
            mapped = (node < 0) & (op >= 0)
            if mapped.any():
                by_op = np.asarray(
                    [self._node(o.scope, o.type_label) for o in xla.ops], dtype=np.int64
                )
                node[mapped] = by_op[op[mapped]]
        hlo_op, module = codes["hlo_op"][events], codes["hlo_module"][events]
        for at in np.flatnonzero(node < 0).tolist():
            event = int(events[at])
            op_code, module_code = int(hlo_op[at]), int(module[at])
            text = strings[op_code] if op_code >= 0 else ""
            if text:
                node[at] = self._hlo_node(text, strings[module_code] if module_code >= 0 else "",
                                          table.names[event])  # fmt: skip
                continue
            around = self._around(int(launches[at])) if launches[at] >= 0 else ""
            node[at] = self._node(around or table.names[event], None)
        return node

    def _by_code(self, codes: I64, node_of: Callable[[str], int]) -> I64:
        """``node_of(text)`` of each code's text, once per code (-1 for absent)."""
        if not len(codes):
            return np.zeros(0, dtype=np.int64)
        strings = self.table.cols.strings
        used, inverse = distinct_codes(codes, len(strings))
        found = [node_of(strings[c]) if c >= 0 else -1 for c in used.tolist()]
        return np.asarray(found, dtype=np.int64)[inverse.reshape(-1)]

    def _tf_op_node(self, tf_op: str) -> int:
        name, _, kind = tf_op.rpartition(":")
        if name and name != "XlaModule":
            return self._node(name, kind or name)
        return -1

    def _hlo_node(self, hlo_op: str, module: str, kernel: str) -> int:
        if hlo_op.startswith("command_buffer") and _HLO_KERNEL.fullmatch(kernel):
            hlo_op = kernel
        return self._node(f"{module}/{hlo_op}" if module else hlo_op, _hlo_op_type(hlo_op))

    def _around(self, host_event: int) -> str:
        """The innermost TF op on the same line around ``host_event``'s start."""
        if self._lines is None:
            self._lines = _op_lines(self.table, self.tf_ops)
        table = self.table
        found = self._lines.get(table.line_of(host_event))
        if not found:
            return ""
        events, starts = found
        t = int(table.start[host_event])
        at = bisect.bisect_right(starts, t) - 1
        while at >= 0:
            op = events[at]
            if int(table.end[op]) >= t:
                return self.tf_ops[op][0]
            at -= 1
        return ""


def _tf_ops(table: EventTable, host: I64, metas: I64) -> dict[int, tuple[str, str]]:
    """Host event -> (op name, op type) of the host events that are TF ops (decided
    once per event metadata)."""
    cols = table.cols
    # TF names its ops' metadata by type; in files without display names (older
    # TF) any "<name>:<type>" event is an op.
    host_planes = {i for i, name in enumerate(cols.plane_name) if name == "/host:CPU"}
    strict = any(
        d for d, p in zip(cols.meta_display_name, cols.meta_plane.tolist()) if p in host_planes
    )
    if not len(host):
        return {}
    used, inverse = distinct_codes(metas, len(cols.meta_name))
    found = [
        _host_op_of(cols.meta_name[m], cols.meta_display_name[m], strict) if m >= 0 else None
        for m in used.tolist()
    ]
    which = inverse.reshape(-1)
    is_op = np.asarray([f is not None for f in found], dtype=bool)[which]
    return {e: found[i] for e, i in zip(host[is_op].tolist(), which[is_op].tolist())}


def _programs(table: EventTable, host: I64) -> dict[int, str]:
    """The outermost host executions of XLA programs -> the program (module) run."""
    rows, which, modules = program_runs(table, host)
    kept = outermost(table, rows)
    module = which[np.searchsorted(rows, np.asarray(kept, dtype=np.int64))].tolist()
    return {e: modules[m] for e, m in zip(kept, module, strict=True)}


def _launch_index(table: EventTable, host: I64) -> tuple[I64, I64]:
    """The ``correlation_id`` values of host events, sorted, and the host event of
    each (the last one of a value)."""
    has = table.has_int["correlation_id"]
    events = host[has[host]]
    corr = table.ints.at("correlation_id", events)
    order = np.argsort(corr, kind="stable")
    corr, events = corr[order], events[order]
    last = np.ones(len(corr), dtype=bool)
    last[:-1] = corr[1:] != corr[:-1]
    return corr[last], events[last]


def _op_lines(
    table: EventTable, tf_ops: dict[int, tuple[str, str]]
) -> dict[int, tuple[list[int], list[int]]]:
    """Line -> the TF op events on it by start, and their starts."""
    by_line: dict[int, list[int]] = {}
    for event in tf_ops:
        by_line.setdefault(table.line_of(event), []).append(event)
    out: dict[int, tuple[list[int], list[int]]] = {}
    for line, events in by_line.items():
        ordered = sorted(events, key=lambda e: int(table.start[e]))
        out[line] = (ordered, [int(table.start[e]) for e in ordered])
    return out
