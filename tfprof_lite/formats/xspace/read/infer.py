"""Steps inferred from the XLA programs an XSpace ran, when it has no step markers.

A training loop runs one program per step, the training step, and maybe others:
a staging program run on each batch (several times per step, some cheap), a
metrics or evaluation program. :func:`program_steps` finds the training step and
says how sure it is, or why it will not say:

* the runs of each program (:func:`program_runs_of`): its outermost host
  executions (``<module>:XLA GPU module``, ``...Execute (<module>)``) or, for
  XLA's CPU runtime, the host events of one execution (one ``run_id``), each
  with the dispatch that launched it on the loop's thread (a JAX
  ``PjitFunction(<name>)`` of module ``jit_<name>``); its *compute*: the time
  of its GPU events, else of its CPU runs, else of its host executions;
* the step is the program that runs :data:`MIN_RUNS` times or more with the
  most compute whose runs are regular (at least :data:`REGULAR_SHARE` of the
  gaps between consecutive runs within :data:`REGULAR_BAND` of their median: a
  program run in bursts, several times per step, is not), unless a program run
  regularly once every ``k >= 2`` of its runs has at least its compute per run
  (that one is the step: the chosen one is a staging program);
* no steps when no program runs :data:`MIN_RUNS` times, none runs regularly,
  or another regular program with another run count takes at least half as
  much compute (no program dominates).

Confidence is ``high`` with at least 5 runs whose gaps vary at most
:data:`HIGH_SPREAD` (median deviation from their median) and all but a tenth of
the gaps regular, else ``medium``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tfprof_lite.formats.xspace.read.calls import outermost, program_runs
from tfprof_lite.formats.xspace.read.events import EventTable, distinct_codes

__all__ = [
    "HIGH_SPREAD",
    "MIN_RUNS",
    "REGULAR_BAND",
    "REGULAR_SHARE",
    "Inferred",
    "ProgramRuns",
    "Regularity",
    "program_runs_of",
    "program_steps",
    "regularity",
]

I64 = npt.NDArray[np.int64]

#: Runs a program needs to be taken for the training step.
MIN_RUNS = 3
#: A gap between runs is regular within this share of the median gap ...
REGULAR_BAND = 0.3
#: ... and a program's runs are regular when this share of their gaps is.
REGULAR_SHARE = 0.7
#: Gaps varying at most this much (median deviation) give high confidence.
HIGH_SPREAD = 0.1
_DISPATCH = re.compile(r"PjitFunction\((?P<f>.+)\)")


@dataclass
class ProgramRuns:
    """The runs of one program: ``roots`` (host event rows, one per run, by
    start; -1: no dispatch seen), ``starts``, ``ends`` (ps: the end of the run's
    own events, -1: ask the step's records), ``ops`` (events per run, -1:
    unknown) and ``compute`` (ps over all runs)."""

    module: str
    roots: list[int]
    starts: list[int]
    ends: list[int]
    ops: list[int]
    compute: float = 0.0

    def __len__(self) -> int:
        return len(self.roots)


@dataclass(frozen=True)
class Regularity:
    """How regular the gaps between consecutive starts are: ``spread`` (median
    deviation from the median gap, as a share of it) and ``share`` (the gaps
    within :data:`REGULAR_BAND` of the median)."""

    spread: float
    share: float

    @property
    def regular(self) -> bool:
        """Enough gaps near the median (:data:`REGULAR_SHARE`)."""
        return self.share >= REGULAR_SHARE

    def level(self, runs: int) -> str:
        """``high`` or ``medium`` (see the module docstring)."""
        high = runs >= 5 and self.spread <= HIGH_SPREAD and self.share >= 0.9
        return "high" if high else "medium"

    def words(self, runs: int) -> str:
        """``confidence high: step times vary 3%``."""
        return f"confidence {self.level(runs)}: step times vary {100 * self.spread:.0f}%"


def regularity(starts: list[int]) -> Regularity:
    """The :class:`Regularity` of runs starting at ``starts`` (ascending)."""
    gaps = np.diff(np.asarray(starts, dtype=np.float64))
    if not len(gaps):
        return Regularity(0.0, 1.0)
    median = float(np.median(gaps))
    if median <= 0:
        return Regularity(1.0, 0.0)
    off = np.abs(gaps - median) / median
    return Regularity(float(np.median(off)), float(np.mean(off <= REGULAR_BAND)))


@dataclass(frozen=True)
class Inferred:
    """The step program's runs and the words saying how it was found (``runs``
    None: no steps, ``words`` says why)."""

    runs: ProgramRuns | None
    words: str


def _key(name: str) -> str:
    """A JAX function or module name compared across events: ``jit(f)``,
    ``jit_f`` and ``f`` give ``f``."""
    while name.startswith("jit(") and name.endswith(")"):
        name = name[4:-1]
    name = re.sub(r"\W", "_", name)
    return name[4:] if name.startswith("jit_") else name


def _executions(table: EventTable, host: I64) -> dict[str, ProgramRuns]:
    """Each program's outermost host executions (by name), with the GPU time of
    its events as compute (else the executions' own time)."""
    rows, which, modules = program_runs(table, host)
    if not len(rows):
        return {}
    kept = np.asarray(outermost(table, rows), dtype=np.int64)
    module_of = which[np.searchsorted(rows, kept)]
    out: dict[str, ProgramRuns] = {}
    for row, index in zip(kept.tolist(), module_of.tolist(), strict=True):
        runs = out.setdefault(modules[index], ProgramRuns(modules[index], [], [], [], []))
        runs.roots.append(row)
        runs.starts.append(int(table.start[row]))
        runs.ends.append(-1)
        runs.ops.append(-1)
    device = _device_time(table)
    for module, runs in out.items():
        own = sum(e - s for e, s in zip((int(table.end[r]) for r in runs.roots), runs.starts))
        runs.compute = device.get(module, 0.0) or float(own)
    return out


def _device_time(table: EventTable) -> dict[str, float]:
    """Module -> the summed time of its GPU events (``hlo_module``)."""
    device = table.device_events()
    if not len(device):
        return {}
    codes = table.codes["hlo_module"][device].astype(np.int64)
    strings = table.cols.strings
    used, inverse = distinct_codes(codes, len(strings))
    time = np.zeros(len(used), dtype=np.float64)
    np.add.at(time, inverse.reshape(-1), (table.end[device] - table.start[device]).astype(float))
    return {strings[c]: float(t) for c, t in zip(used.tolist(), time.tolist()) if c >= 0}


def _cpu_runs(table: EventTable, host: I64) -> dict[str, ProgramRuns]:
    """XLA's CPU runtime: each execution's host events share a ``run_id``; the
    run spans them, its dispatch is the loop thread's ``PjitFunction`` of the
    module (matched in order; none seen: the run's first event)."""
    rows = host[table.has_int["run_id"][host]]
    run_id = table.ints.at("run_id", rows)
    rows, run_id = rows[run_id != -1], run_id[run_id != -1]  # -1: runs not told apart
    if not len(rows):
        return {}
    ids, group = np.unique(run_id, return_inverse=True)
    group = group.reshape(-1)
    first = np.full(len(ids), np.iinfo(np.int64).max, dtype=np.int64)
    last = np.zeros(len(ids), dtype=np.int64)
    np.minimum.at(first, group, table.start[rows])
    np.maximum.at(last, group, table.end[rows])
    count = np.bincount(group, minlength=len(ids))
    codes = table.codes["hlo_module"][rows].astype(np.int64)
    module = np.full(len(ids), -1, dtype=np.int64)
    np.maximum.at(module, group, codes)
    # Each run's earliest event: its root until a dispatch is found.
    by_start = np.lexsort((table.start[rows], group))
    earliest = rows[by_start[np.searchsorted(group[by_start], np.arange(len(ids)))]]
    strings = table.cols.strings
    out: dict[str, ProgramRuns] = {}
    for g in np.argsort(first, kind="stable").tolist():
        if module[g] < 0:
            continue
        name = strings[int(module[g])]
        runs = out.setdefault(name, ProgramRuns(name, [], [], [], []))
        runs.roots.append(int(earliest[g]))
        runs.starts.append(int(first[g]))
        runs.ends.append(int(last[g]))
        runs.ops.append(int(count[g]))
        runs.compute += float(last[g] - first[g])
    _dispatch(table, host, out)
    return out


def _dispatch(table: EventTable, host: I64, programs: dict[str, ProgramRuns]) -> None:
    """Give each CPU run the ``PjitFunction`` that launched it as its root: the
    first of its module's dispatches not yet given, started before the run.
    A run none launched in the file (the trace began after) is dropped."""
    names = table.cols.meta_name
    used, inverse = distinct_codes(table.cols.event_meta[host], len(names))
    keys = []
    for m in used.tolist():
        found = _DISPATCH.fullmatch(names[m]) if m >= 0 else None
        keys.append(_key(found.group("f")) if found else "")
    key_of = np.asarray(keys, dtype=object)[inverse.reshape(-1)]
    calls = np.asarray(outermost(table, host[key_of != ""]), dtype=np.int64)
    by_key: dict[str, list[int]] = {}
    for row, key in zip(calls.tolist(), key_of[np.searchsorted(host, calls)].tolist()):
        by_key.setdefault(key, []).append(row)
    for runs in programs.values():
        _match(table, runs, by_key.get(_key(runs.module), []))


def _match(table: EventTable, runs: ProgramRuns, calls: list[int]) -> None:
    """Runs of ``runs`` and the dispatches ``calls`` (by start) paired in order;
    a dispatch left after the last run is a run that had not begun (ops 0)."""
    if not calls:
        return
    kept = ProgramRuns(runs.module, [], [], [], [], runs.compute)
    at = 0
    for start, end, ops in zip(runs.starts, runs.ends, runs.ops, strict=True):
        if at >= len(calls) or int(table.start[calls[at]]) > start:
            continue  # launched before the trace began
        kept.roots.append(calls[at])
        kept.starts.append(int(table.start[calls[at]]))
        kept.ends.append(end)
        kept.ops.append(ops)
        at += 1
    for call in calls[at:]:
        kept.roots.append(call)
        kept.starts.append(int(table.start[call]))
        kept.ends.append(-1)
        kept.ops.append(0)
    runs.roots, runs.starts, runs.ends, runs.ops = kept.roots, kept.starts, kept.ends, kept.ops


def program_runs_of(table: EventTable, host: I64) -> dict[str, ProgramRuns]:
    """Every program's runs (see the module docstring), host executions first."""
    found = _executions(table, host)
    for module, runs in _cpu_runs(table, host).items():
        found.setdefault(module, runs)
    return found


def _per_step(chosen: ProgramRuns, other: ProgramRuns) -> int:
    """``k`` when ``other`` runs ``k >= 2`` times between most consecutive runs
    of ``chosen`` (0 otherwise)."""
    if len(other) < 2 * (len(chosen) - 1) or len(chosen) < 2:
        return 0
    between = np.diff(np.searchsorted(np.asarray(other.starts), np.asarray(chosen.starts)))
    k, times = Counter(between.tolist()).most_common(1)[0]
    return int(k) if k >= 2 and times >= REGULAR_SHARE * len(between) else 0


def _choose(programs: list[ProgramRuns]) -> ProgramRuns | None:
    """The regular program with the most compute, or the regular one it runs
    ``k >= 2`` times per run of, when that one does at least as much per run."""
    regular = [p for p in programs if regularity(p.starts).regular]
    if not regular:
        return None
    best = max(regular, key=lambda p: p.compute)
    for other in sorted(regular, key=lambda p: len(p)):
        if (
            other is not best
            and _per_step(other, best)
            and (other.compute / len(other) >= best.compute / len(best))
        ):
            return other
    return best


def program_steps(table: EventTable, host: I64) -> Inferred | None:
    """The training step's runs, or why there are no steps; None when the file
    ran no XLA program."""
    programs = program_runs_of(table, host)
    if not programs:
        return None
    repeating = [p for p in programs.values() if len(p) >= MIN_RUNS]
    if not repeating:
        most = max(programs.values(), key=lambda p: (len(p), p.module))
        return Inferred(None, f"no XLA program ran {MIN_RUNS} times or more ({most.module}: "
                              f"{len(most)} run{'s' if len(most) != 1 else ''})")  # fmt: skip
    chosen = _choose(repeating)
    if chosen is None:
        top = max(repeating, key=lambda p: p.compute)
        spread = regularity(top.starts).spread
        return Inferred(None, f"XLA program {top.module} ran at irregular times ({len(top)} "
                              f"runs, step times would vary {100 * spread:.0f}%)")  # fmt: skip
    return _with_words(chosen, repeating)


def _with_words(chosen: ProgramRuns, repeating: list[ProgramRuns]) -> Inferred:
    """``chosen`` and its words, or no steps when another program rivals it."""
    notes = []
    for other in repeating:
        if other is chosen:
            continue
        k = _per_step(chosen, other)
        if k:
            notes.append(f"{other.module} runs {k} times per step")
        elif (
            abs(len(other) - len(chosen)) > 1
            and regularity(other.starts).regular
            and (other.compute >= 0.5 * chosen.compute)
        ):
            return Inferred(None, f"no XLA program dominates ({chosen.module}: {len(chosen)} "
                                  f"runs, {other.module}: {len(other)} runs)")  # fmt: skip
    words = regularity(chosen.starts).words(len(chosen))
    extra = "".join(f"; {n}" for n in notes)
    return Inferred(
        chosen,
        f"inferred: {len(chosen)} runs of XLA program {chosen.module}, one per step "
        f"({words}{extra})",
    )
