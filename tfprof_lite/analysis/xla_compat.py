"""XLA compatibility report: which ops keep a graph from being JIT-compiled.

Pure data and logic (no TensorFlow), shared by the live check
(:func:`tfprof_lite.capture.xla_compat.check_graph`, which asks TensorFlow's
kernel registry), the advisor's ``XlaCompatibilityChecker`` and
``tfprof-lite xla-compat`` (which read what the capture stored in a profile).

Contract:

* Input: one :class:`OpInfo` per graph op: name, type, producer names (data and
  control inputs alike: a saved profile does not tell them apart), whether the
  target (``XLA_CPU_JIT`` or ``XLA_GPU_JIT``) has a kernel accepting it and why
  not, and its *host kind* (:func:`host_kind`).
* *Host-side* ops — savers, summaries, variable initialisers, input pipeline
  (``tf.data``, iterators, queues, readers), sources (constants, placeholders,
  variables) and control (``NoOp``) — are never counted: XLA clusters take them
  as inputs or leave them out anyway. They are listed apart with their kernel
  status. Every other op is a *compute* op.
* An incompatible compute op *splits* a JIT cluster when compatible compute ops
  lie both upstream and downstream of it (through incompatible ops only): a
  cluster must end before it and another start after it, with a round trip out
  of compiled code. It *blocks* a cluster when they lie on one side only (the
  cluster cannot grow past it), and is *isolated* otherwise.
* ``segments`` counts the connected groups of compatible compute ops: how many
  regions auto-clustering could at most grow (a connectivity estimate; XLA's
  own pass also applies size, resource and device rules).
* Per scope (the first ``depth`` components of op names, tfprof's scope view
  top level for ``depth=1``): compute ops, compatible ones and their share
  (1.0 for a scope without compute ops), host-side ops, incompatible op names.
* Profiles carry the result as op-log types (one set per captured target):
  ``_xla_compatible:<target>`` or ``_xla_incompatible:<target>`` on every
  checked op, ``_xla_reason:<target>:<why>`` on incompatible ones and
  ``_xla_host:<kind>`` on host-side ones (:meth:`XlaCompatReport.op_log_types`,
  :func:`report_from_model`). Ops without a tag for the target (pseudo nodes of
  a RunMetadata, ops created after the capture) are left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tfprof_lite.analysis.xla_ops import (
    HOST_KINDS,
    TAG_COMPATIBLE,
    TAG_HOST,
    TAG_INCOMPATIBLE,
    TAG_REASON,
    TARGETS,
    hint,
)
from tfprof_lite.model.profile import ProfileModel

__all__ = [
    "OpCompat",
    "OpInfo",
    "ScopeCompat",
    "TypeCompat",
    "XlaCompatReport",
    "build_report",
    "captured_targets",
    "op_log_of",
    "report_from_model",
]


@dataclass(frozen=True)
class OpInfo:
    """What the report needs to know about one op."""

    name: str
    op: str
    inputs: tuple[str, ...]
    compatible: bool
    reason: str = ""
    host: str = ""


@dataclass(frozen=True)
class OpCompat:
    """One op in the report; ``role`` is ``splits``/``blocks``/``isolated`` for
    incompatible compute ops, ``""`` otherwise."""

    name: str
    op: str
    scope: str
    compatible: bool
    reason: str = ""
    host: str = ""
    role: str = ""


@dataclass(frozen=True)
class ScopeCompat:
    """Compatibility of one name scope's compute ops."""

    scope: str
    ops: int
    compatible: int
    host: int
    share: float
    incompatible: tuple[str, ...] = ()


@dataclass(frozen=True)
class TypeCompat:
    """Compatibility of one op type among compute ops."""

    op: str
    compatible: int
    incompatible: int
    reason: str = ""


@dataclass
class XlaCompatReport:
    """Which ops of a graph the XLA ``target`` can compile (see the module docstring)."""

    target: str
    source: str = "graph"
    ops: list[OpCompat] = field(default_factory=list)
    scopes: list[ScopeCompat] = field(default_factory=list)
    types: list[TypeCompat] = field(default_factory=list)
    segments: int = 0
    largest_segment: int = 0

    @property
    def compute(self) -> list[OpCompat]:
        """The compute ops (host-side ones left out)."""
        return [op for op in self.ops if not op.host]

    @property
    def incompatible(self) -> list[OpCompat]:
        """Compute ops the target cannot compile, in graph order."""
        return [op for op in self.ops if not op.host and not op.compatible]

    @property
    def host_ops(self) -> list[OpCompat]:
        """Host-side ops, in graph order."""
        return [op for op in self.ops if op.host]

    @property
    def share(self) -> float:
        """Compatible share of the compute ops (1.0 without compute ops)."""
        compute = self.compute
        if not compute:
            return 1.0
        return round(sum(op.compatible for op in compute) / len(compute), 4)

    @property
    def fully_compatible(self) -> bool:
        """True when every compute op has a kernel for the target."""
        return not self.incompatible

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (with the derived totals)."""
        doc = asdict(self)
        doc.update(
            compute_ops=len(self.compute),
            incompatible_ops=len(self.incompatible),
            host_ops=len(self.host_ops),
            share=self.share,
            fully_compatible=self.fully_compatible,
        )
        return doc

    def op_log_types(self) -> dict[str, list[str]]:
        """Op name -> the op-log types that record this report in a profile."""
        out: dict[str, list[str]] = {}
        for op in self.ops:
            tags = [(TAG_COMPATIBLE if op.compatible else TAG_INCOMPATIBLE) + self.target]
            if op.reason:
                tags.append(f"{TAG_REASON}{self.target}:{op.reason}")
            if op.host:
                tags.append(TAG_HOST + op.host)
            out[op.name] = tags
        return out

    def summary_line(self) -> str:
        """``<target>: <share> of <n> compute ops compatible ...`` (one line)."""
        compute, bad = len(self.compute), len(self.incompatible)
        kinds = {t.op for t in self.types if t.incompatible}
        return (
            f"{self.target}: {100 * self.share:.1f}% of {compute} compute ops compatible; "
            f"{bad} incompatible in {len(kinds)} op types; "
            f"{len(self.host_ops)} host-side ops not counted"
        )

    def advice_lines(self, max_ops: int = 10) -> list[str]:
        """The report as short lines (the advisor's reports; ``to_text`` joins them)."""
        lines = [self.summary_line()]
        lines += [_type_line(t, self.target) for t in self.types if t.incompatible]
        for role, label in (("splits", "splits a JIT cluster"), ("blocks", "blocks a JIT cluster")):
            chosen = [op for op in self.incompatible if op.role == role]
            lines += [f"{label}: {op.name} ({op.op})" for op in chosen[:max_ops]]
            if len(chosen) > max_ops:
                lines.append(f"{label}: ... and {len(chosen) - max_ops} more")
        partial = [s for s in self.scopes if s.share < 1.0]
        lines += [_scope_line(s, max_ops) for s in partial]
        if self.scopes and not partial:
            lines.append(f"every scope is fully compatible ({len(self.scopes)} scopes)")
        lines.append(_host_line(self.host_ops))
        lines.append(
            f"compilable segments (connected compatible compute ops): {self.segments}, "
            f"largest {self.largest_segment} ops"
        )
        return lines

    def to_text(self, max_ops: int = 20) -> str:
        """The report as plain text: :meth:`advice_lines` plus the scope table."""
        lines = self.advice_lines(max_ops)
        lines.append(f"{'scope':<40} {'ops':>6} {'compatible':>10} {'share':>7} {'host':>6}")
        for s in sorted(self.scopes, key=lambda s: s.scope):
            lines.append(
                f"{s.scope:<40} {s.ops:>6} {s.compatible:>10} {100 * s.share:>6.1f}% {s.host:>6}"
            )
        return "\n".join(lines) + "\n"


def _type_line(row: TypeCompat, target: str) -> str:
    why = row.reason or f"no {target} kernel"
    extra = f"; {row.compatible} other {row.op} ops are compatible" if row.compatible else ""
    note = hint(row.op)
    return (
        f"incompatible op type {row.op} x{row.incompatible}: {why}"
        + (f" [{note}]" if note else "")
        + extra
    )


def _scope_line(scope: ScopeCompat, max_ops: int) -> str:
    names = ", ".join(scope.incompatible[:max_ops])
    more = (
        f", ... {len(scope.incompatible) - max_ops} more"
        if len(scope.incompatible) > max_ops
        else ""
    )
    return (
        f"scope {scope.scope}: {100 * scope.share:.1f}% of {scope.ops} compute ops compatible; "
        f"incompatible: {names}{more}"
    )


def _host_line(host_ops: Sequence[OpCompat]) -> str:
    if not host_ops:
        return "host-side ops: none"
    kinds = Counter(op.host for op in host_ops)
    parts = [f"{kind} {kinds[kind]}" for kind in HOST_KINDS if kinds[kind]]
    without = sum(not op.compatible for op in host_ops)
    return (
        f"host-side ops (not counted): {', '.join(parts)}; "
        f"{without} of them have no kernel for the target (expected)"
    )


def scope_of(name: str, depth: int) -> str:
    """The first ``depth`` components of ``name`` (tfprof's scope view levels)."""
    return "/".join(name.split("/")[:depth])


def _propagate(seeds: set[str], edges: dict[str, list[str]], allowed: set[str]) -> set[str]:
    """``seeds`` plus every op of ``allowed`` reachable from them along ``edges``."""
    reached = set(seeds)
    todo = list(seeds)
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt in allowed and nxt not in reached:
                reached.add(nxt)
                todo.append(nxt)
    return reached


def _roles(ops: Sequence[OpInfo]) -> dict[str, str]:
    """Incompatible compute op -> ``splits``, ``blocks`` or ``isolated``."""
    good = {o.name for o in ops if not o.host and o.compatible}
    bad = {o.name for o in ops if not o.host and not o.compatible}
    consumers: dict[str, list[str]] = {}
    producers: dict[str, list[str]] = {}
    for o in ops:
        for src in o.inputs:
            consumers.setdefault(src, []).append(o.name)
            producers.setdefault(o.name, []).append(src)
    after_good = {n for n in bad if any(p in good for p in producers.get(n, ()))}
    before_good = {n for n in bad if any(c in good for c in consumers.get(n, ()))}
    up = _propagate(after_good, consumers, bad)
    down = _propagate(before_good, producers, bad)
    return {
        n: "splits" if n in up and n in down else "blocks" if n in up | down else "isolated"
        for n in bad
    }


def _segments(ops: Sequence[OpInfo]) -> list[int]:
    """Sizes of the connected groups of compatible compute ops."""
    good = {o.name for o in ops if not o.host and o.compatible}
    parent = {name: name for name in good}

    def find(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for o in ops:
        if o.name in good:
            for src in o.inputs:
                if src in good:
                    parent[find(src)] = find(o.name)
    return list(Counter(find(name) for name in good).values())


def _scopes(ops: Sequence[OpCompat]) -> list[ScopeCompat]:
    grouped: dict[str, list[OpCompat]] = {}
    for op in ops:
        grouped.setdefault(op.scope, []).append(op)
    out = []
    for scope, members in grouped.items():
        compute = [m for m in members if not m.host]
        good = sum(m.compatible for m in compute)
        out.append(
            ScopeCompat(
                scope=scope,
                ops=len(compute),
                compatible=good,
                host=len(members) - len(compute),
                share=round(good / len(compute), 4) if compute else 1.0,
                incompatible=tuple(m.name for m in compute if not m.compatible),
            )
        )
    return sorted(out, key=lambda s: (s.share, -len(s.incompatible), s.scope))


def _types(ops: Sequence[OpCompat]) -> list[TypeCompat]:
    counts: dict[str, list[int]] = {}
    reasons: dict[str, str] = {}
    for op in ops:
        if op.host:
            continue
        counts.setdefault(op.op, [0, 0])[0 if op.compatible else 1] += 1
        if op.reason:
            reasons.setdefault(op.op, op.reason)
    rows = [TypeCompat(t, good, bad, reasons.get(t, "")) for t, (good, bad) in counts.items()]
    return sorted(rows, key=lambda r: (-r.incompatible, -r.compatible, r.op))


def build_report(
    target: str, ops: Iterable[OpInfo], depth: int = 1, source: str = "graph"
) -> XlaCompatReport:
    """The report for ``ops`` (in graph order) against ``target``."""
    ops = list(ops)
    roles = _roles(ops)
    entries = [
        OpCompat(o.name, o.op, scope_of(o.name, depth), o.compatible, o.reason, o.host) for o in ops
    ]
    entries = [
        OpCompat(e.name, e.op, e.scope, e.compatible, e.reason, e.host, roles.get(e.name, ""))
        for e in entries
    ]
    sizes = _segments(ops)
    return XlaCompatReport(
        target=target,
        source=source,
        ops=entries,
        scopes=_scopes(entries),
        types=_types(entries),
        segments=len(sizes),
        largest_segment=max(sizes, default=0),
    )


def captured_targets(model: ProfileModel) -> list[str]:
    """The targets whose compatibility a profile carries (in :data:`TARGETS` order)."""
    found: set[str] = set()
    for types in model.op_types:
        for tag in types:
            if tag.startswith(TAG_COMPATIBLE):
                found.add(tag[len(TAG_COMPATIBLE) :])
            elif tag.startswith(TAG_INCOMPATIBLE):
                found.add(tag[len(TAG_INCOMPATIBLE) :])
    return sorted(found, key=lambda t: (TARGETS.index(t) if t in TARGETS else len(TARGETS), t))


def _tagged_op(model: ProfileModel, nid: int, target: str) -> OpInfo | None:
    types = model.op_types[nid]
    if TAG_COMPATIBLE + target in types:
        compatible = True
    elif TAG_INCOMPATIBLE + target in types:
        compatible = False
    else:
        return None
    reason_tag = f"{TAG_REASON}{target}:"
    reason = next((t[len(reason_tag) :] for t in types if t.startswith(reason_tag)), "")
    host = next((t[len(TAG_HOST) :] for t in types if t.startswith(TAG_HOST)), "")
    inputs = tuple(model.inputs[nid][pos] for pos in sorted(model.inputs[nid]))
    return OpInfo(model.names[nid], model.ops[nid], inputs, compatible, reason, host)


def report_from_model(
    model: ProfileModel, target: str | None = None, depth: int = 1
) -> XlaCompatReport | None:
    """The report stored in a profile for ``target`` (default: the first captured
    one); None when the profile carries none for it."""
    if target is None:
        captured = captured_targets(model)
        if not captured:
            return None
        target = captured[0]
    ops = [op for nid in range(len(model)) if (op := _tagged_op(model, nid, target)) is not None]
    if not ops:
        return None
    return build_report(target, ops, depth, source="profile")


def op_log_of(reports: Iterable[XlaCompatReport]) -> Any:
    """One OpLogProto (ours) holding the op-log types of every report."""
    from tfprof_lite.proto import messages as pb

    merged: dict[str, list[str]] = {}
    for report in reports:
        for name, tags in report.op_log_types().items():
            known = merged.setdefault(name, [])
            known.extend(tag for tag in tags if tag not in known)
    out = pb.OpLogProto()
    for name, tags in merged.items():
        entry = out.log_entries.add()
        entry.name = name
        entry.types.extend(tags)
    return out
