"""Python call stacks of an XSpace's ops, for the code view.

Two sources, best first, give each node one call stack (outermost frame first),
as an op log's code trace does for a TF1 graph (:func:`code_stacks`):

* **XLA programs** (JAX, TF with XLA): the HLO proto of a program in
  ``/host:metadata`` keeps, per instruction, the Python stack that built it
  (``OpMetadata.stack_frame_id`` into the module's ``stack_frame_index``: file,
  line and function of every frame, full paths). A node named after an
  instruction's framework scope (``jit(train_step)/jvp(MLP)/dense0/dot_general``)
  takes the stack of the first instruction of that scope that has one; an
  instruction with only ``source_file``/``source_line`` gives a one-frame stack.
* **The Python tracer** (JAX's ``jax.profiler`` and TensorFlow's
  ``python_tracer_level=1`` write it): events ``$<file>:<line> <function>`` on a
  host thread, nested as the calls were. A TF op or an XLA program's host
  execution takes the frames open on its thread when it started; a device
  event (kernel, copy) the frames open around its host launch (the event
  with its ``correlation_id``: a TF op's launch, an XLA program's
  ``cuGraphLaunch``/``cuLaunchKernel``). Events of C functions
  (``$builtins isinstance``, ``$<unknown> view``) carry no file and line and
  are left out. A program execution with no tracer frame around it takes the
  frames all of the program's instruction stacks start with (the call site of
  the traced function). The tracer writes file base names only, so user-code mode
  (``Options.user_code``) cannot tell library files from the user's by path
  there; the HLO stacks have full paths.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.formats.xspace.read.events import PLANE_GPU, EventTable
from tfprof_lite.formats.xspace.read.intervals import LineIntervals
from tfprof_lite.formats.xspace.read.xla import hlo_protos
from tfprof_lite.model.records import CodeFrame
from tfprof_lite.proto.hlo_module import read_hlo_module

if TYPE_CHECKING:
    from tfprof_lite.model.profile import ProfileModel

__all__ = [
    "CodeSources",
    "PythonStacks",
    "add_code_stacks",
    "call_site",
    "code_sources",
    "code_stacks",
    "defer_code_stacks",
    "hlo_stacks",
    "python_frame",
]

log = logging.getLogger("tfprof_lite")

I64 = npt.NDArray[np.int64]

#: Events whose open frames are looked up at once.
_QUERIES = 1 << 16
_PY_FRAME = re.compile(r"\$(?P<file>[^\s:]+):(?P<line>\d+) (?P<func>.+)")


def python_frame(name: str) -> CodeFrame | None:
    """The frame of a Python tracer event ``$<file>:<line> <function>`` (None for
    other events and for C functions, which have no line)."""
    found = _PY_FRAME.fullmatch(name)
    if not found:
        return None
    return CodeFrame(found.group("file"), int(found.group("line")), found.group("func"))


# ------------------------------------------------------------------ HLO stacks


def _frames(
    index: Any, frame_id: int, memo: dict[int, list[CodeFrame]] | None = None
) -> list[CodeFrame]:
    """The stack ending at ``frame_id`` (1-based) of a StackFrameIndexProto,
    outermost first; [] when the ids do not resolve. ``memo`` keeps the stacks
    already resolved in one index."""
    if memo is not None:
        if frame_id not in memo:
            memo[frame_id] = _frames(index, frame_id)
        return memo[frame_id]
    out: list[CodeFrame] = []
    seen: set[int] = set()
    while 0 < frame_id <= len(index.stack_frames) and frame_id not in seen:
        seen.add(frame_id)
        frame = index.stack_frames[frame_id - 1]
        loc_id = frame.file_location_id
        if not 0 < loc_id <= len(index.file_locations):
            return []
        loc = index.file_locations[loc_id - 1]
        names, funcs = index.file_names, index.function_names
        file = names[loc.file_name_id - 1] if 0 < loc.file_name_id <= len(names) else ""
        func = funcs[loc.function_name_id - 1] if 0 < loc.function_name_id <= len(funcs) else ""
        out.append(CodeFrame(file, int(loc.line), func))
        frame_id = frame.parent_frame_id
    return out[::-1]


def _module_stacks(module: Any) -> dict[str, list[CodeFrame]]:
    """Framework scope (``op_name`` without outer ``/``) -> the stack of the first
    instruction of the module (fused ones included) that has one."""
    index = module.stack_frame_index
    memo: dict[int, list[CodeFrame]] = {}
    out: dict[str, list[CodeFrame]] = {}
    for comp in module.computations:
        for instr in comp.instructions:
            meta = instr.metadata
            scope = str(meta.op_name).strip("/")
            if not scope or scope in out:
                continue
            frames = _frames(index, int(meta.stack_frame_id), memo) if meta.stack_frame_id else []
            if not frames and meta.source_file:
                frames = [CodeFrame(str(meta.source_file), int(meta.source_line), "")]
            if frames:
                out[scope] = frames
    return out


def hlo_stacks(
    table: EventTable, programs: set[int] | None = None
) -> dict[str, dict[str, list[CodeFrame]]]:
    """Module name -> framework scope -> call stack, for the HLO programs of the
    file (those of ``programs`` only when given; programs without an id always)."""
    return _parsed_stacks(_wanted_protos(table, programs))


def _wanted_protos(table: EventTable, programs: set[int] | None) -> list[tuple[int | None, bytes]]:
    return [
        (program, data)
        for program, data in hlo_protos(table)
        if programs is None or program is None or program in programs
    ]


def _parsed_stacks(
    protos: Sequence[tuple[int | None, Any]],
) -> dict[str, dict[str, list[CodeFrame]]]:
    """``protos``: serialized ``HloProto``s, or modules already parsed."""
    out: dict[str, dict[str, list[CodeFrame]]] = {}
    for _, data in protos:
        if not isinstance(data, bytes):
            module = data
        else:
            try:
                module = read_hlo_module(data)
            except InvalidInputError as err:
                log.warning("XLA program without call stacks: %s", err)
                continue
        out.setdefault(str(module.name), {}).update(_module_stacks(module))
    return out


# ------------------------------------------------------------------ tracer stacks


class PythonStacks:
    """The Python frames open on a host thread at a given time.

    The tracer events of each line, by start (longer first at equal starts),
    in :class:`~tfprof_lite.formats.xspace.read.intervals.LineIntervals`; each event's
    parent is the last earlier one still open when it starts.
    """

    def __init__(
        self, table: EventTable, traced: tuple[dict[int, CodeFrame], I64] | None = None
    ) -> None:
        """The tracer events of ``table`` (``traced``: its :func:`tracer_rows`,
        when already found)."""
        cols = table.cols
        frame_of, rows = tracer_rows(table) if traced is None else traced
        lines = cols.event_line[rows].astype(np.int64)
        starts, ends = table.start[rows], table.end[rows]
        order = np.lexsort((-ends, starts, lines))
        self.frames = [frame_of[m] for m in cols.event_meta[rows[order]].tolist()]
        self.spans = LineIntervals(
            np.arange(len(rows), dtype=np.int64), lines[order], starts[order], ends[order]
        )
        position = np.arange(len(rows), dtype=np.int64)
        self.parent = self.spans.last_running(
            position - 1, self.spans.starts, self.spans.first_of(self.spans.lines)
        ).tolist()
        self._stacks: dict[int, list[CodeFrame]] = {}

    def __bool__(self) -> bool:
        return bool(self.frames)

    def positions(self, lines: I64, times: I64) -> I64:
        """For each (line, time ps): the innermost frame open there (-1: none)."""
        return self.spans.around(lines, times)

    def stack(self, position: int) -> list[CodeFrame]:
        """The frames open around frame ``position``'s event and it, outermost first."""
        found = self._stacks.get(position)
        if found is None:
            out: list[CodeFrame] = []
            at = position
            while at >= 0:
                out.append(self.frames[at])
                at = self.parent[at]
            found = self._stacks[position] = out[::-1]
        return found

    def at(self, line: int, t: int) -> list[CodeFrame]:
        """The frames open on ``line`` at time ``t`` (ps), outermost first."""
        at = int(self.positions(np.asarray([line]), np.asarray([t]))[0])
        return self.stack(at) if at >= 0 else []


def _frames_by_meta(table: EventTable) -> dict[int, CodeFrame]:
    """The frame of each host event metadata that is a Python tracer frame."""
    cols = table.cols
    meta = cols.event_meta[table.host_events()]
    frame_of: dict[int, CodeFrame] = {}
    present = np.zeros(len(cols.meta_name) + 1, dtype=bool)
    present[meta + 1] = True  # -1: no metadata
    for m in (np.flatnonzero(present) - 1).tolist():
        name = cols.meta_name[m] if m >= 0 else ""
        frame = python_frame(name) if name.startswith("$") else None
        if frame is not None:
            frame_of[m] = frame
    return frame_of


def tracer_rows(table: EventTable) -> tuple[dict[int, CodeFrame], I64]:
    """The frame of each tracer event metadata, and the host tracer events' rows."""
    frame_of = _frames_by_meta(table)
    traced = np.zeros(len(table.cols.meta_name) + 1, dtype=bool)  # index -1: no metadata
    traced[list(frame_of)] = True
    host = table.host_events()
    return frame_of, host[traced[table.cols.event_meta[host]]]


# ------------------------------------------------------------------ per node


def _launches(table: EventTable, events: I64) -> I64:
    """The host launch of each device event (the host event with its
    ``correlation_id``, the last one in row order), -1 when none."""
    has = table.has_int["correlation_id"]
    host = table.host_events()
    host = host[has[host]]
    keys = table.ints.at("correlation_id", host)
    order = np.lexsort((host, keys))
    keys, host = keys[order], host[order]
    last = np.ones(len(keys), dtype=bool)
    last[:-1] = keys[1:] != keys[:-1]
    keys, host = keys[last], host[last]
    if not len(keys):
        return np.full(len(events), -1, dtype=np.int64)
    wanted = table.ints.at("correlation_id", events)
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    found = has[events] & (keys[at] == wanted)
    return np.where(found, host[at], -1)


def _by_start(table: EventTable, events: I64) -> I64:
    return events[np.argsort(table.start[events], kind="stable")]


def _python_stacks(
    table: EventTable,
    python: PythonStacks,
    events: I64,
    nodes: list[str],
    into: dict[str, list[CodeFrame]],
) -> None:
    """Give each node of ``nodes`` (one per host event of ``events``, by start)
    not in ``into`` the frames open when its first event with any started
    (:data:`_QUERIES` events at a time: the lookup's temporaries stay small)."""
    for low in range(0, len(events), _QUERIES):
        part = events[low : low + _QUERIES]
        lines = table.cols.event_line[part].astype(np.int64)
        positions = python.positions(lines, table.start[part])
        hit = np.flatnonzero(positions >= 0)
        for i, at in zip((hit + low).tolist(), positions[hit].tolist()):
            if nodes[i] not in into:
                into[nodes[i]] = python.stack(at)


@dataclass
class CodeSources:
    """What the nodes' call stacks come from, gathered while reading a file:
    the Python tracer's stack of each node it gives one, and for the HLO
    stacks the programs' protos (serialized, or parsed where the XLA index
    already parsed them), the distinct (node, HLO
    module, framework scope) of the device events mapped to an instruction,
    by event start (then those of XLA's host op events on a CPU), and the XLA
    programs executed on the host."""

    from_python: dict[str, list[CodeFrame]] = field(default_factory=dict)
    protos: list[tuple[int | None, Any]] = field(default_factory=list)
    mapped: list[tuple[str, str, str]] = field(default_factory=list)
    programs: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.from_python or self.protos)

    def stacks(self) -> dict[str, list[CodeFrame]]:
        """Node name -> its call stack (parses the HLO programs)."""
        hlo_by_module = _parsed_stacks(self.protos)
        from_hlo: dict[str, list[CodeFrame]] = {}
        for node, module, scope in self.mapped:
            if node not in from_hlo:
                built = hlo_by_module.get(module, {}).get(scope)
                if built:
                    from_hlo[node] = built
        for module in self.programs:
            if module not in self.from_python and module not in from_hlo:
                site = call_site(hlo_by_module.get(module, {}))
                if site:
                    from_hlo[module] = site
        return {**self.from_python, **from_hlo}


def _parsed_if_indexed(
    protos: list[tuple[int | None, bytes]], index: Any
) -> list[tuple[int | None, Any]]:
    """``protos`` with the modules the XLA index already parsed in place of their
    bytes (the same parse), so the stacks do not parse them again."""
    if index is None:
        return list(protos)
    seen = Counter(program for program, _ in protos)
    out: list[tuple[int | None, Any]] = []
    for program, data in protos:
        # (the index keeps the last of several programs with one id)
        once = program is not None and seen[program] == 1
        module = index.module(program) if once else None
        out.append((program, data if module is None else module))
    return out


def code_sources(table: EventTable, attribution: Any) -> CodeSources:
    """What the nodes' call stacks come from (see the module docstring).

    ``attribution`` is the conversion's op attribution: its ``tf_ops`` (host
    event -> (name, type)), ``programs`` (host execution of an XLA program ->
    its node, when present), ``xla`` (the HLO op of the device events that map
    to one, in columns), ``nodes`` and ``nodes_at`` (the node of device events).
    """
    traced = tracer_rows(table)
    xla = attribution.xla
    # (return_index: a bare np.unique imports numpy.ma, some 20 ms)
    mapped_ops, _ = np.unique(xla.at[xla.at >= 0], return_index=True)
    out = CodeSources()
    if len(mapped_ops):
        ops = xla.ops
        wanted = _wanted_protos(table, {ops[a].program_id for a in mapped_ops.tolist()})
        out.protos = _parsed_if_indexed(wanted, xla.index)
    if not len(traced[1]) and not out.protos:
        return out
    programs: dict[int, str] = getattr(attribution, "programs", {})
    out.programs = list(dict.fromkeys(programs.values()))
    device = _by_start(table, np.flatnonzero((table.plane_kind == PLANE_GPU) & ~table.derived))
    launches = _launches(table, device)
    node = attribution.nodes_at(device, launches)
    out.mapped = _mapped(device, node, xla, attribution.nodes)
    # XLA's ops on a CPU: each node is named by the instruction's scope
    host_xla: dict[int, tuple[str, str, str]] = getattr(attribution, "host_xla", {})
    seen = dict.fromkeys((name, module, name) for name, _, module in host_xla.values())
    out.mapped += [m for m in seen if m not in out.mapped]
    if not len(traced[1]):
        return out
    launched = np.flatnonzero(launches >= 0)
    launch_events, launch_nodes = launches[launched], node[launched]
    del device, launches, node, launched
    # The frames are looked up last: a large file's tracer index is not held
    # next to the device events' lookups.
    python = PythonStacks(table, traced)
    host_ops = {e: name for e, (name, _) in attribution.tf_ops.items()}
    host_ops.update({e: name for e, (name, _, _) in host_xla.items()})
    host_ops.update(programs)
    events = _by_start(table, np.fromiter(host_ops, dtype=np.int64, count=len(host_ops)))
    _python_stacks(table, python, events, [host_ops[e] for e in events.tolist()], out.from_python)
    del host_ops, events
    names = attribution.nodes
    _python_stacks(table, python, launch_events,
                   [names[n][0] for n in launch_nodes.tolist()], out.from_python)  # fmt: skip
    return out


def _mapped(
    device: I64, node: I64, xla: Any, nodes: list[tuple[str, Any]]
) -> list[tuple[str, str, str]]:
    """The distinct (node, HLO module, framework scope) of the device events
    ``device`` (by start; ``node``: theirs) mapped to an HLO op, in order."""
    if not len(xla.events) or not len(device):
        return []
    pos = np.minimum(np.searchsorted(xla.events, device), len(xla.events) - 1)
    op = np.where(xla.events[pos] == device, xla.at[pos], -1)
    del pos
    hit = np.flatnonzero(op >= 0)
    ops = xla.ops
    mapped: dict[tuple[str, str, str], None] = {}
    # By chunks of events: the distinct pairs of each in first-seen order, after
    # those of the chunks before, are the distinct pairs of all in that order.
    for low in range(0, len(hit), _QUERIES):
        part = hit[low : low + _QUERIES]
        pairs = node[part] * len(ops) + op[part]
        _, first = np.unique(pairs, return_index=True)
        first.sort()
        for n, o in zip(node[part[first]].tolist(), op[part[first]].tolist()):
            mapped.setdefault((nodes[n][0], ops[o].module, ops[o].scope), None)
    return list(mapped)


def code_stacks(table: EventTable, attribution: Any) -> dict[str, list[CodeFrame]]:
    """Node name -> its call stack (see the module docstring): the stacks of
    :func:`code_sources`."""
    return code_sources(table, attribution).stacks()


def call_site(stacks: dict[str, list[CodeFrame]]) -> list[CodeFrame]:
    """The frames every stack of a program starts with (where the traced
    function was called from), outermost first; [] when none is shared."""
    common: list[CodeFrame] | None = None
    for stack in stacks.values():
        if common is None:
            common = list(stack)
            continue
        size = 0
        for mine, theirs in zip(common, stack):
            if mine != theirs:
                break
            size += 1
        del common[size:]
        if not common:
            break
    return common or []


def defer_code_stacks(model: ProfileModel, sources: CodeSources) -> None:
    """Give the model's nodes the stacks of ``sources`` when its traces are first
    used (:class:`~tfprof_lite.model.traces.DeferredTraces`): parsing the HLO
    programs waits for the code view, pprof or a saved profile."""
    if sources:
        model.defer_traces(lambda: add_code_stacks(model, sources.stacks()))


def add_code_stacks(model: ProfileModel, stacks: dict[str, list[CodeFrame]]) -> None:
    """Give the model's nodes the stacks of ``stacks`` (a node keeps one it has)."""
    traced = False
    for name, stack in stacks.items():
        nid = model.index.get(name)
        if nid is not None and model.traces[nid] is None:
            model.traces[nid] = stack
            traced = True
    if traced:
        model.has_trace = True
        model.data_version += 1
        model.graph_version += 1
