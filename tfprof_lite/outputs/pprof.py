"""tfprof's pprof output (``-output pprof:outfile=PATH``, code view, one select).

:func:`render` returns the gzip-compressed ``perftools.profiles.Profile`` that
TensorFlow 2.21 writes for the same query: two sample types (``count`` and the
selected attribute), one sample per graph node under each displayed leaf with the
call chain (innermost first) as locations, functions and locations keyed the way
tfprof keys them, and tfprof's string-table order.

In the code view's user-code mode (``Options.user_code``, not a tfprof option)
each frame is its own location instead: its function at its *own* line, the
outermost frame included (tfprof pairs a callee's function with the caller's
line and leaves out the outermost function). ``pprof -list FUNCTION`` then shows
the time on the user's lines that created the ops.
"""

from __future__ import annotations

from typing import Any

from tfprof_lite.base.metrics import BY_SELECT, METRICS
from tfprof_lite.outputs.pprof_builder import PprofBuilder, function_name, gzip_profile
from tfprof_lite.proto import messages as pb
from tfprof_lite.views.node import Frame, ShowNode
from tfprof_lite.views.result import ViewResult

__all__ = ["PPROF_SELECTS", "build", "check_pprof_select", "render"]

#: select name -> (unit, comment) for the second sample type.
PPROF_SELECTS: dict[str, tuple[str, str]] = {
    m.select: (m.pprof_unit, m.pprof_comment) for m in METRICS if m.pprof_unit
}

_U64 = 1 << 64


def check_pprof_select(select: tuple[str, ...]) -> str | None:
    """tfprof's complaint about ``select`` for pprof output, or None if it is fine."""
    if len(select) != 1:
        return "Can only select 1 attribute for pprof output."
    if select[0] not in PPROF_SELECTS:
        return f"pprof doesn't support -select={select[0]}"
    return None


class _Tables(PprofBuilder):
    """tfprof's keys: functions by (file, function, start line), locations by
    (caller's file, callee's function, caller's line); samples by node name."""

    def __init__(self) -> None:
        super().__init__()
        self.samples: dict[str, Any] = {}

    def location_at(self, callee: Frame, caller: Frame) -> int:
        key = (caller.file, callee.function, caller.lineno % _U64)
        found = self.location_id(key)
        if found is not None:
            return found
        function_id = self.function(
            (callee.file, callee.function, callee.func_start_line % _U64),
            function_name(callee.file, callee.function),
            callee.file,
            callee.func_start_line,
        )
        return self.location(key, function_id, caller.lineno)

    def own_location(self, frame: Frame) -> int:
        """The location of ``frame``'s function at its own line (user-code mode)."""
        key = ("", frame.file, frame.function, frame.lineno % _U64)
        found = self.location_id(key)
        if found is not None:
            return found
        function_id = self.function(
            (frame.file, frame.function, frame.func_start_line % _U64),
            function_name(frame.file, frame.function),
            frame.file,
            frame.func_start_line,
        )
        return self.location(key, function_id, frame.lineno)


def _true_leaves(node: ShowNode) -> list[ShowNode]:
    if not node.kids:
        return [node]
    out: list[ShowNode] = []
    for kid in node.kids:
        out.extend(_true_leaves(kid))
    return out


def _add_samples(tables: _Tables, leaf: ShowNode, call_ids: list[int], result: ViewResult) -> None:
    stat = BY_SELECT[result.opts.select[0]]
    values = getattr(result.model.stats(result.opts.step), stat.name)
    names = result.model.names
    for true_leaf in _true_leaves(leaf):
        for nid in true_leaf.graph_nodes:
            key = names[nid]
            while key in tables.samples:
                key += "@"
            sample = pb.PprofSample()
            sample.location_id.extend(reversed(call_ids))
            label = sample.label.add()
            label.key = tables.sid("graph node:")
            label.str = tables.sid(names[nid])
            sample.value.extend((1, int(values[nid])))
            tables.samples[key] = sample


def _walk(tables: _Tables, result: ViewResult) -> None:
    # (parent, children left to visit, chain of location ids)
    call_ids: list[int] = []
    stack: list[tuple[ShowNode, int]] = [(result.root, 0)]
    while stack:
        parent, index = stack.pop()
        has_trace = parent.frame is not None
        if index == 0 and not parent.children and has_trace:
            _add_samples(tables, parent, call_ids, result)
        if index > 0 and has_trace:
            call_ids.pop()
        if index >= len(parent.children):
            continue
        child = parent.children[index]
        stack.append((parent, index + 1))
        if parent.frame is not None and child.frame is not None:
            call_ids.append(tables.location_at(child.frame, parent.frame))
        stack.append((child, 0))


def _walk_own_lines(tables: _Tables, result: ViewResult) -> None:
    """User-code mode: every displayed frame is a location at its own line."""
    call_ids: list[int] = []
    stack: list[tuple[ShowNode, bool]] = [(kid, False) for kid in reversed(result.root.children)]
    while stack:
        node, leaving = stack.pop()
        if leaving:
            call_ids.pop()
            continue
        if node.frame is None:
            continue
        call_ids.append(tables.own_location(node.frame))
        stack.append((node, True))
        if not node.children:
            _add_samples(tables, node, call_ids, result)
        stack.extend((kid, False) for kid in reversed(node.children))


def build(result: ViewResult) -> Any:
    """The pprof Profile message for a code-view result with one valid select."""
    tables = _Tables()
    if result.opts.user_code is not None:
        _walk_own_lines(tables, result)
    else:
        _walk(tables, result)
    select = result.opts.select[0]
    unit, comment = PPROF_SELECTS[select]
    profile = pb.PprofProfile()
    profile.sample_type.add(type=tables.sid("count"), unit=tables.sid("count"))
    profile.sample_type.add(type=tables.sid(select), unit=tables.sid(unit))
    profile.comment.append(tables.sid(comment))
    profile.sample.extend(tables.samples[k] for k in sorted(tables.samples))
    return tables.finish(profile, by_key=True)


def render(result: ViewResult) -> bytes:
    """gzip bytes of the profile, compressed as TensorFlow compresses them."""
    return gzip_profile(build(result))
