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

import bisect
import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model.records import CodeFrame
from tfprof_lite.model.xspace_events import PLANE_GPU, EventTable
from tfprof_lite.model.xspace_xla import hlo_protos
from tfprof_lite.proto.hlo import parse_hlo_proto

if TYPE_CHECKING:
    from tfprof_lite.model.profile import ProfileModel

__all__ = [
    "PythonStacks",
    "add_code_stacks",
    "call_site",
    "code_stacks",
    "hlo_stacks",
    "python_frame",
]

log = logging.getLogger("tfprof_lite")

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
    out: dict[str, dict[str, list[CodeFrame]]] = {}
    for program, data in hlo_protos(table):
        if programs is not None and program is not None and program not in programs:
            continue
        try:
            module = parse_hlo_proto(data).hlo_module
        except InvalidInputError as err:
            log.warning("XLA program without call stacks: %s", err)
            continue
        out.setdefault(str(module.name), {}).update(_module_stacks(module))
    return out


# ------------------------------------------------------------------ tracer stacks


@dataclass
class _LineFrames:
    """The Python tracer events of one line, by start, with their enclosing event."""

    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    frames: list[CodeFrame] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)


class PythonStacks:
    """The Python frames open on a host thread at a given time."""

    def __init__(self, table: EventTable) -> None:
        self.lines: dict[int, _LineFrames] = {}
        host = table.host_events()
        found: dict[int, list[tuple[int, int, CodeFrame]]] = {}
        cache: dict[str, CodeFrame | None] = {}
        for event in host.tolist():
            name = table.names[event]
            if not name.startswith("$"):
                continue
            if name not in cache:
                cache[name] = python_frame(name)
            frame = cache[name]
            if frame is not None:
                found.setdefault(table.line_of(event), []).append(
                    (int(table.start[event]), -int(table.end[event]), frame)
                )
        for line, events in found.items():
            events.sort(key=lambda e: (e[0], e[1]))
            frames = _LineFrames()
            open_: list[int] = []
            for at, (start, neg_end, frame) in enumerate(events):
                while open_ and frames.ends[open_[-1]] < start:
                    open_.pop()
                frames.starts.append(start)
                frames.ends.append(-neg_end)
                frames.frames.append(frame)
                frames.parent.append(open_[-1] if open_ else -1)
                open_.append(at)
            self.lines[line] = frames

    def __bool__(self) -> bool:
        return bool(self.lines)

    def at(self, line: int, t: int) -> list[CodeFrame]:
        """The frames open on ``line`` at time ``t`` (ps), outermost first."""
        frames = self.lines.get(line)
        if frames is None:
            return []
        at = bisect.bisect_right(frames.starts, t) - 1
        while at >= 0 and frames.ends[at] < t:
            at = frames.parent[at]
        out: list[CodeFrame] = []
        while at >= 0:
            out.append(frames.frames[at])
            at = frames.parent[at]
        return out[::-1]


# ------------------------------------------------------------------ per node


def code_stacks(table: EventTable, attribution: Any) -> dict[str, list[CodeFrame]]:
    """Node name -> its call stack (see the module docstring).

    ``attribution`` is the conversion's op attribution: its ``tf_ops`` (host
    event -> (name, type)), ``programs`` (host execution of an XLA program ->
    its node, when present), ``hlo`` (device event -> HLO op), ``launch_of``
    and ``op_of``.
    """
    python = PythonStacks(table)
    programs = {op.program_id for op in attribution.hlo.values()}
    hlo_by_module = hlo_stacks(table, programs) if attribution.hlo else {}
    if not python and not hlo_by_module:
        return {}
    from_hlo: dict[str, list[CodeFrame]] = {}
    from_python: dict[str, list[CodeFrame]] = {}
    if python:
        host_ops = {e: name for e, (name, _) in attribution.tf_ops.items()}
        host_ops.update(getattr(attribution, "programs", {}))
        for event in sorted(host_ops, key=lambda e: int(table.start[e])):
            name = host_ops[event]
            if name not in from_python:
                stack = python.at(table.line_of(event), int(table.start[event]))
                if stack:
                    from_python[name] = stack
    device = np.flatnonzero((table.plane_kind == PLANE_GPU) & ~table.derived).tolist()
    for event in sorted(device, key=lambda e: int(table.start[e])):
        launch = attribution.launch_of(event)
        node = attribution.op_of(event, launch)
        mapped = attribution.hlo.get(event)
        if mapped is not None and node not in from_hlo:
            built = hlo_by_module.get(mapped.module, {}).get(mapped.scope)
            if built:
                from_hlo[node] = built
        if python and launch >= 0 and node not in from_python:
            stack = python.at(table.line_of(launch), int(table.start[launch]))
            if stack:
                from_python[node] = stack
    for module in set(getattr(attribution, "programs", {}).values()):
        if module not in from_python and module not in from_hlo:
            site = call_site(hlo_by_module.get(module, {}))
            if site:
                from_hlo[module] = site
    return {**from_python, **from_hlo}


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
