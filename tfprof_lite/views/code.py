"""Code view (``profile_python``, cmd ``code``): graph nodes by Python call stack.

Each frame is ``basename:lineno:function`` (function names of 20 bytes or
more are cut to 17 plus ``...``). A graph node hangs under the last frame of its
trace. Gradient nodes (``...gradients/<fwd>_grad/...``) replay their forward op's
stack with `` (gradient)`` appended to every frame. Children keep first-insertion
order. Options read: all except ``account_displayed_op_only`` (ignored, as in
tfprof) and ``min_occurrence``. With ``user_code`` set (not a tfprof option) the
traces are cut down to the user's own frames first (:mod:`tfprof_lite.views.code_user`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.records import CodeFrame
from tfprof_lite.options.options import Options
from tfprof_lite.options.user_code import UserCode
from tfprof_lite.views.code_table import code_table
from tfprof_lite.views.code_user import UserTraces
from tfprof_lite.views.node import ROOT_NAME, Frame
from tfprof_lite.views.passes import Members, Structure, make_structure
from tfprof_lite.views.result import ViewResult
from tfprof_lite.views.table import TableRoot

__all__ = ["GRADIENT_SUFFIX", "CodeView", "forward_name", "trace_string"]

log = logging.getLogger("tfprof_lite")

GRADIENT_SUFFIX = " (gradient)"


@dataclass
class CodeEntry:
    """A frame in the call-stack tree (structure only; stats come per query)."""

    name: str
    frame: CodeFrame | None
    suffix: str = ""
    kids: dict[str, CodeEntry] = field(default_factory=dict)
    nids: list[int] = field(default_factory=list)

    def child(self, name: str, frame: CodeFrame, suffix: str) -> CodeEntry:
        """The child frame called ``name``, created on first use."""
        entry = self.kids.get(name)
        if entry is None:
            entry = CodeEntry(name, frame, suffix)
            self.kids[name] = entry
        return entry


def trace_string(frame: CodeFrame, id_to_string: dict[int, str]) -> str:
    """``basename(file):lineno:function`` with tfprof's 20-byte cut.

    tfprof measures and cuts the UTF-8 bytes; a cut inside a multi-byte character
    (where TensorFlow writes invalid UTF-8) drops the partial character.
    """
    file = frame.file or id_to_string.get(frame.file_id, "")
    func = frame.function or id_to_string.get(frame.function_id, "")
    raw = func.encode("utf-8")
    if len(raw) >= 20:  # C++ std::string: bytes, not characters
        func = raw[:17].decode("utf-8", "ignore") + "..."
    return f"{file.rsplit('/', 1)[-1]}:{frame.lineno}:{func}"


def forward_name(name: str) -> str | None:
    """Forward op name of a gradient node (text between ``gradients/`` and ``_grad/``)."""
    start = name.find("gradients/")
    end = name.find("_grad/")
    if start < 0 or end < 0:
        return None
    start += len("gradients/")
    if end == start:
        return None
    return name[start:end] if end > start else name[start:]


class _Paths:
    """Walks call stacks down the tree, creating entries on first use.

    Nodes built by the same Python lines share one frame list (see
    :func:`tfprof_lite.model.decode.op_log_entries`), so each shared list is
    walked once and frame names are computed once per frame object.
    """

    def __init__(
        self, root: CodeEntry, strings: dict[int, str], user: UserTraces | None = None
    ) -> None:
        self.root = root
        self.strings = strings
        self.user = user
        self._ends: dict[tuple[int, str], tuple[list[CodeFrame], CodeEntry]] = {}
        self._names: dict[int, tuple[CodeFrame, str]] = {}

    def _name(self, frame: CodeFrame) -> str:
        hit = self._names.get(id(frame))
        if hit is None or hit[0] is not frame:
            name = trace_string(frame, self.strings)
            if self.user is not None:
                name = self.user.name(frame, name)
            hit = self._names[id(frame)] = (frame, name)
        return hit[1]

    def end(self, trace: list[CodeFrame], suffix: str) -> CodeEntry:
        """The entry of the last frame of ``trace`` (frames suffixed with ``suffix``);
        in user-code mode, of its last user frame."""
        hit = self._ends.get((id(trace), suffix))
        if hit is not None and hit[0] is trace:
            return hit[1]
        node = self.root
        frames = trace if self.user is None else self.user.trace(trace)
        for frame in frames:
            node = node.child(self._name(frame) + suffix, frame, suffix)
        self._ends[(id(trace), suffix)] = (trace, node)
        return node


def _sort_nids(root: CodeEntry, names: list[str]) -> None:
    """Put every entry's graph nodes in name order (forward and gradient nodes)."""
    stack = [root]
    while stack:
        entry = stack.pop()
        entry.nids.sort(key=names.__getitem__)
        stack.extend(entry.kids.values())


class CodeView:
    """Builds the call-stack tree (cached per graph version) and answers queries."""

    name = "code"

    def __init__(self, model: ProfileModel) -> None:
        self.model = model
        self._trees: dict[UserCode | None, tuple[tuple[int, int], CodeEntry]] = {}
        self._structures: dict[UserCode | None, tuple[CodeEntry, Structure]] = {}

    def tree(self, user_code: UserCode | None = None) -> CodeEntry:
        """The call-stack tree of the current graph (user frames only with ``user_code``)."""
        version = (self.model.graph_version, self.model.view_extent(self.name))
        hit = self._trees.get(user_code)
        if hit is None or hit[0] != version:
            hit = self._trees[user_code] = (version, self._build(version[1], user_code))
        return hit[1]

    def _build(self, extent: int, user_code: UserCode | None) -> CodeEntry:
        model = self.model
        root = CodeEntry(ROOT_NAME, None)
        user = None if user_code is None else UserTraces(user_code, model.id_to_string)
        paths = _Paths(root, model.id_to_string, user)
        forward: dict[str, int] = {}
        grads: dict[str, list[int]] = {}
        for nid in sorted(range(extent), key=model.names.__getitem__):
            trace = model.traces[nid]
            if not trace:
                continue
            fwd = forward_name(model.names[nid])
            if fwd is not None:
                grads.setdefault(fwd, []).append(nid)
                continue
            forward[model.names[nid]] = nid
            paths.end(trace, "").nids.append(nid)
        missing = 0
        for fwd, nids in sorted(grads.items()):
            fid = forward.get(fwd)
            if fid is None:
                missing += 1
                continue
            trace = model.traces[fid] or []
            paths.end(trace, GRADIENT_SUFFIX).nids.extend(nids)
        if missing:
            log.warning("%d gradient nodes not accounted", missing)
        _sort_nids(root, model.names)
        return root

    def _frame(self, entry: CodeEntry) -> Frame | None:
        frame = entry.frame
        if frame is None:
            return None
        strings = self.model.id_to_string
        file = frame.file or strings.get(frame.file_id, "")
        func = (frame.function or strings.get(frame.function_id, "")) + entry.suffix
        return Frame(file, frame.lineno, func, frame.func_start_line)

    def structure(self, user_code: UserCode | None = None) -> Structure:
        """The call-stack tree in pre-order, with each entry's graph nodes and frame."""
        tree = self.tree(user_code)
        hit = self._structures.get(user_code)
        if hit is None or hit[0] is not tree:
            hit = self._structures[user_code] = (tree, self._flatten(tree))
        return hit[1]

    def _flatten(self, root: CodeEntry) -> Structure:
        names: list[str] = []
        parents: list[int] = []
        frames: list[Frame | None] = []
        flat: list[int] = []
        counts: list[int] = []
        stack = [(kid, -1) for kid in reversed(root.kids.values())]
        while stack:
            entry, parent = stack.pop()
            index = len(names)
            names.append(entry.name)
            parents.append(parent)
            frames.append(self._frame(entry))
            flat.extend(entry.nids)
            counts.append(len(entry.nids))
            stack.extend((kid, index) for kid in reversed(entry.kids.values()))
        struct = make_structure([-1] * len(names), parents, names)
        offsets = np.concatenate(([0], np.cumsum(np.asarray(counts, dtype=np.int64))))
        struct.members = Members(np.asarray(flat, dtype=np.int64), offsets.astype(np.int64))
        struct.frames = list(frames)
        return struct

    def query(self, opts: Options) -> ViewResult:
        """Run one query; returns the displayed call-stack tree."""
        if opts.account_displayed_op_only:
            log.warning("Note: code view ignores account_displayed_op_only")
        table = code_table(self.structure(opts.user_code), self.model, opts)
        return ViewResult(
            view=self.name,
            root=TableRoot(table),
            opts=opts,
            model=self.model,
            empty=table.empty,
        )
