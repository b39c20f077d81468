"""Extended pprof output: ``-output pprof:outfile=F,extended=1``, any view.

Beyond tfprof's single-attribute, code-view-only pprof: every selected numeric
attribute becomes a sample type (after ``count``), every view works, and samples
carry labels. One sample per displayed node (op view: per row) whose values are
the node's total minus its displayed children's totals, so pprof's totals equal
the report's; the stack is the displayed path (innermost first): name-scope
hierarchy in the scope view, input chain in the graph view, Python call stack in
the code view (functions ``basename:function`` at the calling line). Labels:
``node`` (scope/graph: the node name), ``op`` (op type or op types), ``device``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tfprof_lite.base.metrics import BY_SELECT
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.model.int64 import wrap64
from tfprof_lite.outputs.pprof import PPROF_SELECTS
from tfprof_lite.outputs.pprof_builder import PprofBuilder, function_name, gzip_profile
from tfprof_lite.proto import messages as pb
from tfprof_lite.views.node import ShowNode
from tfprof_lite.views.result import ViewResult

__all__ = ["build_extended", "is_extended", "render_extended"]


def is_extended(result: ViewResult) -> bool:
    """Whether the pprof output asks for the extended format."""
    value = dict(result.opts.output.options).get("extended", "")
    return value.lower() in ("1", "true", "yes", "y", "t")


def _selected(result: ViewResult) -> list[str]:
    chosen = [s for s in result.opts.select if s in PPROF_SELECTS]
    if not chosen:
        valid = ", ".join(sorted(PPROF_SELECTS))
        raise InvalidOptionError(f"extended pprof output needs a numeric select among: {valid}")
    return chosen


class _Builder(PprofBuilder):
    """Functions by (file, ``basename:function``) or (view, node name); locations
    by (function, line)."""

    def __init__(self, result: ViewResult) -> None:
        super().__init__()
        self.result = result

    def location_of(self, node: ShowNode) -> int:
        frame = node.frame
        if frame is not None:
            key = (frame.file, function_name(frame.file, frame.function))
            line = frame.lineno
        else:
            key, line = (self.result.view, node.name), 0
        fid = self.function(key, key[1], key[0])
        return self.location((fid, line), fid, line)

    def labels(self, sample: Any, node: ShowNode) -> None:
        model = self.result.model
        if node.nid >= 0:
            pairs = [("node", node.name), ("op", model.ops[node.nid])]
            pairs.append(("device", model.canonical_device[node.nid]))
        else:
            types = sorted(t for t in node.op_types if not t.startswith("/"))
            pairs = [("op", "|".join(types)), ("device", "|".join(sorted(node.devices)))]
        for key, value in pairs:
            if value:
                sample.label.add(key=self.sid(key), str=self.sid(value))


def _displayed(result: ViewResult) -> Iterator[tuple[ShowNode, list[ShowNode], list[int]]]:
    """(node, stack innermost first, exclusive stat vector) for every sample."""
    if result.view == "op":
        for row in result.rows:
            yield row, [row], list(row.self_)
        return
    todo: list[tuple[ShowNode, list[ShowNode]]] = [(kid, [kid]) for kid in result.root.children]
    while todo:
        node, path = todo.pop()
        own = list(node.total)
        for kid in node.children:
            own = [wrap64(a - b) for a, b in zip(own, kid.total)]
            todo.append((kid, [kid, *path]))
        yield node, path, own


def build_extended(result: ViewResult) -> Any:
    """The extended pprof Profile message for ``result``."""
    chosen = _selected(result)
    out = _Builder(result)
    profile = pb.PprofProfile()
    profile.sample_type.add(type=out.sid("count"), unit=out.sid("count"))
    for name in chosen:
        profile.sample_type.add(type=out.sid(name), unit=out.sid(PPROF_SELECTS[name][0]))
    for node, path, own in _displayed(result):
        values = [own[BY_SELECT[name].stat] for name in chosen]
        if not any(values):
            continue
        sample = profile.sample.add()
        sample.location_id.extend(out.location_of(n) for n in path)
        sample.value.extend([1, *values])
        out.labels(sample, node)
    profile.comment.append(out.sid(f"tfprof_lite {result.view} view, step {result.opts.step}"))
    return out.finish(profile, by_key=False)


def render_extended(result: ViewResult) -> bytes:
    """gzip bytes of :func:`build_extended`."""
    return gzip_profile(build_extended(result))
