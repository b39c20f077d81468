"""Where the steps of an XSpace are: step markers, or steps inferred from calls.

:func:`find_steps` returns the step roots of a file, host events that each mark
one step, and a sentence saying how they were found:

1. step markers: host events with integer ``_r`` and ``step_num`` stats (what
   ``tf.profiler.experimental.Trace(name, step_num=i, _r=1)`` and JAX's
   ``StepTraceAnnotation`` write), or named ``TraceContext`` (the legacy
   marker; TensorFlow's ``FunctionRun`` has ``_r`` alone and is no step); their
   ``step_num`` numbers the steps;
2. Keras' own batch markers: ``Profiled batch`` events with ``step_num`` (no
   ``_r``), which its TensorBoard callback writes around each profiled batch;
3. otherwise inferred, first of: one Keras ``multi_step_on_iterator`` call (the
   function's event, or ``EagerExecute`` with that ``eager_op``); one run of
   the XLA program that is the training step
   (:mod:`tfprof_lite.model.xspace_infer`, which may find none and say why);
   one ``SessionRun``. The source says how many and how sure
   (``inferred: 12 runs of XLA program jit_train_step, one per step
   (confidence high: step times vary 3%)``).

Roots nested in an earlier root are dropped. A marked step then covers the
events launched inside its root and those launched in the gap before it (the
host's work for that step before it entered the marker: input, dispatch); an
inferred step runs from the end of the previous one (one loop period); see
:func:`tfprof_lite.model.xspace.convert`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.xspace_events import EventTable, distinct_codes

__all__ = [
    "StepRoots",
    "find_steps",
    "host_programs",
    "outermost",
    "program_of",
    "program_runs",
    "step_of",
]

I64 = npt.NDArray[np.int64]
#: Rows read into Python at once by :func:`outermost`.
_CHUNK = 1 << 16
BoolArray = npt.NDArray[np.bool_]

_KERAS = "multi_step_on_iterator"
_KERAS_BATCH = "Profiled batch"
_KERAS_EAGER = "__inference_multi_step_on_iterator"
_PROGRAM = (
    re.compile(r"(?P<m>[^\s:]+):XLA \w+ module"),
    # a module name has no spaces: "ThunkExecutor::Execute (wait for completion)"
    # (XLA's CPU runtime) runs none
    re.compile(r".*Execute \((?P<m>[^)\s]+)\)"),
)


class StepRoots:
    """The step roots (event rows, by start), their step numbers and how found.

    ``ends``: per root, the end (ps) of the program run it launched when that
    run's events are not its records' (XLA's CPU runtime; -1: none);
    ``ops``: per root, the events of that run (-1: unknown); ``contiguous``:
    inferred steps, each from the end of the previous one (one loop period).
    """

    def __init__(
        self,
        events: list[int],
        numbers: list[int],
        source: str,
        ends: list[int] | None = None,
        ops: list[int] | None = None,
        contiguous: bool = False,
    ) -> None:
        self.events = events
        self.numbers = numbers
        self.source = source
        self.ends = ends or [-1] * len(events)
        self.ops = ops or [-1] * len(events)
        self.contiguous = contiguous

    def __len__(self) -> int:
        return len(self.events)


def outermost(table: EventTable, rows: list[int] | I64) -> list[int]:
    """``rows`` by start, without those that start inside an earlier one (read
    :data:`_CHUNK` rows at a time: a large file runs programs by the million)."""
    if not len(rows):
        return []
    at = np.asarray(rows, dtype=np.int64)
    starts, ends = table.start[at], table.end[at]
    order = np.lexsort((-ends, starts))
    kept: list[int] = []
    last_end = None
    for low in range(0, len(order), _CHUNK):
        part = order[low : low + _CHUNK]
        for row, start, end in zip(
            at[part].tolist(), starts[part].tolist(), ends[part].tolist(), strict=True
        ):
            if last_end is not None and start < last_end:
                continue
            kept.append(row)
            last_end = end
    return kept


def _by_meta(table: EventTable, host: I64, test: Callable[[str], bool]) -> BoolArray:
    """``test(name)`` of each host event's name, decided once per event metadata."""
    if not len(host):
        return np.zeros(0, dtype=bool)
    names = table.cols.meta_name
    used, inverse = distinct_codes(table.cols.event_meta[host], len(names))
    flags = [test(names[m] if m >= 0 else "") for m in used.tolist()]
    return np.asarray(flags, dtype=bool)[inverse.reshape(-1)]


def _named(table: EventTable, host: I64, name: str) -> BoolArray:
    return _by_meta(table, host, lambda text: text == name)


def _markers(table: EventTable, host: I64) -> list[int]:
    marked = (table.has_int["_r"] & table.has_int["step_num"])[host]
    return list(host[marked | _named(table, host, "TraceContext")].tolist())


def _keras(table: EventTable, host: I64) -> list[int]:
    eager = np.zeros(len(host), dtype=bool)
    codes = table.codes["eager_op"][host]
    if len(host):
        strings = table.cols.strings
        used, inverse = distinct_codes(codes, len(strings))
        keras = [c >= 0 and strings[c].startswith(_KERAS_EAGER) for c in used.tolist()]
        eager = np.asarray(keras, dtype=bool)[inverse.reshape(-1)]
    calls = _named(table, host, _KERAS) | (_named(table, host, "EagerExecute") & eager)
    return list(host[calls].tolist())


def program_of(name: str) -> str:
    """The XLA module an execution event runs (``jit_f:XLA GPU module``,
    ``...Execute (jit_f)``), or ``""``."""
    for pattern in _PROGRAM:
        found = pattern.fullmatch(name)
        if found:
            return found.group("m")
    return ""


def host_programs(table: EventTable, host: I64) -> dict[int, str]:
    """Host event -> the XLA module it runs, for the host events that run one
    (:func:`program_of`, decided once per event metadata), by row."""
    rows, which, modules = program_runs(table, host)
    return {e: modules[i] for e, i in zip(rows.tolist(), which.tolist(), strict=True)}


def program_runs(table: EventTable, host: I64) -> tuple[I64, I64, list[str]]:
    """:func:`host_programs` in columns: the rows (of ``host``, ascending) that
    run an XLA module, the index of each one's module, and the modules."""
    if not len(host):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), []
    names = table.cols.meta_name
    used, inverse = distinct_codes(table.cols.event_meta[host], len(names))
    modules = [program_of(names[m]) if m >= 0 else "" for m in used.tolist()]
    which = inverse.reshape(-1)
    runs = np.asarray([bool(m) for m in modules], dtype=bool)[which]
    return host[runs], which[runs], modules


def _numbers(table: EventTable, roots: list[int]) -> list[int]:
    present = table.has_int["step_num"]
    numbers: list[int] = table.ints.at("step_num", np.asarray(roots, dtype=np.int64)).tolist()
    if all(present[r] for r in roots) and len(set(numbers)) == len(numbers):
        return numbers
    return list(range(len(roots)))


def find_steps(table: EventTable) -> StepRoots:
    """The step roots of the file (empty when it has none; the source says why)."""
    host = table.host_events()
    marked = outermost(table, _markers(table, host))
    if marked:
        names = sorted({table.names[e] for e in marked})
        return StepRoots(marked, _numbers(table, marked), f"step markers ({', '.join(names)})")
    batch = _named(table, host, _KERAS_BATCH) & table.has_int["step_num"][host]
    batches = outermost(table, host[batch].tolist())
    if batches:
        return StepRoots(batches, _numbers(table, batches), f"Keras batch markers ({_KERAS_BATCH})")
    keras = outermost(table, _keras(table, host))
    if keras:
        return _calls(table, keras, f"Keras {_KERAS} call")
    from tfprof_lite.model.xspace_infer import program_steps  # it reads this module

    inferred = program_steps(table, host)
    if inferred is not None and inferred.runs is not None:
        runs = inferred.runs
        return StepRoots(runs.roots, list(range(len(runs))), inferred.words, runs.ends,
                         runs.ops, contiguous=True)  # fmt: skip
    sessions = outermost(table, host[_named(table, host, "SessionRun")].tolist())
    if sessions:
        return _calls(table, sessions, "SessionRun call")
    why = inferred.words if inferred is not None else _NOTHING
    return StepRoots([], [], f"{NO_STEPS}: no step markers, and {why}")


#: How the source of a file without steps begins.
NO_STEPS = "no steps found"
_NOTHING = "no Keras, XLA program or SessionRun calls to infer them from"


def _calls(table: EventTable, roots: list[int], what: str) -> StepRoots:
    """One inferred step per call of ``roots`` (a Keras train function, a
    ``SessionRun``), with how regular they are."""
    from tfprof_lite.model.xspace_infer import MIN_RUNS, regularity

    n = len(roots)
    if n < MIN_RUNS:
        sure = f"confidence medium: {n} call{'s' if n != 1 else ''}"
    else:
        sure = regularity([int(table.start[r]) for r in roots]).words(n)
    words = f"inferred: {n} {what}{'s' if n != 1 else ''}, one per step ({sure})"
    return StepRoots(roots, list(range(n)), words, contiguous=True)


def step_of(starts: np.ndarray, ends: np.ndarray, times: np.ndarray) -> np.ndarray:
    """For each time, the step it belongs to (-1: none).

    A time inside root ``i`` belongs to step ``i``; a time in the gap after root
    ``i`` and before root ``i + 1`` belongs to step ``i + 1`` (the host's work
    for the next step); times before the first root or after the last one end
    belong to none.
    """
    if not len(starts):
        return np.zeros(len(times), dtype=np.int64)
    before = np.searchsorted(starts, times, side="right") - 1
    inside = (before >= 0) & (times <= ends[np.maximum(before, 0)])
    out = np.where(inside, before, before + 1)
    out[(out >= len(starts)) | (out < 0)] = -1
    out[times < starts[0]] = -1
    return out.astype(np.int64)
