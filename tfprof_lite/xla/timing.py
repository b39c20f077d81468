"""Compile and run time of XLA clusters in a profile, linked to their HLO modules.

What a FULL_TRACE RunMetadata of a JIT-compiled TF1 session holds (TF 2.21, see
docs/xla.md): auto-clustering and ``jit_scope`` replace each cluster by nodes
under a scope ``cluster_<n>_1`` — ``cluster_<n>_1/xla_compile`` (op
``_XlaCompile``: compiles on the first run, then a cache lookup),
``cluster_<n>_1/xla_run`` (op ``_XlaRun``: runs the executable) and untimed
plumbing (``predicated_compilation_key``, ``merge_oidx_<i>``, ...).
``tf.compat.v1.xla.experimental.compile`` makes one node ``cluster`` (op
``XlaLaunch``) whose time includes compilation on its first run. None of these
nodes is in the GraphDef, so the profile knows them by name only. A
``tf.function(jit_compile=True)`` called in a graph is a GraphDef call node
(``PartitionedCall``) with the attribute ``_XlaMustCompile=true``; like
``XlaLaunch`` it compiles inside its first run.

Contract: :func:`cluster_times` finds those nodes in a
:class:`~tfprof_lite.model.profile.ProfileModel` (or a ``Profiler``), sums
their exec time (accelerator + CPU, as tfprof's ``exec_micros``) per cluster
and step, and links each cluster to the HLO modules of a dump directory by
name: scope ``cluster_1_1`` -> TF function ``cluster_1`` -> modules whose
:attr:`~tfprof_lite.xla.dumps.HloModuleDump.cluster` is ``cluster_1``; a call
node's function ``__inference_f_14`` -> modules ``a_inference_f_14``; the
``XlaLaunch`` node ``cluster`` -> the one module ``cluster_<fingerprint>``, if
there is exactly one. It needs no TensorFlow.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, Union

from tfprof_lite.base.units import format_time
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.proto import messages as pb
from tfprof_lite.xla.dumps import STAGE_AFTER, HloModuleDump, find_dumps

__all__ = [
    "KIND_LAUNCH",
    "KIND_SPLIT",
    "ClusterTime",
    "cluster_times",
    "format_cluster_times",
]

#: A cluster run as ``_XlaCompile`` + ``_XlaRun`` (auto-clustering, jit_scope).
KIND_SPLIT = "compile+run"
#: A cluster run as one ``XlaLaunch`` node (compile time included in run time).
KIND_LAUNCH = "launch"

_ROLE_SUFFIX = {
    "/xla_compile": "compile",
    "/xla_run": "run",
    "/stateful_partitioned_call": "fallback",
    "/partitioned_call": "fallback",
}
_ROLE_OP = {"_XlaCompile": "compile", "_XlaRun": "run", "XlaLaunch": "launch"}
_LAUNCH_NAME = re.compile(r"^(?:.*/)?cluster(?:_\d+)*$")
_SCOPE_COUNTER = re.compile(r"_\d+$")
_NON_LETTER_START = re.compile(r"^[^A-Za-z]")


class _HasModel(Protocol):
    @property
    def model(self) -> ProfileModel: ...


ModelLike = Union[ProfileModel, _HasModel]
DumpsLike = Union[Sequence[HloModuleDump], str, os.PathLike[str], None]


@dataclass(frozen=True)
class ClusterTime:
    """Compile and run time of one XLA cluster.

    Attributes:
        cluster: the TF function name (``cluster_1``), as in HLO module names.
        scope: the name scope of its runtime nodes (``cluster_1_1``), or the
            ``XlaLaunch`` node's name.
        kind: :data:`KIND_SPLIT` or :data:`KIND_LAUNCH`.
        compile_micros: step -> ``_XlaCompile`` exec time (empty for ``launch``).
        run_micros: step -> ``_XlaRun`` (or ``XlaLaunch``) exec time.
        fallback_micros: step -> time of ``<scope>/stateful_partitioned_call``,
            the uncompiled TF function XLA's lazy compilation runs instead of
            compiling an input shape seen for the first time.
        modules: the linked HLO module dumps, every stage and format, in order.
    """

    cluster: str
    scope: str
    kind: str
    compile_micros: dict[int, int] = field(default_factory=dict)
    run_micros: dict[int, int] = field(default_factory=dict)
    fallback_micros: dict[int, int] = field(default_factory=dict)
    modules: tuple[HloModuleDump, ...] = ()

    @property
    def steps(self) -> list[int]:
        """The steps in which any node of the cluster ran."""
        return sorted(set(self.compile_micros) | set(self.run_micros) | set(self.fallback_micros))

    @property
    def total_compile_micros(self) -> int:
        """Compile time summed over the steps."""
        return sum(self.compile_micros.values())

    @property
    def total_run_micros(self) -> int:
        """Run time summed over the steps."""
        return sum(self.run_micros.values())

    @property
    def avg_compile_micros(self) -> float:
        """Compile time per step (over :attr:`steps`)."""
        return self.total_compile_micros / max(len(self.steps), 1)

    @property
    def avg_run_micros(self) -> float:
        """Run time per step (over :attr:`steps`)."""
        return self.total_run_micros / max(len(self.steps), 1)

    @property
    def total_fallback_micros(self) -> int:
        """Fallback (uncompiled) time summed over the steps."""
        return sum(self.fallback_micros.values())

    @property
    def total_micros(self) -> int:
        """Compile, run and fallback time summed over the steps."""
        return self.total_compile_micros + self.total_run_micros + self.total_fallback_micros

    @property
    def module_ids(self) -> list[int]:
        """Ids of the linked modules (one per compilation), ascending."""
        return sorted({m.module_id for m in self.modules})

    def module(self, stage: str = STAGE_AFTER, fmt: str = "dot") -> HloModuleDump | None:
        """The latest linked module dump of ``stage`` and ``fmt``, if any."""
        found = [m for m in self.modules if m.stage == stage and m.fmt == fmt]
        return found[-1] if found else None


@dataclass(frozen=True)
class _Found:
    """An XLA runtime node: its role, the cluster scope and the TF function if known."""

    role: str
    scope: str
    function: str = ""


def _must_compile_function(model: ProfileModel, nid: int) -> str | None:
    """The function of a call node with ``_XlaMustCompile=true`` (``tf.function(
    jit_compile=True)`` called in a graph), else None."""
    attrs = model.attrs[nid]
    raw = attrs.get("_XlaMustCompile")
    if raw is None or not pb.AttrValue.FromString(raw).b:
        return None
    func = attrs.get("f")
    return str(pb.AttrValue.FromString(func).func.name) if func else ""


def _role(model: ProfileModel, nid: int) -> _Found | None:
    """What XLA runtime node ``nid`` is, or None for any other node."""
    name = model.names[nid]
    for suffix, role in _ROLE_SUFFIX.items():
        if name.endswith(suffix):
            return _Found(role, name[: -len(suffix)])
    function = _must_compile_function(model, nid)
    if function is not None:
        return _Found("launch", name, function)
    for op, role in _ROLE_OP.items():
        if op in model.op_types[nid]:
            return _Found(role, name if role == "launch" else name.rsplit("/", 1)[0])
    if model.ops[nid] == name and _LAUNCH_NAME.match(name):
        return _Found("launch", name)
    return None


def _step_times(model: ProfileModel, nids: Sequence[int]) -> dict[int, dict[int, int]]:
    """node -> step -> exec micros, for the steps in which the node ran."""
    out: dict[int, dict[int, int]] = {nid: {} for nid in nids}
    n = len(model)
    for step in model.sorted_steps():
        totals = model.steps[step].totals(n)
        for nid in nids:
            if totals.present[nid]:
                micros = totals.cpu_exec_micros[nid] + totals.accelerator_exec_micros[nid]
                out[nid][step] = int(micros)
    return out


def _names(scope: str, kind: str, function: str, clusters: Iterable[str]) -> list[str]:
    """The TF function names ``scope`` may have compiled, most likely first."""
    if kind == KIND_SPLIT:
        return [_SCOPE_COUNTER.sub("", scope), scope]
    if function:
        # XLA names the module of ``__inference_f_14`` ``a_inference_f_14__.2``.
        return [function, _NON_LETTER_START.sub("a", function)]
    base = scope.rsplit("/", 1)[-1]
    fingerprinted = re.compile(re.escape(base) + r"_\d{6,}")
    found = [c for c in clusters if fingerprinted.fullmatch(c)]
    return [base] + (found if len(found) == 1 else [])


def _link(
    found: _Found, kind: str, by_cluster: dict[str, list[HloModuleDump]]
) -> tuple[str, tuple[HloModuleDump, ...]]:
    """The TF function name of a cluster and its modules."""
    names = _names(found.scope, kind, found.function, by_cluster)
    for name in names:
        if name in by_cluster:
            return name, tuple(by_cluster[name])
    return names[0], ()


def _load_dumps(dumps: DumpsLike) -> dict[str, list[HloModuleDump]]:
    if dumps is None:
        return {}
    records = find_dumps(dumps) if isinstance(dumps, (str, os.PathLike)) else dumps
    by_cluster: dict[str, list[HloModuleDump]] = {}
    for record in sorted(records, key=HloModuleDump.sort_key):
        by_cluster.setdefault(record.cluster, []).append(record)
    return by_cluster


def cluster_times(model: ModelLike, dumps: DumpsLike = None) -> list[ClusterTime]:
    """Compile and run time of every XLA cluster in a profile, linked to the
    HLO modules in ``dumps`` (a dump directory or :func:`find_dumps` records).

    Returns one :class:`ClusterTime` per cluster, the most expensive (compile,
    run and fallback time over all steps) first. Clusters are found by their
    runtime node names, op types and the ``_XlaMustCompile`` attribute (see the
    module docstring), so a profile without JIT gives an empty list.
    """
    store = model if isinstance(model, ProfileModel) else model.model
    roles: dict[str, dict[str, list[int]]] = {}
    first: dict[str, _Found] = {}
    for nid in range(len(store)):
        found = _role(store, nid)
        if found is not None:
            roles.setdefault(found.scope, {}).setdefault(found.role, []).append(nid)
            first.setdefault(found.scope, found)
    times = _step_times(store, [nid for r in roles.values() for ids in r.values() for nid in ids])
    by_cluster = _load_dumps(dumps)
    out = []
    for scope, by_role in roles.items():
        if set(by_role) == {"fallback"}:
            continue  # a partitioned call that is no XLA cluster
        kind = KIND_LAUNCH if "launch" in by_role else KIND_SPLIT
        cluster, modules = _link(first[scope], kind, by_cluster)
        out.append(
            ClusterTime(
                cluster=cluster,
                scope=scope,
                kind=kind,
                compile_micros=_sum_steps(times, by_role.get("compile", [])),
                run_micros=_sum_steps(times, by_role.get("launch", []) + by_role.get("run", [])),
                fallback_micros=_sum_steps(times, by_role.get("fallback", [])),
                modules=modules,
            )
        )
    out.sort(key=lambda c: (-c.total_micros, c.scope))
    return out


def _sum_steps(times: dict[int, dict[int, int]], nids: Sequence[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for nid in nids:
        for step, micros in times[nid].items():
            out[step] = out.get(step, 0) + micros
    return dict(sorted(out.items()))


def format_cluster_times(times: Sequence[ClusterTime]) -> str:
    """A text table of :func:`cluster_times`: one line per cluster with totals
    over the steps, per-step averages and the linked module ids."""
    header = (
        "cluster", "scope", "kind", "steps", "compile", "compile/step", "run", "run/step",
        "fallback", "modules",
    )  # fmt: skip
    rows = [header]
    for t in times:
        rows.append(
            (
                t.cluster,
                t.scope,
                t.kind,
                str(len(t.steps)),
                format_time(t.total_compile_micros),
                format_time(int(t.avg_compile_micros)),
                format_time(t.total_run_micros),
                format_time(int(t.avg_run_micros)),
                format_time(t.total_fallback_micros),
                ",".join(f"module_{i:04d}" for i in t.module_ids) or "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines) + "\n"
